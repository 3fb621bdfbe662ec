//! What a sweep writes and prints: tables and CSV ([`report`]), the chart ([`chart`]), the
//! timeline of one failing run ([`timeline`]), the compact terminal summary ([`terminal`])
//! and the JUnit file of `check --junit` ([`junit`]); [`html`] is the markup type the pages
//! are built from, escaping every value by construction. Every file is written through
//! [`crate::files`] (never through a symbolic link).
pub mod chart;
pub mod html;
pub mod junit;
pub mod report;
pub mod terminal;
pub mod timeline;
