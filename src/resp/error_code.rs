//! The code of an error reply: its first word (`-MOVED 3999 10.0.0.2:6380` is `MOVED`).
//!
//! Redis writes every error as a code, a space and a message (`ERR`, `WRONGTYPE`, `MOVED`, `ASK`, `TRYAGAIN`,
//! `CLUSTERDOWN`, `LOADING`, ...), and clients act on the code: a cluster client sends a command answered
//! `MOVED` or `ASK` again to another node, so that attempt was no lookup of the service. The code is a
//! protocol token, not a value, and the only part of an error that is kept: the message can quote keys and
//! arguments. A first word that does not look like a code (lower case, too long, binary) reads
//! [`ErrorCode::UNNAMED`], so nothing from a message can reach an output.

use std::fmt;

/// Longest code kept; Redis's own are at most 12 bytes (`NOTBUSY`, `CLUSTERDOWN`, `NOGOODSLAVE`, ...).
pub const MAX_CODE: usize = 16;

/// Bytes of an error's text that decide its code: the code and the space after it.
pub(crate) const CODE_PREFIX: usize = MAX_CODE + 1;

#[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ErrorCode {
    len: u8,
    bytes: [u8; MAX_CODE],
}

impl ErrorCode {
    /// An error whose first word is no code.
    pub const UNNAMED: ErrorCode = ErrorCode { len: 1, bytes: *b"?\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0" };

    /// The code of an error whose text (after `-`, or a bulk error's payload) is `len` bytes long and begins
    /// with `prefix` (at least its first `CODE_PREFIX` bytes, when it has them).
    pub fn of_text(prefix: &[u8], len: usize) -> ErrorCode {
        let seen = &prefix[..prefix.len().min(len)];
        let word = match seen.iter().position(|&b| b == b' ') {
            Some(end) => &seen[..end],
            None if seen.len() == len => seen,
            // No space within the bytes that matter: the first word is longer than any code.
            None => return ErrorCode::UNNAMED,
        };
        let is_code = |b: &u8| b.is_ascii_uppercase() || b.is_ascii_digit() || *b == b'_' || *b == b'-';
        if word.is_empty() || word.len() > MAX_CODE || !word.iter().all(is_code) {
            return ErrorCode::UNNAMED;
        }
        let mut bytes = [0u8; MAX_CODE];
        bytes[..word.len()].copy_from_slice(word);
        ErrorCode { len: word.len() as u8, bytes }
    }

    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len as usize]
    }

    /// The code as text (always ASCII).
    pub fn as_str(&self) -> &str {
        std::str::from_utf8(self.as_bytes()).unwrap_or("?")
    }
}

impl fmt::Debug for ErrorCode {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ErrorCode({})", self.as_str())
    }
}

/// An error's text as far as its code needs it, collected while the frame is parsed (a bulk error's payload
/// can arrive in pieces).
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct CodeText {
    prefix: [u8; CODE_PREFIX],
    have: u8,
    /// The text's full length.
    len: u32,
}

impl CodeText {
    pub fn new(len: usize) -> CodeText {
        CodeText { len: len.min(u32::MAX as usize) as u32, ..CodeText::default() }
    }

    pub fn extend(&mut self, bytes: &[u8]) {
        let have = self.have as usize;
        let take = bytes.len().min(CODE_PREFIX - have);
        self.prefix[have..have + take].copy_from_slice(&bytes[..take]);
        self.have += take as u8;
    }

    pub fn code(&self) -> ErrorCode {
        ErrorCode::of_text(&self.prefix[..self.have as usize], self.len as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn code(text: &str) -> String {
        let mut t = CodeText::new(text.len());
        t.extend(text.as_bytes());
        t.code().as_str().to_string()
    }

    #[test]
    fn the_code_is_the_first_word() {
        assert_eq!(code("MOVED 3999 127.0.0.1:6381"), "MOVED");
        assert_eq!(code("ASK 3999 127.0.0.1:6381"), "ASK");
        assert_eq!(code("WRONGTYPE Operation against a key holding the wrong kind of value"), "WRONGTYPE");
        assert_eq!(code("LOADING Redis is loading the dataset in memory"), "LOADING");
        assert_eq!(code("CLUSTERDOWN"), "CLUSTERDOWN");
        assert_eq!(code("TRYAGAIN Multiple keys request during rehashing of slot"), "TRYAGAIN");
        assert_eq!(code("ABCDEFGHIJKLMNOP x"), "ABCDEFGHIJKLMNOP");
    }

    /// A message's words never become a code: only an upper-case token of at most 16 bytes does.
    #[test]
    fn text_that_is_no_code_reads_unnamed() {
        for text in ["", " leading space", "lower case", "ABCDEFGHIJKLMNOPQ x", "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                     "K\u{e9}Y x", "secret-value"] {
            assert_eq!(code(text), "?", "{text:?}");
        }
    }

    #[test]
    fn a_text_in_pieces_gives_the_same_code() {
        let text = b"CLUSTERDOWN The cluster is down";
        let mut t = CodeText::new(text.len());
        for piece in text.chunks(3) {
            t.extend(piece);
        }
        assert_eq!(t.code().as_str(), "CLUSTERDOWN");
    }
}
