//! Which comparisons set two variants that booted the same bzImage, byte
//! for byte, against each other: one fact every format words its own way.

use crate::base::sha256::Digest;
use crate::record::RunMeta;
use crate::stages::analysis::Analysis;

/// Two variants of one comparison (or one step of a series) that booted
/// the same bzImage.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct IdenticalBuild<'a> {
    pub baseline: &'a str,
    pub candidate: &'a str,
    /// The bzImage's SHA-256, as recorded.
    pub bzimage_sha256: &'a Digest,
    /// Whether they also booted with the same command line: then whatever
    /// the comparison measured is noise (an A/A test); else it measures
    /// their command lines alone.
    pub same_cmdline: bool,
}

/// Every comparison with the baseline, then every step of a series, whose
/// two variants booted the same bzImage. A run recorded before bzImages
/// were hashed has none.
pub fn identical_builds<'a>(meta: &'a RunMeta, analysis: &'a Analysis) -> Vec<IdenticalBuild<'a>> {
    let sha = |i: usize| {
        meta.kernels
            .get(i)
            .map(|k| &k.bzimage_sha256)
            .filter(|s| !s.as_str().is_empty())
    };
    let cmdline = |i: usize| meta.kernels.get(i).map(|k| k.cmdline.as_str());
    analysis
        .comparisons
        .iter()
        .chain(&analysis.steps)
        .filter_map(|c| {
            let (a, b) = (sha(c.baseline)?, sha(c.candidate)?);
            if a != b {
                return None;
            }
            let [baseline, candidate] = analysis.names(c);
            Some(IdenticalBuild {
                baseline,
                candidate,
                bzimage_sha256: a,
                same_cmdline: cmdline(c.baseline) == cmdline(c.candidate),
            })
        })
        .collect()
}
