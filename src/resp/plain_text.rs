//! Telling inline Redis from other plain-text protocols, for finding Redis ports by content
//! (`parse::discover`): a client line that Redis would run as an inline command, and a server line that is a
//! RESP reply. Many protocols share a command name with Redis (HTTP's `GET`, SMTP's and POP3's `QUIT`,
//! FTP's `TYPE`); none of them answers in RESP but POP3 (`+OK`), whose shared names are left out.

use super::inline::split_inline;
use crate::trace::commands::lookup;

/// Longest inline line Redis reads (its inline limit, 64 KiB).
const MAX_INLINE_LINE: usize = 64 << 10;
const MAX_NAME: usize = 20;
/// Names shared with POP3, whose server also answers `+OK` and `-ERR`.
const SHARED_WITH_POP3: [&[u8]; 2] = [b"QUIT", b"AUTH"];

/// Whether `d` begins with a whole inline command line: a line (ended by LF or CR LF) that splits as Redis
/// splits it (`sdssplitargs`) and whose first word names a Redis command; not an HTTP request line.
pub fn is_inline_command_start(d: &[u8]) -> bool {
    if !d.first().is_some_and(u8::is_ascii_alphabetic) {
        return false;
    }
    let Some(end) = d[..d.len().min(MAX_INLINE_LINE)].iter().position(|&b| b == b'\n') else { return false };
    let line = d[..end].strip_suffix(b"\r").unwrap_or(&d[..end]);
    let (mut bytes, mut ends) = (Vec::new(), Vec::new());
    if split_inline(line, &mut bytes, &mut ends).is_err() || ends.is_empty() || ends[0] > MAX_NAME {
        return false;
    }
    let name = bytes[..ends[0]].to_ascii_uppercase();
    let last = &bytes[if ends.len() > 1 { ends[ends.len() - 2] } else { 0 }..];
    lookup(&name).is_some() && !SHARED_WITH_POP3.contains(&name.as_slice()) && !last.starts_with(b"HTTP/")
}

/// Whether `d` begins with a RESP reply line: a type byte, then a line ended by CR LF whose text fits the
/// type (a length or count for `$ * % ~ > | =`, a number for `: (`, nothing with a CR or LF inside).
pub fn is_reply_line(d: &[u8]) -> bool {
    let Some(end) = d.windows(2).take(MAX_INLINE_LINE).position(|w| w == b"\r\n") else { return false };
    let (kind, text) = (d[0], &d[1..end]);
    let number = |t: &[u8]| {
        let digits = t.strip_prefix(b"-").unwrap_or(t);
        !digits.is_empty() && digits.len() <= 20 && digits.iter().all(u8::is_ascii_digit)
    };
    match kind {
        b'+' | b'-' => !text.contains(&b'\n'),
        b':' | b'(' | b'$' | b'*' | b'%' | b'~' | b'>' | b'|' | b'=' | b'!' => number(text),
        b'_' => text.is_empty(),
        b'#' => text == b"t" || text == b"f",
        b',' => !text.is_empty() && text.iter().all(|c| c.is_ascii_alphanumeric() || b"+-.".contains(c)),
        _ => false,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn inline_commands_and_other_protocols() {
        assert!(is_inline_command_start(b"GET foo\r\n"));
        assert!(is_inline_command_start(b"set k \"a b\"\r\nGET k\r\n"));
        assert!(is_inline_command_start(b"mget a b c\n"));
        assert!(is_inline_command_start(b"PING\r\n"));
        assert!(!is_inline_command_start(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"));
        assert!(!is_inline_command_start(b"GET foo"), "a line not ended yet");
        assert!(!is_inline_command_start(b"HELO mail.example.com\r\n"));
        assert!(!is_inline_command_start(b"QUIT\r\n"), "POP3's and SMTP's too");
        assert!(!is_inline_command_start(b"USER alice\r\n"));
        assert!(!is_inline_command_start(b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"));
        assert!(!is_inline_command_start(b"GET \"unbalanced\r\n"));
    }

    #[test]
    fn reply_lines() {
        for ok in [&b"+OK\r\n"[..], b"-ERR unknown\r\n", b":12\r\n", b"$3\r\nabc\r\n", b"$-1\r\n", b"*2\r\n", b"_\r\n", b"#t\r\n", b",1.5\r\n"] {
            assert!(is_reply_line(ok), "{:?}", String::from_utf8_lossy(ok));
        }
        for no in [&b"HTTP/1.1 200 OK\r\n"[..], b"250 mail.example.com\r\n", b"220 ready\r\n", b"VALUE k 0 3\r\n", b"$abc\r\n", b"+OK"] {
            assert!(!is_reply_line(no), "{:?}", String::from_utf8_lossy(no));
        }
    }
}
