//! A small reader for server-sent events: `data:` lines, events split by a blank line.
//!
//! An event ends at the first `\n\n` or `\r\n\r\n` (a bare `\r` line ending is not read).
//! Lines are split on `\n` with one trailing `\r` dropped. An event over
//! [`EVENT_BYTES_MAX`] is an error, whether or not its end has arrived. Splitting is one
//! linear pass, and [`Reader`] remembers how far it has scanned, so an event that arrives a
//! byte at a time costs linear time.

use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// Largest single event accepted (64 KiB); a longer one is an error, not a hang.
pub const EVENT_BYTES_MAX: usize = 64 * 1024;

/// Why a stream of events could not be read on.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SseError {
    /// An event over [`EVENT_BYTES_MAX`] bytes.
    #[error("event larger than {EVENT_BYTES_MAX} bytes")]
    TooLarge,
    /// The body ended with part of an event.
    #[error("stream ended inside an event")]
    EndedInside,
    /// The body broke (a reset, a timeout): hyper's words.
    #[error("stream broke: {0}")]
    Broke(String),
}

/// Reads events from a response body.
pub struct Reader {
    body: Incoming,
    buf: BytesMut,
    scanned: usize,
    done: bool,
}

impl Reader {
    /// A reader over `body`.
    pub fn new(body: Incoming) -> Self {
        Reader {
            body,
            buf: BytesMut::new(),
            scanned: 0,
            done: false,
        }
    }

    /// The next event's data (its `data:` lines joined by newlines); `None` at a clean end;
    /// `Err` when the stream breaks or an event is too large.
    pub async fn next_event(&mut self) -> Result<Option<String>, SseError> {
        loop {
            if let Some(event) = take_event_from(&mut self.buf, &mut self.scanned)? {
                return Ok(Some(event));
            }
            if self.done {
                return if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                    Ok(None)
                } else {
                    Err(SseError::EndedInside)
                };
            }
            match self.body.frame().await {
                None => self.done = true,
                Some(Err(e)) => return Err(SseError::Broke(e.to_string())),
                Some(Ok(frame)) => {
                    if let Some(data) = frame.data_ref() {
                        self.buf.extend_from_slice(data);
                    }
                }
            }
        }
    }
}

/// Takes one complete event off the front of `buf`, if there is one.
pub fn take_event(buf: &mut BytesMut) -> Result<Option<String>, SseError> {
    let mut scanned = 0;
    take_event_from(buf, &mut scanned)
}

/// [`take_event`], resuming the search at `scanned`: the front of `buf` known to hold no
/// event end. It is updated for the next call and reset when an event is taken.
pub fn take_event_from(
    buf: &mut BytesMut,
    scanned: &mut usize,
) -> Result<Option<String>, SseError> {
    let Some((end, sep)) = find_event_end(buf, *scanned) else {
        // Resume a few bytes back: a separator may straddle what arrives next.
        *scanned = buf.len().saturating_sub(3);
        if buf.len() > EVENT_BYTES_MAX {
            return Err(SseError::TooLarge);
        }
        return Ok(None);
    };
    if end > EVENT_BYTES_MAX {
        return Err(SseError::TooLarge);
    }
    *scanned = 0;
    let raw = buf.split_to(end);
    buf.advance(sep);
    let text = String::from_utf8_lossy(&raw);
    let data: Vec<&str> = text
        .split('\n')
        .map(|l| l.strip_suffix('\r').unwrap_or(l))
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    Ok(Some(data.join("\n")))
}

/// Where the first event end at or after `from` is: (end of the event, separator length).
/// One pass over the `\n` bytes: a `\n\n`, or a `\r\n\r\n`, whichever starts first.
fn find_event_end(buf: &[u8], from: usize) -> Option<(usize, usize)> {
    let mut i = from.min(buf.len());
    while let Some(rel) = buf[i..].iter().position(|b| *b == b'\n') {
        let n = i + rel;
        // `\r\n\r\n` starting two bytes before this `\n`'s `\r`...
        if n >= 1 && buf[n - 1] == b'\r' && buf.get(n + 1..n + 3) == Some(b"\r\n") && n > from {
            // ... unless a `\n\n` starts earlier: it cannot, since this is the first `\n`.
            return Some((n - 1, 4));
        }
        if buf.get(n + 1) == Some(&b'\n') {
            return Some((n, 2));
        }
        i = n + 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_events_and_joins_data_lines() {
        let mut buf = BytesMut::from(&b"data: a\ndata: b\n\ndata: c\n\npartial"[..]);
        assert_eq!(take_event(&mut buf), Ok(Some("a\nb".into())));
        assert_eq!(take_event(&mut buf), Ok(Some("c".into())));
        assert_eq!(take_event(&mut buf), Ok(None));
        assert_eq!(&buf[..], b"partial");
    }

    #[test]
    fn crlf_events_and_a_crlf_line_before_a_lf_blank_line() {
        let mut buf = BytesMut::from(&b"data: a\r\n\r\ndata: x\r\n\n"[..]);
        assert_eq!(take_event(&mut buf), Ok(Some("a".into())));
        assert_eq!(take_event(&mut buf), Ok(Some("x".into())));
    }

    #[test]
    fn resuming_finds_a_separator_that_straddles_chunks() {
        let mut buf = BytesMut::from(&b"data: a\r\n\r"[..]);
        let mut scanned = 0;
        assert_eq!(take_event_from(&mut buf, &mut scanned), Ok(None));
        buf.extend_from_slice(b"\n");
        assert_eq!(
            take_event_from(&mut buf, &mut scanned),
            Ok(Some("a".into()))
        );
    }

    #[test]
    fn a_terminated_event_over_the_bound_is_refused() {
        let mut buf = BytesMut::from(&b"data: "[..]);
        buf.extend_from_slice(&vec![b'x'; EVENT_BYTES_MAX + 1]);
        buf.extend_from_slice(b"\n\n");
        assert!(take_event(&mut buf).is_err());
    }
}
