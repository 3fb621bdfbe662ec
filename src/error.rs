//! Errors for unusable input: one clear message naming the file and the problem.
//!
//! The command line turns an [`InputError`] into that message on stderr and exit code 2.
//! The message is printed through [`clean`]: a control character from the input (an escape
//! sequence in a file name, a newline in a key) is shown escaped, never sent to the
//! terminal, and the origin and the message are each cut to a bounded length with a mark
//! saying how much was left out, so a 50 MB key gives a short message.

/// Most characters of an error's origin that are printed.
pub const ORIGIN_CHARS_MAX: usize = 300;

/// Most characters of an error's message that are printed.
pub const MESSAGE_CHARS_MAX: usize = 2000;

/// `text` as it may be printed: control characters escaped (`\u{1b}`, `\n`), and at most
/// `max_chars` characters of it, then `… [N more bytes]`.
pub fn clean(text: &str, max_chars: usize) -> String {
    let mut out = String::new();
    for (shown, (at, c)) in text.char_indices().enumerate() {
        if shown >= max_chars {
            out.push_str(&format!("… [{} more bytes]", text.len() - at));
            return out;
        }
        if c.is_control() {
            out.extend(c.escape_default());
        } else {
            out.push(c);
        }
    }
    out
}

/// Input the tool cannot use: a missing file, bad TOML, an unknown key, model or invariant.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InputError {
    /// The file (or flag) at fault.
    pub origin: String,
    /// What is wrong, in a sentence.
    pub message: String,
}

impl InputError {
    /// An error about `origin`.
    pub fn new(origin: impl Into<String>, message: impl Into<String>) -> Self {
        InputError {
            origin: origin.into(),
            message: message.into(),
        }
    }

    /// A TOML parse or schema error, located by line and column in `text`.
    pub fn toml(origin: &str, text: &str, err: &toml::de::Error) -> Self {
        let message = err.message().trim().to_string();
        match err.span() {
            Some(span) => {
                let before = &text[..span.start.min(text.len())];
                let line = before.matches('\n').count() + 1;
                let column = before.len() - before.rfind('\n').map_or(0, |i| i + 1) + 1;
                InputError::new(format!("{origin}:{line}:{column}"), message)
            }
            None => InputError::new(origin, message),
        }
    }
}

impl std::fmt::Display for InputError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: {}",
            clean(&self.origin, ORIGIN_CHARS_MAX),
            clean(&self.message, MESSAGE_CHARS_MAX)
        )
    }
}

impl std::error::Error for InputError {}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn control_characters_are_escaped_and_long_texts_cut() {
        let e = InputError::new("a\u{1b}[31mred.toml", "bad key `x\ny`");
        assert_eq!(e.to_string(), "a\\u{1b}[31mred.toml: bad key `x\\ny`");
        let huge = "k".repeat(50 << 20);
        let e = InputError::new("f.toml", format!("unknown key `{huge}`"));
        let shown = e.to_string();
        assert!(shown.len() < 3000, "{}", shown.len());
        assert!(shown.ends_with(&format!("… [{} more bytes]", (50 << 20) + 14 - 2000)));
    }
}
