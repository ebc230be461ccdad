#!/usr/bin/env python3
"""Reference values for markbench's stats module, computed with scipy/statsmodels.

Writes tests/fixtures/stats/reference.json, read by tests/stats_reference.rs.
The data are drawn from a seeded numpy generator, so rerunning the script
reproduces the file byte for byte (given the same scipy/numpy versions, which
are recorded in the file).

    pip install scipy numpy statsmodels
    python3 scripts/gen_stats_fixtures.py

What is computed independently of the Rust code:
  - Welch t-test on boot means: scipy.stats.ttest_ind(b, a, equal_var=False)
  - Mann-Whitney U on boot means: scipy.stats.mannwhitneyu(b, a,
    alternative="two-sided", method="auto"), i.e. exact when a side has <= 8
    values and there are no ties, else asymptotic with tie and continuity
    corrections (the same rule statrs documents for MannWhitneyUMethod::Automatic)
  - TOST on log boot means: two one-sided scipy Welch tests against the shifted
    bounds ln(1 - margin) and ln(1 + margin)
  - Student t quantiles: scipy.stats.t.ppf
  - Holm and Benjamini-Hochberg: statsmodels.stats.multitest.multipletests
  - Modified z-scores: scipy.stats.norm.ppf(0.75) and median_abs_deviation
  - Variance components: numpy, straight from the one-way ANOVA formulas
"""

import json
import math
import pathlib

import numpy as np
import scipy
import scipy.stats as st
import statsmodels
from statsmodels.stats.multitest import multipletests

ALPHA = 0.05
MARGIN = 0.02
OUT = pathlib.Path(__file__).resolve().parent.parent / "tests" / "fixtures" / "stats" / "reference.json"

rng = np.random.default_rng(20240611)


def lognormal_boots(n_boots, iterations, base, between_cov, within_cov, shift=0.0):
    """Boot effect and iteration noise, both multiplicative (lognormal)."""
    iterations = iterations if isinstance(iterations, list) else [iterations] * n_boots
    boots = []
    for r in iterations:
        boot_effect = rng.normal(0.0, between_cov)
        noise = rng.normal(0.0, within_cov, size=r)
        boots.append(list(base * (1.0 + shift) * np.exp(boot_effect + noise)))
    return boots


def side_summary(boots):
    allv = np.concatenate([np.asarray(b, dtype=float) for b in boots])
    n_boots = len(boots)
    n = allv.size
    mean = float(allv.mean())
    sd = float(allv.std(ddof=1)) if n >= 2 else None
    boot_means = [float(np.mean(b)) for b in boots]
    sizes = np.array([len(b) for b in boots], dtype=float)
    df_within = n - n_boots
    ss_within = sum(float(((np.asarray(b) - np.mean(b)) ** 2).sum()) for b in boots)
    within = ss_within / df_within if df_within > 0 else None
    if within is not None and n_boots >= 2:
        ss_between = float((sizes * (np.array(boot_means) - mean) ** 2).sum())
        n0 = (n - (sizes**2).sum() / n) / (n_boots - 1)
        between = max(0.0, (ss_between / (n_boots - 1) - within) / n0)
    else:
        between = None
    if n_boots >= 2:
        basis_values, basis = np.array(boot_means), "boot_means"
    else:
        basis_values, basis = np.asarray(boots[0], dtype=float), "iterations_of_single_boot"
    if basis_values.size >= 2:
        k = basis_values.size
        q = st.t.ppf(0.975, k - 1)
        half = q * basis_values.std(ddof=1) / math.sqrt(k)
        c = float(basis_values.mean())
        ci = {"center": c, "lower": c - half, "upper": c + half, "basis": basis, "df": k - 1}
    else:
        ci = None
    return {
        "n_boots": n_boots,
        "n_samples": int(n),
        "mean": mean,
        "median": float(np.median(allv)),
        "std_dev": sd,
        "cov": sd / abs(mean) if sd is not None else None,
        "boot_means": boot_means,
        "boot_means_variance": float(np.var(boot_means, ddof=1)) if n_boots >= 2 else None,
        "within_boot_variance": within,
        "between_boot_variance": between,
        "mean_ci": ci,
    }


def outliers(boots):
    allv = np.concatenate([np.asarray(b, dtype=float) for b in boots])
    med = np.median(allv)
    mad = st.median_abs_deviation(allv, scale=1.0)
    if mad == 0:
        return None  # the Rust fallback (mean absolute deviation) is unit-tested there
    flagged = []
    for j, b in enumerate(boots):
        for k, v in enumerate(b):
            score = st.norm.ppf(0.75) * (v - med) / mad
            if abs(score) > 3.5:
                flagged.append({"boot": j, "iteration": k, "value": v, "score": float(score)})
    return flagged


def has_ties(a, b):
    pooled = np.concatenate([a, b])
    return np.unique(pooled).size < pooled.size


def comparison(a_boots, b_boots):
    a = np.array([np.mean(x) for x in a_boots])
    b = np.array([np.mean(x) for x in b_boots])
    out = {
        "relative_difference": float(np.concatenate(b_boots).mean() / np.concatenate(a_boots).mean() - 1.0)
    }
    if a.size < 2 or b.size < 2:
        out.update(welch=None, mann_whitney=None, tost=None)
        return out
    w = st.ttest_ind(b, a, equal_var=False)
    out["welch"] = {
        "mean_difference": float(b.mean() - a.mean()),
        "t": float(w.statistic),
        "df": float(w.df),
        "p_value": float(w.pvalue),
    }
    mw = st.mannwhitneyu(b, a, alternative="two-sided", method="auto")
    exact = (a.size <= 8 or b.size <= 8) and not has_ties(a, b)
    out["mann_whitney"] = {
        "u_b": float(mw.statistic),
        "p_value": float(mw.pvalue),
        "method": "exact" if exact else "asymptotic",
    }
    la, lb = np.log(a), np.log(b)
    low, high = math.log(1 - MARGIN), math.log(1 + MARGIN)
    p_low = st.ttest_ind(lb - low, la, equal_var=False, alternative="greater").pvalue
    p_high = st.ttest_ind(lb - high, la, equal_var=False, alternative="less").pvalue
    log_test = st.ttest_ind(lb, la, equal_var=False)
    d = lb.mean() - la.mean()
    se = math.sqrt(lb.var(ddof=1) / lb.size + la.var(ddof=1) / la.size)
    q = st.t.ppf(1 - ALPHA, log_test.df)
    p = max(p_low, p_high)
    out["tost"] = {
        "relative_difference": math.exp(d) - 1,
        "p_value": float(p),
        "df": float(log_test.df),
        "ci_lower": math.exp(d - q * se) - 1,
        "ci_upper": math.exp(d + q * se) - 1,
        "equivalent": bool(p < ALPHA),
    }
    return out


def case(name, a_boots, b_boots, higher_is_better=False):
    return {
        "name": name,
        "higher_is_better": higher_is_better,
        "a": a_boots,
        "b": b_boots,
        "expected": {
            "a": side_summary(a_boots),
            "b": side_summary(b_boots),
            "outliers_a": outliers(a_boots),
            "outliers_b": outliers(b_boots),
            **comparison(a_boots, b_boots),
        },
    }


cases = [
    case("balanced 5x5, no change",
         lognormal_boots(5, 5, 20.0, 0.008, 0.006),
         lognormal_boots(5, 5, 20.0, 0.008, 0.006)),
    case("balanced 5x5, +3% slower",
         lognormal_boots(5, 5, 20.0, 0.007, 0.007),
         lognormal_boots(5, 5, 20.0, 0.007, 0.007, shift=0.03)),
    case("unbalanced iterations, 4 vs 6 boots",
         lognormal_boots(4, [3, 7, 5, 2], 4.8, 0.01, 0.02),
         lognormal_boots(6, [4, 4, 6, 1, 5, 3], 4.8, 0.01, 0.02, shift=0.01)),
    case("10 vs 12 boots, asymptotic Mann-Whitney",
         lognormal_boots(10, 3, 85.0, 0.005, 0.004),
         lognormal_boots(12, 3, 85.0, 0.005, 0.004, shift=-0.004)),
    case("3 vs 8 boots, exact Mann-Whitney with unequal sizes",
         lognormal_boots(3, 4, 2.5, 0.02, 0.01),
         lognormal_boots(8, 4, 2.5, 0.02, 0.01, shift=0.02)),
    case("tied boot means, packets per second",
         [[100.0], [101.0], [100.0], [102.0], [101.0]],
         [[103.0], [101.0], [104.0], [103.0], [102.0], [104.0]],
         higher_is_better=True),
    case("large effect, tiny p",
         lognormal_boots(6, 4, 30.0, 0.002, 0.002),
         lognormal_boots(6, 4, 30.0, 0.002, 0.002, shift=0.05)),
    case("one boot on side A: iteration fallback, no test",
         lognormal_boots(1, 6, 10.0, 0.01, 0.01),
         lognormal_boots(4, 6, 10.0, 0.01, 0.01)),
    case("seed-style: one value per side",
         [[4.811]], [[4.872]]),
    case("spike in one iteration",
         [[50.1, 50.3, 49.9, 50.2], [50.0, 50.4, 61.0, 50.1], [50.2, 49.8, 50.0, 50.3]],
         [[50.5, 50.2, 50.4, 50.1], [50.3, 50.6, 50.2, 50.4], [50.1, 50.5, 50.3, 50.2]]),
]

def verdict(c, adjusted_p):
    """The issue's decision rule, written out independently of the Rust code."""
    e = c["expected"]
    if e["a"]["n_boots"] < 2 or e["b"]["n_boots"] < 2:
        return "insufficient data"
    if adjusted_p < ALPHA:
        b_higher = e["welch"]["mean_difference"] > 0
        return "improvement" if b_higher == c["higher_is_better"] else "regression"
    return "equivalent" if e["tost"]["equivalent"] else "no significant difference"


# The cases as one sweep: adjusted Welch p over the points that have one.
sweep_p = [c["expected"]["welch"]["p_value"] for c in cases if c["expected"]["welch"] is not None]
holm = multipletests(sweep_p, alpha=ALPHA, method="holm")[1]
bh = multipletests(sweep_p, alpha=ALPHA, method="fdr_bh")[1]
holm_iter, bh_iter = iter(holm), iter(bh)
for c in cases:
    has_p = c["expected"]["welch"] is not None
    c["expected"]["adjusted_holm"] = float(next(holm_iter)) if has_p else None
    c["expected"]["adjusted_bh"] = float(next(bh_iter)) if has_p else None
    c["expected"]["verdict_holm"] = verdict(c, c["expected"]["adjusted_holm"])

# Stand-alone correction examples, including ties and p-values that saturate at 1.
correction_inputs = [
    [0.01, 0.04, 0.03, 0.005],
    [0.2, 0.2, 0.01, 0.9, 0.04, 0.04],
    list(rng.uniform(0, 0.2, size=48)),
]
corrections = [
    {
        "p_values": [float(p) for p in ps],
        "holm": [float(x) for x in multipletests(ps, method="holm")[1]],
        "bh": [float(x) for x in multipletests(ps, method="fdr_bh")[1]],
    }
    for ps in correction_inputs
]

t_quantiles = [
    {"df": df, "p": p, "quantile": float(st.t.ppf(p, df))}
    for df in [1, 2, 3, 4, 7.5, 9, 29, 120]
    for p in [0.95, 0.975, 0.995]
]

fixture = {
    "generator": "scripts/gen_stats_fixtures.py",
    "versions": {"numpy": np.__version__, "scipy": scipy.__version__, "statsmodels": statsmodels.__version__},
    "alpha": ALPHA,
    "margin": MARGIN,
    "cases": cases,
    "corrections": corrections,
    "t_quantiles": t_quantiles,
}
OUT.parent.mkdir(parents=True, exist_ok=True)
OUT.write_text(json.dumps(fixture, indent=1, allow_nan=False) + "\n")
print(f"wrote {OUT} ({len(cases)} cases)")
