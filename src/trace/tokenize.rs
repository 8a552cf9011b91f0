//! Splitting a text trace line into arguments: bare words separated by spaces, or double-quoted strings
//! with the escapes Redis uses when it prints a value (`\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b`, `\xHH`),
//! as in MONITOR output and redis-cli input.

use super::quick_split;
use super::swar::{quote_or_escape, word_end};

/// Splits `line` into `out` (cleared first): all at once when `quick_split` takes the line, else an argument
/// at a time. Bare words, and quoted arguments without escapes (nearly all), stay zero-copy; quoted arguments
/// with escapes are unescaped into `scratch`. `out` holds (start, end, in_scratch) spans.
pub fn split_args(line: &[u8], out: &mut Vec<Span>, scratch: &mut Vec<u8>) -> Result<(), String> {
    out.clear();
    scratch.clear();
    if quick_split::split(line, out) {
        return Ok(());
    }
    out.clear();
    let mut i = 0;
    while i < line.len() {
        let c = line[i];
        if c.is_ascii_whitespace() {
            i += 1;
        } else if c == b'"' {
            let body = i + 1;
            match quote_or_escape(line, body) {
                Some(end) if line[end] == b'"' => {
                    i = after_closing_quote(line, end + 1)?;
                    out.push(Span { start: body, end, quoted: false });
                }
                _ => {
                    let start = scratch.len();
                    i = unquote(line, body, scratch)?;
                    out.push(Span { start, end: scratch.len(), quoted: true });
                }
            }
        } else {
            let start = i;
            i = word_end(line, i);
            out.push(Span { start, end: i, quoted: false });
        }
    }
    Ok(())
}

/// `i` is just after a closing quote, which must be followed by whitespace or the end of the line.
#[inline]
fn after_closing_quote(line: &[u8], i: usize) -> Result<usize, String> {
    match line.get(i) {
        None => Ok(i),
        Some(c) if c.is_ascii_whitespace() => Ok(i),
        Some(_) => Err("closing quote must be followed by a space".into()),
    }
}

#[derive(Clone, Copy, Debug)]
pub struct Span {
    start: usize,
    end: usize,
    quoted: bool,
}

/// Arguments split from a line, each read from the line or the scratch space as it is asked for: nothing is
/// gathered per line, whatever the number of arguments (an HMGET of a model's features has hundreds).
#[derive(Clone, Copy)]
pub struct Args<'a> {
    line: &'a [u8],
    scratch: &'a [u8],
    spans: &'a [Span],
}

impl<'a> Args<'a> {
    pub fn new(line: &'a [u8], scratch: &'a [u8], spans: &'a [Span]) -> Args<'a> {
        Args { line, scratch, spans }
    }

    pub fn len(&self) -> usize {
        self.spans.len()
    }

    pub fn is_empty(&self) -> bool {
        self.spans.is_empty()
    }

    #[inline]
    pub fn get(&self, i: usize) -> &'a [u8] {
        self.spans[i].get(self.line, self.scratch)
    }

    pub fn iter(&self) -> impl Iterator<Item = &'a [u8]> + Clone + 'a {
        let (line, scratch) = (self.line, self.scratch);
        self.spans.iter().map(move |s| s.get(line, scratch))
    }
}

impl Span {
    /// The bytes `start..end` of the line, as they are.
    pub fn bare(start: usize, end: usize) -> Span {
        Span { start, end, quoted: false }
    }

    /// The span ends at `end` (the line's bytes before it).
    pub fn ends_at(&mut self, end: usize) {
        self.end = end;
    }

    /// Where it starts and ends in the line (or the scratch space).
    pub fn start(&self) -> usize {
        self.start
    }

    pub fn end(&self) -> usize {
        self.end
    }

    /// The same bytes in a line where what began at `from` (at or before them) begins at `to`.
    #[inline]
    pub fn rebased(self, from: usize, to: usize) -> Span {
        Span { start: self.start - from + to, end: self.end - from + to, quoted: self.quoted }
    }

    #[inline]
    pub fn get<'a>(&self, line: &'a [u8], scratch: &'a [u8]) -> &'a [u8] {
        if self.quoted {
            &scratch[self.start..self.end]
        } else {
            &line[self.start..self.end]
        }
    }
}

/// Unescapes a quoted string whose opening quote is just before `i`; returns the index after the closing
/// quote, which must be followed by whitespace or the end of the line.
fn unquote(line: &[u8], mut i: usize, out: &mut Vec<u8>) -> Result<usize, String> {
    loop {
        let Some(&c) = line.get(i) else {
            return Err("unterminated quoted argument".into());
        };
        i += 1;
        match c {
            b'"' => return after_closing_quote(line, i),
            b'\\' => {
                let Some(&e) = line.get(i) else {
                    return Err("unterminated quoted argument".into());
                };
                i += 1;
                out.push(match e {
                    b'n' => b'\n',
                    b'r' => b'\r',
                    b't' => b'\t',
                    b'a' => 0x07,
                    b'b' => 0x08,
                    b'x' => {
                        let hex = line.get(i..i + 2).ok_or("truncated \\x escape")?;
                        i += 2;
                        let s = std::str::from_utf8(hex).map_err(|_| "bad \\x escape")?;
                        u8::from_str_radix(s, 16).map_err(|_| format!("bad \\x escape \\x{s}"))?
                    }
                    other => other,
                });
            }
            other => out.push(other),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_rng::XorShift;

    fn split(line: &str) -> Result<Vec<Vec<u8>>, String> {
        let (mut spans, mut scratch) = (Vec::new(), Vec::new());
        split_args(line.as_bytes(), &mut spans, &mut scratch)?;
        Ok(spans.iter().map(|s| s.get(line.as_bytes(), &scratch).to_vec()).collect())
    }

    #[test]
    fn bare_and_quoted() {
        let got = split(r#"HMGET  "st 1" f\x41 "a\"b\x41\\""#).unwrap();
        assert_eq!(got, vec![b"HMGET".to_vec(), b"st 1".to_vec(), b"f\\x41".to_vec(), b"a\"bA\\".to_vec()]);
    }

    #[test]
    fn quoted_without_escapes_is_not_copied() {
        let line = br#""HMGET" "st 1" "" x"#;
        let (mut spans, mut scratch) = (Vec::new(), Vec::new());
        split_args(line, &mut spans, &mut scratch).unwrap();
        let got: Vec<&[u8]> = spans.iter().map(|s| s.get(line, &scratch)).collect();
        assert_eq!(got, [&b"HMGET"[..], b"st 1", b"", b"x"]);
        assert!(scratch.is_empty());
    }

    /// The grammar a byte at a time: what the split on masks must agree with, arguments and errors alike.
    fn split_plainly(line: &[u8]) -> Result<Vec<Vec<u8>>, String> {
        let (mut args, mut i) = (Vec::new(), 0);
        while i < line.len() {
            if line[i].is_ascii_whitespace() {
                i += 1;
            } else if line[i] == b'"' {
                let mut arg = Vec::new();
                i = unquote(line, i + 1, &mut arg)?;
                args.push(arg);
            } else {
                let start = i;
                while i < line.len() && !line[i].is_ascii_whitespace() {
                    i += 1;
                }
                args.push(line[start..i].to_vec());
            }
        }
        Ok(args)
    }

    /// Lines of every length up to past several words, of bytes drawn mostly from what the grammar turns on
    /// (spaces, tabs, quotes, backslashes, control and high bytes): the same arguments or the same error.
    #[test]
    fn agrees_with_the_plain_split() {
        let alphabet = b"ab  \t\"\"\\\x01\x0b\x0c\r\xffx";
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        for n in 0..200 {
            for _ in 0..200 {
                let line: Vec<u8> = (0..n).map(|_| alphabet[rng.below(alphabet.len())]).collect();
                let (mut spans, mut scratch) = (Vec::new(), Vec::new());
                let got = split_args(&line, &mut spans, &mut scratch)
                    .map(|()| spans.iter().map(|s| s.get(&line, &scratch).to_vec()).collect::<Vec<_>>());
                assert_eq!(got, split_plainly(&line), "{:?}", String::from_utf8_lossy(&line));
            }
        }
        // Long words and quoted arguments.
        for len in [60, 63, 64, 65, 127, 128, 129, 300] {
            let word = "w".repeat(len);
            for line in [format!("GET {word} x"), format!("\"{word}\" \"{word}\"  {word}"), format!("{word}\"")] {
                let (mut spans, mut scratch) = (Vec::new(), Vec::new());
                let got = split_args(line.as_bytes(), &mut spans, &mut scratch)
                    .map(|()| spans.iter().map(|s| s.get(line.as_bytes(), &scratch).to_vec()).collect::<Vec<_>>());
                assert_eq!(got, split_plainly(line.as_bytes()), "{line}");
            }
        }
    }

    /// Lines of bare and quoted arguments as traces hold them, at every length up to past what
    /// `quick_split` takes, each also with one byte changed to one the grammar turns on: whichever reads them,
    /// the same arguments or the same error as the plain split. Most are taken by `quick_split`.
    #[test]
    fn quick_and_plain_splits_agree() {
        let mut rng = XorShift::new(0x9e37_79b9_7f4a_7c15);
        let mut next = |m: usize| rng.below(m);
        let (mut taken, mut lines) = (0, 0);
        for _ in 0..20_000 {
            let mut line = Vec::new();
            for _ in 0..1 + next(12) {
                line.extend(std::iter::repeat_n(b" \t"[next(2)], 1 + next(2) * next(3)));
                let word: Vec<u8> = (0..next(14)).map(|_| b"ab 7_:\x01\xff"[next(8)]).collect();
                if next(2) == 0 {
                    line.push(b'"');
                    line.extend(&word);
                    line.push(b'"');
                } else {
                    line.extend(word.iter().filter(|&&c| c != b' '));
                }
            }
            for changed in [false, true] {
                let mut line = line.clone();
                if changed && !line.is_empty() {
                    let at = next(line.len());
                    line[at] = b"\"\\ \tx"[next(5)];
                }
                let mut quick = Vec::new();
                taken += usize::from(quick_split::split(&line, &mut quick));
                lines += 1;
                let (mut spans, mut scratch) = (Vec::new(), Vec::new());
                let got = split_args(&line, &mut spans, &mut scratch)
                    .map(|()| spans.iter().map(|s| s.get(&line, &scratch).to_vec()).collect::<Vec<_>>());
                assert_eq!(got, split_plainly(&line), "{:?}", String::from_utf8_lossy(&line));
            }
        }
        assert!(taken > lines / 3, "quick_split took {taken} of {lines} lines");
    }

    #[test]
    fn malformed_quotes() {
        assert!(split(r#"GET "abc"#).is_err());
        assert!(split(r#"GET "abc"def"#).is_err());
        assert!(split(r#"GET "\x4""#).is_err());
    }
}
