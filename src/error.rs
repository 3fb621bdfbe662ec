//! Errors for unusable input: one clear message naming the file and the problem.
//!
//! The command line turns an [`InputError`] into that message on stderr and exit code 2.

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
        write!(f, "{}: {}", self.origin, self.message)
    }
}

impl std::error::Error for InputError {}
