//! `markbench calibrate`: measure this host's CPU natively and write the
//! cycle model's profile of it ([`crate::base::calibration`]), which runs
//! under `--model cycles` on a CPU of that name then use.

use crate::base::calibration::{self, Profile};
use crate::base::error::{Context, Result};
use crate::base::exit::ExitStatus;
use std::path::Path;

#[cfg(target_arch = "x86_64")]
pub fn run(out: Option<&Path>) -> Result<ExitStatus> {
    crate::base::message::note(
        "measuring this CPU natively (about ten seconds; other work on the host makes it \
         slower, never faster, so each loop keeps its least time) …",
    );
    let caches = calibration::caches_at(Path::new("/"));
    let figures = calibration::measure(&caches, false);
    let profile = calibration::profile(&figures, &caches);
    let path = out.map_or_else(
        || crate::guest::images::cache::model_profile(&profile.cpu),
        Path::to_path_buf,
    );
    print!("{}", words(&profile, &path));
    profile
        .model()
        .map_err(|m| anyhow::anyhow!("the measured profile is not one the model takes: {m}"))?;
    let text = format!(
        "# The cycle model's profile of this CPU, measured natively by `markbench calibrate`.\n{}",
        toml::to_string(&profile)?
    );
    if let Some(parent) = path.parent() {
        std::fs::create_dir_all(parent)
            .with_context(|| format!("creating {}", parent.display()))?;
    }
    // Written whole under another name, then renamed: a run that reads
    // the profile meanwhile sees the old one or the new, never half.
    let partial = path.with_extension("toml.partial");
    std::fs::write(&partial, text).with_context(|| format!("writing {}", partial.display()))?;
    std::fs::rename(&partial, &path).with_context(|| format!("writing {}", path.display()))?;
    Ok(ExitStatus::Success)
}

#[cfg(not(target_arch = "x86_64"))]
pub fn run(_out: Option<&Path>) -> Result<ExitStatus> {
    Err(crate::base::error::InputError::new(
        "markbench calibrate measures x86-64 CPUs only (its clock is a chain of x86 adds)",
    )
    .into())
}

/// The profile as the terminal shows it.
fn words(profile: &Profile, path: &Path) -> String {
    let mut text = format!(
        "CPU: {} on {} ({:.3} GHz by the add chain)\n",
        profile.cpu, profile.host, profile.clock_ghz
    );
    let what = [
        ("issue-width", "independent adds a cycle"),
        (
            "load-cycles",
            "a load the L1d serves (a quarter of it chased)",
        ),
        ("l2-cycles", "a load the L2 serves (a quarter of it chased)"),
        (
            "llc-cycles",
            "a load the last level serves (twice the L2 chased)",
        ),
        (
            "memory-cycles",
            "a load memory serves, without its page walk (64 MiB or twice the LLC chased, \
             less the walk)",
        ),
        (
            "memory-cycles-with-walks",
            "a load memory serves, its page walk included (the chase in small pages)",
        ),
        (
            "tlb-walk-cycles",
            "a page walk (the chase in small pages against one in large pages)",
        ),
        (
            "tlb-walk-cached-cycles",
            "a page walk its entries the caches serve (16384 pages, a line each)",
        ),
        (
            "stlb-entries",
            "pages a chase of a line a page went over without walking",
        ),
        ("mispredict-cycles", "a mispredicted branch"),
        (
            "coherence-cycles",
            "a line passed between two cores (CPUs 0 and 1)",
        ),
        (
            "string-startup-cycles",
            "a rep movsb to start (copies of 256 B and 8 KiB)",
        ),
        ("string-bytes-per-cycle", "bytes a rep movsb moves a cycle"),
    ];
    if let Some(holds) = profile.figures.get("llc-bytes") {
        text.push_str(&format!(
            "  the last level held a buffer of {} MiB at most → llc-bytes = {}\n",
            holds / f64::from(1 << 20),
            profile
                .settings
                .get("llc-bytes")
                .map_or("-".into(), u64::to_string)
        ));
    }
    for (key, means) in what {
        if let Some(measured) = profile.figures.get(key) {
            let setting = profile
                .settings
                .get(key)
                .map_or("-".to_string(), u64::to_string);
            text.push_str(&format!(
                "  {means}: {measured} {} → {key} = {setting}\n",
                if key == "stlb-entries" {
                    "pages"
                } else {
                    "cycles"
                }
            ));
        }
    }
    let caches: Vec<String> = profile
        .settings
        .iter()
        .filter(|(k, _)| (k.ends_with("-bytes") || k.ends_with("-ways")) && !k.starts_with("stlb-"))
        .map(|(k, v)| format!("{k} = {v}"))
        .collect();
    text.push_str(&format!("  caches (sysfs): {}\n", caches.join(", ")));
    text.push_str(&format!("profile: {}\n", path.display()));
    text
}
