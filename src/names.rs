//! Names that become file and directory names.
//!
//! An experiment's name is its default output folder (`results/<name>/`), a scenario's or a
//! model's name becomes part of a file name (`found-<model>-<seed>.toml`, shrink outputs,
//! timelines), and a shard manifest's experiment name is `merge`'s default folder. So each
//! such name is a plain file name: ASCII letters, digits, `-`, `_` and `.`, not starting
//! with `.`, at most [`NAME_CHARS_MAX`] characters. Anything else (`../../../escaped`, `a/b`,
//! a space, an empty name) is refused where the name is read, with a sentence saying why,
//! and the command exits 2 before it writes anything.

/// The longest name accepted.
pub const NAME_CHARS_MAX: usize = 100;

/// Whether `c` may appear in a name.
fn allowed(c: char) -> bool {
    c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.')
}

/// What the rule says, in every refusal.
const RULE: &str = "use ASCII letters, digits, `-`, `_` and `.` (not first)";

/// Why a name is not a plain file name; `what` names the field (`name`, `model name`).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum NameError {
    /// Nothing at all.
    #[error("{what} is empty: {RULE}")]
    Empty { what: String },
    /// More than [`NAME_CHARS_MAX`] characters.
    #[error("{what} is {len} characters long: at most {NAME_CHARS_MAX}")]
    TooLong { what: String, len: usize },
    /// A character outside the rule (the first one).
    #[error("{what} `{}` becomes a file name, but has {}: {RULE}", name.escape_default(), described(*found))]
    Character {
        what: String,
        name: String,
        found: char,
    },
    /// A leading `.`.
    #[error("{what} `{name}` starts with `.`, which makes a hidden file or a path step: {RULE}")]
    Hidden { what: String, name: String },
}

/// A refused character, for a sentence.
fn described(c: char) -> String {
    match c {
        '/' | '\\' => format!("a path separator `{c}`"),
        ' ' => "a space".to_string(),
        c if c.is_control() => format!("a control character {:?}", c),
        c => format!("`{c}`"),
    }
}

/// Checks that `name` is a plain file name; the error says what is wrong with it. `what`
/// names the field (`name`, `model name`).
pub fn check(what: &str, name: &str) -> Result<(), NameError> {
    let what = what.to_string();
    if name.is_empty() {
        return Err(NameError::Empty { what });
    }
    if name.len() > NAME_CHARS_MAX {
        return Err(NameError::TooLong {
            what,
            len: name.len(),
        });
    }
    if let Some(found) = name.chars().find(|c| !allowed(*c)) {
        return Err(NameError::Character {
            what,
            name: name.to_string(),
            found,
        });
    }
    if name.starts_with('.') {
        return Err(NameError::Hidden {
            what,
            name: name.to_string(),
        });
    }
    Ok(())
}

/// `text` made into a valid name: every other character becomes `-`, a leading `.` too,
/// and it is cut to [`NAME_CHARS_MAX`] characters (`-` when nothing is left).
pub fn slug(text: &str) -> String {
    let mut out: String = text
        .chars()
        .map(|c| if allowed(c) { c } else { '-' })
        .take(NAME_CHARS_MAX)
        .collect();
    if out.starts_with('.') {
        out.replace_range(0..1, "-");
    }
    if out.is_empty() {
        out.push('-');
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn plain_names_pass() {
        for ok in [
            "default",
            "a2a-python-1.3-memory",
            "rasa-3.17",
            "x_y.z",
            "A1",
        ] {
            assert_eq!(check("name", ok), Ok(()), "{ok}");
        }
    }

    #[test]
    fn names_that_leave_their_folder_are_refused() {
        for bad in [
            "../../../escaped",
            "a/b",
            "a\\b",
            "..",
            ".hidden",
            "",
            "two words",
            "tab\there",
            "é",
        ] {
            assert!(check("name", bad).is_err(), "{bad:?} passed");
        }
        let long = "x".repeat(NAME_CHARS_MAX + 1);
        assert!(check("name", &long).is_err());
        let err = check("name", "../../../escaped").unwrap_err();
        assert!(
            matches!(err, NameError::Character { found: '/', .. }),
            "{err:?}"
        );
        assert!(err.to_string().contains("path separator"), "{err}");
    }

    #[test]
    fn a_slug_is_always_a_valid_name() {
        for text in ["../../../escaped", ".x", "", "two words", "ok-name", "é/ü"] {
            let s = slug(text);
            assert_eq!(check("name", &s), Ok(()), "{text:?} -> {s:?}");
        }
        assert_eq!(slug("ok-name"), "ok-name");
    }
}
