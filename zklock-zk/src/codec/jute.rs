//! Jute, ZooKeeper's serialisation: big-endian integers, length-prefixed
//! strings and buffers, counted vectors.
//!
//! [`Reader`] reads from a frame that is already in memory: every length is
//! checked against the bytes that remain before anything is allocated, so a
//! hostile length costs nothing. [`Writer`] appends to a byte vector.

use std::fmt;

/// A frame or record that does not decode: what was wrong, in words.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct DecodeError {
    /// What was being read when it went wrong (e.g. "GetDataResponse.data").
    pub what: &'static str,
    /// What was wrong (e.g. "length 70000 but 12 bytes remain").
    pub why: String,
}

impl fmt::Display for DecodeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "bad {}: {}", self.what, self.why)
    }
}

impl std::error::Error for DecodeError {}

/// Reads jute values from a byte slice, front to back.
pub struct Reader<'a> {
    buf: &'a [u8],
}

impl<'a> Reader<'a> {
    /// A reader over `buf`.
    pub fn new(buf: &'a [u8]) -> Reader<'a> {
        Reader { buf }
    }

    /// Bytes not read yet.
    pub fn remaining(&self) -> usize {
        self.buf.len()
    }

    fn take(&mut self, n: usize, what: &'static str) -> Result<&'a [u8], DecodeError> {
        if n > self.buf.len() {
            return Err(DecodeError { what, why: format!("needs {n} bytes but {} remain", self.buf.len()) });
        }
        let (head, tail) = self.buf.split_at(n);
        self.buf = tail;
        Ok(head)
    }

    /// A 4-byte big-endian signed integer.
    pub fn i32(&mut self, what: &'static str) -> Result<i32, DecodeError> {
        let b = self.take(4, what)?;
        Ok(i32::from_be_bytes([b[0], b[1], b[2], b[3]]))
    }

    /// An 8-byte big-endian signed integer.
    pub fn i64(&mut self, what: &'static str) -> Result<i64, DecodeError> {
        let b = self.take(8, what)?;
        let mut a = [0u8; 8];
        a.copy_from_slice(b);
        Ok(i64::from_be_bytes(a))
    }

    /// A boolean: one byte, 0 is false and anything else true (as Java's
    /// `readBoolean`).
    pub fn bool(&mut self, what: &'static str) -> Result<bool, DecodeError> {
        Ok(self.take(1, what)?[0] != 0)
    }

    /// A length-prefixed buffer; length -1 is null, returned as `None`.
    pub fn buffer(&mut self, what: &'static str) -> Result<Option<&'a [u8]>, DecodeError> {
        let len = self.i32(what)?;
        if len == -1 {
            return Ok(None);
        }
        let n = usize::try_from(len).map_err(|_| DecodeError { what, why: format!("negative length {len}") })?;
        self.take(n, what).map(Some)
    }

    /// A length-prefixed buffer, null read as empty.
    pub fn bytes(&mut self, what: &'static str) -> Result<Vec<u8>, DecodeError> {
        Ok(self.buffer(what)?.map(<[u8]>::to_vec).unwrap_or_default())
    }

    /// A length-prefixed UTF-8 string; null is read as empty.
    pub fn string(&mut self, what: &'static str) -> Result<String, DecodeError> {
        match self.buffer(what)? {
            None => Ok(String::new()),
            Some(b) => String::from_utf8(b.to_vec()).map_err(|e| DecodeError { what, why: format!("not UTF-8 ({e})") }),
        }
    }

    /// A vector's element count; -1 (null) is read as 0. The count is
    /// checked against the remaining bytes (each element takes at least
    /// `min_element` bytes), so a hostile count allocates nothing.
    pub fn count(&mut self, what: &'static str, min_element: usize) -> Result<usize, DecodeError> {
        let n = self.i32(what)?;
        if n == -1 {
            return Ok(0);
        }
        let n = usize::try_from(n).map_err(|_| DecodeError { what, why: format!("negative count {n}") })?;
        if n.saturating_mul(min_element.max(1)) > self.buf.len() {
            return Err(DecodeError {
                what,
                why: format!("count {n} cannot fit in the {} bytes that remain", self.buf.len()),
            });
        }
        Ok(n)
    }

    /// A vector of strings.
    pub fn strings(&mut self, what: &'static str) -> Result<Vec<String>, DecodeError> {
        let n = self.count(what, 4)?;
        let mut out = Vec::with_capacity(n);
        for _ in 0..n {
            out.push(self.string(what)?);
        }
        Ok(out)
    }

    /// Fails unless every byte was read.
    pub fn finish(&self, what: &'static str) -> Result<(), DecodeError> {
        if self.buf.is_empty() {
            Ok(())
        } else {
            Err(DecodeError { what, why: format!("{} bytes left over", self.buf.len()) })
        }
    }
}

/// Appends jute values to a byte vector.
pub struct Writer<'a> {
    out: &'a mut Vec<u8>,
}

impl<'a> Writer<'a> {
    /// A writer appending to `out`.
    pub fn new(out: &'a mut Vec<u8>) -> Writer<'a> {
        Writer { out }
    }

    /// A 4-byte big-endian integer.
    pub fn i32(&mut self, v: i32) -> &mut Self {
        self.out.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// An 8-byte big-endian integer.
    pub fn i64(&mut self, v: i64) -> &mut Self {
        self.out.extend_from_slice(&v.to_be_bytes());
        self
    }

    /// A boolean as one byte.
    pub fn bool(&mut self, v: bool) -> &mut Self {
        self.out.push(u8::from(v));
        self
    }

    /// A length-prefixed buffer. The caller keeps buffers under the packet
    /// limit (far below `i32::MAX`); a longer one is cut to the length that
    /// is written, which the packet-size check refuses before sending.
    pub fn buffer(&mut self, v: &[u8]) -> &mut Self {
        let len = i32::try_from(v.len()).unwrap_or(i32::MAX);
        self.i32(len);
        self.out.extend_from_slice(&v[..len as usize]);
        self
    }

    /// A length-prefixed UTF-8 string.
    pub fn string(&mut self, v: &str) -> &mut Self {
        self.buffer(v.as_bytes())
    }

    /// A vector's element count.
    pub fn count(&mut self, n: usize) -> &mut Self {
        self.i32(i32::try_from(n).unwrap_or(i32::MAX))
    }

    /// A vector of strings.
    pub fn strings<S: AsRef<str>>(&mut self, v: &[S]) -> &mut Self {
        self.count(v.len());
        for s in v {
            self.string(s.as_ref());
        }
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lengths_beyond_the_frame_are_errors_not_allocations() {
        let mut r = Reader::new(&[0x7f, 0xff, 0xff, 0xff, 1, 2]);
        let e = r.buffer("x").unwrap_err();
        assert!(e.why.contains("needs 2147483647 bytes but 2 remain"), "{e}");
        let mut r = Reader::new(&[0x7f, 0xff, 0xff, 0xff, 1, 2]);
        assert!(r.count("v", 4).is_err());
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xfe]);
        assert!(r.buffer("x").unwrap_err().why.contains("negative"));
    }

    #[test]
    fn null_buffer_and_vector() {
        let mut r = Reader::new(&[0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff]);
        assert_eq!(r.buffer("b").unwrap(), None);
        assert_eq!(r.strings("v").unwrap(), Vec::<String>::new());
        r.finish("end").unwrap();
    }

    #[test]
    fn round_trip() {
        let mut v = Vec::new();
        Writer::new(&mut v).i32(-7).i64(1 << 40).bool(true).string("/a/b").buffer(&[]).strings(&["x", "yz"]);
        let mut r = Reader::new(&v);
        assert_eq!(r.i32("a").unwrap(), -7);
        assert_eq!(r.i64("b").unwrap(), 1 << 40);
        assert!(r.bool("c").unwrap());
        assert_eq!(r.string("d").unwrap(), "/a/b");
        assert_eq!(r.bytes("e").unwrap(), Vec::<u8>::new());
        assert_eq!(r.strings("f").unwrap(), vec!["x".to_string(), "yz".to_string()]);
        r.finish("end").unwrap();
    }
}
