//! A fixed-size read buffer over any `Read`, holding at least one whole record so the reader can hand out
//! zero-copy slices. It refills by moving the unread tail (at most one partial record) to the front and
//! reading into the rest, so each byte is read once and copied at most once. The buffer grows only when a
//! single record is larger than it, doubling as that record's bytes arrive; the readers bound record
//! lengths before asking, so memory stays at the buffer size or twice the largest record actually present,
//! whatever the file's size or its length fields say.

use std::io::{self, ErrorKind, Read};

pub(crate) struct Buffer<R> {
    src: R,
    data: Vec<u8>,
    /// Unread bytes are `data[start..end]`.
    start: usize,
    end: usize,
    /// File offset of `data[start]`.
    offset: u64,
    eof: bool,
}

impl<R: Read> Buffer<R> {
    pub fn new(src: R, size: usize) -> Buffer<R> {
        Buffer { src, data: vec![0; size.max(64)], start: 0, end: 0, offset: 0, eof: false }
    }

    /// The unread bytes.
    #[inline]
    pub fn unread(&self) -> &[u8] {
        &self.data[self.start..self.end]
    }

    /// File offset of the first unread byte: the bytes consumed so far.
    #[inline]
    pub fn offset(&self) -> u64 {
        self.offset
    }

    /// Position in `data` of the first unread byte; with `data()` it names a slice that stays valid after
    /// `consume` until the next `fill`.
    #[inline]
    pub fn position(&self) -> usize {
        self.start
    }

    #[inline]
    pub fn data(&self) -> &[u8] {
        &self.data
    }

    #[inline]
    pub fn consume(&mut self, n: usize) {
        let n = n.min(self.end - self.start);
        self.start += n;
        self.offset += n as u64;
    }

    /// Makes at least `n` bytes unread; false when the input ends first (the bytes there are stay unread).
    /// `n` must already be bounded by the caller: the buffer grows to hold it.
    #[inline]
    pub fn fill(&mut self, n: usize) -> io::Result<bool> {
        if self.end - self.start >= n {
            return Ok(true);
        }
        self.refill(n)
    }

    #[cold]
    fn refill(&mut self, n: usize) -> io::Result<bool> {
        if self.start > 0 {
            self.data.copy_within(self.start..self.end, 0);
            self.end -= self.start;
            self.start = 0;
        }
        while self.end < n {
            if self.eof {
                return Ok(false);
            }
            if self.end == self.data.len() {
                // Grow by doubling as bytes arrive, so a length field larger than the input never costs more
                // than twice the bytes the input actually has.
                self.data.resize(n.min(self.data.len() * 2), 0);
            }
            match self.src.read(&mut self.data[self.end..]) {
                Ok(0) => self.eof = true,
                Ok(k) => self.end += k,
                Err(e) if e.kind() == ErrorKind::Interrupted => {}
                Err(e) => return Err(e),
            }
        }
        Ok(true)
    }

    /// Consumes `n` bytes without keeping them (blocks nobody reads); false when the input ends first.
    pub fn skip(&mut self, mut n: u64) -> io::Result<bool> {
        loop {
            let here = (self.end - self.start) as u64;
            if n <= here {
                self.consume(n as usize);
                return Ok(true);
            }
            self.consume(here as usize);
            n -= here;
            if !self.fill(1)? {
                return Ok(false);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hands out at most one byte per read, the worst case for refilling.
    struct Trickle<'a>(&'a [u8]);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            match (self.0.split_first(), out.first_mut()) {
                (Some((&b, rest)), Some(o)) => {
                    *o = b;
                    self.0 = rest;
                    Ok(1)
                }
                _ => Ok(0),
            }
        }
    }

    #[test]
    fn fills_consumes_and_grows_across_refills() {
        let bytes: Vec<u8> = (0..=255).collect();
        let mut b = Buffer::new(Trickle(&bytes), 64);
        assert!(b.fill(60).unwrap());
        assert_eq!(&b.unread()[..60], &bytes[..60]);
        b.consume(60);
        assert!(b.fill(100).unwrap(), "grows past its size for one long record");
        assert_eq!(&b.unread()[..100], &bytes[60..160]);
        assert_eq!(b.offset(), 60);
        assert!(b.skip(150).unwrap());
        assert_eq!(b.offset(), 210);
        assert!(!b.fill(47).unwrap(), "46 bytes left");
        assert_eq!(b.unread(), &bytes[210..]);
        assert!(!b.skip(47).unwrap());
        assert!(b.unread().is_empty());
        assert!(!b.fill(1).unwrap());
    }

    #[test]
    fn a_length_beyond_the_input_costs_only_the_input() {
        let bytes = vec![7u8; 1000];
        let mut b = Buffer::new(&bytes[..], 64);
        assert!(!b.fill(200 << 20).unwrap());
        assert_eq!(b.unread().len(), 1000);
        assert!(b.data.len() <= 2048, "buffer grew to {} bytes", b.data.len());
    }
}
