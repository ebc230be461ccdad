//! A kernel's text symbols from its `System.map`, for turning instruction
//! addresses into function names.

use crate::base::error::InputError;
use std::path::Path;

/// Markers that end a stretch of text: an address at or past one of them
/// (and before the next symbol) belongs to no function.
const TEXT_ENDS: &[&str] = &["_etext", "_einittext", "_end"];

/// The text symbols of one kernel, sorted by address.
#[derive(Debug, Clone, Default)]
pub struct SymbolMap {
    /// Start address of each entry, ascending, one entry per address.
    starts: Vec<u64>,
    /// The function starting there; `None` for an end-of-text marker.
    names: Vec<Option<String>>,
}

/// One line of System.map: `ffffffff81000000 T _stext`.
fn parse_line(line: &str) -> Option<(u64, char, &str)> {
    let mut fields = line.split_whitespace();
    let address = u64::from_str_radix(fields.next()?, 16).ok()?;
    let kind = fields.next()?;
    let name = fields.next()?;
    let mut kind_chars = kind.chars();
    let kind = kind_chars.next()?;
    if kind_chars.next().is_some() {
        return None;
    }
    Some((address, kind, name))
}

/// Of two names for one address, the one a reader knows the function by:
/// the fewest leading underscores (`memcpy` over `__memcpy`), else the first.
fn better_name(new: &str, old: &str) -> bool {
    let underscores = |s: &str| s.len() - s.trim_start_matches('_').len();
    underscores(new) < underscores(old)
}

impl SymbolMap {
    /// Parses System.map text; `file` names it in errors.
    pub fn parse(text: &str, file: &Path) -> Result<SymbolMap, InputError> {
        let mut entries: Vec<(u64, Option<String>)> = Vec::new();
        for (number, line) in text.lines().enumerate() {
            if line.trim().is_empty() {
                continue;
            }
            let Some((address, kind, name)) = parse_line(line) else {
                return Err(InputError::at_line(
                    file,
                    number + 1,
                    format_args!("not a System.map line (address, type, name): {line:?}"),
                ));
            };
            if TEXT_ENDS.contains(&name) {
                entries.push((address, None));
            } else if matches!(kind, 't' | 'T' | 'w' | 'W') {
                entries.push((address, Some(name.to_string())));
            }
        }
        // Stable: equal addresses keep the file's order.
        entries.sort_by_key(|(address, _)| *address);
        let mut map = SymbolMap::default();
        for (address, name) in entries {
            if map.starts.last() == Some(&address) {
                let last = map.names.last_mut().expect("an entry per start");
                match (&*last, name) {
                    // A function that starts where text "ends" is a function.
                    (None, Some(name)) => *last = Some(name),
                    (Some(old), Some(name)) if better_name(&name, old) => *last = Some(name),
                    _ => {}
                }
                continue;
            }
            map.starts.push(address);
            map.names.push(name);
        }
        if map.names.iter().all(Option::is_none) {
            return Err(InputError::in_file(
                file,
                "holds no text symbols (types t, T, w, W)",
            ));
        }
        Ok(map)
    }

    /// Reads and parses a System.map file.
    pub fn read(path: &Path) -> crate::base::error::Result<SymbolMap> {
        let text = crate::base::input_file::read_text(path, crate::base::input_file::Bound::Text)?;
        Ok(SymbolMap::parse(&text, path)?)
    }

    /// The function containing `address`: the last symbol at or below it,
    /// unless an end-of-text marker lies between.
    pub fn lookup(&self, address: u64) -> Option<&str> {
        let i = self.starts.partition_point(|&s| s <= address);
        self.names.get(i.checked_sub(1)?)?.as_deref()
    }

    /// Every function name in the map.
    pub fn names(&self) -> impl Iterator<Item = &str> {
        self.names.iter().flatten().map(String::as_str)
    }
}

/// The function a symbol is a part or copy of: gcc names the pieces it
/// splits off or specialises `name.isra.0`, `name.constprop.0`,
/// `name.part.0`, `name.cold`, and which of them a build makes follows its
/// configuration, so two kernels are compared by the function's own name.
pub fn function_name(symbol: &str) -> &str {
    if symbol.starts_with('[') {
        return symbol;
    }
    symbol.split_once('.').map_or(symbol, |(base, _)| base)
}

#[cfg(test)]
mod tests {
    use super::*;

    const MAP: &str = "\
0000000000000000 D __per_cpu_start
ffffffff81000000 T _stext
ffffffff81000000 T _text
ffffffff81000000 T startup_64
ffffffff81000040 t __memcpy
ffffffff81000040 T memcpy
ffffffff81000080 W arch_cpu_idle
ffffffff81000100 T _etext
ffffffff81000200 D some_data
ffffffff81001000 T init_thing
ffffffff81001100 A _end
";

    fn map() -> SymbolMap {
        SymbolMap::parse(MAP, Path::new("System.map")).unwrap()
    }

    #[test]
    fn an_address_belongs_to_the_last_function_at_or_below_it() {
        let m = map();
        assert_eq!(m.lookup(0xffffffff81000000), Some("startup_64"));
        assert_eq!(m.lookup(0xffffffff8100003f), Some("startup_64"));
        assert_eq!(m.lookup(0xffffffff81000040), Some("memcpy"));
        assert_eq!(m.lookup(0xffffffff810000ff), Some("arch_cpu_idle"));
        // Past _etext and data symbols do not extend the last function.
        assert_eq!(m.lookup(0xffffffff81000100), None);
        assert_eq!(m.lookup(0xffffffff81000300), None);
        assert_eq!(m.lookup(0xffffffff81001010), Some("init_thing"));
        assert_eq!(m.lookup(0xffffffff81001100), None);
        assert_eq!(m.lookup(0xffffffff80000000), None);
        assert_eq!(m.lookup(0x400000), None);
    }

    #[test]
    fn compiler_made_pieces_fold_into_their_function() {
        assert_eq!(function_name("slob_alloc_node.isra.0"), "slob_alloc_node");
        assert_eq!(function_name("do_thing.cold"), "do_thing");
        assert_eq!(function_name("schedule"), "schedule");
        assert_eq!(function_name("[user space]"), "[user space]");
    }

    #[test]
    fn names_lists_functions_only() {
        let m = map();
        let names: Vec<&str> = m.names().collect();
        assert_eq!(
            names,
            ["startup_64", "memcpy", "arch_cpu_idle", "init_thing"]
        );
    }

    #[test]
    fn a_malformed_line_is_an_error_naming_file_and_line() {
        let text = "ffffffff81000000 T _stext\nnot a map line\n";
        let e = SymbolMap::parse(text, Path::new("/k/System.map")).unwrap_err();
        assert!(e.to_string().starts_with("/k/System.map:2: "), "{e}");
        assert_eq!(e.file.as_deref(), Some(Path::new("/k/System.map")));
        assert_eq!(e.line, Some(2));
        let e = SymbolMap::parse("0000 D data\n", Path::new("m")).unwrap_err();
        assert!(
            e.to_string().contains("no text symbols"),
            "{}",
            e.to_string()
        );
    }
}
