//! `nightly --bisect`: when tonight regressed and the baseline's kernel and
//! tonight's are two commits of one git tree, bisect between them on the
//! point that regressed and put the first bad commit in the night's summary.

use super::{add_to_summary, JobPage, Night};
use crate::base::exit::ExitStatus;
use crate::base::message;
use crate::jobs::bisect::{point::PointSpec, Request};
use crate::jobs::compare::Options;
use crate::record::{tree_commits as revisions, RunMeta};
use crate::stages::report::nightly::{self as words, Bisected};
use anyhow::Result;

/// Bisects the night's first regressed point, when it can be, and adds the
/// answer (or why there is none) to the night's summary.
pub fn after(night: &Night, options: &Options, page: &JobPage) -> Result<()> {
    let (Some((tonight, baseline)), Some(point)) = (&night.runs, night.regressed.first()) else {
        return Ok(());
    };
    if night.status != ExitStatus::Regression {
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
            let text = words::bisected("", Bisected::NotTried { why: &why });
            return add_to_summary(tonight, &text, page);
        }
    };
    let request = Request {
        tree: Some(tree.clone()),
        good: Some(good.clone()),
        bad: Some(bad.clone()),
        suite: options.suite.clone(),
        point: Some(
            PointSpec {
                workload: Some(point.workload.clone()),
                metric: Some(point.metric.clone()),
                cpus: Some(point.cpus),
                param: Some(point.param),
            }
            .to_string(),
        ),
        variant: Some(point.variant.clone()),
        reports: tonight.clone(),
        out: Some(tonight.join("bisect")),
        // The night's compare asked already.
        yes: options.yes,
        ..Request::default()
    };
    let point = request.point.as_deref().unwrap_or_default();
    message::note(words::bisecting(
        point,
        crate::guest::images::source::short_commit(&good),
        crate::guest::images::source::short_commit(&bad),
        &tree,
    ));
    let text = match crate::jobs::bisect::run(&request, &crate::commands::bisect::show) {
        Ok((dir, answer)) => words::bisected(
            point,
            Bisected::Answered {
                headline: &crate::stages::report::bisect::headline(&answer.facts()),
                page: &dir.join("bisect.md"),
            },
        ),
        Err(error)
            if ExitStatus::of_error(&error, crate::stages::vm::interrupted())
                == ExitStatus::Interrupted =>
        {
            words::bisected(point, Bisected::Interrupted { error: &error })
        }
        Err(error) => words::bisected(point, Bisected::Failed { error: &error }),
    };
    add_to_summary(tonight, &text, page)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::record::KernelMeta;
    use crate::record::OriginRecord;
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
