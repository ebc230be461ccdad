//! Sizes of built kernels, read from their cached build directories: `size`
//! of vmlinux (text, data, bss), the bzImage's bytes, `size -A` (every
//! section), `size` of objects a suite names, and the kernel's own
//! `scripts/bloat-o-meter` between a baseline's and a candidate's vmlinux.
//!
//! Sizes need no boot and are exact, so they are measured once, when a run
//! starts, and kept in the run directory (`sizes.toml`): a report renders
//! them from there without the cache.
//!
//! bloat-o-meter sees symbols only. What has none it cannot see: the
//! record keeps every section (`size -A`) and every linker table, the bytes
//! between a `__start_X` and a `__stop_X` symbol. The tables matter because
//! vmlinux's linker script folds them into bigger output sections:
//! `__jump_table` (one 16-byte entry per static-key site, e.g. each
//! tracepoint call site) is a section in every object file but not in
//! vmlinux, where `size -A` shows it only as part of the growth of the
//! section that holds it.
//!
//! A tool that fails never stops a run: its failure is recorded, named, and
//! shown where its figures would have been.

use super::kernel::KernelImage;
use crate::base::error::bail;
use crate::base::error::{Context, Result};
use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;
use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::Command;

/// The run directory's record of sizes.
pub use crate::base::run_dir::SIZES_FILE;

/// `size`'s (Berkeley format) figures of one file, in bytes.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Berkeley {
    pub text: u64,
    pub data: u64,
    pub bss: u64,
}

impl Berkeley {
    /// What `size` prints as `dec`.
    pub fn total(&self) -> u64 {
        self.text + self.data + self.bss
    }
}

/// One section of `size -A`, or one linker table.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct Section {
    pub name: String,
    pub size: u64,
    /// Where it starts in the kernel's address space: a table lies inside
    /// the section whose addresses hold it. Hexadecimal in the record, since
    /// kernel addresses do not fit TOML's signed integers.
    #[serde(default, with = "hex_address")]
    pub addr: u64,
}

impl Section {
    /// Whether `other` starts inside this (non-empty) section.
    pub fn holds(&self, other: &Section) -> bool {
        self.size > 0 && self.addr <= other.addr && other.addr < self.addr.saturating_add(self.size)
    }
}

/// A `u64` as a `0x…` string.
mod hex_address {
    use serde::{de::Error, Deserialize, Deserializer, Serializer};

    pub fn serialize<S: Serializer>(v: &u64, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{v:#x}"))
    }

    pub fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<u64, D::Error> {
        let text = String::deserialize(d)?;
        let digits = text
            .strip_prefix("0x")
            .ok_or_else(|| D::Error::custom(format!("address {text:?} does not start with 0x")))?;
        u64::from_str_radix(digits, 16)
            .map_err(|_| D::Error::custom(format!("address {text:?} is not hexadecimal")))
    }
}

/// One symbol row of bloat-o-meter: its size before and after (`None`
/// where the symbol does not exist on that side) and the change.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct BloatRow {
    pub symbol: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub old: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub new: Option<u64>,
    pub delta: i64,
}

/// bloat-o-meter's output: its summary line
/// (`add/remove: A/R grow/shrink: G/S up/down: U/-D (NET)`), every row with a
/// change, largest growth first as it prints them, and its `Total:` line.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Bloat {
    pub add: u64,
    pub remove: u64,
    pub grow: u64,
    pub shrink: u64,
    pub up: u64,
    /// Bytes lost, as a positive number (the tool prints it negated).
    pub down: u64,
    pub net: i64,
    pub before: u64,
    pub after: u64,
    pub rows: Vec<BloatRow>,
}

impl Bloat {
    /// The summary line exactly as the tool prints it.
    pub fn summary_line(&self) -> String {
        format!(
            "add/remove: {}/{} grow/shrink: {}/{} up/down: {}/{} ({})",
            self.add,
            self.remove,
            self.grow,
            self.shrink,
            self.up,
            -(self.down as i64),
            self.net
        )
    }

    /// The `Total:` line exactly as the tool prints it (`%+.2f%%`).
    pub fn total_line(&self) -> String {
        let pct = if self.before == 0 {
            0.0
        } else {
            (self.after as f64 - self.before as f64) * 100.0 / self.before as f64
        };
        format!(
            "Total: Before={}, After={}, chg {pct:+.2}%",
            self.before, self.after
        )
    }

    /// The `n` rows with the largest changes either way, largest first;
    /// ties keep the tool's order.
    pub fn largest(&self, n: usize) -> Vec<&BloatRow> {
        let mut rows: Vec<&BloatRow> = self.rows.iter().collect();
        rows.sort_by_key(|r| std::cmp::Reverse(r.delta.unsigned_abs()));
        rows.truncate(n);
        rows
    }
}

/// An object a suite asked to size, in one kernel's build.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct ObjectSize {
    /// Relative to the build directory, as the suite names it.
    pub path: String,
    /// `None`: the kernel's build has no such object (e.g.
    /// `kernel/trace/ring_buffer.o` in a kernel without tracing).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub size: Option<Berkeley>,
}

/// One kernel's sizes.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct KernelSizes {
    pub variant: String,
    /// The kernel fragment it was built from.
    pub kernel: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vmlinux: Option<Berkeley>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bzimage_bytes: Option<u64>,
    /// `size -A vmlinux`, in the file's order, without its `Total` line.
    #[serde(default)]
    pub sections: Vec<Section>,
    /// Linker tables of vmlinux (`__start_X` … `__stop_X`), in address order.
    #[serde(default)]
    pub tables: Vec<Section>,
    #[serde(default)]
    pub objects: Vec<ObjectSize>,
    /// Gaps of [`PADDING_MIN`] bytes or more between the symbols of a
    /// section of vmlinux, in address order: alignment padding, which
    /// `size` counts in its section and bloat-o-meter in no symbol. Each is
    /// named by the symbol after it (`(end)` when it ends the section).
    /// `None` in records made before it was measured.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub padding: Option<Vec<Section>>,
    /// What could not be measured and why, one line each.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub errors: Vec<String>,
}

/// Sizes by name; a name that occurs twice (a section split in two)
/// counts both.
pub fn by_name(parts: &[Section]) -> BTreeMap<&str, u64> {
    let mut out = BTreeMap::new();
    for s in parts {
        *out.entry(s.name.as_str()).or_insert(0) += s.size;
    }
    out
}

impl KernelSizes {
    pub fn object(&self, path: &str) -> Option<&ObjectSize> {
        self.objects.iter().find(|o| o.path == path)
    }
}

/// One candidate against the baseline.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SizeComparison {
    pub baseline: String,
    pub candidate: String,
    /// bloat-o-meter of the two vmlinux files.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bloat: Option<Bloat>,
    /// Why there is no bloat-o-meter output.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bloat_error: Option<String>,
}

/// `sizes.toml`: every kernel's sizes (baseline first) and every candidate
/// compared with the baseline.
#[derive(Debug, Clone, Default, PartialEq, Serialize, Deserialize)]
pub struct SizeRecord {
    /// Objects the suite asked to size, in its order.
    #[serde(default)]
    pub objects: Vec<String>,
    #[serde(default, rename = "kernel")]
    pub kernels: Vec<KernelSizes>,
    #[serde(default, rename = "comparison")]
    pub comparisons: Vec<SizeComparison>,
}

impl SizeRecord {
    pub fn kernel(&self, variant: &str) -> Option<&KernelSizes> {
        self.kernels.iter().find(|k| k.variant == variant)
    }

    pub fn write(&self, dir: &Path) -> Result<()> {
        let path = dir.join(SIZES_FILE);
        std::fs::write(&path, toml::to_string(self)?)
            .with_context(|| format!("writing {}", path.display()))
    }

    /// The record of a run directory; `None` for a run made before sizes
    /// were recorded.
    pub fn read(dir: &Path) -> Result<Option<SizeRecord>> {
        let path = dir.join(SIZES_FILE);
        let Some(text) = crate::base::input_file::read_text_if_present(
            &path,
            crate::base::input_file::Bound::Record,
        )?
        else {
            return Ok(None);
        };
        Ok(Some(crate::base::input_file::parse_toml(
            &path,
            &text,
            "size record",
        )?))
    }
}

fn number<T: std::str::FromStr>(field: &str, what: &str, line: &str) -> Result<T> {
    field
        .parse()
        .map_err(|_| anyhow::anyhow!("{what} {field:?} is not a number in {line:?}").into())
}

/// Parses `size` (Berkeley format) output: one `(file name, sizes)` per row
/// after the header. `dec` is checked against text + data + bss.
pub fn parse_berkeley(output: &str) -> Result<Vec<(String, Berkeley)>> {
    let mut lines = output.lines().filter(|l| !l.trim().is_empty());
    match lines.next() {
        Some(header) if header.split_whitespace().next() == Some("text") => {}
        other => bail!("size: expected its `text data bss dec hex filename` header, got {other:?}"),
    }
    let mut out = Vec::new();
    for line in lines {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if fields.len() < 6 {
            bail!("size: expected text, data, bss, dec, hex and a file name in {line:?}");
        }
        let sizes = Berkeley {
            text: number(fields[0], "text", line)?,
            data: number(fields[1], "data", line)?,
            bss: number(fields[2], "bss", line)?,
        };
        let dec: u64 = number(fields[3], "dec", line)?;
        if dec != sizes.total() {
            bail!("size: dec {dec} is not text + data + bss in {line:?}");
        }
        out.push((fields[5..].join(" "), sizes));
    }
    if out.is_empty() {
        bail!("size: no file in its output");
    }
    Ok(out)
}

/// Parses `size -A` (System V format) output of one file: its sections in
/// order, without the `Total` line.
pub fn parse_sysv(output: &str) -> Result<Vec<Section>> {
    let mut sections = Vec::new();
    let mut in_table = false;
    for line in output.lines().filter(|l| !l.trim().is_empty()) {
        let fields: Vec<&str> = line.split_whitespace().collect();
        if !in_table {
            in_table = fields.first() == Some(&"section") && fields.get(1) == Some(&"size");
            continue;
        }
        match fields.as_slice() {
            ["Total", _] => return Ok(sections),
            [name, size, addr] => sections.push(Section {
                name: name.to_string(),
                size: number(size, "section size", line)?,
                addr: number(addr, "section address", line)?,
            }),
            _ => bail!("size -A: expected a section, its size and address in {line:?}"),
        }
    }
    if in_table {
        bail!("size -A: no `Total` line: the output was cut short");
    }
    bail!("size -A: no `section size addr` header in its output")
}

/// The fields of one line of `nm` (or `nm -S`) output, unparsed.
struct NmLine<'a> {
    address: &'a str,
    /// With `nm -S`, for symbols that have a size.
    size: Option<&'a str>,
    kind: &'a str,
    name: &'a str,
}

impl<'a> NmLine<'a> {
    /// `None` for an undefined symbol (two fields: it has no address) or a
    /// line that is not a symbol.
    fn of(line: &'a str) -> Option<NmLine<'a>> {
        match line.split_whitespace().collect::<Vec<_>>()[..] {
            [address, size, kind, name] => Some(NmLine {
                address,
                size: Some(size),
                kind,
                name,
            }),
            [address, kind, name] => Some(NmLine {
                address,
                size: None,
                kind,
                name,
            }),
            _ => None,
        }
    }
}

/// Parses `nm` output into the linker tables its symbols bound: every `X`
/// with both a `__start_X` and a `__stop_X` data symbol, and the bytes from
/// one to the other, in address order. Code symbols are not table bounds
/// (the tty driver has functions named `__start_tty` and `__stop_tty`).
pub fn parse_nm_tables(output: &str) -> Result<Vec<Section>> {
    let mut starts: BTreeMap<&str, u64> = BTreeMap::new();
    let mut stops: BTreeMap<&str, u64> = BTreeMap::new();
    let mut symbols = 0;
    for line in output.lines() {
        let Some(NmLine {
            address,
            kind,
            name,
            ..
        }) = NmLine::of(line)
        else {
            continue;
        };
        symbols += 1;
        let (bounds, table) = if let Some(x) = name.strip_prefix("__start_") {
            (&mut starts, x)
        } else if let Some(x) = name.strip_prefix("__stop_") {
            (&mut stops, x)
        } else {
            continue;
        };
        if matches!(kind, "t" | "T" | "w" | "W") {
            continue;
        }
        let address = u64::from_str_radix(address, 16).map_err(|_| {
            anyhow::anyhow!("nm: address {address:?} is not hexadecimal in {line:?}")
        })?;
        bounds.insert(table, address);
    }
    if symbols == 0 {
        bail!("nm: no symbols in its output");
    }
    let mut tables: Vec<(u64, Section)> = starts
        .iter()
        .filter_map(|(x, &start)| {
            let stop = *stops.get(x)?;
            (stop >= start).then(|| {
                (
                    start,
                    Section {
                        name: x.to_string(),
                        size: stop - start,
                        addr: start,
                    },
                )
            })
        })
        .collect();
    tables.sort_by(|a, b| a.0.cmp(&b.0).then_with(|| a.1.name.cmp(&b.1.name)));
    Ok(tables.into_iter().map(|(_, t)| t).collect())
}

/// The smallest gap between symbols that counts as padding: a page. Below
/// it are the few bytes that align one function or object after another.
pub const PADDING_MIN: u64 = 4096;

/// The alignment padding of at least `min` bytes inside each of
/// `sections`, from `nm -n -S` (symbols in address order, with sizes): a
/// gap from the end of the symbols so far to the next symbol's address (or
/// to the section's end) that ends on a boundary of a power of two larger
/// than the gap, as an `ALIGN()` of the linker script leaves it. Bytes in no
/// symbol that end elsewhere are data without a name (string literals, the
/// entries of a linker table), not padding. Absolute symbols (`a`/`A`) mark
/// no bytes and are skipped.
pub fn parse_nm_gaps(output: &str, sections: &[Section], min: u64) -> Result<Vec<Section>> {
    let mut symbols = Vec::new();
    for line in output.lines() {
        let Some(NmLine {
            address,
            size,
            kind,
            name,
        }) = NmLine::of(line)
        else {
            continue;
        };
        if matches!(kind, "a" | "A") {
            continue;
        }
        let hex = |what: &str, field: &str| {
            u64::from_str_radix(field, 16)
                .map_err(|_| anyhow::anyhow!("nm: {what} {field:?} is not hexadecimal in {line:?}"))
        };
        let address = hex("address", address)?;
        let size = size.map(|s| hex("size", s)).transpose()?.unwrap_or(0);
        symbols.push((address, size, name));
    }
    if symbols.is_empty() {
        bail!("nm: no symbols in its output");
    }
    symbols.sort_by_key(|&(address, size, _)| (address, size));
    let mut gaps = Vec::new();
    for section in sections.iter().filter(|s| s.size > 0) {
        let end = section.addr.saturating_add(section.size);
        let mut covered = section.addr;
        let inside = symbols
            .iter()
            .filter(|(address, _, _)| section.addr <= *address && *address < end);
        let padding = |from: u64, to: u64| {
            let gap = to.saturating_sub(from);
            gap >= min && to.is_multiple_of((gap + 1).next_power_of_two())
        };
        for &(address, size, name) in inside {
            if padding(covered, address) {
                gaps.push(Section {
                    name: name.to_string(),
                    size: address - covered,
                    addr: covered,
                });
            }
            covered = covered.max(address.saturating_add(size));
        }
        if padding(covered, end) {
            gaps.push(Section {
                name: "(end)".into(),
                size: end - covered,
                addr: covered,
            });
        }
    }
    gaps.sort_by_key(|g| g.addr);
    Ok(gaps)
}

/// `U/-D` → (U, D); `A/R` → (A, R).
fn pair(field: Option<&str>, what: &str, line: &str) -> Result<(u64, u64)> {
    let Some((a, b)) = field.and_then(|f| f.split_once('/')) else {
        bail!("bloat-o-meter: no {what} pair in {line:?}");
    };
    Ok((
        number(a, what, line)?,
        number(b.trim_start_matches('-'), what, line)?,
    ))
}

/// Parses `scripts/bloat-o-meter OLD NEW` (one symbol class: run without
/// `-c`). The rows are checked against the summary: their changes must add
/// up to its net change.
pub fn parse_bloat_o_meter(output: &str) -> Result<Bloat> {
    let mut lines = output.lines().filter(|l| !l.trim().is_empty());
    let summary = lines
        .find(|l| l.starts_with("add/remove:"))
        .context("bloat-o-meter: no `add/remove:` summary line in its output")?;
    let f: Vec<&str> = summary.split_whitespace().collect();
    if f.len() != 7 || f[2] != "grow/shrink:" || f[4] != "up/down:" {
        bail!("bloat-o-meter: unexpected summary line {summary:?}");
    }
    let (add, remove) = pair(f.get(1).copied(), "add/remove", summary)?;
    let (grow, shrink) = pair(f.get(3).copied(), "grow/shrink", summary)?;
    let (up, down) = pair(f.get(5).copied(), "up/down", summary)?;
    let net: i64 = number(
        f[6].trim_start_matches('(').trim_end_matches(')'),
        "net",
        summary,
    )?;
    // The column header (`Function old new delta`).
    lines.next();
    let mut rows = Vec::new();
    for line in lines {
        if let Some(total) = line.strip_prefix("Total: ") {
            let mut before = None;
            let mut after = None;
            for part in total.split(", ") {
                if let Some(v) = part.strip_prefix("Before=") {
                    before = Some(number(v, "Before", line)?);
                } else if let Some(v) = part.strip_prefix("After=") {
                    after = Some(number(v, "After", line)?);
                }
            }
            let (Some(before), Some(after)) = (before, after) else {
                bail!("bloat-o-meter: no Before= and After= in {line:?}");
            };
            let sum: i64 = rows.iter().map(|r: &BloatRow| r.delta).sum();
            if sum != net {
                bail!("bloat-o-meter: its rows add up to {sum}, its summary says {net}");
            }
            return Ok(Bloat {
                add,
                remove,
                grow,
                shrink,
                up,
                down,
                net,
                before,
                after,
                rows,
            });
        }
        let fields: Vec<&str> = line.split_whitespace().collect();
        let n = fields.len();
        if n < 4 {
            bail!("bloat-o-meter: expected a symbol, old, new and delta in {line:?}");
        }
        let side = |v: &str| -> Result<Option<u64>> {
            if v == "-" {
                Ok(None)
            } else {
                number(v, "size", line).map(Some)
            }
        };
        rows.push(BloatRow {
            symbol: fields[..n - 3].join(" "),
            old: side(fields[n - 3])?,
            new: side(fields[n - 2])?,
            delta: number(fields[n - 1].trim_start_matches('+'), "delta", line)?,
        });
    }
    bail!("bloat-o-meter: no `Total:` line: the output was cut short")
}

/// Runs a tool and returns its standard output and error; a tool that
/// cannot start or fails is an error naming it and what it said.
fn run_tool(what: &str, command: &mut Command) -> Result<(String, String)> {
    let out = command
        .output()
        .with_context(|| format!("cannot run {what}"))?;
    if !out.status.success() {
        bail!(
            "{what} failed ({}): {}",
            out.status,
            String::from_utf8_lossy(&out.stderr).trim()
        );
    }
    Ok((
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    ))
}

fn size_of(path: &Path, sysv: bool) -> Result<String> {
    let mut command = Command::new("size");
    if sysv {
        command.arg("-A");
    }
    command.arg(path);
    let what = format!(
        "`size{} {}` (binutils)",
        if sysv { " -A" } else { "" },
        path.display()
    );
    run_tool(&what, &mut command).map(|(stdout, _)| stdout)
}

/// `size` of one file.
pub fn berkeley_of(path: &Path) -> Result<Berkeley> {
    let rows = parse_berkeley(&size_of(path, false)?)?;
    Ok(rows[0].1)
}

/// The vmlinux of a cached kernel, which its kept build directory holds.
fn vmlinux_of(image: &KernelImage) -> Result<PathBuf> {
    let path = image.build_dir().join("vmlinux");
    if !path.is_file() {
        bail!(
            "{}: no vmlinux (the kernel's build directory was not kept in the cache)",
            path.display()
        );
    }
    Ok(path)
}

/// The value, or `None` with the failure kept in `errors`.
fn kept<T>(errors: &mut Vec<String>, result: Result<T>) -> Option<T> {
    result.map_err(|e| errors.push(format!("{e:#}"))).ok()
}

/// Measures one kernel: `size`, `size -A` and the linker tables (`nm`) of
/// its vmlinux, its bzImage's bytes, and `size` of each of `objects` (paths relative to the build
/// directory) that its build has. Failures are recorded, not returned.
pub fn measure(variant: &str, image: &KernelImage, objects: &[String]) -> KernelSizes {
    let mut errors = Vec::new();
    let vmlinux = kept(&mut errors, vmlinux_of(image));
    let berkeley = vmlinux
        .as_ref()
        .and_then(|v| kept(&mut errors, berkeley_of(v)));
    let sections = vmlinux
        .as_ref()
        .and_then(|v| {
            kept(
                &mut errors,
                size_of(v, true).and_then(|out| parse_sysv(&out)),
            )
        })
        .unwrap_or_default();
    let nm = vmlinux.as_ref().and_then(|v| {
        let nm = run_tool(
            &format!("`nm -n -S {}` (binutils)", v.display()),
            Command::new("nm").args(["-n", "-S"]).arg(v),
        );
        kept(&mut errors, nm.map(|(out, _)| out))
    });
    let tables = nm
        .as_ref()
        .and_then(|out| kept(&mut errors, parse_nm_tables(out)))
        .unwrap_or_default();
    let padding = nm
        .as_ref()
        .filter(|_| !sections.is_empty())
        .and_then(|out| kept(&mut errors, parse_nm_gaps(out, &sections, PADDING_MIN)));
    let bzimage_bytes = kept(
        &mut errors,
        std::fs::metadata(&image.bzimage)
            .map(|m| m.len())
            .with_context(|| format!("{}", image.bzimage.display())),
    );
    let mut sized = Vec::new();
    for object in objects {
        let path = image.build_dir().join(object);
        if !path.is_file() {
            sized.push(ObjectSize {
                path: object.clone(),
                size: None,
            });
        } else if let Some(b) = kept(&mut errors, berkeley_of(&path)) {
            sized.push(ObjectSize {
                path: object.clone(),
                size: Some(b),
            });
        }
    }
    KernelSizes {
        variant: variant.to_string(),
        kernel: image.name.clone(),
        vmlinux: berkeley,
        bzimage_bytes,
        sections,
        tables,
        objects: sized,
        padding,
        errors,
    }
}

/// `scripts/bloat-o-meter` of the kernel source `tree`, baseline vmlinux
/// against candidate vmlinux.
pub fn bloat_o_meter(
    tree: &Path,
    baseline: &KernelImage,
    candidate: &KernelImage,
) -> Result<Bloat> {
    let (old, new) = (vmlinux_of(baseline)?, vmlinux_of(candidate)?);
    let script = tree.join("scripts/bloat-o-meter");
    let mut command = Command::new("python3");
    command
        .arg(&script)
        .args([OsStr::new(&old), OsStr::new(&new)]);
    let what = format!("`python3 {}` (needs nm from binutils)", script.display());
    let (out, err) = run_tool(&what, &mut command)?;
    let bloat = parse_bloat_o_meter(&out)?;
    // The script reads symbols through nm and carries on when nm fails:
    // a kernel has symbols, so none on either side is that failure.
    if bloat.before == 0 && bloat.after == 0 {
        bail!(
            "{what} counted no symbols in either vmlinux: {}",
            err.trim()
        );
    }
    Ok(bloat)
}

/// Every kernel's sizes (`variants[i]` names `kernels[i]`, the baseline
/// first) and every candidate against the baseline. `tree` is the source
/// the kernels were built from (for bloat-o-meter), or why there is none.
pub fn record(
    variants: &[String],
    kernels: &[KernelImage],
    objects: &[String],
    tree: Result<&Path, String>,
) -> SizeRecord {
    let sizes: Vec<KernelSizes> = variants
        .iter()
        .zip(kernels)
        .map(|(v, k)| measure(v, k, objects))
        .collect();
    let mut comparisons = Vec::new();
    if let (Some(base_name), Some(base)) = (variants.first(), kernels.first()) {
        for (name, kernel) in variants.iter().zip(kernels).skip(1) {
            let bloat = match &tree {
                Ok(tree) => bloat_o_meter(tree, base, kernel).map_err(|e| format!("{e:#}")),
                Err(why) => Err(why.clone()),
            };
            let (bloat, bloat_error) = match bloat {
                Ok(b) => (Some(b), None),
                Err(e) => (None, Some(e)),
            };
            comparisons.push(SizeComparison {
                baseline: base_name.clone(),
                candidate: name.clone(),
                bloat,
                bloat_error,
            });
        }
    }
    SizeRecord {
        objects: objects.to_vec(),
        kernels: sizes,
        comparisons,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Output captured from the cached markers-off and markers-on kernels
    /// (Debian's linux-source-6.1, gcc 12, binutils 2.40).
    fn captured(name: &str) -> String {
        let path = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures/sizes")
            .join(name);
        std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()))
    }

    #[test]
    fn size_of_vmlinux_reads_text_data_and_bss() {
        let rows = parse_berkeley(&captured("markers-off.size.txt")).unwrap();
        assert_eq!(rows.len(), 1);
        let (file, b) = &rows[0];
        assert_eq!(file, "vmlinux");
        assert_eq!(
            *b,
            Berkeley {
                text: 6585365,
                data: 2141816,
                bss: 499712
            }
        );
        assert_eq!(b.total(), 9226893);
    }

    #[test]
    fn size_output_that_does_not_add_up_or_is_not_size_is_refused() {
        let two = "   text\t   data\t    bss\t    dec\t    hex\tfilename\n\
                   16554\t24\t12\t16590\t40ce\tkernel/trace/ring_buffer.o\n\
                   16538\t24\t12\t16574\t40be\tring buffer.o\n";
        let rows = parse_berkeley(two).unwrap();
        assert_eq!(rows[1].0, "ring buffer.o");
        assert_eq!(rows[0].1.total(), 16590);
        let e = parse_berkeley(&two.replace("16590", "16591")).unwrap_err();
        assert!(
            e.to_string().contains("dec 16591 is not text + data + bss"),
            "{e}"
        );
        let e = parse_berkeley("size: 'x': No such file\n").unwrap_err();
        assert!(e.to_string().contains("header"), "{e}");
        let header_only = two.lines().next().unwrap();
        assert!(parse_berkeley(header_only).is_err());
    }

    #[test]
    fn size_a_reads_every_section_in_order_without_the_total() {
        let sections = parse_sysv(&captured("markers-off.size-A.txt")).unwrap();
        assert_eq!(sections.len(), 25);
        assert_eq!(
            sections[0],
            Section {
                name: ".text".into(),
                size: 6291728,
                addr: 0xffffffff81000000
            }
        );
        assert_eq!(sections[24].name, ".comment");
        assert!(sections.iter().any(|s| s.name == ".data..percpu"));
        assert!(sections.iter().all(|s| s.name != "Total"));
        let total: u64 = sections.iter().map(|s| s.size).sum();
        assert_eq!(total, 9226932, "the file's own Total line");
    }

    #[test]
    fn size_a_output_cut_short_is_refused() {
        let text = captured("markers-off.size-A.txt");
        let cut: String = text.lines().take(5).map(|l| format!("{l}\n")).collect();
        let e = parse_sysv(&cut).unwrap_err();
        assert!(e.to_string().contains("cut short"), "{e}");
        assert!(parse_sysv("").is_err());
        let e = parse_sysv(&text.replace("6291728", "62x1728")).unwrap_err();
        assert!(e.to_string().contains("not a number"), "{e}");
    }

    #[test]
    fn linker_tables_are_the_bytes_between_start_and_stop_data_symbols() {
        let off = parse_nm_tables(&captured("markers-off.nm-start-stop.txt")).unwrap();
        let on = parse_nm_tables(&captured("markers-on.nm-start-stop.txt")).unwrap();
        let size =
            |tables: &[Section], name: &str| tables.iter().find(|t| t.name == name).map(|t| t.size);
        // 16 bytes an entry: 373 static-key sites without tracing, 1702 with.
        assert_eq!(size(&off, "__jump_table"), Some(5968));
        assert_eq!(size(&on, "__jump_table"), Some(27232));
        assert_eq!(size(&off, "__tracepoints_ptrs"), Some(0));
        assert_eq!(size(&on, "__tracepoints_ptrs"), Some(1260));
        assert_eq!(size(&off, "ftrace_events"), None);
        assert_eq!(size(&on, "ftrace_events"), Some(2576));
        // The tty driver's functions __start_tty and __stop_tty bound no table.
        assert_eq!(size(&on, "tty"), None);
        // In address order, each where its __start_ symbol is.
        assert_eq!(on[0].name, "__jump_table");
        assert_eq!(on[0].addr, 0xffffffff81abf720);
        assert!(on.windows(2).all(|w| w[0].addr <= w[1].addr));
        // It lies inside .rodata (the kernel's ro_after_init data), which
        // `size -A` shows but cannot split.
        let sections = parse_sysv(&captured("markers-on.size-A.txt")).unwrap();
        let holder: Vec<&str> = sections
            .iter()
            .filter(|s| s.holds(&on[0]))
            .map(|s| s.name.as_str())
            .collect();
        assert_eq!(holder, [".rodata"]);
    }

    #[test]
    fn padding_is_the_page_or_larger_gaps_between_a_sections_symbols() {
        let mut nm = String::new();
        std::io::Read::read_to_string(
            &mut flate2::read::GzDecoder::new(
                std::fs::File::open(
                    std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
                        .join("tests/fixtures/sizes/markers-off.nm-n-S.txt.gz"),
                )
                .unwrap(),
            ),
            &mut nm,
        )
        .unwrap();
        let sections = parse_sysv(&captured("markers-off.size-A.txt")).unwrap();
        let gaps = parse_nm_gaps(&nm, &sections, PADDING_MIN).unwrap();
        let text = &sections[0];
        let in_text: Vec<&Section> = gaps.iter().filter(|g| text.holds(g)).collect();
        // x86's linker script aligns the entry code to 2 MiB on both sides:
        // the code before it ends at 0x…813d66b0, the entry code at
        // 0x…8140122b, and the next code starts at 0x…81600000 (a gap is
        // named by the first symbol at its end: marker symbols, of no size,
        // come first).
        let named: Vec<(&str, u64)> = in_text.iter().map(|g| (g.name.as_str(), g.size)).collect();
        assert_eq!(
            named,
            [
                ("__entry_text_start", 170320),
                ("__softirqentry_text_start", 2092501)
            ]
        );
        assert_eq!(in_text[0].addr, 0xffffffff813d66b0);
        assert_eq!(in_text[0].addr + in_text[0].size, 0xffffffff81400000);
        assert!(gaps.iter().all(|g| g.size >= PADDING_MIN));
        assert!(gaps.windows(2).all(|w| w[0].addr <= w[1].addr));
        // The tables' parser reads the same output.
        let tables = parse_nm_tables(&nm).unwrap();
        let jump = tables.iter().find(|t| t.name == "__jump_table").unwrap();
        assert_eq!(jump.size, 5968);
    }

    #[test]
    fn padding_ends_on_an_alignment_and_skips_absolute_symbols() {
        let sections = [
            Section {
                name: ".text".into(),
                size: 0x3000,
                addr: 0x1000,
            },
            Section {
                name: ".data".into(),
                size: 0x100,
                addr: 0x8000,
            },
        ];
        let nm = "0000000000000000 A absolute\n\
                  0000000000001000 0000000000000010 T first\n\
                  0000000000001008 0000000000000100 T overlapping\n\
                  0000000000001108 T no_size\n\
                  0000000000002000 0000000000000010 T aligned\n\
                  0000000000003100 0000000000000010 T after_strings\n\
                  0000000000008000 0000000000000004 D small\n\
                  \x20                U undefined\n";
        let gaps = parse_nm_gaps(nm, &sections, 0x100).unwrap();
        let got: Vec<(&str, u64, u64)> = gaps
            .iter()
            .map(|g| (g.name.as_str(), g.addr, g.size))
            .collect();
        // 0x2010…0x3100 ends on no boundary of 8 KiB: data without a name.
        // .data's last 0xfc bytes are below the minimum.
        assert_eq!(got, [("aligned", 0x1108, 0xef8), ("(end)", 0x3110, 0xef0)]);
        let e = parse_nm_gaps("", &sections, 1).unwrap_err();
        assert!(e.to_string().contains("no symbols"), "{e}");
        let e = parse_nm_gaps("00000000000010zz 10 T x\n", &sections, 1).unwrap_err();
        assert!(e.to_string().contains("not hexadecimal"), "{e}");
    }

    #[test]
    fn nm_output_that_is_not_nm_is_refused() {
        let e = parse_nm_tables("").unwrap_err();
        assert!(e.to_string().contains("no symbols"), "{e}");
        let e = parse_nm_tables("zzzz D __start_x\n").unwrap_err();
        assert!(e.to_string().contains("not hexadecimal"), "{e}");
        let tables = parse_nm_tables(
            "                 U undefined\n0000000000000010 D __stop_x\n\
             0000000000000000 D __start_x\n0000000000000008 D __start_only\n",
        )
        .unwrap();
        assert_eq!(
            tables,
            [Section {
                name: "x".into(),
                size: 16,
                addr: 0
            }]
        );
    }

    #[test]
    fn bloat_o_meter_output_is_read_whole_and_prints_back_the_same() {
        let text = captured("bloat-o-meter.txt");
        let bloat = parse_bloat_o_meter(&text).unwrap();
        let lines: Vec<&str> = text.lines().collect();
        assert_eq!(bloat.summary_line(), lines[0]);
        assert_eq!(bloat.total_line(), *lines.last().unwrap());
        assert_eq!(
            (bloat.add, bloat.remove, bloat.grow, bloat.shrink),
            (5282, 16, 743, 109)
        );
        assert_eq!((bloat.up, bloat.down, bloat.net), (671040, 7443, 663597));
        // Every line between the header and the Total line is a row.
        assert_eq!(bloat.rows.len(), lines.len() - 3);
        assert_eq!(
            bloat.rows[0],
            BloatRow {
                symbol: "ftrace_stacks".into(),
                old: None,
                new: Some(32768),
                delta: 32768
            }
        );
        let last = bloat.rows.last().unwrap();
        assert_eq!((last.old, last.new, last.delta), (Some(809), None, -809));
        // A symbol name past the 40-column field still parses.
        assert!(bloat.rows.iter().any(|r| r.symbol
            == "print_fmt_mm_vmscan_direct_reclaim_begin_template"
            && r.new == Some(2999)));
        assert_eq!(
            bloat.rows.iter().filter(|r| r.old.is_none()).count() as u64,
            bloat.add
        );
        let largest = bloat.largest(3);
        assert_eq!(largest[0].symbol, "ftrace_stacks");
        assert!(largest
            .windows(2)
            .all(|w| w[0].delta.abs() >= w[1].delta.abs()));
    }

    #[test]
    fn bloat_o_meter_output_cut_short_or_inconsistent_is_refused() {
        let text = captured("bloat-o-meter.txt");
        let cut: String = text.lines().take(50).map(|l| format!("{l}\n")).collect();
        let e = parse_bloat_o_meter(&cut).unwrap_err();
        assert!(e.to_string().contains("cut short"), "{e}");
        let tampered = text.replacen("+32768", "+32769", 1);
        let e = parse_bloat_o_meter(&tampered).unwrap_err();
        assert!(e.to_string().contains("add up to 663598"), "{e}");
        let e = parse_bloat_o_meter("Traceback (most recent call last):\n").unwrap_err();
        assert!(e.to_string().contains("no `add/remove:` summary"), "{e}");
    }

    fn image(dir: &Path, name: &str) -> KernelImage {
        KernelImage {
            base: String::new(),
            name: name.into(),
            key: "k".into(),
            dir: dir.to_path_buf(),
            bzimage: dir.join("bzImage"),
            config: dir.join("config"),
            build_log: dir.join("build.log"),
            source_identity: "test".into(),
            compiler: "gcc".into(),
            fragment_sha256: Default::default(),
            config_sha256: "0".into(),
            build_seconds: 0.0,
            source_files_rebuilt: None,
            ..Default::default()
        }
    }

    #[test]
    fn a_kernel_without_its_build_directory_records_why() {
        let dir = tempfile::tempdir().unwrap();
        std::fs::write(dir.path().join("bzImage"), [0u8; 1234]).unwrap();
        let sizes = measure(
            "off",
            &image(dir.path(), "markers-off"),
            &["init/main.o".into()],
        );
        assert_eq!(sizes.bzimage_bytes, Some(1234));
        assert_eq!(sizes.vmlinux, None);
        assert!(sizes.sections.is_empty());
        assert_eq!(sizes.errors.len(), 1, "{:?}", sizes.errors);
        assert!(
            sizes.errors[0].contains("no vmlinux (the kernel's build directory was not kept"),
            "{:?}",
            sizes.errors
        );
        // Its build has no objects at all: absent, not an error.
        assert_eq!(sizes.objects[0].size, None);
    }

    #[test]
    fn a_kernels_build_is_measured_with_size() {
        let dir = tempfile::tempdir().unwrap();
        let build = dir.path().join("build");
        std::fs::create_dir_all(build.join("kernel/trace")).unwrap();
        // Any ELF file does for `size`: this test's own executable.
        let elf = std::env::current_exe().unwrap();
        std::os::unix::fs::symlink(&elf, build.join("vmlinux")).unwrap();
        std::os::unix::fs::symlink(&elf, build.join("kernel/trace/ring_buffer.o")).unwrap();
        std::fs::write(dir.path().join("bzImage"), [0u8; 10]).unwrap();
        let objects = ["kernel/trace/ring_buffer.o".into(), "init/main.o".into()];
        let sizes = measure("on", &image(dir.path(), "markers-on"), &objects);
        assert!(sizes.errors.is_empty(), "{:?}", sizes.errors);
        assert!(sizes.padding.is_some());
        assert_eq!(
            (sizes.variant.as_str(), sizes.kernel.as_str()),
            ("on", "markers-on")
        );
        let vmlinux = sizes.vmlinux.unwrap();
        assert!(vmlinux.text > 0);
        assert!(sizes
            .sections
            .iter()
            .any(|s| s.name == ".text" && s.size > 0));
        assert_eq!(sizes.bzimage_bytes, Some(10));
        assert_eq!(sizes.objects[0].size, Some(vmlinux));
        assert_eq!(
            sizes.objects[1],
            ObjectSize {
                path: "init/main.o".into(),
                size: None
            }
        );
    }

    #[test]
    fn a_failing_bloat_o_meter_is_recorded_and_the_sizes_kept() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a"), dir.path().join("b"));
        for d in [&a, &b] {
            std::fs::create_dir_all(d.join("build")).unwrap();
            std::fs::write(d.join("bzImage"), b"x").unwrap();
            // Not an ELF file: size fails on it and says so.
            std::fs::write(d.join("build/vmlinux"), b"not an ELF file").unwrap();
        }
        let kernels = [image(&a, "markers-off"), image(&b, "markers-on")];
        let variants = ["off".to_string(), "on".to_string()];
        let empty_tree = tempfile::tempdir().unwrap();
        let r = record(&variants, &kernels, &[], Ok(empty_tree.path()));
        assert_eq!(r.kernels.len(), 2);
        assert_eq!(r.kernels[1].bzimage_bytes, Some(1));
        assert!(
            r.kernels[0].errors.iter().any(|e| e.contains("`size ")),
            "{:?}",
            r.kernels[0].errors
        );
        assert_eq!(r.comparisons.len(), 1);
        let c = &r.comparisons[0];
        assert_eq!((c.baseline.as_str(), c.candidate.as_str()), ("off", "on"));
        assert!(c.bloat.is_none());
        let e = c.bloat_error.as_deref().unwrap();
        assert!(e.contains("scripts/bloat-o-meter"), "{e}");
        // The real script on files nm cannot read: it says so on stderr,
        // prints zeros and exits 0.
        let tree = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(tree.path().join("scripts")).unwrap();
        std::fs::write(
            tree.path().join("scripts/bloat-o-meter"),
            "import sys\n\
             print('add/remove: 0/0 grow/shrink: 0/0 up/down: 0/0 (0)')\n\
             print('Function                                     old     new   delta')\n\
             print('Total: Before=0, After=0, chg +0.00%')\n\
             sys.stderr.write('nm: a: file format not recognized\\n')\n",
        )
        .unwrap();
        let r = record(&variants, &kernels, &[], Ok(tree.path()));
        let e = r.comparisons[0].bloat_error.as_deref().unwrap();
        assert!(
            e.contains("counted no symbols in either vmlinux: nm: a: file format not recognized"),
            "{e}"
        );
        let r = record(&variants, &kernels, &[], Err("no kernel tree".into()));
        assert_eq!(
            r.comparisons[0].bloat_error.as_deref(),
            Some("no kernel tree")
        );
    }

    #[test]
    fn a_record_round_trips_and_a_run_without_one_reads_as_none() {
        let dir = tempfile::tempdir().unwrap();
        assert_eq!(SizeRecord::read(dir.path()).unwrap(), None);
        let record = SizeRecord {
            objects: vec!["kernel/trace/ring_buffer.o".into()],
            kernels: vec![KernelSizes {
                variant: "on".into(),
                kernel: "markers-on".into(),
                vmlinux: Some(Berkeley {
                    text: 3,
                    data: 2,
                    bss: 1,
                }),
                bzimage_bytes: Some(9),
                sections: vec![Section {
                    name: ".rodata".into(),
                    size: 0x20000,
                    addr: 0xffffffff81a00000,
                }],
                tables: vec![Section {
                    name: "__jump_table".into(),
                    size: 5968,
                    addr: 0xffffffff818ae700,
                }],
                objects: vec![ObjectSize {
                    path: "kernel/trace/ring_buffer.o".into(),
                    size: None,
                }],
                padding: Some(vec![Section {
                    name: "__entry_text_start".into(),
                    size: 170320,
                    addr: 0xffffffff813d66b0,
                }]),
                errors: vec!["x".into()],
            }],
            comparisons: vec![SizeComparison {
                baseline: "off".into(),
                candidate: "on".into(),
                bloat: Some(parse_bloat_o_meter(&captured("bloat-o-meter.txt")).unwrap()),
                bloat_error: None,
            }],
        };
        record.write(dir.path()).unwrap();
        assert_eq!(SizeRecord::read(dir.path()).unwrap(), Some(record));
        std::fs::write(dir.path().join(SIZES_FILE), "[[kernel]]\nvariant = 3\n").unwrap();
        let e = format!("{:#}", SizeRecord::read(dir.path()).unwrap_err());
        assert!(e.contains("sizes.toml:2:11: malformed size record"), "{e}");
    }

    #[test]
    fn a_record_that_cannot_be_read_is_an_error_not_a_run_without_sizes() {
        use crate::base::exit::ExitStatus;
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join(SIZES_FILE);
        crate::base::input_file::link_to_failing_read(&path);
        let e = SizeRecord::read(dir.path()).unwrap_err();
        assert_eq!(ExitStatus::of_error(&e, false), ExitStatus::Machinery);
        assert!(
            format!("{e:#}").contains("sizes.toml: cannot be read: Input/output error"),
            "{e:#}"
        );
        // A stat that fails otherwise than "not found" (here ENOTDIR: the
        // run's directory is a file) is no absence either.
        let file = dir.path().join("run");
        std::fs::write(&file, "").unwrap();
        let e = SizeRecord::read(&file).unwrap_err();
        assert!(
            format!("{e:#}").contains("run/sizes.toml: cannot be read: Not a directory"),
            "{e:#}"
        );
    }
}
