//! CRLF-terminated lines, the unit of every RESP header, read across chunk boundaries.
//!
//! Parsers take a complete line straight out of the chunk when it is there (the common case). A line cut by
//! the end of a chunk goes into a `PartialLine`, which keeps only its first `KEEP` bytes (all a header, an
//! integer or a status needs) and counts the rest, so a long simple string or error costs no memory.

pub(crate) const KEEP: usize = 32;

/// Where the line starting at `data[0]` ends: `Ok(Some(i))` when `data[i..i + 2] == "\r\n"`, `Ok(None)` when
/// `data` ends first, `Err` for a CR not followed by LF (RESP lines hold neither alone).
#[inline]
pub(crate) fn find_crlf(data: &[u8]) -> Result<Option<usize>, ()> {
    match data.iter().position(|&b| b == b'\r' || b == b'\n') {
        None => Ok(None),
        Some(i) if data[i] == b'\n' => Err(()),
        Some(i) => match data.get(i + 1) {
            None => Ok(None),
            Some(b'\n') => Ok(Some(i)),
            Some(_) => Err(()),
        },
    }
}

/// A line begun in an earlier chunk.
#[derive(Debug, Default)]
pub(crate) struct PartialLine {
    kept: [u8; KEEP],
    /// Bytes of the line so far, CR excluded.
    len: usize,
    /// The last byte seen was the CR.
    cr: bool,
}

pub(crate) enum Feed {
    /// The line ended after this many bytes of the chunk (its CRLF included).
    Done(usize),
    /// The chunk ended inside the line: every byte was taken.
    More,
    /// A lone CR or LF, or the line grew past the limit.
    Invalid,
}

impl PartialLine {
    pub fn clear(&mut self) {
        self.len = 0;
        self.cr = false;
    }

    /// The line's length (CRLF excluded) and its first `KEEP` bytes; valid once `feed` said `Done`.
    pub fn line(&self) -> (usize, [u8; KEEP]) {
        (self.len, self.kept)
    }

    /// Takes the bytes of `data` that belong to the line, up to its CRLF; `max` bounds the line's length.
    pub fn feed(&mut self, data: &[u8], max: usize) -> Feed {
        let mut i = 0;
        if self.cr {
            return match data.first() {
                None => Feed::More,
                Some(b'\n') => {
                    self.cr = false;
                    Feed::Done(1)
                }
                Some(_) => Feed::Invalid,
            };
        }
        while i < data.len() {
            let b = data[i];
            if b == b'\r' {
                return match data.get(i + 1) {
                    None => {
                        self.cr = true;
                        Feed::More
                    }
                    Some(b'\n') => Feed::Done(i + 2),
                    Some(_) => Feed::Invalid,
                };
            }
            if b == b'\n' || self.len >= max {
                return Feed::Invalid;
            }
            if self.len < KEEP {
                self.kept[self.len] = b;
            }
            self.len += 1;
            i += 1;
        }
        Feed::More
    }
}

/// A complete line: either in the chunk (`start`, `len` into it) or assembled from several chunks.
pub(crate) enum LineRef {
    Data(usize, usize),
    Kept(usize, [u8; KEEP]),
}

impl LineRef {
    /// The line's full length (CRLF excluded).
    pub fn len(&self) -> usize {
        match *self {
            LineRef::Data(_, len) | LineRef::Kept(len, _) => len,
        }
    }
    /// The line, or its first `KEEP` bytes when it was assembled from several chunks.
    pub fn bytes<'a>(&'a self, data: &'a [u8]) -> &'a [u8] {
        match self {
            LineRef::Data(start, len) => &data[*start..*start + *len],
            LineRef::Kept(len, kept) => &kept[..(*len).min(KEEP)],
        }
    }
}

/// Reads lines out of chunks: straight from the chunk when the whole line is there, through a
/// `PartialLine` when it is not.
#[derive(Debug, Default)]
pub(crate) struct LineReader {
    partial: PartialLine,
    active: bool,
}

impl LineReader {
    pub fn clear(&mut self) {
        self.partial.clear();
        self.active = false;
    }

    /// A line is half read.
    pub fn is_active(&self) -> bool {
        self.active
    }

    /// Reads the line at `data[*pos]` (or the rest of the one begun earlier); `Ok(None)` when the chunk ended
    /// first (every byte taken), `Err` for a lone CR or LF or a line longer than `max`.
    #[inline]
    pub fn read(&mut self, data: &[u8], pos: &mut usize, max: usize) -> Result<Option<LineRef>, ()> {
        if self.active {
            return match self.partial.feed(&data[*pos..], max) {
                Feed::Done(n) => {
                    *pos += n;
                    self.active = false;
                    let (len, kept) = self.partial.line();
                    self.partial.clear();
                    Ok(Some(LineRef::Kept(len, kept)))
                }
                Feed::More => {
                    *pos = data.len();
                    Ok(None)
                }
                Feed::Invalid => Err(()),
            };
        }
        let rest = &data[*pos..];
        let window = &rest[..rest.len().min(max + 2)];
        match find_crlf(window)? {
            Some(i) if i <= max => {
                let line = LineRef::Data(*pos, i);
                *pos += i + 2;
                Ok(Some(line))
            }
            None if window.len() < max + 2 => {
                self.partial.clear();
                match self.partial.feed(rest, max) {
                    Feed::More => {
                        self.active = true;
                        *pos = data.len();
                        Ok(None)
                    }
                    _ => Err(()),
                }
            }
            _ => Err(()),
        }
    }
}

/// The hot path for numeric headers: `-?[0-9]{1,18}\r\n` at the start of `d`, parsed in one pass; the
/// value and the bytes taken. `None` for anything else, including a line not wholly in `d`: the general
/// path (`LineReader`, `parse_int`) then decides.
#[inline(always)]
pub(crate) fn fast_int_line(d: &[u8]) -> Option<(i64, usize)> {
    let neg = d.first() == Some(&b'-');
    let start = neg as usize;
    let mut i = start;
    let mut v: i64 = 0;
    while i < d.len() && i - start < 18 {
        let c = d[i].wrapping_sub(b'0');
        if c > 9 {
            break;
        }
        v = v * 10 + c as i64;
        i += 1;
    }
    if i == start || d.get(i) != Some(&b'\r') || d.get(i + 1) != Some(&b'\n') {
        return None;
    }
    Some((if neg { -v } else { v }, i + 2))
}

/// Parses a RESP integer: an optional minus sign and 1 to 19 digits; anything else (a plus sign, spaces,
/// overflow) is invalid, as it is for Redis.
#[inline]
pub(crate) fn parse_int(s: &[u8]) -> Option<i64> {
    let (neg, digits) = match s.first()? {
        b'-' => (true, &s[1..]),
        _ => (false, s),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    let mut v: i64 = 0;
    for &d in digits {
        let d = d.wrapping_sub(b'0');
        if d > 9 {
            return None;
        }
        v = v.checked_mul(10)?.checked_add(d as i64)?;
    }
    Some(if neg { -v } else { v })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn crlf_search() {
        assert_eq!(find_crlf(b"12\r\nx"), Ok(Some(2)));
        assert_eq!(find_crlf(b"12\r"), Ok(None));
        assert_eq!(find_crlf(b"12"), Ok(None));
        assert_eq!(find_crlf(b"1\n2"), Err(()));
        assert_eq!(find_crlf(b"1\rx"), Err(()));
    }

    #[test]
    fn partial_line_across_chunks_keeps_the_head_only() {
        let mut p = PartialLine::default();
        let long = [b'a'; 100];
        assert!(matches!(p.feed(&long, 1000), Feed::More));
        assert!(matches!(p.feed(b"bb\r", 1000), Feed::More));
        assert!(matches!(p.feed(b"\nrest", 1000), Feed::Done(1)));
        let (len, kept) = p.line();
        assert_eq!(len, 102);
        assert_eq!(kept, [b'a'; KEEP]);
        let mut q = PartialLine::default();
        assert!(matches!(q.feed(&long, 50), Feed::Invalid));
        let mut r = PartialLine::default();
        assert!(matches!(r.feed(b"ab\r", 50), Feed::More));
        assert!(matches!(r.feed(b"x", 50), Feed::Invalid));
    }

    #[test]
    fn fast_integer_lines() {
        assert_eq!(fast_int_line(b"22\r\n$5"), Some((22, 4)));
        assert_eq!(fast_int_line(b"-1\r\n"), Some((-1, 4)));
        assert_eq!(fast_int_line(b"22\r"), None);
        assert_eq!(fast_int_line(b"-\r\n"), None);
        assert_eq!(fast_int_line(b"\r\n"), None);
        assert_eq!(fast_int_line(b"1x\r\n"), None);
        assert_eq!(fast_int_line(b"1234567890123456789\r\n"), None);
    }

    #[test]
    fn integers() {
        assert_eq!(parse_int(b"0"), Some(0));
        assert_eq!(parse_int(b"-1"), Some(-1));
        assert_eq!(parse_int(b"9223372036854775807"), Some(i64::MAX));
        assert_eq!(parse_int(b"9223372036854775808"), None);
        assert_eq!(parse_int(b"+1"), None);
        assert_eq!(parse_int(b"-"), None);
        assert_eq!(parse_int(b""), None);
        assert_eq!(parse_int(b"1 "), None);
    }
}
