//! Markup built so that no value reaches a page raw.
//!
//! [`Html`] is a fragment of HTML or SVG. Its constructors are [`Html::text`], which escapes,
//! [`Html::new`] (empty), [`Html::from_static`] (a literal of the program's own), and the
//! crate's `html!` and `html_line!` macros, which append a template with its values: the template is the program's own markup (a literal), and every value goes
//! through [`ToHtml`], which escapes text (`&str`, `String`) and writes numbers as they
//! are; only another [`Html`] is taken as markup. The macros expand their template through
//! `concat!`, so Rust refuses an implicit capture (`{name}` inside the template): every value
//! is an argument, and every argument is escaped. A name, a message or a replica header from a
//! recorded history becomes `&lt;script&gt;`, never a `<script>`.
//!
//! The timeline pages ([`super::timeline`]) and the chart ([`super::chart`]) are built
//! from it.

use std::fmt;

/// A fragment of markup (see the module docs).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Html(String);

impl Html {
    /// Nothing.
    pub fn new() -> Html {
        Html(String::new())
    }

    /// Markup the program itself wrote (a literal: a `'static` string never comes from
    /// input).
    pub fn from_static(markup: &'static str) -> Html {
        Html(markup.to_string())
    }

    /// `text`, escaped.
    pub fn text(text: &str) -> Html {
        let mut h = Html::new();
        escape_into(&mut h.0, text);
        h
    }

    /// Appends another fragment.
    pub fn push(&mut self, other: &Html) {
        self.0.push_str(&other.0);
    }

    /// Fragments joined by `sep` (itself markup).
    pub fn join(parts: &[Html], sep: &Html) -> Html {
        let mut out = Html::new();
        for (i, p) in parts.iter().enumerate() {
            if i > 0 {
                out.push(sep);
            }
            out.push(p);
        }
        out
    }

    /// The markup.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The markup, as the bytes of a file.
    pub fn into_bytes(self) -> Vec<u8> {
        self.0.into_bytes()
    }

    /// Appends formatted arguments; only the macros call it, and they wrap every argument
    /// in [`Safe`].
    #[doc(hidden)]
    pub(crate) fn append_template(&mut self, args: fmt::Arguments<'_>) {
        let _ = fmt::Write::write_fmt(&mut self.0, args);
    }
}

/// Escapes text for HTML and SVG, in text and in attribute values. Control characters other
/// than tab and newline are dropped (XML 1.0 does not allow them).
pub fn escape(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    escape_into(&mut out, text);
    out
}

fn escape_into(out: &mut String, text: &str) {
    for c in text.chars() {
        match c {
            '&' => out.push_str("&amp;"),
            '<' => out.push_str("&lt;"),
            '>' => out.push_str("&gt;"),
            '"' => out.push_str("&quot;"),
            '\'' => out.push_str("&#39;"),
            '\t' | '\n' => out.push(c),
            c if c.is_control() => {}
            c => out.push(c),
        }
    }
}

/// A value that may go into a template: text is escaped, numbers are written as they are
/// (with the template's precision), markup is taken as it is.
pub trait ToHtml {
    /// Writes the value as markup.
    fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result;
}

impl ToHtml for str {
    fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&escape(self))
    }
}

impl ToHtml for String {
    fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_str().fmt_html(f)
    }
}

impl ToHtml for crate::check::Invariant {
    fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.as_str().fmt_html(f)
    }
}

impl ToHtml for Html {
    fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl<T: ToHtml + ?Sized> ToHtml for &T {
    fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        (**self).fmt_html(f)
    }
}

macro_rules! numbers {
    ($($t:ty),*) => {$(
        impl ToHtml for $t {
            fn fmt_html(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Display::fmt(self, f)
            }
        }
    )*};
}
numbers!(u8, u16, u32, u64, usize, i32, i64, f64);

/// A value on its way into a template ([`ToHtml`] through `Display`).
#[doc(hidden)]
pub struct Safe<'a, T: ?Sized>(pub &'a T);

impl<T: ToHtml + ?Sized> fmt::Display for Safe<'_, T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        self.0.fmt_html(f)
    }
}

/// Appends a template and its values to an [`Html`]: `html!(out, "<b>{}</b>", name)`, or
/// with named values after a `;`: `html!(out, "<b>{who}</b>"; who = name)`. Every value is
/// escaped unless it is an [`Html`]; implicit captures do not compile.
macro_rules! html {
    ($out:expr, $fmt:literal $(, $arg:expr)* ; $($name:ident = $val:expr),+ $(,)?) => {
        $out.append_template(format_args!(
            concat!($fmt)
            $(, $crate::output::html::Safe(&$arg))*
            $(, $name = $crate::output::html::Safe(&$val))+
        ))
    };
    ($out:expr, $fmt:literal $(, $arg:expr)* $(,)?) => {
        $out.append_template(format_args!(
            concat!($fmt)
            $(, $crate::output::html::Safe(&$arg))*
        ))
    };
}

/// [`html!`] followed by a newline; the template may also be a `concat!` of literals.
macro_rules! html_line {
    ($out:expr, concat!($($part:literal),+ $(,)?) $(, $arg:expr)* $(,)?) => {
        $out.append_template(format_args!(
            concat!($($part),+, "\n")
            $(, $crate::output::html::Safe(&$arg))*
        ))
    };
    ($out:expr, $fmt:literal $(, $arg:expr)* ; $($name:ident = $val:expr),+ $(,)?) => {
        $out.append_template(format_args!(
            concat!($fmt, "\n")
            $(, $crate::output::html::Safe(&$arg))*
            $(, $name = $crate::output::html::Safe(&$val))+
        ))
    };
    ($out:expr, $fmt:literal $(, $arg:expr)* $(,)?) => {
        $out.append_template(format_args!(
            concat!($fmt, "\n")
            $(, $crate::output::html::Safe(&$arg))*
        ))
    };
}

pub(crate) use html;
pub(crate) use html_line;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_escaped_and_markup_is_not() {
        let mut h = Html::new();
        let name = "<script>alert(1)</script>";
        let inner = Html::text("a & b");
        html!(
            h,
            "<p title=\"{}\">{} {} {:.1}</p>",
            name,
            inner,
            7u64,
            1.25f64
        );
        assert_eq!(
            h.as_str(),
            "<p title=\"&lt;script&gt;alert(1)&lt;/script&gt;\">a &amp; b 7 1.2</p>"
        );
        html_line!(h, "{}", String::from("\"q\" 'x'\u{1b}[31m"));
        assert!(h.as_str().ends_with("&quot;q&quot; &#39;x&#39;[31m\n"));
    }
}
