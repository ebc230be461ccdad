//! The record's own types for what `meta.toml` holds of the kernels'
//! origins and the guest image. The stages that build kernels and images
//! (`guest::images`) have types of their own for their caches; a run
//! records a copy ([`From`] below), so a change there cannot change
//! `meta.toml` unless it is made here too, with the run format.

use crate::base::sha256::{Digest, Sha256};
use crate::guest::images;
use crate::guest::workloads::kernel_compile;
use serde::{Deserialize, Serialize};

/// A patch file and its content hash.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct PatchRecord {
    /// The file's name, as it appears in messages and the report.
    pub name: String,
    pub sha256: Sha256,
}

/// What a kernel was built from: its source's path, the revision asked for,
/// the commit it resolved to and its subject, and the patches on top.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct OriginRecord {
    pub source: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rev: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub commit: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subject: Option<String>,
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub patches: Vec<PatchRecord>,
}

impl From<&images::source::OriginRecord> for OriginRecord {
    fn from(o: &images::source::OriginRecord) -> OriginRecord {
        OriginRecord {
            source: o.source.clone(),
            rev: o.rev.clone(),
            commit: o.commit.clone(),
            subject: o.subject.clone(),
            patches: o
                .patches
                .iter()
                .map(|p| PatchRecord {
                    name: p.name.clone(),
                    sha256: p.sha256.clone(),
                })
                .collect(),
        }
    }
}

/// The configuration a kernel started from.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum ConfigBase {
    Tinyconfig,
    Defconfig,
    /// A full `.config`: its path and the key of its text.
    File {
        path: String,
        sha256: Sha256,
    },
}

impl From<&images::kernel::KernelBase> for ConfigBase {
    fn from(base: &images::kernel::KernelBase) -> ConfigBase {
        match base {
            images::kernel::KernelBase::Tinyconfig => ConfigBase::Tinyconfig,
            images::kernel::KernelBase::Defconfig => ConfigBase::Defconfig,
            images::kernel::KernelBase::File { path, text } => ConfigBase::File {
                path: path.display().to_string(),
                sha256: images::key_of(&[("file", text.as_bytes())]),
            },
        }
    }
}

/// A kernel's source as its build identified it: what the build key is
/// made of when no commit is named.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum SourceRecord {
    /// A tarball: its file name and content hash.
    Tarball { file: String, sha256: Digest },
    /// A git tree: its path, the commit checked out, and the hash of its
    /// uncommitted changes (`git diff HEAD`).
    Tree {
        path: String,
        head: String,
        changes: Digest,
    },
}

impl SourceRecord {
    /// The source of the identity `KernelSource::identity` gives
    /// (`tarball FILE sha256 HEX`, `tree PATH HEAD COMMIT changes KEY`);
    /// `None` for any other words.
    pub fn of_identity(identity: &str) -> Option<SourceRecord> {
        if let Some(rest) = identity.strip_prefix("tarball ") {
            let (file, sha256) = rest.rsplit_once(" sha256 ")?;
            return Some(SourceRecord::Tarball {
                file: file.to_string(),
                sha256: sha256.into(),
            });
        }
        let rest = identity.strip_prefix("tree ")?;
        let (rest, changes) = rest.rsplit_once(" changes ")?;
        let (path, head) = rest.rsplit_once(" HEAD ")?;
        Some(SourceRecord::Tree {
            path: path.to_string(),
            head: head.to_string(),
            changes: changes.into(),
        })
    }
}

/// What a kernel compile compiles, as a run's overrides record it (the
/// command line's `--compile-scope`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum CompileScope {
    Subset,
    Full,
}

impl CompileScope {
    /// Its name, as in a suite and on the command line.
    pub fn name(self) -> &'static str {
        match self {
            CompileScope::Subset => "subset",
            CompileScope::Full => "full",
        }
    }
}

impl From<kernel_compile::CompileScope> for CompileScope {
    fn from(scope: kernel_compile::CompileScope) -> CompileScope {
        match scope {
            kernel_compile::CompileScope::Subset => CompileScope::Subset,
            kernel_compile::CompileScope::Full => CompileScope::Full,
        }
    }
}

impl From<CompileScope> for kernel_compile::CompileScope {
    fn from(scope: CompileScope) -> kernel_compile::CompileScope {
        match scope {
            CompileScope::Subset => kernel_compile::CompileScope::Subset,
            CompileScope::Full => kernel_compile::CompileScope::Full,
        }
    }
}

/// Two revisions of the kernel source, or a series, as a run's overrides
/// record them (the command line's `--revs`): written `A,B` or `BASE..TIP`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(try_from = "String", into = "String")]
pub enum RevSelection {
    /// `A,B`: A the baseline, B the candidate.
    Pair(String, String),
    /// `BASE..TIP`: BASE, then every commit after it up to TIP.
    Range { base: String, tip: String },
}

impl RevSelection {
    /// A series (`BASE..TIP`): each kernel is also compared with the one
    /// before it.
    pub fn is_series(&self) -> bool {
        matches!(self, RevSelection::Range { .. })
    }
}

impl std::fmt::Display for RevSelection {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            RevSelection::Pair(a, b) => write!(f, "{a},{b}"),
            RevSelection::Range { base, tip } => write!(f, "{base}..{tip}"),
        }
    }
}

impl TryFrom<String> for RevSelection {
    type Error = String;

    /// Read as `--revs` is, with its own message: the file, not the
    /// command line, holds it.
    fn try_from(text: String) -> Result<RevSelection, String> {
        images::source::parse_revs(&text)
            .map(RevSelection::from)
            .map_err(|_| format!("revs {text:?} is neither A,B nor BASE..TIP"))
    }
}

impl From<RevSelection> for String {
    fn from(selection: RevSelection) -> String {
        selection.to_string()
    }
}

impl From<images::source::RevSelection> for RevSelection {
    fn from(selection: images::source::RevSelection) -> RevSelection {
        match selection {
            images::source::RevSelection::Pair(a, b) => RevSelection::Pair(a, b),
            images::source::RevSelection::Range { base, tip } => RevSelection::Range { base, tip },
        }
    }
}

impl From<RevSelection> for images::source::RevSelection {
    fn from(selection: RevSelection) -> images::source::RevSelection {
        match selection {
            RevSelection::Pair(a, b) => images::source::RevSelection::Pair(a, b),
            RevSelection::Range { base, tip } => images::source::RevSelection::Range { base, tip },
        }
    }
}

/// One program or library of a guest image, and where it came from.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageFile {
    /// Its path on the host (and in the guest).
    pub path: String,
    /// `program`, `library` or `file`.
    pub kind: String,
    /// The Debian package that installed it and the package's version
    /// (empty when no package owns it, e.g. a program of the user's).
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub package: String,
    #[serde(default, skip_serializing_if = "String::is_empty")]
    pub version: String,
    pub sha256: Digest,
}

/// What a run's guest image held: what two runs' figures depend on besides
/// the kernels, QEMU and the suite (a library's other build changes the
/// instructions a benchmark executes, and so its icount figures).
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ImageRecord {
    /// SHA-256 over the base image and every archive appended to it, in
    /// order.
    pub sha256: Digest,
    pub files: Vec<ImageFile>,
}

impl From<&images::initramfs::ImageRecord> for ImageRecord {
    fn from(image: &images::initramfs::ImageRecord) -> ImageRecord {
        ImageRecord {
            sha256: image.sha256.clone(),
            files: image
                .files
                .iter()
                .map(|f| ImageFile {
                    path: f.path.clone(),
                    kind: f.kind.clone(),
                    package: f.package.clone(),
                    version: f.version.clone(),
                    sha256: f.sha256.clone(),
                })
                .collect(),
        }
    }
}

impl ImageRecord {
    /// The first 16 hex digits of the image's hash.
    pub fn short_sha(&self) -> &str {
        self.sha256.short()
    }

    /// What differs between this image's files and `other`'s, as the tail
    /// of a warning: `; PATH: PACKAGE VERSION (sha256 …) against …` for each
    /// file held in other bytes or by one image only.
    pub fn differing_files(&self, other: &ImageRecord) -> String {
        let describe = |f: Option<&ImageFile>| match f {
            None => "absent".to_string(),
            Some(f) if f.package.is_empty() => {
                format!("sha256 {}", f.sha256.short())
            }
            Some(f) => format!("{} {} (sha256 {})", f.package, f.version, f.sha256.short()),
        };
        let mut paths: Vec<&str> = self
            .files
            .iter()
            .chain(&other.files)
            .map(|f| f.path.as_str())
            .collect();
        paths.sort();
        paths.dedup();
        let differing: Vec<String> = paths
            .into_iter()
            .filter_map(|path| {
                let (x, y) = (
                    self.files.iter().find(|f| f.path == path),
                    other.files.iter().find(|f| f.path == path),
                );
                (x.map(|f| &f.sha256) != y.map(|f| &f.sha256))
                    .then(|| format!("{path}: {} against {}", describe(x), describe(y)))
            })
            .collect();
        if differing.is_empty() {
            " (the same programs and libraries: the agent or the image's layout changed)".into()
        } else {
            format!("; {}", differing.join("; "))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_record_s_compile_scopes_are_named_as_on_the_command_line() {
        for scope in [
            kernel_compile::CompileScope::Subset,
            kernel_compile::CompileScope::Full,
        ] {
            let name = clap::ValueEnum::to_possible_value(&scope)
                .unwrap()
                .get_name()
                .to_string();
            assert_eq!(CompileScope::from(scope).name(), name);
        }
    }

    #[test]
    fn a_source_s_identity_is_read_as_data_and_other_words_are_not() {
        let hash = "ab".repeat(32);
        assert_eq!(
            SourceRecord::of_identity(&format!("tarball linux 6.1.tar.xz sha256 {hash}")),
            Some(SourceRecord::Tarball {
                file: "linux 6.1.tar.xz".into(),
                sha256: hash.as_str().into(),
            })
        );
        assert_eq!(
            SourceRecord::of_identity("tree /src/my tree HEAD 0123abcd changes 5eed"),
            Some(SourceRecord::Tree {
                path: "/src/my tree".into(),
                head: "0123abcd".into(),
                changes: "5eed".into(),
            })
        );
        for other in ["test", "tree /src HEAD x", "tarball x.tar"] {
            assert_eq!(SourceRecord::of_identity(other), None, "{other}");
        }
    }

    #[test]
    fn revisions_read_as_the_command_line_writes_them() {
        for text in ["v6.1,v6.2", "v6.1..HEAD~1"] {
            let record = RevSelection::try_from(text.to_string()).unwrap();
            let given: images::source::RevSelection = text.parse().unwrap();
            assert_eq!(record, RevSelection::from(given.clone()));
            assert_eq!(images::source::RevSelection::from(record), given);
        }
        for bad in ["v6.1", "a,b,c", "..b", "a...b"] {
            assert!(RevSelection::try_from(bad.to_string()).is_err(), "{bad}");
        }
    }
}
