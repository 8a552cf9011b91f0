//! Lines split into arguments, each line that differs from the last only in its key taken from the last:
//! the same bytes before the key (the command's name) and after it (the rest of the arguments). A feature
//! store's service asks the same features of one entity after another, so its trace is line after line of
//! `HMGET st_877555 f1 f2 f3 f4`, then `HMGET st_123537 f1 f2 f3 f4`. Such a line costs two compares and a
//! check of its key; splitting it whole took a quarter of reading a MONITOR line (callgrind).
//!
//! The bytes around the key split into the same arguments whatever the key, since the grammar carries nothing
//! from one argument to the next; a line is taken so only when its key reads as one argument, as
//! `tokenize::split_args` would read it, after and before the last line's, which `split_args` split without
//! escapes. A test holds the two equal, arguments and errors, on lines made to trip them.

use super::swar::{quote_or_escape, word_end};
use super::tokenize::{split_args, Span};
use crate::hash::low_word;

/// A line's arguments after its key, against the last line's.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Rest {
    /// The last line's, byte for byte.
    Same,
    /// Others, remembered for the next line.
    Kept,
    /// Others, not remembered (the look is backing off, or they needed unescaping): the next line's cannot
    /// be `Same`.
    Other,
}

/// Splits lines, remembering the last one's arguments around its key.
#[derive(Default)]
pub struct Splitter {
    spans: Vec<Span>,
    scratch: Vec<u8>,
    /// The last line's (its buffers kept from line to line), when it is one a line may be taken from.
    last: Around,
    known: bool,
    backoff: Backoff,
    /// Lines taken from the last line's arguments (for the tests).
    #[cfg(test)]
    taken: usize,
}

/// The last line's bytes before its key and after it, whether its key was quoted, and where its rest began.
#[derive(Default)]
struct Around {
    before: Vec<u8>,
    after: Vec<u8>,
    quoted: bool,
    after_at: usize,
}

impl Splitter {
    /// The arguments of the last line split: where each lies, in the line or in `scratch`.
    pub fn spans(&self) -> &[Span] {
        &self.spans
    }

    pub fn scratch(&self) -> &[u8] {
        &self.scratch
    }

    /// Splits `line` as `split_args` does; says what its arguments after the key are.
    #[inline(always)]
    pub fn split(&mut self, line: &[u8]) -> Result<Rest, String> {
        if !self.backoff.try_now() {
            self.known = false;
            split_args(line, &mut self.spans, &mut self.scratch)?;
            return Ok(Rest::Other);
        }
        if self.known {
            let last = &mut self.last;
            if let Some(key) = last.key_of(line) {
                let after_at = key.end() + usize::from(last.quoted);
                for s in &mut self.spans[2..] {
                    *s = s.rebased(last.after_at, after_at);
                }
                self.spans[1] = key;
                last.after_at = after_at;
                self.backoff.hit();
                #[cfg(test)]
                {
                    self.taken += 1;
                }
                return Ok(Rest::Same);
            }
        }
        self.backoff.missed();
        self.known = false;
        split_args(line, &mut self.spans, &mut self.scratch)?;
        if let (Some(key), true) = (self.spans.get(1), self.scratch.is_empty()) {
            // A quoted key is followed by its closing quote (a bare word ends at whitespace).
            let quoted = line.get(key.end()) == Some(&b'"');
            let (key_at, after_at) = (key.start() - usize::from(quoted), key.end() + usize::from(quoted));
            let last = &mut self.last;
            last.before.clear();
            last.before.extend_from_slice(&line[..key_at]);
            last.after.clear();
            last.after.extend_from_slice(&line[after_at..]);
            (last.quoted, last.after_at) = (quoted, after_at);
            self.known = true;
        }
        Ok(if self.known { Rest::Kept } else { Rest::Other })
    }
}

impl Around {
    /// Where the key of `line` lies, when `line` is the last line with another key (a key `split_args` reads as
    /// one argument there).
    #[inline]
    fn key_of(&self, line: &[u8]) -> Option<Span> {
        let (b, a) = (self.before.len(), self.after.len());
        if line.len() < b + a + 1 || !starts_with(line, &self.before) || !line.ends_with(&self.after) {
            return None;
        }
        let end = line.len() - a;
        if self.quoted {
            // `"key"`: its first quote or backslash after the opening quote is its closing quote, last.
            (line[b] == b'"' && end >= b + 2 && line[end - 1] == b'"' && quote_or_escape(line, b + 1) == Some(end - 1))
                .then(|| Span::bare(b + 1, end - 1))
        } else {
            // A bare word: not opening a quote, its first whitespace where the rest begins.
            (line[b] != b'"' && word_end(line, b) == end).then(|| Span::bare(b, end))
        }
    }
}

/// `line.starts_with(before)`, the name before a key (up to eight bytes) compared as one word.
#[inline]
fn starts_with(line: &[u8], before: &[u8]) -> bool {
    match before.len() {
        n @ 0..=8 => n <= line.len() && low_word(&line[..n]) == low_word(before),
        _ => line.starts_with(before),
    }
}

/// When to look for what a line shares with the last one: on every line until that fails `MISSES` lines
/// running, then not for `WAIT` lines, and so on. A trace whose lines never repeat pays for the look on 16
/// lines of 256 (on a `commands` trace of random field lists, looking on every line cost 9% of reading it).
#[derive(Default)]
struct Backoff {
    misses: u32,
    wait: u32,
}

const MISSES: u32 = 16;
const WAIT: u32 = 240;

impl Backoff {
    #[inline]
    pub fn try_now(&mut self) -> bool {
        if self.wait == 0 {
            return true;
        }
        self.wait -= 1;
        false
    }

    #[inline]
    pub fn hit(&mut self) {
        self.misses = 0;
    }

    #[inline]
    pub fn missed(&mut self) {
        self.misses += 1;
        if self.misses == MISSES {
            (self.misses, self.wait) = (0, WAIT);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::test_rng::XorShift;

    fn args(line: &[u8], spans: &[Span], scratch: &[u8]) -> Vec<Vec<u8>> {
        spans.iter().map(|s| s.get(line, scratch).to_vec()).collect()
    }

    /// Runs of lines that share what surrounds their keys, with keys bare, quoted, escaped, empty, spaced
    /// oddly or malformed, and lines changed by a byte: each line split as `split_args` splits it alone.
    #[test]
    fn splits_every_line_as_split_args_does() {
        let mut rng = XorShift::new(0x2545_f491_4f6c_dd1d);
        let mut next = |m: usize| rng.below(m);
        let befores: &[&[u8]] = &[b"HMGET ", b"\"HMGET\" ", b"HMGET\t ", b" HMGET ", b"", b"HMGET", b"HM\"GET "];
        let keys: &[&[u8]] = &[
            b"st_1", b"st_22", b"\"st_1\"", b"\"st 1\"", b"\"st\\x31\"", b"\"st_1\"x", b"\"\"", b"\"", b"\"st_1",
            b"st\"1", b"st 1", b"", b" ", b"\"s\"t\"",
        ];
        let afters: &[&[u8]] = &[
            b" f1 f2 f3", b" \"f1\" \"f2\" \"f3\"", b"", b" ", b" f1", b"\tf1  f2", b" \"f 1\" f2", b" \"f\\x31\" f2",
            b" \"f1\"f2", b" \"f1", b"\"f1\"", b"f1 f2", b" f1\"x f2",
        ];
        let mut split = Splitter::default();
        let (mut spans, mut scratch) = (Vec::new(), Vec::new());
        let (mut before, mut after) = (befores[0], afters[0]);
        // Long runs of lines that share their name and rest, each broken now and then: many lines are taken from
        // the last, and the look backs off and resumes many times.
        for _ in 0..200_000 {
            if next(16) == 0 {
                before = befores[next(befores.len())];
            }
            if next(8) == 0 {
                after = afters[next(afters.len())];
            }
            let key = keys[if next(8) == 0 { next(keys.len()) } else { next(4) }];
            let mut line = [before, key, after].concat();
            if next(16) == 0 && !line.is_empty() {
                let at = next(line.len());
                line[at] = b"\" \\x"[next(4)];
            }
            let got = split.split(&line).map(|_| args(&line, split.spans(), split.scratch()));
            let want = split_args(&line, &mut spans, &mut scratch).map(|()| args(&line, &spans, &scratch));
            assert_eq!(got, want, "{:?}", String::from_utf8_lossy(&line));
        }
        assert!(split.taken > 4_000, "{} lines taken from the last line's arguments", split.taken);
    }

    /// Looks on every line while looking finds, then on 16 lines of every 256 while it does not.
    #[test]
    fn backs_off_while_looking_fails() {
        let mut b = Backoff::default();
        let mut looked = 0;
        for line in 0..10_000 {
            if b.try_now() {
                looked += 1;
                if line < 1_000 { b.hit() } else { b.missed() }
            }
        }
        assert_eq!(looked, 1_000 + 9_000 / 256 * 16 + 16, "looked on {looked} lines");
    }
}
