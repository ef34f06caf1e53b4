//! A connection's unsent replies.
//!
//! Replies are bytes written in place, but for large values, which are held
//! by reference to the stored item's data instead of copied: a `get`
//! naming one large key thousands of times then costs a pointer per key,
//! not a copy per key.

use std::io;

use bytes::Bytes;

/// Values at least this long are referenced rather than copied.
pub const REFERENCE_MIN: usize = 4 * 1024;

/// Replies waiting to be written: a run of frozen segments, then the bytes
/// being appended to.
#[derive(Debug, Default)]
pub struct Out {
    frozen: Vec<Bytes>,
    frozen_len: usize,
    tail: Vec<u8>,
}

impl Out {
    /// No replies.
    pub fn new() -> Out {
        Out::default()
    }

    /// The bytes waiting, in all.
    pub fn len(&self) -> usize {
        self.frozen_len + self.tail.len()
    }

    /// True if nothing waits.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Appends `bytes`.
    pub fn extend_from_slice(&mut self, bytes: &[u8]) {
        self.tail.extend_from_slice(bytes);
    }

    /// Appends one byte.
    pub fn push(&mut self, byte: u8) {
        self.tail.push(byte);
    }

    /// Appends a stored value: a reference if it is large, else a copy.
    pub fn value(&mut self, data: &Bytes) {
        if data.len() < REFERENCE_MIN {
            self.tail.extend_from_slice(data);
            return;
        }
        self.freeze();
        self.frozen_len += data.len();
        self.frozen.push(data.clone());
    }

    fn freeze(&mut self) {
        if !self.tail.is_empty() {
            self.frozen_len += self.tail.len();
            self.frozen
                .push(Bytes::from(std::mem::take(&mut self.tail)));
        }
    }

    /// Drops everything after the first `len` bytes.
    pub fn truncate(&mut self, len: usize) {
        if len >= self.frozen_len {
            self.tail.truncate(len - self.frozen_len);
            return;
        }
        self.tail.clear();
        while self.frozen_len > len {
            let last = self.frozen.pop().expect("frozen_len counts the segments");
            self.frozen_len -= last.len();
            if self.frozen_len < len {
                self.tail.extend_from_slice(&last[..len - self.frozen_len]);
            }
        }
    }

    /// True if the replies end with `suffix` (looked for in the bytes being
    /// appended to only).
    pub fn ends_with(&self, suffix: &[u8]) -> bool {
        self.tail.ends_with(suffix)
    }

    /// The segments in order, for writing.
    pub fn segments(&self) -> impl Iterator<Item = &[u8]> {
        self.frozen
            .iter()
            .map(|b| &b[..])
            .chain(std::iter::once(&self.tail[..]))
            .filter(|s| !s.is_empty())
    }

    /// Everything, copied into one buffer (for tests and small replies).
    pub fn to_vec(&self) -> Vec<u8> {
        let mut all = Vec::with_capacity(self.len());
        for s in self.segments() {
            all.extend_from_slice(s);
        }
        all
    }

    /// Forgets every reply, keeping the append buffer's capacity.
    pub fn clear(&mut self) {
        self.frozen.clear();
        self.frozen_len = 0;
        self.tail.clear();
    }

    /// The append buffer's capacity.
    pub fn capacity(&self) -> usize {
        self.tail.capacity()
    }

    /// Forgets every reply and releases the buffers (an idle connection
    /// holds no memory for replies).
    pub fn release(&mut self) {
        *self = Out::default();
    }

    /// Takes the append buffer out (to hand it back to a pool).
    pub fn take_buffer(&mut self) -> Vec<u8> {
        self.clear();
        std::mem::take(&mut self.tail)
    }

    /// Installs an empty append buffer taken from a pool.
    pub fn set_buffer(&mut self, mut buffer: Vec<u8>) {
        debug_assert!(self.is_empty());
        buffer.clear();
        self.tail = buffer;
    }
}

impl io::Write for Out {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tail.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> io::Result<()> {
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_values_are_referenced_and_truncation_undoes_them() {
        let big = Bytes::from(vec![b'v'; REFERENCE_MIN]);
        let mut out = Out::new();
        out.extend_from_slice(b"VALUE k\r\n");
        let mark = out.len();
        for _ in 0..3 {
            out.value(&big);
            out.extend_from_slice(b"\r\n");
        }
        assert_eq!(out.len(), 9 + 3 * (REFERENCE_MIN + 2));
        // One copy of the value, referenced three times.
        assert_eq!(
            out.frozen
                .iter()
                .filter(|b| b.len() == REFERENCE_MIN)
                .count(),
            3
        );
        assert!(out
            .frozen
            .iter()
            .all(|b| b.len() != REFERENCE_MIN || b.as_ptr() == big.as_ptr()));
        let all = out.to_vec();
        assert_eq!(&all[..9], b"VALUE k\r\n");
        assert_eq!(all.len(), out.len());
        // Back into the middle of a referenced value.
        out.truncate(mark + 10);
        assert_eq!(out.len(), mark + 10);
        assert_eq!(out.to_vec(), [&b"VALUE k\r\n"[..], &[b'v'; 10]].concat());
        out.truncate(mark);
        assert_eq!(out.to_vec(), b"VALUE k\r\n");
        out.value(&Bytes::from_static(b"small"));
        assert_eq!(out.to_vec(), b"VALUE k\r\nsmall");
        assert!(out.ends_with(b"small"));
    }
}
