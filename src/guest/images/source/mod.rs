//! Where a variant's kernel comes from: a source (a kernel tree or a
//! release tarball), optionally a git revision of that tree, and patches
//! applied on top of it in order.
//!
//! A revision is built from a snapshot of its commit (`git archive` into a
//! directory of the cache named by the commit id), and patches are applied
//! to a copy of the base in a directory named by the base and the patches'
//! contents: the user's working tree, index and checked-out branch are
//! never read for a revision and never written. Only a tree without `rev`
//! is built as it is, uncommitted changes included.
//!
//! Patches are checked before anything is built, on a scratch copy of only
//! the files they touch, so a patch that does not apply is an input error
//! (naming the patch, the file and the hunk) in seconds, also in a dry run.

use super::seal::SealVerdict;
use super::{key_of, Cache};
use crate::base::error::bail;
use crate::base::error::InputError;
use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

mod difference;
mod git;
mod lineage;
mod origin;
mod patch;
mod snapshot;
mod tarball;

pub use difference::*;
pub use git::*;
pub use lineage::*;
pub use origin::*;
pub use patch::*;
pub use snapshot::*;
use tarball::*;

#[cfg(test)]
mod tests {
    use super::*;

    /// A git repository with a Makefile, a Kconfig and kernel/fork.c, and
    /// `n` commits on top of the first, each changing one line of fork.c.
    fn repo(n: usize) -> tempfile::TempDir {
        let dir = tempfile::tempdir().unwrap();
        let p = dir.path();
        let run = |args: &[&str]| git_in(p, args);
        run(&["init", "-q", "-b", "main"]);
        std::fs::write(p.join("Makefile"), "all:\n").unwrap();
        std::fs::write(p.join("Kconfig"), "").unwrap();
        std::fs::create_dir_all(p.join("kernel")).unwrap();
        let lines: Vec<String> = (1..=20).map(|i| format!("int line{i};")).collect();
        std::fs::write(p.join("kernel/fork.c"), lines.join("\n") + "\n").unwrap();
        run(&["add", "-A"]);
        run(&["commit", "-q", "-m", "base"]);
        for c in 1..=n {
            let text = std::fs::read_to_string(p.join("kernel/fork.c")).unwrap();
            std::fs::write(
                p.join("kernel/fork.c"),
                text.replace(&format!("int line{c};"), &format!("long line{c};")),
            )
            .unwrap();
            run(&["commit", "-q", "-am", &format!("change {c}")]);
        }
        dir
    }

    fn git_in(p: &Path, args: &[&str]) {
        let out = Command::new("git")
            .arg("-C")
            .arg(p)
            .args(args)
            .env("GIT_AUTHOR_NAME", "t")
            .env("GIT_AUTHOR_EMAIL", "t@t")
            .env("GIT_COMMITTER_NAME", "t")
            .env("GIT_COMMITTER_EMAIL", "t@t")
            .output()
            .unwrap();
        assert!(out.status.success(), "{:?}", out);
    }

    fn origin_at(repo: &Path, rev: &str, patches: &[PathBuf]) -> ResolvedOrigin {
        ResolvedOrigin::resolve(&KernelOrigin {
            source: KernelSource::Tree(repo.to_path_buf()),
            rev: Some(rev.into()),
            patches: patches.to_vec(),
        })
        .unwrap()
    }

    /// Brings `workspace` to `origin`'s tree as a build does when it knows
    /// the tree held: by the delta, which must be a list of paths.
    fn step(
        workspace: &crate::guest::images::workspace::Workspace,
        origin: &ResolvedOrigin,
    ) -> usize {
        let held = workspace.state().expect("a recorded tree");
        let Delta::Paths { paths, .. } = origin.delta_from(&held).unwrap() else {
            panic!("a whole-tree delta between two commits of one repository");
        };
        assert_eq!(workspace.changed_since_recorded().unwrap(), None);
        workspace.forget_state().unwrap();
        let incoming = workspace.incoming().unwrap();
        origin.write_paths(&paths, &incoming).unwrap();
        workspace.write_paths(&paths, &incoming).unwrap();
        workspace
            .record_state(&origin.tree_state().unwrap())
            .unwrap();
        paths.len()
    }

    /// Whether the workspace's tree is, file for file, what a whole mirror
    /// of `origin`'s tree makes: mirroring it again changes nothing.
    fn holds_exactly(
        workspace: &crate::guest::images::workspace::Workspace,
        origin: &ResolvedOrigin,
    ) {
        let full = tempfile::tempdir().unwrap();
        origin.write_tree(full.path()).unwrap();
        let again =
            crate::guest::images::workspace::mirror(full.path(), &workspace.tree()).unwrap();
        assert_eq!(
            (again.written, again.removed),
            (0, 0),
            "the tree stepped to {} differs from its whole mirror",
            origin.describe()
        );
    }

    #[test]
    fn a_step_between_commits_writes_what_git_names_and_leaves_the_tree_a_whole_mirror_makes() {
        use std::os::unix::fs::PermissionsExt;
        let r = repo(1);
        let p = r.path();
        std::fs::create_dir_all(p.join("drivers/old")).unwrap();
        std::fs::write(p.join("drivers/old/gone.c"), "int gone;\n").unwrap();
        std::fs::write(p.join("scripts.sh"), "#!/bin/sh\n").unwrap();
        std::fs::write(p.join("moved.c"), "int moved;\n").unwrap();
        std::fs::write(p.join("becomes"), "a file, then a directory\n").unwrap();
        std::os::unix::fs::symlink("kernel/fork.c", p.join("link")).unwrap();
        git_in(p, &["add", "-A"]);
        git_in(p, &["commit", "-q", "-m", "more files"]);
        // The next commit: a change, a deletion that empties a directory, a
        // rename, a mode change, a new file in a new directory, a link moved
        // and a file replaced by a directory.
        std::fs::write(p.join("kernel/fork.c"), "int changed;\n").unwrap();
        std::fs::remove_dir_all(p.join("drivers/old")).unwrap();
        std::fs::rename(p.join("moved.c"), p.join("kernel/moved.c")).unwrap();
        std::fs::set_permissions(p.join("scripts.sh"), std::fs::Permissions::from_mode(0o755))
            .unwrap();
        std::fs::create_dir_all(p.join("net/new")).unwrap();
        std::fs::write(p.join("net/new/added.c"), "int added;\n").unwrap();
        std::fs::remove_file(p.join("link")).unwrap();
        std::os::unix::fs::symlink("Makefile", p.join("link")).unwrap();
        std::fs::remove_file(p.join("becomes")).unwrap();
        std::fs::create_dir_all(p.join("becomes")).unwrap();
        std::fs::write(p.join("becomes/inside.c"), "int inside;\n").unwrap();
        git_in(p, &["add", "-A"]);
        git_in(p, &["commit", "-q", "-m", "the step"]);
        let patch = p.join("0001-kconfig.patch");
        std::fs::write(
            &patch,
            "--- a/Kconfig\n+++ b/Kconfig\n@@ -0,0 +1 @@\n+config MARKBENCH_PATCHED\n",
        )
        .unwrap();

        let cache = tempfile::tempdir().unwrap();
        let workspace =
            crate::guest::images::workspace::Workspace::lock(cache.path().join("ws")).unwrap();
        let (before, after) = (origin_at(p, "main~1", &[]), origin_at(p, "main", &[]));
        let whole = tempfile::tempdir().unwrap();
        before.write_tree(whole.path()).unwrap();
        crate::guest::images::workspace::mirror(whole.path(), &workspace.tree()).unwrap();
        workspace
            .record_state(&before.tree_state().unwrap())
            .unwrap();
        let untouched = workspace.tree().join("Makefile");
        let old = std::time::SystemTime::now() - std::time::Duration::from_secs(3600);
        std::fs::File::options()
            .write(true)
            .open(&untouched)
            .unwrap()
            .set_modified(old)
            .unwrap();

        assert!(step(&workspace, &after) >= 8);
        holds_exactly(&workspace, &after);
        assert_eq!(
            std::fs::metadata(&untouched).unwrap().modified().unwrap(),
            old,
            "a file no commit touched was rewritten"
        );
        // A patch on top, then the plain commit again, then back where it began.
        let patched = origin_at(p, "main", std::slice::from_ref(&patch));
        assert_eq!(step(&workspace, &patched), 1);
        holds_exactly(&workspace, &patched);
        assert_eq!(step(&workspace, &after), 1);
        holds_exactly(&workspace, &after);
        step(&workspace, &before);
        holds_exactly(&workspace, &before);
    }

    #[test]
    fn a_tree_changed_behind_the_record_or_another_source_means_the_whole_tree() {
        let r = repo(2);
        let other = repo(1);
        let cache = tempfile::tempdir().unwrap();
        let workspace =
            crate::guest::images::workspace::Workspace::lock(cache.path().join("ws")).unwrap();
        let first = origin_at(r.path(), "main~1", &[]);
        let whole = tempfile::tempdir().unwrap();
        first.write_tree(whole.path()).unwrap();
        crate::guest::images::workspace::mirror(whole.path(), &workspace.tree()).unwrap();
        workspace
            .record_state(&first.tree_state().unwrap())
            .unwrap();
        let held = workspace.state().unwrap();
        assert!(matches!(
            origin_at(other.path(), "main", &[]).delta_from(&held).unwrap(),
            Delta::Whole(why) if why.contains("the workspace holds")
        ));
        assert_eq!(workspace.changed_since_recorded().unwrap(), None);
        std::thread::sleep(std::time::Duration::from_millis(20));
        std::fs::write(workspace.tree().join("Kconfig"), "edited by hand\n").unwrap();
        assert_eq!(
            workspace.changed_since_recorded().unwrap(),
            Some(workspace.tree().join("Kconfig"))
        );
        // An unknown commit (a repository rewritten since) is not a delta.
        let gone = TreeState {
            lineage: Lineage::Git {
                repository: std::fs::canonicalize(r.path()).unwrap(),
                commit: "0123456789abcdef0123456789abcdef01234567".into(),
            },
            patches: vec![],
            touched: vec![],
        };
        assert!(matches!(
            origin_at(r.path(), "main", &[]).delta_from(&gone).unwrap(),
            Delta::Whole(why) if why.contains("git cannot compare")
        ));
    }

    #[test]
    fn a_range_is_its_base_then_every_commit_to_its_tip_oldest_first() {
        let r = repo(3);
        let list = commits(
            r.path(),
            &RevSelection::Range {
                base: "main~3".into(),
                tip: "main".into(),
            },
        )
        .unwrap();
        let subjects: Vec<&str> = list.iter().map(|c| c.subject.as_str()).collect();
        assert_eq!(subjects, ["base", "change 1", "change 2", "change 3"]);
        assert_eq!(list[3].id, resolve_rev(r.path(), "main").unwrap().id);
        assert_eq!(list[0].short_id().len(), 12);
    }

    #[test]
    fn an_empty_range_and_an_unknown_revision_are_input_errors() {
        let r = repo(1);
        let empty = commits(
            r.path(),
            &RevSelection::Range {
                base: "main".into(),
                tip: "main".into(),
            },
        )
        .unwrap_err();
        assert!(
            matches!(empty, crate::base::error::Error::Input(_)),
            "{empty:#}"
        );
        let unknown = resolve_rev(r.path(), "v9.9").unwrap_err();
        assert!(unknown.to_string().contains("\"v9.9\""), "{unknown:#}");
        assert!(matches!(unknown, crate::base::error::Error::Input(_)));
    }

    #[test]
    fn revs_are_a_pair_or_a_range() {
        assert_eq!(
            parse_revs("v6.1,my-branch").unwrap(),
            RevSelection::Pair("v6.1".into(), "my-branch".into())
        );
        assert_eq!(
            parse_revs("v6.1..HEAD").unwrap(),
            RevSelection::Range {
                base: "v6.1".into(),
                tip: "HEAD".into()
            }
        );
        for bad in ["v6.1", "a,b,c", ",b", "a..", "a...b", "..b"] {
            assert!(parse_revs(bad).is_err(), "{bad}");
        }
    }

    #[test]
    fn the_key_names_the_commit_not_the_revision() {
        let r = repo(1);
        let origin = |rev: &str| KernelOrigin {
            source: KernelSource::Tree(r.path().to_path_buf()),
            rev: Some(rev.into()),
            patches: Vec::new(),
        };
        let by_branch = ResolvedOrigin::resolve(&origin("main")).unwrap();
        let by_id =
            ResolvedOrigin::resolve(&origin(&by_branch.commit.as_ref().unwrap().id)).unwrap();
        let parent = ResolvedOrigin::resolve(&origin("main~1")).unwrap();
        assert_eq!(by_branch.identity, by_id.identity);
        assert_ne!(by_branch.identity, parent.identity);
        assert_eq!(by_branch.commit.unwrap().subject, "change 1");
    }

    #[test]
    fn a_failed_hunk_is_found_by_its_old_start_line() {
        let patch =
            "diff --git a/x.c b/x.c\n--- a/x.c\n+++ b/x.c\n@@ -1,3 +1,3 @@\n a\n-b\n+B\n c\n\
                     @@ -10,3 +10,3 @@\n j\n-k\n+K\n l\n";
        let hunk = find_hunk(patch, "x.c", 10).unwrap();
        assert_eq!(hunk.number, 2);
        assert_eq!(hunk.patch_line, 9);
        assert_eq!(hunk.header, "@@ -10,3 +10,3 @@");
        assert_eq!(find_hunk(patch, "y.c", 10), None);
        let message = explain_failure(
            Path::new("p.patch"),
            patch,
            "Checking patch x.c...\nerror: while searching for:\nj\nk\n\nerror: patch failed: x.c:10\n\
             error: x.c: patch does not apply\n",
        );
        assert_eq!(
            message,
            "p.patch:9: patch does not apply: x.c: hunk #2 (@@ -10,3 +10,3 @@) does not match the source"
        );
    }
}
