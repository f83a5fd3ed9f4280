//! Length-prefixed frames: a 4-byte big-endian length, then that many bytes.

use std::fmt;

/// The largest frame body ZooKeeper's own client and server accept by
/// default (`jute.maxbuffer`, `0xfffff`).
pub const DEFAULT_MAX_FRAME: usize = 0xfffff;

/// A length prefix that cannot be honoured.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct FrameError {
    /// The length as sent.
    pub len: i32,
    /// The limit in force.
    pub max: usize,
}

impl fmt::Display for FrameError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.len < 0 {
            write!(f, "frame length {} is negative", self.len)
        } else {
            write!(f, "frame length {} is over the packet limit of {} bytes", self.len, self.max)
        }
    }
}

impl std::error::Error for FrameError {}

/// Where the next frame in `buf` stands: `Ok(Some(len))` when a whole frame
/// of `len` body bytes follows the 4-byte prefix, `Ok(None)` when more bytes
/// are needed, an error when the prefix is negative or over `max`.
///
/// The prefix is checked as soon as its 4 bytes are there, before the body
/// arrives, so a hostile length is refused without waiting or allocating.
pub fn next_frame(buf: &[u8], max: usize) -> Result<Option<usize>, FrameError> {
    let Some(prefix) = buf.get(..4) else { return Ok(None) };
    let len = i32::from_be_bytes([prefix[0], prefix[1], prefix[2], prefix[3]]);
    let n = usize::try_from(len).map_err(|_| FrameError { len, max })?;
    if n > max {
        return Err(FrameError { len, max });
    }
    Ok(if buf.len() - 4 >= n { Some(n) } else { None })
}

/// Appends a frame: reserves the prefix, lets `body` write, then fills in
/// the length. Returns the body's length.
pub fn write_frame(out: &mut Vec<u8>, body: impl FnOnce(&mut Vec<u8>)) -> usize {
    let at = out.len();
    out.extend_from_slice(&[0; 4]);
    body(out);
    let n = out.len() - at - 4;
    let len = i32::try_from(n).unwrap_or(i32::MAX);
    out[at..at + 4].copy_from_slice(&len.to_be_bytes());
    n
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prefix_checked_before_the_body() {
        assert_eq!(next_frame(&[0, 0], 10), Ok(None));
        assert_eq!(next_frame(&[0, 0, 0, 3, 1, 2], 10), Ok(None));
        assert_eq!(next_frame(&[0, 0, 0, 3, 1, 2, 3], 10), Ok(Some(3)));
        assert_eq!(next_frame(&[0, 0, 0, 11], 10), Err(FrameError { len: 11, max: 10 }));
        assert_eq!(next_frame(&[0xff, 0xff, 0xff, 0xff], 10), Err(FrameError { len: -1, max: 10 }));
    }

    #[test]
    fn write_then_read() {
        let mut v = vec![9];
        assert_eq!(write_frame(&mut v, |b| b.extend_from_slice(b"abc")), 3);
        assert_eq!(next_frame(&v[1..], 10), Ok(Some(3)));
        assert_eq!(&v[5..], b"abc");
    }
}
