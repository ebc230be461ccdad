//! Number and text formatting for reports, in the seeds' style: seconds with
//! three decimals, signed differences, percentages with at most two decimals
//! and no trailing zeros ("+4.61", "-3.6").
//!
//! Every percentage markbench prints is formatted here: [`percent`] and
//! [`relative`] for differences in the seeds' style, [`percent_2dp`],
//! [`signed_percent_2dp`] and [`percent_cell`] for noise figures, which are
//! compared against targets given to two decimals.

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

/// A relative difference given as a fraction, in the style of [`percent`]:
/// 0.04607 is "+4.61".
pub fn relative(fraction: f64) -> String {
    percent(fraction * 100.0)
}

/// A fraction as a percentage with two decimals and its sign: 0.0052 is
/// "0.52%"; "–" where there is no figure.
pub fn percent_2dp(fraction: Option<f64>) -> String {
    fraction.map_or("–".into(), |f| format!("{:.2}%", f * 100.0))
}

/// A fraction as a signed percentage with two decimals: "+0.52%".
pub fn signed_percent_2dp(fraction: f64) -> String {
    format!("{:+.2}%", fraction * 100.0)
}

/// [`percent_2dp`] without the % sign, for a table whose header says "[%]".
pub fn percent_cell(fraction: Option<f64>) -> String {
    fraction.map_or("–".into(), |f| format!("{:.2}", f * 100.0))
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

/// Escapes text for HTML element content and attribute values.
pub fn escape_html(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            c => out.push(c),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn html_special_characters_are_escaped() {
        assert_eq!(escape_html("<a & 'b'>"), "&lt;a &amp; &#39;b&#39;&gt;");
    }

    #[test]
    fn percentages_look_like_the_seed() {
        assert_eq!(percent(4.607), "+4.61");
        assert_eq!(percent(-3.6004), "-3.6");
        assert_eq!(percent(-0.1), "-0.1");
        assert_eq!(percent(0.0), "+0");
        assert_eq!(percent(f64::NAN), "–");
        assert_eq!(relative(0.04607), "+4.61");
    }

    #[test]
    fn noise_figures_keep_two_decimals() {
        assert_eq!(percent_2dp(Some(0.0052)), "0.52%");
        assert_eq!(percent_2dp(None), "–");
        assert_eq!(signed_percent_2dp(-0.0005), "-0.05%");
        assert_eq!(signed_percent_2dp(0.05), "+5.00%");
        assert_eq!(percent_cell(Some(0.01)), "1.00");
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
