//! `check --junit FILE`: the check as JUnit XML, the test report CI systems show natively.
//!
//! One `<testsuite>` per checked file, one `<testcase>` per scenario (or per model ×
//! routing combination of an experiment). A case that does not meet its expectation has one
//! `<failure>`: its `message` is the first reason (for a violation, the violation's
//! sentence) and the command that reproduces it; the body lists every reason, each with its
//! reproduce command. Every case carries, in `<system-out>`, its verdicts and the BUGGIFY
//! and kill points that fired. The file holds no wall-clock time, so a check writes the
//! same file every time.

use std::collections::BTreeMap;
use std::fmt::Write as _;

/// One test case.
#[derive(Debug, Clone, Default)]
pub struct Case {
    /// The case's name (the scenario, or `model / routing`).
    pub name: String,
    /// Its class: the checked file's name.
    pub classname: String,
    /// Why it failed, each with its reproduce command; empty when it passed.
    pub failures: Vec<(String, String)>,
    /// Lines for `<system-out>`.
    pub out: Vec<String>,
}

/// Escapes text for XML attributes and content, dropping characters XML 1.0 cannot hold.
pub fn escape(text: &str) -> String {
    let mut s = String::with_capacity(text.len());
    for c in text.chars() {
        match c {
            '&' => s.push_str("&amp;"),
            '<' => s.push_str("&lt;"),
            '>' => s.push_str("&gt;"),
            '"' => s.push_str("&quot;"),
            '\'' => s.push_str("&apos;"),
            '\t' | '\n' | '\r' => s.push(c),
            c if (c as u32) < 0x20 || c == '\u{fffe}' || c == '\u{ffff}' => {}
            c => s.push(c),
        }
    }
    s
}

/// The document: one suite named `suite` (the checked file) holding `cases`.
pub fn xml(suite: &str, cases: &[Case]) -> String {
    let failures = cases.iter().filter(|c| !c.failures.is_empty()).count();
    let mut x = String::from("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n");
    let _ = writeln!(
        x,
        "<testsuites name=\"a2a-chaos check\" tests=\"{}\" failures=\"{failures}\" errors=\"0\">",
        cases.len()
    );
    let _ = writeln!(
        x,
        "  <testsuite name=\"{}\" tests=\"{}\" failures=\"{failures}\" errors=\"0\" skipped=\"0\">",
        escape(suite),
        cases.len()
    );
    for c in cases {
        let _ = writeln!(
            x,
            "    <testcase classname=\"{}\" name=\"{}\">",
            escape(&c.classname),
            escape(&c.name)
        );
        if let Some((first, reproduce)) = c.failures.first() {
            let mut body = String::new();
            for (why, reproduce) in &c.failures {
                let _ = writeln!(body, "{why}\nreproduce: {reproduce}");
            }
            let _ = writeln!(
                x,
                "      <failure type=\"expectation\" message=\"{}\">{}</failure>",
                escape(&format!("{first} (reproduce: {reproduce})")),
                escape(body.trim_end())
            );
        }
        if !c.out.is_empty() {
            let _ = writeln!(
                x,
                "      <system-out>{}</system-out>",
                escape(&c.out.join("\n"))
            );
        }
        x.push_str("    </testcase>\n");
    }
    x.push_str("  </testsuite>\n</testsuites>\n");
    x
}

/// `buggify:conflict-on-save=3, kill-at:effect=1`, or `none`.
pub fn points_line(points: &BTreeMap<String, u64>) -> String {
    if points.is_empty() {
        return "none".to_string();
    }
    points
        .iter()
        .map(|(k, n)| format!("{k}={n}"))
        .collect::<Vec<_>>()
        .join(", ")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn markup_and_control_characters_are_escaped() {
        assert_eq!(escape("a<b & \"c\"\u{1}"), "a&lt;b &amp; &quot;c&quot;");
    }

    #[test]
    fn a_failing_case_counts_as_a_failure() {
        let cases = vec![
            Case {
                name: "ok".into(),
                classname: "f".into(),
                ..Case::default()
            },
            Case {
                name: "bad".into(),
                classname: "f".into(),
                failures: vec![("x broke".into(), "a2a-chaos replay f --seed 0".into())],
                out: vec!["points fired: none".into()],
            },
        ];
        let x = xml("f.toml", &cases);
        assert!(x.contains("tests=\"2\" failures=\"1\""), "{x}");
        assert!(x.contains("message=\"x broke (reproduce: a2a-chaos replay f --seed 0)\""));
    }
}
