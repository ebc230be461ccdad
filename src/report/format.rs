//! Number and text formatting for reports, in the seeds' style: seconds with
//! three decimals, signed differences, percentages with at most two decimals
//! and no trailing zeros ("+4.61", "-3.6").

/// Decimals for a value of this unit and magnitude.
pub fn decimals(unit: &str, magnitude: f64) -> usize {
    let m = magnitude.abs();
    if unit == "s" || m < 10.0 {
        3
    } else if m < 1000.0 {
        2
    } else {
        0
    }
}

pub fn value(v: f64, decimals: usize) -> String {
    if v.is_finite() {
        format!("{v:.decimals$}")
    } else {
        "–".into()
    }
}

/// A difference with an explicit sign.
pub fn signed(v: f64, decimals: usize) -> String {
    if !v.is_finite() {
        return "–".into();
    }
    let s = format!("{v:+.decimals$}");
    // "-0.000" is not a difference worth a minus sign.
    if s.trim_start_matches(['+', '-'])
        .chars()
        .all(|c| c == '0' || c == '.')
    {
        format!("+{}", s.trim_start_matches(['+', '-']))
    } else {
        s
    }
}

/// A percentage as the seeds printed it: sign, up to two decimals, trailing zeros dropped.
pub fn percent(p: f64) -> String {
    if !p.is_finite() {
        return "–".into();
    }
    let s = signed(p, 2);
    if s.contains('.') {
        let trimmed = s.trim_end_matches('0').trim_end_matches('.');
        trimmed.to_string()
    } else {
        s
    }
}

/// Escapes text from suites or kernel names for GitHub-flavoured markdown
/// (inline text and table cells).
pub fn escape_md(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '\\' | '`' | '*' | '_' | '[' | ']' | '<' | '>' | '|' | '#' => {
                out.push('\\');
                out.push(c);
            }
            '\n' | '\r' => out.push(' '),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentages_look_like_the_seed() {
        assert_eq!(percent(4.607), "+4.61");
        assert_eq!(percent(-3.6004), "-3.6");
        assert_eq!(percent(-0.1), "-0.1");
        assert_eq!(percent(0.0), "+0");
        assert_eq!(percent(f64::NAN), "–");
    }

    #[test]
    fn signed_differences_keep_three_decimals() {
        assert_eq!(signed(0.0614, 3), "+0.061");
        assert_eq!(signed(-0.5624, 3), "-0.562");
        assert_eq!(signed(-0.0001, 3), "+0.000");
    }

    #[test]
    fn markdown_special_characters_are_escaped() {
        assert_eq!(escape_md("a|b*c_<x>"), "a\\|b\\*c\\_\\<x\\>");
        assert_eq!(escape_md("two\nlines"), "two lines");
    }
}
