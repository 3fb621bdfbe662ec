//! A small reader for server-sent events: `data:` lines, events split by a blank line.

use bytes::{Buf, BytesMut};
use http_body_util::BodyExt;
use hyper::body::Incoming;

/// Largest single event accepted (64 KiB); a longer one is an error, not a hang.
pub const EVENT_BYTES_MAX: usize = 64 * 1024;

/// Reads events from a response body.
pub struct Reader {
    body: Incoming,
    buf: BytesMut,
    done: bool,
}

impl Reader {
    /// A reader over `body`.
    pub fn new(body: Incoming) -> Self {
        Reader {
            body,
            buf: BytesMut::new(),
            done: false,
        }
    }

    /// The next event's data (its `data:` lines joined by newlines); `None` at a clean end;
    /// `Err` when the stream breaks or an event is too large.
    pub async fn next_event(&mut self) -> Result<Option<String>, String> {
        loop {
            if let Some(event) = take_event(&mut self.buf)? {
                return Ok(Some(event));
            }
            if self.done {
                return if self.buf.iter().all(|b| b.is_ascii_whitespace()) {
                    Ok(None)
                } else {
                    Err("stream ended inside an event".into())
                };
            }
            match self.body.frame().await {
                None => self.done = true,
                Some(Err(e)) => return Err(format!("stream broke: {e}")),
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
pub fn take_event(buf: &mut BytesMut) -> Result<Option<String>, String> {
    let Some(end) = find_blank_line(buf) else {
        if buf.len() > EVENT_BYTES_MAX {
            return Err(format!("event larger than {EVENT_BYTES_MAX} bytes"));
        }
        return Ok(None);
    };
    let raw = buf.split_to(end.0);
    buf.advance(end.1);
    let text = String::from_utf8_lossy(&raw);
    let data: Vec<&str> = text
        .lines()
        .filter_map(|l| l.strip_prefix("data:"))
        .map(|d| d.strip_prefix(' ').unwrap_or(d))
        .collect();
    Ok(Some(data.join("\n")))
}

/// Where the first blank line is: (end of the event, length of the separator).
fn find_blank_line(buf: &[u8]) -> Option<(usize, usize)> {
    let lf = buf.windows(2).position(|w| w == b"\n\n").map(|i| (i, 2));
    let crlf = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .map(|i| (i, 4));
    match (lf, crlf) {
        (Some(a), Some(b)) => Some(if a.0 <= b.0 { a } else { b }),
        (a, b) => a.or(b),
    }
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
}
