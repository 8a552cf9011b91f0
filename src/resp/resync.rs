//! Finding the next command in a request stream picked up at an unknown point (after a gap, after invalid
//! bytes, or when the capture began mid-connection).
//!
//! A plausible command start is `*<argc>\r\n$<len>\r\n<name>\r\n` where `name`, upper-cased, is a command
//! we know (`trace::commands::lookup`): the header shape alone occurs inside values too often, a known name
//! right after it almost never. Inline commands are not looked for: after a loss only RESP arrays are trusted.

use crate::trace::commands::lookup;

/// Bytes a candidate needs at most: `*` + 7 digits + CRLF + `$` + 2 digits + CRLF + 20-byte name + CRLF.
pub(crate) const MAX_CANDIDATE: usize = 37;
const MAX_NAME: usize = 20;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Check {
    Yes,
    No,
    /// The bytes end before the candidate could be judged.
    More,
}

/// Judges whether `d` begins with a plausible command start.
pub(crate) fn check(d: &[u8]) -> Check {
    match check_inner(d) {
        Ok(()) => Check::Yes,
        Err(c) => c,
    }
}

fn check_inner(d: &[u8]) -> Result<(), Check> {
    let mut i = 0;
    expect(d, &mut i, b"*")?;
    let argc = number(d, &mut i, 7)?;
    expect(d, &mut i, b"\r\n$")?;
    let len = number(d, &mut i, 2)? as usize;
    expect(d, &mut i, b"\r\n")?;
    if argc == 0 || len == 0 || len > MAX_NAME {
        return Err(Check::No);
    }
    let name = d.get(i..i + len).ok_or(Check::More)?;
    i += len;
    expect(d, &mut i, b"\r\n")?;
    let mut upper = [0u8; MAX_NAME];
    upper[..len].copy_from_slice(name);
    upper[..len].make_ascii_uppercase();
    match lookup(&upper[..len]) {
        Some(_) => Ok(()),
        None => Err(Check::No),
    }
}

fn expect(d: &[u8], i: &mut usize, bytes: &[u8]) -> Result<(), Check> {
    for &b in bytes {
        match d.get(*i) {
            None => return Err(Check::More),
            Some(&c) if c == b => *i += 1,
            Some(_) => return Err(Check::No),
        }
    }
    Ok(())
}

fn number(d: &[u8], i: &mut usize, max_digits: usize) -> Result<u64, Check> {
    let start = *i;
    let mut v = 0u64;
    while let Some(&c) = d.get(*i) {
        if !c.is_ascii_digit() {
            break;
        }
        if *i - start == max_digits {
            return Err(Check::No);
        }
        v = v * 10 + (c - b'0') as u64;
        *i += 1;
    }
    if *i == d.len() {
        Err(Check::More)
    } else if *i == start {
        Err(Check::No)
    } else {
        Ok(v)
    }
}

/// The outcome of scanning a stretch of bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Scan {
    /// A plausible command starts here.
    Found(usize),
    /// A candidate starts here but the bytes end before it can be judged: keep them for the next chunk.
    Undecided(usize),
    /// No command starts in these bytes.
    Nothing,
}

/// Whether `d` may begin a RESP command the server answers, whatever its name: `*<argc>\r\n$<len>\r\n`
/// with `argc` at least 1 (bytes that end before telling count as one). Every such command skipped while
/// searching for a plausible start (an unknown name, or one not searched for) is one of these.
fn array_header(d: &[u8]) -> bool {
    let mut i = 1;
    let digits = |i: &mut usize| {
        let start = *i;
        while d.get(*i).is_some_and(u8::is_ascii_digit) {
            *i += 1;
        }
        (start, *i)
    };
    let (start, end) = digits(&mut i);
    if end == d.len() {
        return true;
    }
    if start == end || d[start..end].iter().all(|&b| b == b'0') {
        return false;
    }
    for &b in b"\r\n$" {
        match d.get(i) {
            None => return true,
            Some(&c) if c == b => i += 1,
            Some(_) => return false,
        }
    }
    let (start, end) = digits(&mut i);
    end == d.len() || (start < end && (d.get(end) == Some(&b'\r')) && d.get(end + 1).map_or(true, |&b| b == b'\n'))
}

/// Looks for the first plausible command start among candidate positions below `limit`; `headers` counts
/// the candidates refused that may still be commands (`array_header`).
pub(crate) fn scan(d: &[u8], limit: usize, headers: &mut u64) -> Scan {
    let mut from = 0;
    while from < limit.min(d.len()) {
        let Some(off) = d[from..limit.min(d.len())].iter().position(|&b| b == b'*') else {
            return Scan::Nothing;
        };
        let i = from + off;
        match check(&d[i..]) {
            Check::Yes => return Scan::Found(i),
            Check::More => return Scan::Undecided(i),
            Check::No => {
                *headers += array_header(&d[i..]) as u64;
                from = i + 1;
            }
        }
    }
    Scan::Nothing
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn known_names_only() {
        assert_eq!(check(b"*3\r\n$5\r\nHMGET\r\n"), Check::Yes);
        assert_eq!(check(b"*3\r\n$5\r\nhmget\r\n"), Check::Yes);
        assert_eq!(check(b"*3\r\n$5\r\nHMGEX\r\n"), Check::No);
        assert_eq!(check(b"*3\r\n$4\r\nHMGET\r\n"), Check::No);
        assert_eq!(check(b"*0\r\n$3\r\nGET\r\n"), Check::No);
        assert_eq!(check(b"*12345678\r\n"), Check::No);
        assert_eq!(check(b"*3\r\n$5\r\nHMG"), Check::More);
        assert_eq!(check(b"*3"), Check::More);
        assert_eq!(check(b"*"), Check::More);
    }

    #[test]
    fn scanning() {
        let d = b"xx*2\r\n$3\r\nfoo\r\n*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";
        let mut headers = 0;
        assert_eq!(scan(d, d.len(), &mut headers), Scan::Found(15));
        assert_eq!(headers, 1, "foo is no command we know, but the server answers it");
        assert_eq!(scan(d, 15, &mut headers), Scan::Nothing);
        assert_eq!(scan(b"ab*2\r\n$3\r\nGE", 12, &mut headers), Scan::Undecided(2));
        assert_eq!(scan(b"no star", 7, &mut headers), Scan::Nothing);
        assert_eq!(headers, 2);
        let mut none = 0;
        for d in [&b"*0\r\n$3\r\nfoo\r\n"[..], b"*x", b"*2\r\n+", b"*2\r\n$x", b"*2\r\n$3\r\r"] {
            assert_eq!(scan(d, d.len(), &mut none), Scan::Nothing);
        }
        assert_eq!(none, 0);
        for d in [&b"*2\r\n$0\r\n\r\n"[..], b"*2\r\n$300\r\n", b"*2\r\n$12"] {
            assert!(array_header(d));
        }
    }
}
