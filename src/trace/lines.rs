//! The lines of a text trace, found with memchr in a buffer of the input and handed out as slices of it:
//! no copy and no allocation per line. Memory is the buffer, one read block plus the longest line so far
//! (itself bounded by `MAX_LINE_BYTES`).

use std::io::{self, Read};

use super::swar::find_near;

/// Longest line accepted: far above any real command, low enough that a binary file without newlines cannot
/// make the reader buffer it whole.
pub const MAX_LINE_BYTES: usize = 64 << 20;

const READ_BYTES: usize = 1 << 20;

/// Why a line could not be had.
#[derive(Debug)]
pub enum LineError {
    Io(io::Error),
    /// The line (its number is `Lines::line_no`) is longer than `MAX_LINE_BYTES`.
    TooLong,
    /// The line holds a NUL byte: binary data, not text.
    Nul,
}

pub struct Lines<R> {
    src: R,
    buf: Vec<u8>,
    /// The unread bytes are `buf[start..end]`.
    start: usize,
    end: usize,
    eof: bool,
    line_no: u64,
    bytes_read: u64,
    /// Where the first NUL byte of the unread bytes is, if any: looked for once per read rather than once
    /// per line.
    nul: Option<usize>,
}

impl<R: Read> Lines<R> {
    pub fn new(src: R) -> Lines<R> {
        Lines { src, buf: vec![0; 2 * READ_BYTES], start: 0, end: 0, eof: false, line_no: 0, bytes_read: 0, nul: None }
    }

    /// Number of the last line handed out (1 for the first).
    pub fn line_no(&self) -> u64 {
        self.line_no
    }

    /// Bytes of the lines handed out so far, line endings included.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// The next line without its line ending (every `\n` and `\r` at its end); None at the end of the input.
    #[inline]
    pub fn next_line(&mut self) -> Result<Option<&[u8]>, LineError> {
        let (from, to) = match find_near(&self.buf[self.start..self.end], b'\n') {
            Some(i) => (self.start, self.start + i),
            None => match self.refill()? {
                Some(range) => range,
                None => return Ok(None),
            },
        };
        let consumed = (to + 1).min(self.end);
        self.line_no += 1;
        if to - from >= MAX_LINE_BYTES {
            return Err(LineError::TooLong);
        }
        if self.nul.is_some_and(|at| at < to) {
            return Err(LineError::Nul);
        }
        self.bytes_read += (consumed - from) as u64;
        self.start = consumed;
        let mut line = &self.buf[from..to];
        while let [rest @ .., b'\r' | b'\n'] = line {
            line = rest;
        }
        Ok(Some(line))
    }

    /// Reads until the buffer holds a whole line (or the input ends); its range, newline excluded.
    #[cold]
    fn refill(&mut self) -> Result<Option<(usize, usize)>, LineError> {
        loop {
            let pending = self.end - self.start;
            if let Some(i) = memchr::memchr(b'\n', &self.buf[self.start..self.end]) {
                return Ok(Some((self.start, self.start + i)));
            }
            if pending > MAX_LINE_BYTES {
                self.line_no += 1;
                return Err(LineError::TooLong);
            }
            if self.eof {
                return Ok((pending > 0).then_some((self.start, self.end)));
            }
            self.buf.copy_within(self.start..self.end, 0);
            self.nul = self.nul.map(|at| at - self.start);
            (self.start, self.end) = (0, pending);
            if self.buf.len() - self.end < READ_BYTES {
                self.buf.resize(self.end + 2 * READ_BYTES, 0);
            }
            let n = loop {
                match self.src.read(&mut self.buf[self.end..]) {
                    Ok(n) => break n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => return Err(LineError::Io(e)),
                }
            };
            if self.nul.is_none() {
                self.nul = memchr::memchr(0, &self.buf[self.end..self.end + n]).map(|at| self.end + at);
            }
            self.end += n;
            self.eof = n == 0;
        }
    }

    /// Whether no line is left.
    pub fn at_end(&mut self) -> Result<bool, LineError> {
        Ok(self.start == self.end && self.refill()?.is_none())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reader handing out a few bytes at a time, so that lines straddle reads.
    struct Trickle<'a>(&'a [u8], usize);
    impl Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let n = self.1.min(self.0.len()).min(out.len());
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    fn all(text: &[u8], step: usize) -> Vec<Vec<u8>> {
        let mut lines = Lines::new(Trickle(text, step));
        let mut out = Vec::new();
        while let Some(l) = lines.next_line().unwrap() {
            out.push(l.to_vec());
        }
        assert_eq!(lines.bytes_read(), text.len() as u64);
        out
    }

    #[test]
    fn lines_across_reads() {
        let text = b"GET a\r\n\nHMGET b c\nlast";
        for step in [1, 2, 3, 7, 1000] {
            assert_eq!(all(text, step), vec![b"GET a".to_vec(), vec![], b"HMGET b c".to_vec(), b"last".to_vec()]);
        }
        assert!(all(b"", 5).is_empty());
    }

    #[test]
    fn a_nul_byte_is_refused_at_its_line() {
        let text = b"a\nb\nc\0d\ne\n";
        for step in [1, 3, 100] {
            let mut lines = Lines::new(Trickle(text, step));
            assert_eq!(lines.next_line().unwrap(), Some(&b"a"[..]));
            assert_eq!(lines.next_line().unwrap(), Some(&b"b"[..]));
            assert!(matches!(lines.next_line(), Err(LineError::Nul)));
            assert_eq!(lines.line_no(), 3);
        }
    }

    #[test]
    fn a_line_too_long_is_refused_at_its_number() {
        let mut text = b"ok\n".to_vec();
        text.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 2));
        let mut lines = Lines::new(&text[..]);
        assert!(lines.next_line().unwrap().is_some());
        assert!(matches!(lines.next_line(), Err(LineError::TooLong)));
        assert_eq!(lines.line_no(), 2);
    }
}
