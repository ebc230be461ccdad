//! What the plugin writes at the end of a profiled boot: per timed region
//! (one per timed run, in the order the guest ran them), the instructions
//! executed in user space and at each kernel address, with the cycle model
//! also the model's counts in user space and per kernel block address; and
//! their attribution to the kernel's functions.

use super::symbols::SymbolMap;
use crate::base::error::InputError;
use serde::Deserialize;
use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// The plugin's first line.
pub const RAW_HEADER: &str = "# markbench-profile 1";
/// Its first line with the cycle model on: the same lines, and `model`
/// lines with the model's counts (read by `cycle_model`, skipped here).
pub const RAW_HEADER_MODEL: &str = "# markbench-profile 2";
/// Its first line with the cycle model's counts per block too: version 2's
/// lines, and lines of kind `user:COUNT` (address `-`) and `kernel:COUNT`
/// (a block's address) with the count the model made there.
pub const RAW_HEADER_MODEL_BLOCKS: &str = "# markbench-profile 3";

/// The bucket of every instruction executed in user space.
pub const USER_SPACE: &str = "[user space]";
/// The bucket of kernel addresses that lie in no function of the map.
pub const KERNEL_UNKNOWN: &str = "[kernel, outside any function]";

/// One timed region's counts.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Region {
    pub user: u64,
    /// (address, instructions executed there), ascending by address.
    pub kernel: Vec<(u64, u64)>,
    /// The cycle model's counts in user space, by the plugin's name of the
    /// count (`llc-misses`, `estimated-cycles`, …); empty without them.
    pub model_user: BTreeMap<String, u64>,
    /// The cycle model's counts by name: (block address, count), ascending
    /// by address.
    pub model_kernel: BTreeMap<String, Vec<(u64, u64)>>,
}

impl Region {
    pub fn total(&self) -> u64 {
        self.user + self.kernel.iter().map(|(_, n)| n).sum::<u64>()
    }
}

#[derive(Debug, Deserialize)]
struct Row {
    region: usize,
    kind: String,
    address: String,
    instructions: u64,
}

/// Parses the plugin's output; `file` names it in errors.
pub fn parse(text: &str, file: &Path) -> Result<Vec<Region>, InputError> {
    let first = text.lines().next();
    if first != Some(RAW_HEADER)
        && first != Some(RAW_HEADER_MODEL)
        && first != Some(RAW_HEADER_MODEL_BLOCKS)
    {
        return Err(InputError::at_line(
            file,
            1,
            format_args!("not a profile of markbench's plugin (expected {RAW_HEADER:?})"),
        ));
    }
    let mut reader = csv::ReaderBuilder::new()
        .delimiter(b'\t')
        .comment(Some(b'#'))
        .from_reader(text.as_bytes());
    let at = |e: &dyn std::fmt::Display, line: u64| InputError::at_line(file, line as usize, e);
    let headers = reader
        .headers()
        .map_err(|e| at(&e, e.position().map_or(2, |p| p.line())))?
        .clone();
    let mut regions: Vec<Region> = Vec::new();
    let mut record = csv::StringRecord::new();
    loop {
        match reader.read_record(&mut record) {
            Ok(true) => {}
            Ok(false) => break,
            Err(e) => return Err(at(&e, e.position().map_or(0, |p| p.line()))),
        }
        let line = record.position().map_or(0, |p| p.line());
        let row: Row = record
            .deserialize(Some(&headers))
            .map_err(|e| at(&e, line))?;
        if row.region > regions.len() {
            return Err(at(
                &format!("region {} before region {}", row.region, regions.len()),
                line,
            ));
        }
        if row.region == regions.len() {
            regions.push(Region::default());
        }
        let region = &mut regions[row.region];
        let address = || {
            u64::from_str_radix(&row.address, 16)
                .map_err(|_| at(&format!("bad address {:?}", row.address), line))
        };
        match row.kind.split_once(':') {
            None if row.kind == "user" => region.user += row.instructions,
            None if row.kind == "kernel" => region.kernel.push((address()?, row.instructions)),
            None if row.kind == "model" => {}
            Some(("user", count)) if !count.is_empty() => {
                *region.model_user.entry(count.to_string()).or_default() += row.instructions;
            }
            Some(("kernel", count)) if !count.is_empty() => {
                let address = address()?;
                let counts = region.model_kernel.entry(count.to_string()).or_default();
                if counts.last().is_some_and(|&(last, _)| last >= address) {
                    return Err(at(
                        &format!("{count} at {:?} out of order", row.address),
                        line,
                    ));
                }
                counts.push((address, row.instructions));
            }
            _ => return Err(at(&format!("unknown kind {:?}", row.kind), line)),
        }
    }
    Ok(regions)
}

/// Reads and parses the plugin's output file.
pub fn read(path: &Path) -> crate::base::error::Result<Vec<Region>> {
    let text = crate::base::input_file::read_text(path, crate::base::input_file::Bound::Text)?;
    Ok(parse(&text, path)?)
}

/// Adds a region's instructions, by function, into `into`: each kernel
/// address to the function containing it, user space to [`USER_SPACE`].
pub fn attribute(region: &Region, map: &SymbolMap, into: &mut BTreeMap<String, u64>) {
    attribute_counts(region.user, &region.kernel, map, into);
}

/// Adds a region's cycle-model counts, by function and then by the
/// plugin's name of the count, into `into`, as [`attribute`] does
/// instructions.
pub fn attribute_model(
    region: &Region,
    map: &SymbolMap,
    into: &mut BTreeMap<String, BTreeMap<String, u64>>,
) {
    let names: BTreeSet<&String> = region
        .model_user
        .keys()
        .chain(region.model_kernel.keys())
        .collect();
    for name in names {
        let user = region.model_user.get(name).copied().unwrap_or(0);
        let kernel = region.model_kernel.get(name).map_or(&[][..], Vec::as_slice);
        let mut by_function = BTreeMap::new();
        attribute_counts(user, kernel, map, &mut by_function);
        for (function, n) in by_function {
            *into
                .entry(function)
                .or_default()
                .entry(name.clone())
                .or_default() += n;
        }
    }
}

fn attribute_counts(
    user: u64,
    kernel: &[(u64, u64)],
    map: &SymbolMap,
    into: &mut BTreeMap<String, u64>,
) {
    if user > 0 {
        *into.entry(USER_SPACE.into()).or_default() += user;
    }
    // Addresses come sorted, so a function's instructions are adjacent:
    // sum each stretch before touching the map.
    let mut stretch: Option<(&str, u64)> = None;
    for &(address, n) in kernel {
        let name = map.lookup(address).unwrap_or(KERNEL_UNKNOWN);
        match &mut stretch {
            Some((current, count)) if *current == name => *count += n,
            _ => {
                if let Some((current, count)) = stretch.replace((name, n)) {
                    *into.entry(current.into()).or_default() += count;
                }
            }
        }
    }
    if let Some((current, count)) = stretch {
        *into.entry(current.into()).or_default() += count;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const RAW: &str = "# markbench-profile 1
region\tkind\taddress\tinstructions
0\tuser\t-\t100
0\tkernel\tffffffff81000000\t5
0\tkernel\tffffffff81000004\t5
0\tkernel\tffffffff81000040\t7
0\tkernel\tffffffff81000100\t3
1\tuser\t-\t0
1\tkernel\tffffffff81000044\t2
";

    #[test]
    fn regions_are_read_in_order_with_their_user_and_kernel_counts() {
        let regions = parse(RAW, Path::new("raw.tsv")).unwrap();
        assert_eq!(regions.len(), 2);
        assert_eq!(regions[0].user, 100);
        assert_eq!(regions[0].total(), 120);
        assert_eq!(regions[1].kernel, vec![(0xffffffff81000044, 2)]);
    }

    #[test]
    fn instructions_go_to_the_function_containing_their_address() {
        let map = SymbolMap::parse(
            "ffffffff81000000 T startup_64\nffffffff81000040 T memcpy\nffffffff81000100 T _etext\n",
            Path::new("System.map"),
        )
        .unwrap();
        let regions = parse(RAW, Path::new("raw.tsv")).unwrap();
        let mut by_function = BTreeMap::new();
        for r in &regions {
            attribute(r, &map, &mut by_function);
        }
        let expected: BTreeMap<String, u64> = [
            (USER_SPACE, 100),
            ("startup_64", 10),
            ("memcpy", 9),
            (KERNEL_UNKNOWN, 3),
        ]
        .into_iter()
        .map(|(k, v)| (k.to_string(), v))
        .collect();
        assert_eq!(by_function, expected);
        let total: u64 = regions.iter().map(Region::total).sum();
        assert_eq!(by_function.values().sum::<u64>(), total);
    }

    #[test]
    fn a_profile_with_the_cycle_model_reads_as_the_same_counts() {
        let with_model = RAW
            .replace(
                "# markbench-profile 1",
                "# markbench-profile 2\n# model cycles: …",
            )
            .replace(
                "0\tuser\t-\t100\n",
                "0\tuser\t-\t100\n0\tmodel\tuser:l1d-misses\t7\n",
            );
        assert_eq!(
            parse(&with_model, Path::new("raw.tsv")).unwrap(),
            parse(RAW, Path::new("raw.tsv")).unwrap()
        );
    }

    #[test]
    fn the_models_counts_per_block_go_to_the_function_of_the_block() {
        let blocks = RAW
            .replace("# markbench-profile 1", RAW_HEADER_MODEL_BLOCKS)
            .replace(
                "0\tkernel\tffffffff81000100\t3\n",
                "0\tkernel\tffffffff81000100\t3\n\
                 0\tuser:llc-misses\t-\t4\n\
                 0\tkernel:llc-misses\tffffffff81000000\t2\n\
                 0\tkernel:llc-misses\tffffffff81000040\t5\n\
                 0\tkernel:llc-misses\tffffffff81000044\t1\n\
                 0\tkernel:coherence-misses\tffffffff81000100\t6\n",
            );
        let regions = parse(&blocks, Path::new("raw.tsv")).unwrap();
        let plain = parse(RAW, Path::new("raw.tsv")).unwrap();
        assert_eq!(regions[0].total(), plain[0].total());
        assert_eq!(regions[0].kernel, plain[0].kernel);
        assert_eq!(regions[0].model_user["llc-misses"], 4);
        assert_eq!(regions[0].model_kernel["llc-misses"].len(), 3);
        assert!(regions[1].model_kernel.is_empty());
        let map = SymbolMap::parse(
            "ffffffff81000000 T startup_64\nffffffff81000040 T memcpy\nffffffff81000100 T _etext\n",
            Path::new("System.map"),
        )
        .unwrap();
        let mut by_function = BTreeMap::new();
        attribute_model(&regions[0], &map, &mut by_function);
        let count = |f: &str, c: &str| by_function[f][c];
        assert_eq!(count(USER_SPACE, "llc-misses"), 4);
        assert_eq!(count("startup_64", "llc-misses"), 2);
        assert_eq!(count("memcpy", "llc-misses"), 6);
        assert_eq!(count(KERNEL_UNKNOWN, "coherence-misses"), 6);
        assert!(!by_function["memcpy"].contains_key("coherence-misses"));

        let swapped = blocks.replace("ffffffff81000044\t1\n", "ffffffff81000004\t1\n");
        let e = parse(&swapped, Path::new("p.tsv")).unwrap_err();
        assert!(
            e.to_string().contains("p.tsv:11: llc-misses"),
            "{}",
            e.to_string()
        );
        let e = parse(
            &blocks.replace("user:llc-misses", "user:"),
            Path::new("p.tsv"),
        )
        .unwrap_err();
        assert!(
            e.to_string().contains("p.tsv:8: unknown kind"),
            "{}",
            e.to_string()
        );
    }

    #[test]
    fn bad_input_names_the_file_and_line() {
        let e = parse("garbage\n", Path::new("p.tsv")).unwrap_err();
        assert!(e.to_string().starts_with("p.tsv:1: "), "{}", e.to_string());
        let bad = RAW.replace("ffffffff81000040", "zz");
        let e = parse(&bad, Path::new("p.tsv")).unwrap_err();
        assert!(e.to_string().starts_with("p.tsv:6: "), "{}", e.to_string());
        let bad = RAW.replace("0\tuser\t-\t100", "3\tuser\t-\t100");
        let e = parse(&bad, Path::new("p.tsv")).unwrap_err();
        assert!(
            e.to_string().contains("region 3 before region 0"),
            "{}",
            e.to_string()
        );
    }
}
