//! What a sweep writes: tables and CSV ([`report`]), the chart ([`chart`]) and the timeline
//! of one failing run ([`timeline`]).
pub mod chart;
pub mod report;
pub mod timeline;
