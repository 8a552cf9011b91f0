//! Splitting an inline command line (`SET k "a b"\r\n`, as telnet and redis-cli's inline mode send) into
//! arguments exactly as Redis does: its `sdssplitargs` (sds.c), not the MONITOR-line rules of text traces.
//!
//! - Arguments are separated by spaces, tabs, CR or LF; leading blanks are skipped (C `isspace`).
//! - A double quote opens a quoted part, even in the middle of a word (`a"b c"` is `ab c`); inside it, `\xHH`
//!   is a byte and `\n \r \t \b \a` are control characters, any other escaped character stands for itself.
//! - A single quote opens a part where only `\'` is an escape.
//! - A closing quote must be followed by a blank or the end of the line; else (and for a quote never
//!   closed) Redis refuses the line ("unbalanced quotes").
//! - A NUL byte ends the line (Redis works on a C string there); inside quotes it leaves them unclosed.

/// Splits `line` (its CRLF removed) into `out`, the arguments' bytes one after the other, and `ends`, where
/// each ends in `out`. `Err` when Redis refuses the line.
pub(crate) fn split_inline(line: &[u8], out: &mut Vec<u8>, ends: &mut Vec<usize>) -> Result<(), ()> {
    out.clear();
    ends.clear();
    let at = |i: usize| line.get(i).copied().unwrap_or(0);
    let mut p = 0;
    loop {
        while at(p) != 0 && is_space(at(p)) {
            p += 1;
        }
        if at(p) == 0 {
            return Ok(());
        }
        let (mut inq, mut insq) = (false, false);
        loop {
            let c = at(p);
            if inq {
                if c == b'\\' && at(p + 1) == b'x' && hex(at(p + 2)).is_some() && hex(at(p + 3)).is_some() {
                    out.push(hex(at(p + 2)).unwrap_or(0) * 16 + hex(at(p + 3)).unwrap_or(0));
                    p += 3;
                } else if c == b'\\' && at(p + 1) != 0 {
                    p += 1;
                    out.push(match at(p) {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 0x08,
                        b'a' => 0x07,
                        other => other,
                    });
                } else if c == b'"' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(());
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(());
                } else {
                    out.push(c);
                }
            } else if insq {
                if c == b'\\' && at(p + 1) == b'\'' {
                    p += 1;
                    out.push(b'\'');
                } else if c == b'\'' {
                    if at(p + 1) != 0 && !is_space(at(p + 1)) {
                        return Err(());
                    }
                    p += 1;
                    break;
                } else if c == 0 {
                    return Err(());
                } else {
                    out.push(c);
                }
            } else {
                match c {
                    b' ' | b'\n' | b'\r' | b'\t' | 0 => break,
                    b'"' => inq = true,
                    b'\'' => insq = true,
                    _ => out.push(c),
                }
            }
            p += 1;
        }
        ends.push(out.len());
    }
}

/// C's `isspace`.
fn is_space(c: u8) -> bool {
    matches!(c, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn split(line: &[u8]) -> Result<Vec<Vec<u8>>, ()> {
        let (mut out, mut ends) = (Vec::new(), Vec::new());
        split_inline(line, &mut out, &mut ends)?;
        let mut start = 0;
        Ok(ends.iter().map(|&e| std::mem::replace(&mut start, e)).zip(ends.iter()).map(|(s, &e)| out[s..e].to_vec()).collect())
    }

    fn words(ws: &[&[u8]]) -> Vec<Vec<u8>> {
        ws.iter().map(|w| w.to_vec()).collect()
    }

    /// The cases of sds.c's own tests of `sdssplitargs`, and what the MONITOR-line rules got wrong.
    #[test]
    fn as_redis_splits() {
        assert_eq!(split(b"  SET  k v  ").unwrap(), words(&[b"SET", b"k", b"v"]));
        assert_eq!(split(b"SET k 'a b'").unwrap(), words(&[b"SET", b"k", b"a b"]));
        assert_eq!(split(br"SET k 'it\'s'").unwrap(), words(&[b"SET", b"k", b"it's"]));
        assert_eq!(split(br"SET k 'a\nb'").unwrap(), words(&[b"SET", b"k", br"a\nb"]));
        assert_eq!(split(br#"SET k "a\nb\x41\"\\""#).unwrap(), words(&[b"SET", b"k", b"a\nbA\"\\"]));
        assert_eq!(split(br#"GET a"b c"d"#), Err(()));
        assert_eq!(split(br#"GET a"b c""#).unwrap(), words(&[b"GET", b"ab c"]));
        assert_eq!(split(b"GET ab\"c d\" e").unwrap(), words(&[b"GET", b"abc d", b"e"]));
        assert_eq!(split(br#"GET "\x4g""#).unwrap(), words(&[b"GET", b"x4g"]));
        assert_eq!(split(b"GET \"abc"), Err(()));
        assert_eq!(split(b"GET 'abc"), Err(()));
        assert_eq!(split(b"GET ''").unwrap(), words(&[b"GET", b""]));
        assert_eq!(split(b"GET k\0 more").unwrap(), words(&[b"GET", b"k"]));
        assert_eq!(split(b"   ").unwrap(), Vec::<Vec<u8>>::new());
    }
}
