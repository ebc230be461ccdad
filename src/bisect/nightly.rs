//! `nightly --bisect`: when tonight regressed and the baseline's kernel and
//! tonight's are two commits of one git tree, bisect between them on the
//! point that regressed and put the first bad commit in the night's summary.

use super::Request;
use crate::compare::nightly::{add_to_summary, Night};
use crate::compare::Options;
use crate::samples::{KernelMeta, RunMeta};
use crate::{exit, message};
use anyhow::Result;
use std::path::PathBuf;

/// Why two runs' kernels of `variant` cannot be bisected between, or the
/// tree and the two commits.
fn revisions(
    baseline: &RunMeta,
    tonight: &RunMeta,
    variant: &str,
) -> Result<(PathBuf, String, String), String> {
    let kernel = |meta: &RunMeta| -> Result<KernelMeta, String> {
        meta.kernels
            .iter()
            .find(|k| k.variant == variant)
            .cloned()
            .ok_or_else(|| format!("a run has no variant {variant}"))
    };
    let (a, b) = (kernel(baseline)?, kernel(tonight)?);
    let origin = |k: &KernelMeta| {
        let o = k.origin.clone().unwrap_or_default();
        match (&o.commit, o.patches.is_empty()) {
            (Some(c), true) => Ok((PathBuf::from(&o.source), c.clone())),
            (Some(_), false) => Err("a kernel carries patches on top of its commit".to_string()),
            (None, _) => Err(format!(
                "the kernel of {variant} records no git commit (give the variant a `rev` of a \
                 git tree)"
            )),
        }
    };
    let ((tree_a, good), (tree_b, bad)) = (origin(&a)?, origin(&b)?);
    if tree_a != tree_b {
        return Err(format!(
            "the kernels come from two trees ({} and {})",
            tree_a.display(),
            tree_b.display()
        ));
    }
    if good == bad {
        return Err("both kernels are the same commit".into());
    }
    Ok((tree_a, good, bad))
}

/// Bisects the night's first regressed point, when it can be, and adds the
/// answer (or why there is none) to the night's summary.
pub fn after(night: &Night, options: &Options) -> Result<()> {
    let (Some((tonight, baseline)), Some(point)) = (&night.runs, night.regressed.first()) else {
        return Ok(());
    };
    if night.code != exit::FAILED {
        return Ok(());
    }
    let metas = RunMeta::read(baseline).and_then(|b| Ok((b, RunMeta::read(tonight)?)));
    let found = match &metas {
        Ok((b, t)) => revisions(b, t, &point.variant),
        Err(e) => Err(format!("{e:#}")),
    };
    let (tree, good, bad) = match found {
        Ok(found) => found,
        Err(why) => {
            return add_to_summary(tonight, &format!("\n**Not bisected**: {why}.\n"));
        }
    };
    let request = Request {
        tree: Some(tree.clone()),
        good: Some(good.clone()),
        bad: Some(bad.clone()),
        suite: options.suite.clone(),
        point: Some(format!(
            "{}/{}@{}={}",
            point.workload, point.metric, point.cpus, point.param
        )),
        variant: Some(point.variant.clone()),
        reports: tonight.clone(),
        out: Some(tonight.join("bisect")),
        ..Request::default()
    };
    message::note(format_args!(
        "bisecting {} from {} to {} in {}",
        request.point.as_deref().unwrap_or_default(),
        &good[..12.min(good.len())],
        &bad[..12.min(bad.len())],
        tree.display()
    ));
    let text = match super::run(&request) {
        Ok((_, dir, answer)) => format!(
            "\n**Bisected** {} between the baseline's commit and tonight's: {}. Answer: {}\n",
            request.point.as_deref().unwrap_or_default(),
            answer.headline(),
            dir.join("bisect.md").display()
        ),
        Err(e) => format!("\n**Bisection failed**: {e:#}\n"),
    };
    add_to_summary(tonight, &text)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::images::source::OriginRecord;
    use std::path::Path;

    fn run(commit: Option<&str>, source: &str) -> RunMeta {
        RunMeta {
            kernels: vec![KernelMeta {
                variant: "markers-on".into(),
                origin: Some(OriginRecord {
                    source: source.into(),
                    commit: commit.map(String::from),
                    ..OriginRecord::default()
                }),
                ..KernelMeta::default()
            }],
            ..RunMeta::default()
        }
    }

    #[test]
    fn two_commits_of_one_tree_are_bisected_and_anything_else_says_why_not() {
        let (tree, good, bad) = revisions(
            &run(Some("aaa"), "/t"),
            &run(Some("bbb"), "/t"),
            "markers-on",
        )
        .unwrap();
        assert_eq!(
            (tree, good.as_str(), bad.as_str()),
            (Path::new("/t").into(), "aaa", "bbb")
        );
        let why = |a, b| revisions(&a, &b, "markers-on").unwrap_err();
        assert!(why(run(None, "/t"), run(Some("b"), "/t")).contains("records no git commit"));
        assert!(why(run(Some("a"), "/t"), run(Some("b"), "/u")).contains("two trees"));
        assert!(why(run(Some("a"), "/t"), run(Some("a"), "/t")).contains("same commit"));
        assert!(
            revisions(&run(Some("a"), "/t"), &run(Some("b"), "/t"), "other")
                .unwrap_err()
                .contains("no variant other")
        );
    }
}
