//! Plain text for a mail: ASCII only, no line over [`WIDTH`] columns.
//! `report.txt` and `bisect.txt` are laid out with these, so that what
//! `git send-email` or a mail client sends is what the reader sees.

/// The widest line of a plain-text report: a mail quoted twice still fits
/// in 80 columns.
pub const WIDTH: usize = 72;

/// `text` in ASCII: the typographic characters markbench's own text uses
/// get their ASCII spelling, anything else from a suite or a kernel name
/// becomes '?'; tabs become spaces and other control characters go.
pub fn ascii(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\n' => out.push('\n'),
            '\t' => out.push_str("    "),
            c if c.is_ascii_control() => {}
            c if c.is_ascii() => out.push(c),
            '–' | '—' | '−' | '‐' => out.push('-'),
            '…' => out.push_str("..."),
            '×' => out.push('x'),
            '±' => out.push_str("+/-"),
            '→' => out.push_str("->"),
            '←' => out.push_str("<-"),
            '≤' => out.push_str("<="),
            '≥' => out.push_str(">="),
            '≈' => out.push('~'),
            '‘' | '’' => out.push('\''),
            '“' | '”' => out.push('"'),
            'µ' | 'μ' => out.push('u'),
            '²' => out.push('2'),
            '⚠' => out.push('!'),
            'α' => out.push_str("alpha"),
            _ => out.push('?'),
        }
    }
    out
}

/// `text` (made ASCII) filled to [`WIDTH`] columns, every line starting
/// with `indent`; a word longer than a line is broken.
pub fn wrap(text: &str, indent: &str) -> String {
    wrap_hanging(text, indent, indent)
}

/// [`wrap`] with the first line starting with `first` and the others with
/// `rest`: a list item or a labelled line.
pub fn wrap_hanging(text: &str, first: &str, rest: &str) -> String {
    let text = ascii(text);
    let options = textwrap::Options::new(WIDTH)
        .initial_indent(first)
        .subsequent_indent(rest)
        .break_words(true);
    let mut out = String::new();
    for line in textwrap::wrap(&text, options) {
        out.push_str(line.trim_end());
        out.push('\n');
    }
    out
}

/// A line that must not be reflowed (configuration lines, a `--stat`):
/// made ASCII and, when too long, cut with a '>' in its last column.
pub fn verbatim(line: &str, indent: &str) -> String {
    let line = format!("{indent}{}", ascii(line));
    let line = line.trim_end();
    if line.len() <= WIDTH {
        line.to_string()
    } else {
        format!("{}>", &line[..WIDTH - 1])
    }
}

/// A heading, wrapped, and its underline as long as its longest line.
pub fn heading(title: &str, underline: char) -> String {
    let title = wrap(title, "");
    let width = title.lines().map(str::len).max().unwrap_or(0).max(1);
    format!("{title}{}\n", underline.to_string().repeat(width))
}

/// How a column's cells are aligned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Align {
    Left,
    Right,
}

/// A table laid out in columns two spaces apart, header underlined with
/// dashes, as the seed mails set their figures. `None` when it would be
/// wider than [`WIDTH`] with `indent`: the caller then gives each row as
/// a paragraph instead.
pub fn table(
    indent: &str,
    header: &[&str],
    align: &[Align],
    rows: &[Vec<String>],
) -> Option<String> {
    let header: Vec<String> = header.iter().map(|h| ascii(h)).collect();
    let rows: Vec<Vec<String>> = rows
        .iter()
        .map(|r| r.iter().map(|c| ascii(c)).collect())
        .collect();
    let widths: Vec<usize> = (0..header.len())
        .map(|i| {
            rows.iter()
                .filter_map(|r| r.get(i))
                .map(String::len)
                .chain([header[i].len()])
                .max()
                .unwrap_or(0)
        })
        .collect();
    let total = indent.len() + widths.iter().sum::<usize>() + 2 * widths.len().saturating_sub(1);
    if total > WIDTH {
        return None;
    }
    let line = |cells: &[String]| -> String {
        let mut l = indent.to_string();
        for (i, w) in widths.iter().enumerate() {
            if i > 0 {
                l.push_str("  ");
            }
            let cell = cells.get(i).map_or("", String::as_str);
            match align.get(i).copied().unwrap_or(Align::Left) {
                Align::Left => l.push_str(&format!("{cell:<w$}")),
                Align::Right => l.push_str(&format!("{cell:>w$}")),
            }
        }
        l.trim_end().to_string() + "\n"
    };
    let mut t = line(&header);
    let rule: Vec<String> = widths.iter().map(|w| "-".repeat(*w)).collect();
    t.push_str(&line(&rule));
    for r in &rows {
        t.push_str(&line(r));
    }
    Some(t)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn typography_becomes_ascii() {
        assert_eq!(ascii("−0.86 … +0.66 × 2 → ±"), "-0.86 ... +0.66 x 2 -> +/-");
        assert_eq!(ascii("naïve\tx"), "na?ve    x");
    }

    #[test]
    fn wrapped_text_never_passes_the_width() {
        let long = format!("{} {}", "word ".repeat(40), "x".repeat(200));
        let text = wrap_hanging(&long, "- ", "  ");
        assert!(text.starts_with("- word"), "{text}");
        for line in text.lines() {
            assert!(line.len() <= WIDTH, "{line:?}");
            assert!(line.is_ascii());
        }
        assert!(text.lines().count() > 4);
        assert_eq!(
            text.replace(['\n', ' ', '-'], ""),
            long.replace(' ', ""),
            "nothing lost"
        );
    }

    #[test]
    fn a_long_verbatim_line_is_cut_and_marked() {
        let line = verbatim(&"y".repeat(100), "  ");
        assert_eq!(line.len(), WIDTH);
        assert!(line.ends_with('>'));
        assert_eq!(verbatim(" FTRACE n -> y", "  "), "   FTRACE n -> y");
    }

    #[test]
    fn a_table_aligns_its_columns_or_declines_when_too_wide() {
        let rows = vec![
            vec![
                "2".to_string(),
                "2.170".to_string(),
                "regression".to_string(),
            ],
            vec![
                "16".to_string(),
                "12.5".to_string(),
                "equivalent".to_string(),
            ],
        ];
        let t = table(
            "  ",
            &["groups", "without", "verdict"],
            &[Align::Right, Align::Right, Align::Left],
            &rows,
        )
        .unwrap();
        let lines: Vec<&str> = t.lines().collect();
        assert_eq!(lines[0], "  groups  without  verdict");
        assert_eq!(lines[1], "  ------  -------  ----------");
        assert_eq!(lines[2], "       2    2.170  regression");
        assert_eq!(lines[3], "      16     12.5  equivalent");
        let wide = vec![vec!["x".repeat(40), "y".repeat(40)]];
        assert!(table("", &["a", "b"], &[Align::Left, Align::Left], &wide).is_none());
    }
}
