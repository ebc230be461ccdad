//! The Precision section of a run with a precision target: what it was
//! asked, how many boots it added, why it stopped, and where every point
//! ended against the target.

use super::super::format::escape_md;
use super::{PointNames, RunReport};
use crate::stages::analysis::precision::{rule, standings, SpreadSource, Standing};
use std::fmt::Write as _;

/// The section; empty for a run without a precision target.
pub(super) fn section(run: &RunReport) -> String {
    let (Some(record), Some(rule)) = (run.meta.precision.as_ref(), rule(run.meta)) else {
        return String::new();
    };
    let analysis = run.analysis;
    let names = PointNames::of(analysis);
    let mut r = String::from("## Precision\n\n");
    let budget = match record.budget_s {
        Some(s) => format!(
            "a budget of {} {}",
            humantime::format_duration(std::time::Duration::from_secs(s)),
            record.budget_scope.describe()
        ),
        None => "no budget of time".into(),
    };
    let planned = run.meta.order.len().saturating_sub(record.added_boots);
    let _ = writeln!(
        r,
        "Run to a precision of ±{}%: after the {planned} planned boots, one block of boots \
         (one of each variant) at a time was added at the CPU count whose points were nearest \
         to, but not yet within, the target, until each point's 95% interval of the relative \
         difference had a half-width of at most ±{}% on at least {} boots a side \
         (the fixed-width sequential interval of Chow and Robbins; [Timing and \
         noise](../../docs/timing-and-noise.md#runs-to-a-stated-precision) has why stopping on \
         the width keeps the intervals honest). Bounds: {budget}, at most {} boots.\n",
        record.percent, record.percent, record.min_boots, record.max_boots
    );
    let ended = match record.stopped {
        Some(why) => format!(
            "It added {} boots and stopped at {}.",
            record.added_boots,
            why.describe()
        ),
        None => format!(
            "It added {} boots and did not finish deciding (interrupted).",
            record.added_boots
        ),
    };
    let _ = writeln!(r, "{ended}\n");
    let standings = standings(analysis, rule);
    let several = analysis.comparisons.len() > 1;
    let _ = writeln!(
        r,
        "| point |{} boots a side | half-width of the 95% interval | against ±{}% | boots a side needed | the spread of the boot means |",
        if several { " candidate |" } else { "" },
        record.percent
    );
    let _ = writeln!(
        r,
        "|---|{}---:|---:|---|---:|---|",
        if several { "---|" } else { "" }
    );
    let mut missed = 0;
    for s in &standings {
        let p = &s.precision;
        let candidate = if several {
            let [_, c] = analysis.names(&analysis.comparisons[s.comparison]);
            format!(" {} |", escape_md(c))
        } else {
            String::new()
        };
        let half = p
            .half_width
            .map_or("–".to_string(), |h| format!("±{:.2}%", h * 100.0));
        let standing = match p.half_width {
            _ if p.resolved => "within".to_string(),
            Some(h) if h <= rule.half_width => {
                format!("within, on fewer than {} boots", rule.min_boots)
            }
            Some(h) => format!("**missed** by {:.2} points", (h - rule.half_width) * 100.0),
            None => "**missed**: no interval".to_string(),
        };
        missed += usize::from(!p.resolved);
        let (needed, spread) = what_it_needs(s);
        let _ = writeln!(
            r,
            "| {} |{candidate} {} | {half} | {standing} | {needed} | {spread} |",
            names.name(&s.key, s.param),
            p.boots
        );
    }
    if missed > 0 {
        let _ = writeln!(
            r,
            "\nBoots a side needed: what the spread of the boots so far says a point needs for \
             ±{}% (n·(half-width/target)², the standard error falling as 1/√n). The spread \
             of the boot means: a boot mean varies by the between-boot component plus the \
             runs' own variance over the runs a boot; whichever is the larger is named, and \
             only the runs' part falls with more runs a boot.",
            record.percent
        );
    }
    r.push('\n');
    r
}

/// A missed point's boots a side needed and what its spread is made of;
/// dashes for a point within its target.
fn what_it_needs(s: &Standing) -> (String, &'static str) {
    let p = &s.precision;
    let needed = match (p.resolved, p.boots_needed) {
        (true, _) => "–".to_string(),
        (false, Some(n)) => n.to_string(),
        (false, None) => "?".to_string(),
    };
    let spread = match (p.resolved, s.spread) {
        (true, _) | (false, None) => "–",
        (false, Some(source)) => spread_words(source),
    };
    (needed, spread)
}

/// What a point's spread comes from, and what narrows it.
fn spread_words(source: SpreadSource) -> &'static str {
    match source {
        SpreadSource::OneRunABoot => {
            "one run a boot: between and within boots not told apart (more runs a boot would tell)"
        }
        SpreadSource::BetweenBoots => "mostly between boots: more boots narrow it",
        SpreadSource::WithinBoots => {
            "mostly the runs within a boot: more runs a boot narrow it as well as more boots"
        }
    }
}
