//! Kernel fragments: the `NAME.config` a suite's `kernel = "NAME"` names and
//! the `base.config` under it, looked up among the user's files, never where
//! markbench was compiled.
//!
//! A suite's fragments are searched for, in order:
//!
//! 1. beside the suite: the directory its `[kernel] fragments` names
//!    (relative to the suite file), else the suite's own `vm-images/`
//!    (`<suite dir>/vm-images`), else `vm-images/` beside the suite's
//!    directory (`<suite dir>/../vm-images`, this repository's layout:
//!    `suites/` next to `vm-images/`);
//! 2. `vm-images/` in the current directory;
//! 3. the fragments markbench ships, built into the binary.
//!
//! Each file is looked up on its own, so a directory with one new fragment
//! takes `base.config` from further down the list. Where each came from is
//! printed by the dry run and recorded in `meta.toml` and the report.

use super::key_of;
use crate::base::error::InputError;
use std::path::{Path, PathBuf};

/// The base configuration every kernel starts from, under its variant's.
pub const BASE: &str = "base.config";

/// The base configuration of arm64 kernels, in place of [`BASE`]: the
/// same needs of the guest, in arm64's drivers (PL011, GIC, PSCI).
pub const BASE_ARM64: &str = "base-arm64.config";

/// The base fragment of kernels built for `arch`.
pub fn base_for(arch: crate::base::arch::Arch) -> &'static str {
    match arch {
        crate::base::arch::Arch::X86_64 => BASE,
        crate::base::arch::Arch::Arm64 => BASE_ARM64,
    }
}

/// The directory name fragments live in.
pub const DIR_NAME: &str = "vm-images";

/// The fragments markbench ships, as they were when it was built.
const BUILT_IN: &[(&str, &str)] = &[
    (
        "base-arm64.config",
        include_str!("../../../vm-images/base-arm64.config"),
    ),
    (
        "base.config",
        include_str!("../../../vm-images/base.config"),
    ),
    (
        "markers-generic.config",
        include_str!("../../../vm-images/markers-generic.config"),
    ),
    (
        "markers-off-generic.config",
        include_str!("../../../vm-images/markers-off-generic.config"),
    ),
    (
        "markers-off.config",
        include_str!("../../../vm-images/markers-off.config"),
    ),
    (
        "markers-on-full.config",
        include_str!("../../../vm-images/markers-on-full.config"),
    ),
    (
        "markers-on.config",
        include_str!("../../../vm-images/markers-on.config"),
    ),
    (
        "micro-generic.config",
        include_str!("../../../vm-images/micro-generic.config"),
    ),
    (
        "micro-optimized.config",
        include_str!("../../../vm-images/micro-optimized.config"),
    ),
    (
        "ringbuf-bench-validate.config",
        include_str!("../../../vm-images/ringbuf-bench-validate.config"),
    ),
    (
        "ringbuf-bench.config",
        include_str!("../../../vm-images/ringbuf-bench.config"),
    ),
];

/// Where a fragment came from.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Origin {
    File(PathBuf),
    /// Built into markbench.
    BuiltIn,
}

/// One fragment file's text and where it was found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Fragment {
    /// e.g. `markers-on.config`.
    pub file_name: String,
    pub origin: Origin,
    pub text: String,
}

/// What `meta.toml` records as the source of a built-in fragment.
pub const BUILT_IN_SOURCE: &str = "built in";

impl Fragment {
    /// Where it came from, as the dry run, `meta.toml` and the report say it:
    /// the file's path, or `built in`.
    pub fn source(&self) -> String {
        match &self.origin {
            Origin::File(path) => path.display().to_string(),
            Origin::BuiltIn => BUILT_IN_SOURCE.to_string(),
        }
    }

    /// A name for messages that point into the fragment (`LABEL:LINE`).
    pub fn label(&self) -> String {
        match &self.origin {
            Origin::File(path) => path.display().to_string(),
            Origin::BuiltIn => format!("built-in {DIR_NAME}/{}", self.file_name),
        }
    }

    /// The fragment's hash as kernel records and `meta.toml` keep it.
    pub fn sha256(&self) -> crate::base::sha256::Sha256 {
        key_of(&[("file", self.text.as_bytes())])
    }
}

/// A directory searched for fragments, and why it is.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchDir {
    pub path: PathBuf,
    pub why: &'static str,
}

/// The places a suite's fragments are looked up, in order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct FragmentSearch {
    /// Directories that exist, nearest first, each once.
    pub dirs: Vec<SearchDir>,
    /// Whether markbench's own fragments are the last resort.
    pub built_in: bool,
}

impl FragmentSearch {
    /// The search for a suite in `suite_dir` (`None`: the built-in suite)
    /// that names the fragment directory `named` (already resolved), run
    /// from `cwd`. Directories that do not exist are left out.
    pub fn for_suite(suite_dir: Option<&Path>, named: Option<&Path>, cwd: &Path) -> FragmentSearch {
        let mut candidates: Vec<SearchDir> = Vec::new();
        match (named, suite_dir) {
            (Some(named), _) => candidates.push(SearchDir {
                path: named.to_path_buf(),
                why: "named by the suite",
            }),
            (None, Some(dir)) => {
                candidates.push(SearchDir {
                    path: dir.join(DIR_NAME),
                    why: "the suite's own",
                });
                if let Some(parent) = dir.parent() {
                    candidates.push(SearchDir {
                        path: parent.join(DIR_NAME),
                        why: "beside the suite's directory",
                    });
                }
            }
            (None, None) => {}
        }
        candidates.push(SearchDir {
            path: cwd.join(DIR_NAME),
            why: "in the current directory",
        });
        let mut dirs: Vec<SearchDir> = Vec::new();
        let mut seen: Vec<PathBuf> = Vec::new();
        for c in candidates {
            let Ok(real) = std::fs::canonicalize(&c.path) else {
                continue;
            };
            if real.is_dir() && !seen.contains(&real) {
                seen.push(real);
                dirs.push(c);
            }
        }
        FragmentSearch {
            dirs,
            built_in: true,
        }
    }

    /// Exactly the fragments in `dir` (a run directory's copies), nothing else.
    pub fn only(dir: &Path, why: &'static str) -> FragmentSearch {
        FragmentSearch {
            dirs: vec![SearchDir {
                path: dir.to_path_buf(),
                why,
            }],
            built_in: false,
        }
    }

    /// The first fragment called `file_name` along the search, if any.
    pub fn find(&self, file_name: &str) -> crate::base::error::Result<Option<Fragment>> {
        for dir in &self.dirs {
            let path = dir.path.join(file_name);
            if path.is_file() {
                let text = crate::base::input_file::read_text(
                    &path,
                    crate::base::input_file::Bound::Record,
                )?;
                return Ok(Some(Fragment {
                    file_name: file_name.to_string(),
                    origin: Origin::File(path),
                    text,
                }));
            }
        }
        Ok(self.built_in.then_some(()).and_then(|()| {
            BUILT_IN
                .iter()
                .find(|(name, _)| *name == file_name)
                .map(|(name, text)| Fragment {
                    file_name: name.to_string(),
                    origin: Origin::BuiltIn,
                    text: text.to_string(),
                })
        }))
    }

    /// Every kernel name (`NAME` of a `NAME.config` other than the base)
    /// found anywhere along the search, sorted.
    pub fn kernel_names(&self) -> Vec<String> {
        let mut files: Vec<String> = Vec::new();
        for dir in &self.dirs {
            if let Ok(entries) = std::fs::read_dir(&dir.path) {
                files.extend(
                    entries
                        .flatten()
                        .filter(|e| e.path().is_file())
                        .map(|e| e.file_name().to_string_lossy().into_owned()),
                );
            }
        }
        if self.built_in {
            files.extend(BUILT_IN.iter().map(|(name, _)| name.to_string()));
        }
        let mut names: Vec<String> = files
            .iter()
            .filter_map(|f| f.strip_suffix(".config"))
            .filter(|stem| {
                crate::base::arch::Arch::ALL
                    .iter()
                    .all(|&arch| *stem != base_for(arch).trim_end_matches(".config"))
            })
            .map(str::to_string)
            .collect();
        names.sort();
        names.dedup();
        names
    }

    /// The base fragment and the fragment of kernel `name`, as found (an
    /// x86-64 kernel's; [`FragmentSearch::kernel_for`] any arch's).
    pub fn kernel(&self, name: &str) -> crate::base::error::Result<Vec<Fragment>> {
        self.kernel_for(name, crate::base::arch::Arch::X86_64)
    }

    /// The base fragment of `arch` and the fragment of kernel `name`, as found.
    pub fn kernel_for(
        &self,
        name: &str,
        arch: crate::base::arch::Arch,
    ) -> crate::base::error::Result<Vec<Fragment>> {
        [base_for(arch).to_string(), format!("{name}.config")]
            .iter()
            .map(|file| {
                self.find(file)?.ok_or_else(|| {
                    InputError::new(format!("kernel {name:?}: no {file} in {}", self.describe()))
                        .into()
                })
            })
            .collect()
    }

    /// The places searched, for messages: "A (why), B (why) or built in".
    pub fn describe(&self) -> String {
        let mut places: Vec<String> = self
            .dirs
            .iter()
            .map(|d| format!("{} ({})", d.path.display(), d.why))
            .collect();
        if self.built_in {
            places.push("markbench's built-in fragments".into());
        }
        match places.len() {
            0 => "nowhere (no fragment directory exists)".into(),
            1 => places.remove(0),
            _ => {
                let last = places.pop().unwrap_or_default();
                format!("{} or {last}", places.join(", "))
            }
        }
    }
}

/// The file names of the fragments markbench ships.
#[cfg(test)]
pub(crate) fn built_in_names() -> Vec<&'static str> {
    BUILT_IN.iter().map(|(name, _)| *name).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, name: &str, text: &str) -> PathBuf {
        std::fs::create_dir_all(dir).unwrap();
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    }

    #[test]
    fn the_built_in_fragments_are_the_shipped_files() {
        let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join(DIR_NAME);
        let mut on_disk: Vec<String> = std::fs::read_dir(&shipped)
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n.ends_with(".config"))
            .collect();
        on_disk.sort();
        assert_eq!(on_disk, built_in_names());
        for (name, text) in BUILT_IN {
            assert_eq!(std::fs::read_to_string(shipped.join(name)).unwrap(), *text);
        }
    }

    #[test]
    fn the_suites_own_fragments_come_first_then_the_current_directory_then_built_in() {
        let root = tempfile::tempdir().unwrap();
        let suites = root.path().join("bench/suites");
        std::fs::create_dir_all(&suites).unwrap();
        let beside = write(
            &root.path().join("bench/vm-images"),
            "markers-on.config",
            "CONFIG_A=y\n",
        );
        let cwd = root.path().join("elsewhere");
        let in_cwd = write(&cwd.join(DIR_NAME), "markers-on.config", "CONFIG_B=y\n");
        write(&cwd.join(DIR_NAME), "mine.config", "CONFIG_C=y\n");

        let search = FragmentSearch::for_suite(Some(&suites), None, &cwd);
        let on = search.find("markers-on.config").unwrap().unwrap();
        assert_eq!(on.origin, Origin::File(beside.clone()));
        assert_eq!(on.text, "CONFIG_A=y\n");
        assert!(search.find("mine.config").unwrap().is_some());
        let base = search.find(BASE).unwrap().unwrap();
        assert_eq!(base.origin, Origin::BuiltIn);
        assert_eq!(base.source(), "built in");
        assert!(search.find("nothing.config").unwrap().is_none());
        assert!(search.kernel_names().contains(&"mine".to_string()));

        // The suite's own vm-images/ comes before the one beside its directory.
        let own = write(&suites.join(DIR_NAME), "markers-on.config", "CONFIG_D=y\n");
        let search = FragmentSearch::for_suite(Some(&suites), None, &cwd);
        assert_eq!(
            search.find("markers-on.config").unwrap().unwrap().origin,
            Origin::File(own)
        );

        // The built-in suite has no directory: the current one, then built in.
        let search = FragmentSearch::for_suite(None, None, &cwd);
        assert_eq!(
            search.find("markers-on.config").unwrap().unwrap().origin,
            Origin::File(in_cwd)
        );
        let bare = FragmentSearch::for_suite(None, None, &root.path().join("nowhere"));
        assert_eq!(
            bare.find("markers-on.config").unwrap().unwrap().origin,
            Origin::BuiltIn
        );
        assert!(bare.dirs.is_empty());
    }

    #[test]
    fn a_directory_the_suite_names_replaces_the_ones_beside_it() {
        let root = tempfile::tempdir().unwrap();
        let suites = root.path().join("suites");
        write(&suites.join(DIR_NAME), "markers-on.config", "CONFIG_A=y\n");
        let named = root.path().join("kconfigs");
        let chosen = write(&named, "markers-on.config", "CONFIG_B=y\n");
        let search = FragmentSearch::for_suite(Some(&suites), Some(&named), root.path());
        assert_eq!(
            search.find("markers-on.config").unwrap().unwrap().origin,
            Origin::File(chosen)
        );
        assert_eq!(search.dirs.len(), 1, "{search:?}");
    }

    #[test]
    fn a_directory_is_searched_once_and_a_missing_kernel_says_where_it_was_looked_for() {
        let root = tempfile::tempdir().unwrap();
        let suites = root.path().join("suites");
        std::fs::create_dir_all(&suites).unwrap();
        write(&root.path().join(DIR_NAME), "x.config", "CONFIG_A=y\n");
        // Beside the suite's directory and the current directory are one here.
        let search = FragmentSearch::for_suite(Some(&suites), None, root.path());
        assert_eq!(search.dirs.len(), 1, "{search:?}");
        let e = search.kernel("missing").unwrap_err().to_string();
        assert!(e.contains("no missing.config in"), "{e}");
        assert!(
            e.contains(&root.path().join(DIR_NAME).display().to_string()),
            "{e}"
        );
        assert!(e.contains("built-in"), "{e}");
        let found = search.kernel("x").unwrap();
        assert_eq!(found[0].file_name, BASE);
        assert_eq!(found[1].text, "CONFIG_A=y\n");
    }

    #[test]
    fn only_searches_its_directory() {
        let root = tempfile::tempdir().unwrap();
        write(root.path(), "markers-on.config", "CONFIG_A=y\n");
        let search = FragmentSearch::only(root.path(), "kept with the run");
        assert!(search.find("markers-on.config").unwrap().is_some());
        assert!(search.find(BASE).unwrap().is_none());
        assert_eq!(search.kernel_names(), ["markers-on"]);
    }
}
