//! docs/commands.md's exit-status table against `ExitStatus::ALL`: every
//! status has its row, with its code and a meaning that begins as
//! `ExitStatus::meaning` words it, and the table has no other row. Scripts
//! branch on these codes, so the page they read them from cannot drift.

use markbench::base::exit::ExitStatus;

/// The rows of the table under "## Exit status": (code, meaning).
fn table() -> Vec<(i32, String)> {
    let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/commands.md");
    let page = std::fs::read_to_string(path).expect("docs/commands.md");
    let section = page
        .split("\n## Exit status\n")
        .nth(1)
        .expect("docs/commands.md has an \"Exit status\" section");
    let section = section.split("\n## ").next().unwrap_or(section);
    let mut lines = section
        .lines()
        .skip_while(|l| !l.starts_with("| code | meaning |"));
    assert!(lines.next().is_some(), "no table of codes in: {section}");
    lines
        .skip(1) // |---:|---|---|
        .take_while(|l| l.starts_with('|'))
        .map(|l| {
            let cells: Vec<&str> = l.split('|').map(str::trim).collect();
            let code = cells[1]
                .parse()
                .unwrap_or_else(|_| panic!("a row without a code: {l}"));
            (code, cells[2].to_string())
        })
        .collect()
}

#[test]
fn the_exit_table_lists_every_status_and_no_other() {
    let rows = table();
    let codes: Vec<i32> = rows.iter().map(|(code, _)| *code).collect();
    let expected: Vec<i32> = ExitStatus::ALL.iter().map(|s| s.code()).collect();
    assert_eq!(codes, expected, "docs/commands.md's codes, in order");
    for (status, (code, meaning)) in ExitStatus::ALL.iter().zip(&rows) {
        assert!(
            meaning.starts_with(status.meaning()),
            "code {code}: the table says {meaning:?}, markbench {:?}",
            status.meaning()
        );
    }
}
