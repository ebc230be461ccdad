//! The report's Size section, rendered from the run's `sizes.toml`: each
//! kernel's `size` figures and bzImage bytes, each candidate's differences
//! from the baseline (bloat-o-meter's summary and largest rows, and the
//! sections it cannot see), and the objects the suite named.

use super::format::{escape_md, percent};
use crate::guest::images::size::{
    by_name, Berkeley, KernelSizes, Section, SizeComparison, SizeRecord,
};
use std::fmt::Write as _;

/// How many bloat-o-meter rows the section shows per comparison.
pub const LARGEST_ROWS: usize = 15;

/// A symbol or section name as a table cell: code, unless it holds what a
/// code span in a table cannot.
fn name_cell(name: &str) -> String {
    if name.contains(['`', '|']) {
        escape_md(name)
    } else {
        format!("`{name}`")
    }
}

fn bytes(v: Option<u64>) -> String {
    v.map_or("–".into(), |v| v.to_string())
}

fn signed_bytes(d: i64) -> String {
    format!("{d:+}")
}

fn diff(a: Option<u64>, b: Option<u64>) -> Option<i64> {
    Some(b? as i64 - a? as i64)
}

fn diff_pct(a: Option<u64>, b: Option<u64>) -> String {
    match (a, diff(a, b)) {
        (Some(a), Some(d)) if a > 0 => percent(d as f64 / a as f64 * 100.0),
        _ => "–".into(),
    }
}

/// The five figures of a kernel's row: text, data, bss, total, bzImage.
fn figures(k: &KernelSizes) -> [Option<u64>; 5] {
    let b = k.vmlinux;
    [
        b.map(|b| b.text),
        b.map(|b| b.data),
        b.map(|b| b.bss),
        b.map(|b| b.total()),
        k.bzimage_bytes,
    ]
}

fn row(t: &mut String, label: &str, cells: impl IntoIterator<Item = String>) {
    let cells: Vec<String> = cells.into_iter().collect();
    let _ = writeln!(t, "| {label} | {} |", cells.join(" | "));
}

/// The whole section, `## Size` and all. `None`: the run recorded no sizes.
pub fn section(record: Option<&SizeRecord>) -> String {
    let mut r = String::from("## Size\n\n");
    let Some(record) = record else {
        r.push_str(
            "Sizes were not recorded for this run: its directory has no sizes.toml (it was \
             made before markbench recorded them, or from runs that did not).\n\n",
        );
        return r;
    };
    if record.kernels.is_empty() {
        r.push_str("Sizes were not recorded for this run: its sizes.toml names no kernel.\n\n");
        return r;
    }
    let _ = writeln!(
        r,
        "Read from each kernel's build when the run started: `size vmlinux` and the \
         bzImage's length. They are exact, so they carry no interval. Bytes.\n"
    );
    let _ = writeln!(
        r,
        "| kernel | text | data | bss | total (dec) | bzImage |\n|---|---:|---:|---:|---:|---:|"
    );
    for k in &record.kernels {
        row(&mut r, &escape_md(&k.variant), figures(k).map(bytes));
    }
    for c in &record.comparisons {
        let (Some(a), Some(b)) = (record.kernel(&c.baseline), record.kernel(&c.candidate)) else {
            continue;
        };
        let (fa, fb) = (figures(a), figures(b));
        let label = format!(
            "diff: {} − {}",
            escape_md(&c.candidate),
            escape_md(&c.baseline)
        );
        row(
            &mut r,
            &label,
            (0..5).map(|i| diff(fa[i], fb[i]).map_or("–".into(), signed_bytes)),
        );
        row(&mut r, "diff [%]", (0..5).map(|i| diff_pct(fa[i], fb[i])));
    }
    r.push('\n');
    for k in &record.kernels {
        for e in &k.errors {
            let _ = writeln!(
                r,
                "> **Not measured** ({}): {}\n",
                escape_md(&k.variant),
                escape_md(e)
            );
        }
    }
    for c in &record.comparisons {
        comparison(&mut r, record, c);
    }
    if !record.objects.is_empty() {
        objects(&mut r, record);
    }
    r
}

/// The sizes as plain-text lines, one per candidate against the baseline:
/// vmlinux's total and text and the bzImage, each with its difference.
pub fn plain_lines(record: Option<&SizeRecord>) -> Vec<String> {
    let Some(record) = record.filter(|r| !r.kernels.is_empty()) else {
        return vec!["Size: not recorded for this run (it has no sizes.toml).".into()];
    };
    let change = |fa: &[Option<u64>; 5], fb: &[Option<u64>; 5], i: usize| match diff(fa[i], fb[i]) {
        Some(d) => {
            let pct = diff_pct(fa[i], fb[i]);
            if pct == "–" {
                format!("{} B", signed_bytes(d))
            } else {
                format!("{} B ({pct}%)", signed_bytes(d))
            }
        }
        None => "not measured".into(),
    };
    let mut lines = Vec::new();
    for c in &record.comparisons {
        let (Some(a), Some(b)) = (record.kernel(&c.baseline), record.kernel(&c.candidate)) else {
            continue;
        };
        let (fa, fb) = (figures(a), figures(b));
        lines.push(format!(
            "Size ({} against {}): vmlinux {} -> {} bytes, {}; text {}; bzImage {}.",
            c.candidate,
            c.baseline,
            bytes(fa[3]),
            bytes(fb[3]),
            change(&fa, &fb, 3),
            change(&fa, &fb, 0),
            change(&fa, &fb, 4)
        ));
    }
    if lines.is_empty() {
        for k in &record.kernels {
            let f = figures(k);
            lines.push(format!(
                "Size of {}: vmlinux {} bytes, bzImage {} bytes.",
                k.variant,
                bytes(f[3]),
                bytes(f[4])
            ));
        }
    }
    lines
}

/// One candidate against the baseline: bloat-o-meter, then the sections.
fn comparison(r: &mut String, record: &SizeRecord, c: &SizeComparison) {
    let (a, b) = (escape_md(&c.baseline), escape_md(&c.candidate));
    let _ = writeln!(r, "### {b} against {a}\n");
    match (&c.bloat, &c.bloat_error) {
        (Some(bloat), _) => {
            let _ = writeln!(
                r,
                "Symbols (`scripts/bloat-o-meter` of the two vmlinux files):\n\n```\n{}\n{}\n```\n",
                bloat.summary_line(),
                bloat.total_line()
            );
            if !bloat.rows.is_empty() {
                let shown = bloat.largest(LARGEST_ROWS);
                let _ = writeln!(
                    r,
                    "{} of its {} changed symbols, largest change first (every row is in \
                     sizes.toml and summary.json):\n",
                    if shown.len() == bloat.rows.len() {
                        "All".to_string()
                    } else {
                        format!("The {} largest", shown.len())
                    },
                    bloat.rows.len()
                );
                let _ = writeln!(
                    r,
                    "| symbol | {a} [B] | {b} [B] | delta [B] |\n|---|---:|---:|---:|"
                );
                for row in shown {
                    let _ = writeln!(
                        r,
                        "| {} | {} | {} | {} |",
                        name_cell(&row.symbol),
                        bytes(row.old),
                        bytes(row.new),
                        signed_bytes(row.delta)
                    );
                }
                r.push('\n');
            }
        }
        (None, Some(e)) => {
            let _ = writeln!(r, "> **bloat-o-meter failed**: {}\n", escape_md(e));
        }
        (None, None) => {
            let _ = writeln!(
                r,
                "bloat-o-meter was not run for this pair (it needs both vmlinux files; a \
                 diff of two runs has their recorded sizes only).\n"
            );
        }
    }
    let (Some(ka), Some(kb)) = (record.kernel(&c.baseline), record.kernel(&c.candidate)) else {
        return;
    };
    differing(
        r,
        [&ka.sections, &kb.sections],
        [&a, &b],
        "section",
        "Sections that differ (`size -A vmlinux`):",
        None,
    );
    differing(
        r,
        [&ka.tables, &kb.tables],
        [&a, &b],
        "table",
        "Linker tables that differ: the bytes from `__start_X` to `__stop_X` in vmlinux, \
         each inside one of the sections above. Their entries have no symbols, so \
         bloat-o-meter does not count them: `__jump_table` holds one 16-byte entry per \
         static-key site (each tracepoint call site is one).",
        Some([&ka.sections, &kb.sections]),
    );
    padding(r, [&a, &b], [ka, kb]);
}

/// The alignment gaps whose sizes differ, and what the sections holding
/// them changed by without them. Nothing for records without the gaps.
fn padding(r: &mut String, [a, b]: [&str; 2], kernels: [&KernelSizes; 2]) {
    let [Some(pa), Some(pb)] = kernels.map(|k| k.padding.as_deref()) else {
        return;
    };
    let holder = |k: &KernelSizes, gap: &Section| {
        k.sections
            .iter()
            .find(|s| s.holds(gap))
            .map(|s| s.name.clone())
    };
    // (section, symbol after the gap) → bytes in each kernel, candidate's
    // gaps first in address order, then the baseline's others.
    type GapKey = (Option<String>, String);
    let mut rows: Vec<(GapKey, [u64; 2])> = Vec::new();
    for (side, k, gaps) in [(1, kernels[1], pb), (0, kernels[0], pa)] {
        for gap in gaps {
            let key = (holder(k, gap), gap.name.clone());
            match rows.iter_mut().find(|(k, _)| *k == key) {
                Some((_, sizes)) => sizes[side] += gap.size,
                None => {
                    let mut sizes = [0; 2];
                    sizes[side] = gap.size;
                    rows.push((key, sizes));
                }
            }
        }
    }
    rows.retain(|(_, [x, y])| x != y);
    if rows.is_empty() {
        if !(pa.is_empty() && pb.is_empty()) {
            let _ = writeln!(
                r,
                "The alignment padding (gaps of {} bytes or more between the symbols of a \
                 section) is the same in both kernels.\n",
                crate::guest::images::size::PADDING_MIN
            );
        }
        return;
    }
    let _ = writeln!(
        r,
        "Alignment padding that differs: gaps of {} bytes or more between the symbols of a \
         section (`nm -n -S vmlinux`) that end on a boundary of a power of two larger than \
         themselves, as a linker script's `ALIGN()` leaves them, each named by the symbol \
         after it. `size` counts \
         them in their section and bloat-o-meter in no symbol; x86's linker script aligns \
         the entry code (`__entry_text_start`) to 2 MiB on both sides, so code that \
         crosses a 2 MiB boundary grows `.text` by up to 2 MiB of padding.\n\n\
         | section | gap before | {a} [B] | {b} [B] | diff [B] |\n|---|---|---:|---:|---:|",
        crate::guest::images::size::PADDING_MIN
    );
    for ((section, symbol), [x, y]) in &rows {
        let _ = writeln!(
            r,
            "| {} | {} | {x} | {y} | {} |",
            section.as_deref().map_or("–".into(), name_cell),
            name_cell(symbol),
            signed_bytes(*y as i64 - *x as i64)
        );
    }
    r.push('\n');
    let mut sections: Vec<&String> = rows.iter().filter_map(|((s, _), _)| s.as_ref()).collect();
    // In the candidate's section order.
    sections.sort_by_key(|s| kernels[1].sections.iter().position(|x| x.name == **s));
    sections.dedup();
    let sizes = kernels.map(|k| by_name(&k.sections));
    for section in sections {
        let without = |side: usize| -> Option<u64> {
            let gaps: u64 = [pa, pb][side]
                .iter()
                .filter(|g| holder(kernels[side], g).as_ref() == Some(section))
                .map(|g| g.size)
                .sum();
            sizes[side].get(section.as_str()).map(|s| s - gaps.min(*s))
        };
        let (x, y) = (without(0), without(1));
        let _ = writeln!(
            r,
            "{} without its padding: {} → {} bytes ({}, {}%).\n",
            name_cell(section),
            bytes(x),
            bytes(y),
            diff(x, y).map_or("–".into(), signed_bytes),
            diff_pct(x, y)
        );
    }
}

/// The parts (sections or linker tables) whose sizes differ between the
/// two kernels, as a table: in the candidate's order, then the parts only
/// the baseline has. With `holders`, each kernel's sections, a column names
/// the section each part lies in (the candidate's, else the baseline's).
fn differing(
    r: &mut String,
    [pa, pb]: [&[Section]; 2],
    [a, b]: [&str; 2],
    what: &str,
    intro: &str,
    holders: Option<[&[Section]; 2]>,
) {
    if pa.is_empty() || pb.is_empty() {
        let _ = writeln!(
            r,
            "The {what}s cannot be compared: they were not read from one of the kernels.\n"
        );
        return;
    }
    let (sa, sb) = (by_name(pa), by_name(pb));
    let mut names: Vec<&str> = pb.iter().chain(pa).map(|s| s.name.as_str()).collect();
    let mut seen = std::collections::BTreeSet::new();
    names.retain(|n| seen.insert(*n));
    // The section holding a part in each kernel that has it, candidate first.
    let holders_of = |name: &str| -> Vec<(&Section, Option<&Section>)> {
        let Some([ha, hb]) = holders else {
            return Vec::new();
        };
        [(pb, hb), (pa, ha)]
            .into_iter()
            .filter_map(|(parts, sections)| {
                let part = parts.iter().find(|p| p.name == name)?;
                Some((part, sections.iter().find(|s| s.holds(part))))
            })
            .collect()
    };
    // A part that is a whole section (`__bug_table` is both) is in the
    // section table already.
    let whole_section = |name: &str| {
        let held = holders_of(name);
        !held.is_empty()
            && held.iter().all(|(part, section)| {
                section.is_some_and(|s| s.addr == part.addr && s.size == part.size)
            })
    };
    let rows: Vec<(&str, Option<u64>, Option<u64>)> = names
        .into_iter()
        .map(|n| (n, sa.get(n).copied(), sb.get(n).copied()))
        .filter(|(n, x, y)| x.unwrap_or(0) != y.unwrap_or(0) && !whole_section(n))
        .collect();
    let holder = |name: &str| -> String {
        if holders.is_none() {
            return String::new();
        }
        let found = holders_of(name).into_iter().find_map(|(_, s)| s);
        format!(" {} |", found.map_or("–".into(), |s| name_cell(&s.name)))
    };
    let (holder_header, holder_rule) = if holders.is_some() {
        (" in section |", "---|")
    } else {
        ("", "")
    };
    if rows.is_empty() {
        let _ = writeln!(r, "Every {what} has the same size in both kernels.\n");
        return;
    }
    let _ = writeln!(
        r,
        "{intro}\n\n| {what} |{holder_header} {a} [B] | {b} [B] | diff [B] |\n\
         |---|{holder_rule}---:|---:|---:|"
    );
    for (name, x, y) in rows {
        let _ = writeln!(
            r,
            "| {} |{} {} | {} | {} |",
            name_cell(name),
            holder(name),
            bytes(x),
            bytes(y),
            signed_bytes(y.unwrap_or(0) as i64 - x.unwrap_or(0) as i64)
        );
    }
    r.push('\n');
}

/// The suite's objects: text, data, bss and dec of each in each kernel.
fn objects(r: &mut String, record: &SizeRecord) {
    let _ = writeln!(
        r,
        "### Objects\n\n`size` of the objects the suite names, in each kernel's build \
         (*absent*: that kernel's build has no such object). Bytes.\n"
    );
    let _ = writeln!(
        r,
        "| object | kernel | text | data | bss | dec |\n|---|---|---:|---:|---:|---:|"
    );
    let of = |k: &KernelSizes, path: &str| -> Result<Option<Berkeley>, ()> {
        k.object(path).map(|o| o.size).ok_or(())
    };
    for path in &record.objects {
        for k in &record.kernels {
            let cells = match of(k, path) {
                Ok(Some(b)) => [b.text, b.data, b.bss, b.total()].map(|v| v.to_string()),
                Ok(None) => ["*absent*".into(), "".into(), "".into(), "".into()],
                // Its `size` failed: the kernel's errors say why.
                Err(()) => ["not measured".into(), "".into(), "".into(), "".into()],
            };
            row(
                r,
                &format!("{} | {}", name_cell(path), escape_md(&k.variant)),
                cells,
            );
        }
        for c in &record.comparisons {
            let sizes = |v: &str| record.kernel(v).and_then(|k| of(k, path).ok().flatten());
            if let (Some(x), Some(y)) = (sizes(&c.baseline), sizes(&c.candidate)) {
                let d = |a: u64, b: u64| signed_bytes(b as i64 - a as i64);
                row(
                    r,
                    &format!(
                        "{} | diff: {} − {}",
                        name_cell(path),
                        escape_md(&c.candidate),
                        escape_md(&c.baseline)
                    ),
                    [
                        d(x.text, y.text),
                        d(x.data, y.data),
                        d(x.bss, y.bss),
                        d(x.total(), y.total()),
                    ],
                );
            }
        }
    }
    r.push('\n');
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::guest::images::size::{Bloat, BloatRow, ObjectSize};

    fn parts(list: &[(&str, u64)]) -> Vec<Section> {
        list.iter()
            .enumerate()
            .map(|(i, (n, s))| Section {
                name: n.to_string(),
                size: *s,
                addr: 0x1000 * i as u64,
            })
            .collect()
    }

    fn kernel(variant: &str, text: u64, sections: &[(&str, u64)]) -> KernelSizes {
        KernelSizes {
            variant: variant.into(),
            kernel: variant.into(),
            vmlinux: Some(Berkeley {
                text,
                data: 200,
                bss: 0,
            }),
            bzimage_bytes: Some(text * 2),
            sections: parts(sections),
            // Both inside .data, where the kernel's linker script puts some.
            tables: {
                let data = parts(sections)
                    .into_iter()
                    .find(|s| s.name == ".data")
                    .map_or(0, |s| s.addr);
                vec![
                    Section {
                        name: "__bug_table".into(),
                        size: 100,
                        addr: data,
                    },
                    Section {
                        name: "__jump_table".into(),
                        size: text / 10,
                        addr: data + 100,
                    },
                ]
            },
            objects: Vec::new(),
            padding: None,
            errors: Vec::new(),
        }
    }

    fn bloat(rows: Vec<BloatRow>) -> Bloat {
        let up = rows
            .iter()
            .filter(|r| r.delta > 0)
            .map(|r| r.delta)
            .sum::<i64>() as u64;
        let down = rows
            .iter()
            .filter(|r| r.delta < 0)
            .map(|r| -r.delta)
            .sum::<i64>() as u64;
        Bloat {
            add: rows.iter().filter(|r| r.old.is_none()).count() as u64,
            remove: rows.iter().filter(|r| r.new.is_none()).count() as u64,
            grow: 0,
            shrink: 0,
            up,
            down,
            net: up as i64 - down as i64,
            before: 1000,
            after: (1000 + up as i64 - down as i64) as u64,
            rows,
        }
    }

    #[test]
    fn plain_lines_give_each_candidates_difference_in_bytes_and_percent() {
        // off: text 1000, data 200, total 1200, bzImage 2000; on: text
        // 1100, total 1300, bzImage 2200.
        let lines = plain_lines(Some(&record()));
        assert_eq!(
            lines,
            [
                "Size (on against off): vmlinux 1200 -> 1300 bytes, +100 B (+8.33%); \
              text +100 B (+10%); bzImage +200 B (+10%)."
            ]
        );
        assert_eq!(
            plain_lines(None),
            ["Size: not recorded for this run (it has no sizes.toml)."]
        );
    }

    fn record() -> SizeRecord {
        let mut off = kernel("off", 1000, &[(".text", 1000), (".data", 200)]);
        let mut on = kernel(
            "on",
            1100,
            &[(".text", 1084), ("__jump_table", 16), (".data", 200)],
        );
        off.objects = vec![ObjectSize {
            path: "kernel/trace/ring_buffer.o".into(),
            size: None,
        }];
        on.objects = vec![ObjectSize {
            path: "kernel/trace/ring_buffer.o".into(),
            size: Some(Berkeley {
                text: 16554,
                data: 24,
                bss: 12,
            }),
        }];
        // 19 small growths and one large shrink, printed largest growth first.
        let mut rows: Vec<BloatRow> = (1..=19)
            .rev()
            .map(|i| BloatRow {
                symbol: format!("grown_{i:02}"),
                old: Some(10),
                new: Some(10 + i),
                delta: i as i64,
            })
            .collect();
        rows.push(BloatRow {
            symbol: "dropped".into(),
            old: Some(500),
            new: None,
            delta: -500,
        });
        SizeRecord {
            objects: vec!["kernel/trace/ring_buffer.o".into()],
            kernels: vec![off, on],
            comparisons: vec![SizeComparison {
                baseline: "off".into(),
                candidate: "on".into(),
                bloat: Some(bloat(rows)),
                bloat_error: None,
            }],
        }
    }

    #[test]
    fn a_run_without_a_record_says_so() {
        let text = section(None);
        assert!(text.starts_with("## Size\n"), "{text}");
        assert!(
            text.contains("Sizes were not recorded for this run"),
            "{text}"
        );
    }

    #[test]
    fn kernels_and_their_difference_are_one_table() {
        let text = section(Some(&record()));
        assert!(
            text.contains("| off | 1000 | 200 | 0 | 1200 | 2000 |"),
            "{text}"
        );
        assert!(
            text.contains("| on | 1100 | 200 | 0 | 1300 | 2200 |"),
            "{text}"
        );
        assert!(
            text.contains("| diff: on − off | +100 | +0 | +0 | +100 | +200 |"),
            "{text}"
        );
        // bss is 0 on both sides: no percentage of nothing.
        assert!(
            text.contains("| diff [%] | +10 | +0 | – | +8.33 | +10 |"),
            "{text}"
        );
    }

    #[test]
    fn bloat_rows_are_the_largest_changes_either_way() {
        let text = section(Some(&record()));
        assert!(
            text.contains("add/remove: 0/1 grow/shrink: 0/0 up/down: 190/-500 (-310)"),
            "{text}"
        );
        assert!(
            text.contains("Total: Before=1000, After=690, chg -31.00%"),
            "{text}"
        );
        assert!(
            text.contains("The 15 largest of its 20 changed symbols"),
            "{text}"
        );
        let rows: Vec<&str> = text
            .lines()
            .skip_while(|l| !l.starts_with("| symbol |"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .collect();
        assert_eq!(rows.len(), 15, "{text}");
        assert_eq!(rows[0], "| `dropped` | 500 | – | -500 |");
        assert_eq!(rows[1], "| `grown_19` | 10 | 29 | +19 |");
        assert_eq!(rows[14], "| `grown_06` | 10 | 16 | +6 |");
    }

    #[test]
    fn only_sections_that_differ_are_listed() {
        let text = section(Some(&record()));
        assert!(text.contains("| `.text` | 1000 | 1084 | +84 |"), "{text}");
        assert!(text.contains("| `__jump_table` | – | 16 | +16 |"), "{text}");
        assert!(
            text.contains("| section | off [B] | on [B] | diff [B] |"),
            "{text}"
        );
        assert!(
            text.contains("| table | in section | off [B] | on [B] | diff [B] |"),
            "{text}"
        );
        // .data is the same size in both: no row of its own.
        assert!(
            !text.lines().any(|l| l.starts_with("| `.data` |")),
            "{text}"
        );
        assert!(
            text.contains("| `__jump_table` | `.data` | 100 | 110 | +10 |"),
            "{text}"
        );
        assert!(
            !text.lines().any(|l| l.starts_with("| `__bug_table` |")),
            "{text}"
        );
    }

    #[test]
    fn a_table_that_is_a_whole_section_is_listed_once() {
        let mut r = record();
        for (k, size) in r.kernels.iter_mut().zip([300, 348]) {
            let addr = 0x9000;
            k.sections.push(Section {
                name: "__ex_table".into(),
                size,
                addr,
            });
            k.tables.push(Section {
                name: "__ex_table".into(),
                size,
                addr,
            });
        }
        let text = section(Some(&r));
        let rows: Vec<&str> = text
            .lines()
            .filter(|l| l.starts_with("| `__ex_table` |"))
            .collect();
        assert_eq!(rows, ["| `__ex_table` | 300 | 348 | +48 |"], "{text}");
    }

    #[test]
    fn an_object_missing_from_a_kernel_is_absent_and_has_no_diff() {
        let text = section(Some(&record()));
        assert!(
            text.contains("| `kernel/trace/ring_buffer.o` | off | *absent* |  |  |  |"),
            "{text}"
        );
        assert!(
            text.contains("| `kernel/trace/ring_buffer.o` | on | 16554 | 24 | 12 | 16590 |"),
            "{text}"
        );
        assert!(!text.contains("ring_buffer.o` | diff"), "{text}");
        let mut both = record();
        both.kernels[0].objects[0].size = Some(Berkeley {
            text: 16538,
            data: 24,
            bss: 12,
        });
        let text = section(Some(&both));
        assert!(
            text.contains(
                "| `kernel/trace/ring_buffer.o` | diff: on − off | +16 | +0 | +0 | +16 |"
            ),
            "{text}"
        );
    }

    #[test]
    fn failures_are_shown_where_the_figures_would_be() {
        let mut r = record();
        r.comparisons[0].bloat = None;
        r.comparisons[0].bloat_error = Some("cannot run `python3 scripts/bloat-o-meter`".into());
        r.kernels[1].vmlinux = None;
        r.kernels[1].sections.clear();
        r.kernels[1].tables.clear();
        r.kernels[1].errors = vec!["cannot run `size -A vmlinux` (binutils)".into()];
        let text = section(Some(&r));
        assert!(
            text.contains("> **bloat-o-meter failed**: cannot run \\`python3"),
            "{text}"
        );
        assert!(
            text.contains("> **Not measured** (on): cannot run \\`size -A vmlinux\\`"),
            "{text}"
        );
        assert!(text.contains("| on | – | – | – | – | 2200 |"), "{text}");
        assert!(
            text.contains("| diff: on − off | – | – | – | – | +200 |"),
            "{text}"
        );
        assert!(text.contains("The sections cannot be compared"), "{text}");
        assert!(text.contains("The tables cannot be compared"), "{text}");
    }

    #[test]
    fn each_candidate_is_compared_with_the_baseline() {
        let mut r = record();
        r.kernels.push(kernel("on2", 1200, &[(".text", 1200)]));
        let mut second = r.comparisons[0].clone();
        second.candidate = "on2".into();
        r.comparisons.push(second);
        let text = section(Some(&r));
        assert!(text.contains("| diff: on − off | +100 |"), "{text}");
        assert!(text.contains("| diff: on2 − off | +200 |"), "{text}");
        assert!(text.contains("### on against off"), "{text}");
        assert!(text.contains("### on2 against off"), "{text}");
        assert!(text.contains("| `.text` | 1000 | 1200 | +200 |"), "{text}");
        assert!(text.contains("| `.data` | 200 | – | -200 |"), "{text}");
    }

    #[test]
    fn padding_that_differs_is_listed_and_taken_out_of_its_section() {
        let mut r = record();
        let gap = |name: &str, size: u64| Section {
            name: name.into(),
            size,
            addr: 0x10,
        };
        // Neither kernel recorded padding (runs before it was): nothing.
        let text = section(Some(&r));
        assert!(!text.contains("padding"), "{text}");
        r.kernels[0].padding = Some(vec![gap("__entry_text_start", 100)]);
        r.kernels[1].padding = Some(vec![gap("__entry_text_start", 60), gap("(end)", 4)]);
        let text = section(Some(&r));
        assert!(
            text.contains(
                "| `.text` | `__entry_text_start` | 100 | 60 | -40 |\n| `.text` | `(end)` | 0 | 4 | +4 |\n"
            ),
            "{text}"
        );
        // .text 1000 → 1084 bytes, of which padding 100 → 64.
        assert!(
            text.contains("`.text` without its padding: 900 → 1020 bytes (+120, +13.33%)."),
            "{text}"
        );
        r.kernels[1].padding = r.kernels[0].padding.clone();
        let text = section(Some(&r));
        assert!(
            text.contains("The alignment padding (gaps of 4096 bytes or more between the symbols of a section) is the same in both kernels."),
            "{text}"
        );
    }
}
