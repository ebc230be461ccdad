//! The crate's modules form layers, and code flows one way through them:
//! each module imports only modules of the layers below its own, never a
//! module above it nor a peer of its own layer. This test reads every file
//! under `src/` (unit tests included), finds the crate's modules it names
//! (`use crate::…`, `crate::a::b` paths in code) and fails naming the file,
//! the line and the import that goes against the layers. `super::` stays
//! within a module and is not checked; `src/lib.rs`, `src/main.rs` and the
//! guest agent (`src/bin/`) sit above or beside the library.
//!
//! docs/architecture.md ("Layers") shows the same table.

use std::path::{Path, PathBuf};

/// The layers, lowest first, each with the folder of `src/` that holds
/// its modules (`""`: a file or folder of `src/` itself). A module may import
/// the modules of the layers before its own.
const LAYERS: &[(&str, &str, &[&str])] = &[
    ("errors and messages", "base", &["error", "message"]),
    ("the guest's architecture", "base", &["arch"]),
    (
        "pure libraries",
        "base",
        &[
            "exit",
            "input_file",
            "sha256",
            "protocol",
            "run_dir",
            "stats",
            "plots",
            "progress",
            "prereq",
        ],
    ),
    (
        "the cycle model's settings and counts",
        "base",
        &["cycle_model"],
    ),
    ("host probes", "base", &["host"]),
    (
        "the host's CPU measured for the cycle model",
        "base",
        &["calibration"],
    ),
    ("kernel and initramfs images", "guest", &["images"]),
    ("workloads", "guest", &["workloads"]),
    ("the run record (run-directory schema)", "", &["record"]),
    ("suite file", "stages", &["suite"]),
    ("plan", "stages", &["plan"]),
    ("shards", "stages", &["shard"]),
    ("booting guests", "stages", &["vm"]),
    ("a run's images", "stages", &["run_images"]),
    (
        "the machine a run boots with and its slots",
        "stages",
        &["machine", "slots"],
    ),
    ("a run's events and their consumers", "stages", &["events"]),
    (
        "boot loop and profiled boots",
        "stages",
        &["run", "profile"],
    ),
    ("analysis", "stages", &["analysis"]),
    ("report (every rendering)", "stages", &["report"]),
    (
        "commands on run directories",
        "jobs",
        &["diff", "merge", "noise"],
    ),
    ("the nightly gate", "jobs", &["gate"]),
    ("history of runs", "jobs", &["history"]),
    ("compare (the orchestrator)", "jobs", &["compare"]),
    ("bisection", "jobs", &["bisect"]),
    ("command handlers (nightly among them)", "", &["commands"]),
    ("command line", "", &["cli"]),
];

/// The folders of `src/` that group modules; a path names its module
/// after the folder (`crate::stages::vm` → `vm`).
fn is_folder(name: &str) -> bool {
    LAYERS
        .iter()
        .any(|(_, folder, _)| !folder.is_empty() && *folder == name)
}

/// A module's path from the crate's root (`vm` → `stages::vm`).
fn path_of(module: &str) -> String {
    match layer_of(module).map(|l| LAYERS[l].1) {
        Some(folder) if !folder.is_empty() => format!("{folder}::{module}"),
        _ => module.to_string(),
    }
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, _, modules)| modules.contains(&module))
}

/// One import against the layers.
#[derive(Debug, PartialEq)]
struct Violation {
    file: String,
    line: usize,
    module: String,
    imported: String,
    why: String,
}

impl std::fmt::Display for Violation {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}:{}: `{}` imports `crate::{}`: {}",
            self.file,
            self.line,
            self.module,
            path_of(&self.imported),
            self.why
        )
    }
}

/// The module a file of `src/` belongs to (`src/stages/vm/qemu.rs` → `vm`), or
/// `None` for the files outside the library's modules.
fn module_of(relative: &Path) -> Option<String> {
    let parts: Vec<String> = relative
        .components()
        .map(|c| c.as_os_str().to_string_lossy().into_owned())
        .collect();
    let parts = match parts.as_slice() {
        [folder, file] if is_folder(folder) && file == "mod.rs" => return None,
        [folder, rest @ ..] if is_folder(folder) => rest,
        all => all,
    };
    match parts {
        [file] if file == "lib.rs" || file == "main.rs" => None,
        [dir, ..] if dir == "bin" => None,
        [file] => file.strip_suffix(".rs").map(str::to_string),
        [dir, ..] => Some(dir.clone()),
        [] => None,
    }
}

/// `text` with its comments and the contents of its string and char
/// literals blanked (line structure kept), so that only code is searched
/// for module paths.
fn without_comments(text: &str) -> String {
    let chars: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let blank = |c: char| if c == '\n' { '\n' } else { ' ' };
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        let next = chars.get(i + 1).copied();
        let after_ident = i > 0 && is_ident(chars[i - 1]);
        if c == '/' && next == Some('/') {
            while i < chars.len() && chars[i] != '\n' {
                i += 1;
            }
        } else if c == '/' && next == Some('*') {
            let mut depth = 0;
            while i < chars.len() {
                if chars[i] == '/' && chars.get(i + 1) == Some(&'*') {
                    depth += 1;
                    out.push_str("  ");
                    i += 2;
                } else if chars[i] == '*' && chars.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    out.push_str("  ");
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
        } else if c == 'r' && !after_ident && matches!(next, Some('"' | '#')) {
            // A raw string: r"…", r#"…"#.
            let hashes = chars[i + 1..].iter().take_while(|&&c| c == '#').count();
            if chars.get(i + 1 + hashes) != Some(&'"') {
                out.push(c);
                i += 1;
                continue;
            }
            let close = format!("\"{}", "#".repeat(hashes));
            let body_start = i + 2 + hashes;
            let rest: String = chars[body_start..].iter().collect();
            let body_len = rest
                .find(&close)
                .map_or(rest.len(), |b| rest[..b].chars().count());
            out.push_str("r\"");
            out.extend(
                chars[body_start..body_start + body_len]
                    .iter()
                    .map(|&c| blank(c)),
            );
            out.push('"');
            i = (body_start + body_len + 1 + hashes).min(chars.len());
        } else if c == '"' {
            out.push('"');
            i += 1;
            while i < chars.len() && chars[i] != '"' {
                if chars[i] == '\\' {
                    out.push(' ');
                    i += 1;
                }
                if i < chars.len() {
                    out.push(blank(chars[i]));
                    i += 1;
                }
            }
            out.push('"');
            i += 1;
        } else if c == '\'' && next == Some('\\') {
            // An escaped char literal ('\'', '\"', '\n'): up to its quote.
            out.push_str("' ");
            i += 2;
            while i < chars.len() && chars[i] != '\'' {
                out.push(' ');
                i += 1;
            }
            out.push('\'');
            i += 1;
        } else if c == '\'' && chars.get(i + 2) == Some(&'\'') {
            // A plain char literal ('"'); a lifetime has no closing quote.
            out.push_str("' '");
            i += 3;
        } else {
            out.push(c);
            i += 1;
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// The crate's modules `text` names, each with its line: `crate::x`,
/// `crate::folder::x`, and every such name in a `crate::{x, folder::{y, z}}`
/// group.
fn imports(text: &str) -> Vec<(usize, String)> {
    let code = without_comments(text);
    let line_at = |offset: usize| code[..offset].matches('\n').count() + 1;
    let mut found = Vec::new();
    let mut from = 0;
    while let Some(at) = code[from..].find("crate::") {
        let start = from + at;
        from = start + "crate::".len();
        // `markbench_crate::` or `$crate::` are not ours.
        if code[..start].ends_with(|c: char| is_ident(c) || c == '$') {
            continue;
        }
        let mut named = Vec::new();
        modules_in_tree(&code, from, false, &mut named);
        found.extend(named.into_iter().map(|(at, name)| (line_at(at), name)));
    }
    found
}

/// The modules the use tree at `at` of `code` names, with their offsets:
/// its first name, or after a folder the name that follows it; in a group,
/// each member's.
fn modules_in_tree(code: &str, at: usize, after_folder: bool, found: &mut Vec<(usize, String)>) {
    let skipped = code[at..].len() - code[at..].trim_start().len();
    let at = at + skipped;
    let rest = &code[at..];
    if rest.starts_with('{') {
        let mut depth = 0usize;
        let mut member = at + 1;
        for (i, c) in rest.char_indices() {
            match c {
                '{' => depth += 1,
                '}' | ',' if depth == 1 => {
                    if !code[member..at + i].trim().is_empty() {
                        modules_in_tree(code, member, after_folder, found);
                    }
                    member = at + i + 1;
                    if c == '}' {
                        return;
                    }
                }
                '}' => depth -= 1,
                _ => {}
            }
        }
        return;
    }
    let name: String = rest.chars().take_while(|&c| is_ident(c)).collect();
    if name.is_empty() {
        return;
    }
    if !after_folder && is_folder(&name) && rest[name.len()..].starts_with("::") {
        modules_in_tree(code, at + name.len() + 2, true, found);
    } else {
        found.push((at, name));
    }
}

/// Every import of `text` (the file `file` of module `module`) that the
/// layers forbid.
fn violations(file: &str, module: &str, text: &str) -> Vec<Violation> {
    let Some(own) = layer_of(module) else {
        return vec![Violation {
            file: file.into(),
            line: 1,
            module: module.into(),
            imported: String::new(),
            why: "the module is in no layer: add it to LAYERS".into(),
        }];
    };
    imports(text)
        .into_iter()
        .filter(|(_, imported)| imported != module && imported != "self")
        .filter_map(|(line, imported)| {
            let why = match layer_of(&imported) {
                None => "the imported module is in no layer: add it to LAYERS".to_string(),
                Some(l) if l == own => format!("a peer in the layer \"{}\"", LAYERS[own].0),
                Some(l) if l > own => format!(
                    "the layer \"{}\" is above \"{}\"",
                    LAYERS[l].0, LAYERS[own].0
                ),
                Some(_) => return None,
            };
            Some(Violation {
                file: file.into(),
                line,
                module: module.into(),
                imported,
                why,
            })
        })
        .collect()
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in std::fs::read_dir(dir).unwrap() {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

#[test]
fn every_module_imports_only_the_layers_below_it() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    files.sort();
    let mut found = Vec::new();
    let mut checked = 0;
    for path in &files {
        let relative = path.strip_prefix(&src).unwrap();
        let Some(module) = module_of(relative) else {
            continue;
        };
        let text = std::fs::read_to_string(path).unwrap();
        let file = Path::new("src").join(relative).display().to_string();
        found.extend(violations(&file, &module, &text));
        checked += 1;
    }
    assert!(
        checked > 50,
        "only {checked} files read under {}",
        src.display()
    );
    let report: Vec<String> = found.iter().map(ToString::to_string).collect();
    assert!(
        report.is_empty(),
        "imports against the layers:\n{}",
        report.join("\n")
    );
}

#[test]
fn every_layered_module_exists() {
    let src = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    for (_, folder, modules) in LAYERS {
        let dir = src.join(folder);
        for m in *modules {
            assert!(
                dir.join(format!("{m}.rs")).is_file() || dir.join(m).join("mod.rs").is_file(),
                "{m} is in LAYERS but not in {}",
                dir.display()
            );
        }
        if !folder.is_empty() {
            let declared = std::fs::read_to_string(dir.join("mod.rs")).unwrap();
            for m in *modules {
                assert!(
                    declared.contains(&format!("pub mod {m};")),
                    "{m} is not declared in src/{folder}/mod.rs"
                );
            }
        }
    }
}

#[test]
fn an_import_from_above_or_from_a_peer_is_reported_with_its_file_and_line() {
    let text = "//! The schema.\n\
                use crate::base::error::InputError;\n\
                // crate::jobs::compare in a comment is no import.\n\
                use crate::jobs::compare::Overrides;\n\
                fn f() {\n    let _ = crate::{base::stats::Correction, stages::vm::Accel};\n}\n";
    let found = violations("src/record/meta.rs", "record", text);
    let named: Vec<(usize, &str)> = found
        .iter()
        .map(|v| (v.line, v.imported.as_str()))
        .collect();
    assert_eq!(named, [(4, "compare"), (6, "vm")], "{found:?}");
    assert_eq!(
        found[0].to_string(),
        "src/record/meta.rs:4: `record` imports `crate::jobs::compare`: \
         the layer \"compare (the orchestrator)\" is above \"the run record (run-directory schema)\""
    );
    let peer = violations(
        "src/stages/run.rs",
        "run",
        "use crate::stages::profile::prepare;\n",
    );
    assert_eq!(peer.len(), 1, "{peer:?}");
    assert!(peer[0].why.contains("peer"), "{}", peer[0]);
    let unknown = violations("src/new.rs", "new", "");
    assert_eq!(unknown.len(), 1, "{unknown:?}");
}

#[test]
fn module_paths_are_found_in_groups_across_lines() {
    let text =
        "use crate::{\n    stages::{plan::{self, Unit},\n    suite::Suite},\n    record,\n};\n\
                let x = crate::stages::vm::boot_seed(1, 2, 3);\n\
                use crate::base::{error::InputError, stats};\n";
    assert_eq!(
        imports(text),
        [
            (2, "plan".to_string()),
            (3, "suite".to_string()),
            (4, "record".to_string()),
            (6, "vm".to_string()),
            (7, "error".to_string()),
            (7, "stats".to_string())
        ]
    );
    assert_eq!(
        module_of(Path::new("stages/vm/qemu.rs")).as_deref(),
        Some("vm")
    );
    assert_eq!(
        module_of(Path::new("stages/run.rs")).as_deref(),
        Some("run")
    );
    assert_eq!(
        module_of(Path::new("record/meta.rs")).as_deref(),
        Some("record")
    );
    assert_eq!(module_of(Path::new("stages/mod.rs")), None);
    assert_eq!(module_of(Path::new("cli.rs")).as_deref(), Some("cli"));
    assert_eq!(module_of(Path::new("bin/markbench-guest.rs")), None);
}
