//! One line of a text trace read into the command it holds, checked against the command table the capture
//! path uses (`commands::lookup`, `CommandInfo::accepts`): what every reader of a text trace (events for
//! the simulation, rows for parse.py and the Python API) is made from, so they accept and refuse the same
//! lines with the same words.

use super::commands::{self, CommandInfo};
use super::memo::{self, Short};
use super::swar::find_near;
use super::same_tail::{Rest, Splitter};
use super::tokenize::{Args, Span};
use super::TextFormat;
use crate::hash::low_word;

/// A command read from a line. The slices borrow the line and the parser's scratch space.
pub struct TextCommand<'a> {
    /// The MONITOR line's time, ns since the epoch; None for formats without a clock.
    pub ts: Option<i64>,
    /// The MONITOR line's client address (`10.1.2.3:51234`, `lua`, `unix:/tmp/redis.sock`), its db left out.
    pub client: Option<&'a [u8]>,
    /// The command's name in upper case (`GET` for a line of the keys format).
    pub name: &'a [u8],
    pub info: CommandInfo,
    /// The arguments after the name, unescaped.
    pub args: Args<'a>,
    /// What its arguments after the key are to the last line's (`same_tail`).
    pub rest: Rest,
}

/// Command names longer than this are no Redis command's (and no longer than `Short` holds).
const MAX_NAME: usize = memo::MAX_LEN;

pub struct LineParser {
    format: TextFormat,
    split: Splitter,
    get: CommandInfo,
    /// The last command name read: a trace names the same few commands line after line, and upper-casing
    /// one and finding it in the command table took 5% of reading a line.
    last_name: Option<KnownName>,
    /// The last line split was read into a command, with `last_name`: a line that repeats its name and its
    /// arguments but for the key (`Rest::Same`) is read with them, its name not looked up again.
    last_read: bool,
}

/// A command name as written, in upper case, and its entry in the command table.
struct KnownName {
    written: Short,
    upper: [u8; MAX_NAME],
    len: usize,
    info: CommandInfo,
}

impl LineParser {
    pub fn new(format: TextFormat) -> LineParser {
        let get = commands::lookup(b"GET").expect("GET is in the command table");
        LineParser { format, split: Splitter::default(), get, last_name: None, last_read: false }
    }

    /// Reads `line` (without its line ending, and without NUL bytes: `Lines` refuses those) and hands its
    /// command to `f`; Ok(false) for a line that holds none (blank, or the `OK` a MONITOR session starts with
    /// when `first`), Err with why it is refused.
    #[inline]
    pub fn parse(&mut self, line: &[u8], first: bool, f: impl FnOnce(&TextCommand)) -> Result<bool, String> {
        match self.format {
            TextFormat::Keys => {
                let at = line.len() - line.trim_ascii_start().len();
                let key = line[at..].trim_ascii_end();
                if key.is_empty() {
                    return Ok(false);
                }
                let span = [Span::bare(at, at + key.len())];
                let args = Args::new(line, &[], &span);
                f(&TextCommand { ts: None, client: None, name: b"GET", info: self.get, args, rest: Rest::Other });
                Ok(true)
            }
            TextFormat::Commands => self.command(line, None, None, f),
            TextFormat::Monitor => {
                let line = line.trim_ascii();
                if line.is_empty() || (first && line == b"OK") {
                    return Ok(false);
                }
                let (ts, client, args_at) = monitor_head(line)?;
                match self.command(&line[args_at..], Some(ts), Some(client_address(&line[client])), f)? {
                    true => Ok(true),
                    false => Err("monitor line without a command".into()),
                }
            }
        }
    }

    fn command(
        &mut self,
        body: &[u8],
        ts: Option<i64>,
        client: Option<&[u8]>,
        f: impl FnOnce(&TextCommand),
    ) -> Result<bool, String> {
        let last_read = std::mem::take(&mut self.last_read);
        let rest = self.split.split(body)?;
        let (spans, scratch) = (self.split.spans(), self.split.scratch());
        if let (Rest::Same, true, Some(known)) = (rest, last_read, &self.last_name) {
            // The last line's name and as many arguments, which that line was read with.
            let args = Args::new(body, scratch, &spans[1..]);
            f(&TextCommand { ts, client, name: &known.upper[..known.len], info: known.info, args, rest });
            self.last_read = true;
            return Ok(true);
        }
        let Some(first) = spans.first() else { return Ok(false) };
        let raw_name = first.get(body, scratch);
        if raw_name.len() > MAX_NAME {
            return Err(format!("unknown command {:?}", printable(raw_name)));
        }
        let written = Short::of(raw_name);
        if !self.last_name.as_ref().is_some_and(|known| known.written.same(&written)) {
            let mut upper = [0u8; MAX_NAME];
            // Byte by byte: a copy of a few bytes is a call to memmove.
            upper.iter_mut().zip(raw_name).for_each(|(o, c)| *o = c.to_ascii_uppercase());
            let Some(info) = commands::lookup(&upper[..raw_name.len()]) else {
                return Err(format!("unknown command {:?}", printable(raw_name)));
            };
            self.last_name = Some(KnownName { written, upper, len: raw_name.len(), info });
        }
        let known = self.last_name.as_ref().expect("set above");
        let (name, info) = (&known.upper[..known.len], known.info);
        let n = spans.len() - 1;
        if !info.accepts(n) {
            return Err(arity_error(name, &info, n));
        }
        let args = Args::new(body, scratch, &spans[1..]);
        f(&TextCommand { ts, client, name, info, args, rest });
        self.last_read = true;
        Ok(true)
    }
}

/// Why Redis would refuse `n` arguments after `name` (it runs no such command, so no trace holds one).
fn arity_error(name: &[u8], info: &CommandInfo, n: usize) -> String {
    let name = printable(name);
    let arguments = |n: usize| if n == 1 { "argument" } else { "arguments" };
    if n < info.min_args {
        format!("{name} needs at least {} {}, got {n}", info.min_args, arguments(info.min_args))
    } else if n > info.max_args {
        format!("{name} takes at most {} {}, got {n}", info.max_args, arguments(info.max_args))
    } else if info.shape == commands::Shape::KeyValuePairs {
        "expected key value pairs".into()
    } else {
        "expected a key then field value pairs".into()
    }
}

/// `0 10.1.2.3:51234` (MONITOR's `[<db> <client>]`, brackets removed) -> `10.1.2.3:51234`.
fn client_address(bracket: &[u8]) -> &[u8] {
    find_near(bracket, b' ').map_or(bracket, |sp| &bracket[sp + 1..])
}

/// A client address without its port: a service host opens many connections, from many ports.
pub fn client_host(addr: &[u8]) -> &[u8] {
    match memchr::memrchr(b':', addr) {
        Some(colon) if colon + 1 < addr.len() && addr[colon + 1..].iter().all(u8::is_ascii_digit) => &addr[..colon],
        _ => addr,
    }
}

/// A MONITOR line's time, where its client's name is, and where its arguments begin; `line` is trimmed.
fn monitor_head(line: &[u8]) -> Result<(i64, std::ops::Range<usize>, usize), String> {
    // Where redis-server puts it (ten digits, a dot, six), the time is read without looking for its end.
    let (space, ts) = match (line.get(..REDIS_TIME_LEN).and_then(ten_digit_epoch_ns), line.get(REDIS_TIME_LEN)) {
        (Some(ts), Some(b' ')) => (REDIS_TIME_LEN, ts),
        _ => {
            let space = find_near(line, b' ').ok_or(MONITOR_SHAPE)?;
            let stamp = &line[..space];
            let ts = parse_epoch_ns(stamp).ok_or_else(|| match looks_like_epoch(stamp) {
                // 11-digit seconds would wrap around in nanoseconds: an error, never a time in 1700.
                true => format!("time {} is past 2262-04-11, beyond nanosecond timestamps", printable(stamp)),
                false => MONITOR_SHAPE.to_string(),
            })?;
            (space, ts)
        }
    };
    let rest = &line[space + 1..];
    if rest.first() != Some(&b'[') {
        return Err(MONITOR_SHAPE.into());
    }
    let close = find_near(rest, b']').ok_or(MONITOR_SHAPE)?;
    let at = line.len() - rest.len();
    Ok((ts, at + 1..at + close, at + close + 1))
}

/// `1700000000.123456`: the time redis-server writes at the start of a MONITOR line.
const REDIS_TIME_LEN: usize = 17;

const MONITOR_SHAPE: &str =
    "not a MONITOR line (expected `<unix time> [<db> <client>] \"CMD\" \"arg\" ...`)";

/// `1700000000.123456` (any number of fraction digits up to 9) as ns since the epoch; None when it is not
/// a time (`looks_like_epoch`), or one past what nanoseconds in an i64 reach (2262-04-11). One pass: it is
/// read on every MONITOR line.
pub fn parse_epoch_ns(s: &[u8]) -> Option<i64> {
    if let Some(ns) = ten_digit_epoch_ns(s) {
        return Some(ns);
    }
    let digits = |from: usize, max: usize| {
        let (mut value, mut i) = (0i64, from);
        while i < s.len() && s[i].is_ascii_digit() && i - from < max {
            value = value * 10 + i64::from(s[i] - b'0');
            i += 1;
        }
        (value, i)
    };
    let (secs, dot) = digits(0, 11);
    let (frac, end) = match s.get(dot) {
        _ if dot == 0 => return None,
        None => (0, dot),
        Some(b'.') => digits(dot + 1, 9),
        Some(_) => return None,
    };
    if end != s.len() {
        return None;
    }
    let frac_ns = frac * 10i64.pow(9 - (end - dot).saturating_sub(1) as u32);
    secs.checked_mul(1_000_000_000)?.checked_add(frac_ns)
}

/// `parse_epoch_ns` of the time every MONITOR line has had since 2001 and will have until 2286: ten digits of
/// seconds, a dot, one to eight of fraction (redis-server writes six). Eight digits at a time in a u64 (a
/// tenth of the instructions of reading a MONITOR line went to its time, digit by digit); None for any other
/// shape, left to the digit loop.
#[inline]
fn ten_digit_epoch_ns(s: &[u8]) -> Option<i64> {
    let frac = s.get(11..).filter(|f| (1..=8).contains(&f.len()) && s[10] == b'.')?;
    let (high, low) = (eight_digits(low_word(&s[..8]))?, eight_digits(low_word(&s[2..10]))?);
    // The fraction's digits followed by zeros up to eight: the time's tens of nanoseconds.
    let zeros = match frac.len() {
        8 => 0,
        n => u64::from_le_bytes(*b"00000000") << (8 * n),
    };
    let tens_of_ns = eight_digits(low_word(frac) | zeros)?;
    let secs = high * 100 + low % 100;
    (secs as i64).checked_mul(1_000_000_000)?.checked_add(tens_of_ns as i64 * 10)
}

/// The number eight ASCII digits spell (the first in the lowest byte), or None if one is no digit.
#[inline]
fn eight_digits(word: u64) -> Option<u64> {
    const ONES: u64 = 0x0101_0101_0101_0101;
    let value = word.wrapping_sub(ONES * u64::from(b'0'));
    // A byte below '0' borrows into its high bit, one above '9' carries into it once 0x46 is added.
    if (value | word.wrapping_add(ONES * 0x46)) & (ONES * 0x80) != 0 {
        return None;
    }
    let pairs = (value * 10 + (value >> 8)) & 0x00ff_00ff_00ff_00ff;
    let quads = (pairs * 100 + (pairs >> 16)) & 0x0000_ffff_0000_ffff;
    Some((quads * 10_000 + (quads >> 32)) & 0xffff_ffff)
}

/// Whether `s` is written as a unix time (up to 11 digits of seconds, up to 9 of fraction), whatever its value.
pub fn looks_like_epoch(s: &[u8]) -> bool {
    let (secs, frac) = match s.iter().position(|&c| c == b'.') {
        Some(dot) => (&s[..dot], &s[dot + 1..]),
        None => (s, &b""[..]),
    };
    !secs.is_empty() && secs.len() <= 11 && frac.len() <= 9 && secs.iter().chain(frac).all(u8::is_ascii_digit)
}

/// Shows a trace's bytes in an error message without letting control characters through.
pub fn printable(bytes: &[u8]) -> String {
    let s: String = String::from_utf8_lossy(&bytes[..bytes.len().min(40)])
        .chars()
        .map(|c| if c.is_control() { '?' } else { c })
        .collect();
    if bytes.len() > 40 {
        s + "..."
    } else {
        s
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A line's command: its name and its arguments.
    type Read = (Vec<u8>, Vec<Vec<u8>>);

    fn read(format: TextFormat, line: &str) -> Result<Option<Read>, String> {
        let mut p = LineParser::new(format);
        let mut got = None;
        p.parse(line.as_bytes(), true, |c| got = Some((c.name.to_vec(), c.args.iter().map(|a| a.to_vec()).collect())))?;
        Ok(got)
    }

    /// `GET a b` is no command Redis runs: refused, as every other count Redis refuses.
    #[test]
    fn argument_counts_redis_refuses_are_refused() {
        assert!(read(TextFormat::Commands, "GET a b").unwrap_err().contains("GET takes at most 1 argument, got 2"));
        assert!(read(TextFormat::Commands, "HMGET a").unwrap_err().contains("HMGET needs at least 2 arguments"));
        assert_eq!(read(TextFormat::Commands, "HSET h f v g").unwrap_err(), "expected a key then field value pairs");
        assert_eq!(read(TextFormat::Commands, "MSET a 1 b").unwrap_err(), "expected key value pairs");
        assert_eq!(read(TextFormat::Commands, "get a").unwrap().unwrap().0, b"GET");
    }

    #[test]
    fn monitor_lines() {
        let got = read(TextFormat::Monitor, r#"1700000000.5 [0 10.0.0.1:5000] "HMGET" "st 1" f"#).unwrap().unwrap();
        assert_eq!(got, (b"HMGET".to_vec(), vec![b"st 1".to_vec(), b"f".to_vec()]));
        assert_eq!(read(TextFormat::Monitor, "OK").unwrap(), None);
        assert!(read(TextFormat::Monitor, "1700000000.5 [0 10.0.0.1:5000]").unwrap_err().contains("without a command"));
        assert_eq!(client_host(b"10.0.0.1:5000"), b"10.0.0.1");
        assert_eq!(client_host(b"lua"), b"lua");
        assert_eq!(client_address(b"0 10.0.0.1:5000"), b"10.0.0.1:5000");
    }

    /// One parser reading lines of changing command names (the last one remembered), and lines that repeat the
    /// last one's name and arguments but for the key (taken from the last line, name and all), reads each as a
    /// fresh parser does, in both formats that name commands.
    #[test]
    fn one_parser_reads_each_line_as_a_fresh_one_does() {
        let bodies = ["GET a", "get a", "HMGET k f", "FROB x", "GET a", "hmget k f g", "Get a b", "PING", "GETT a",
                      "\"GET\" a", "HGET k f", "HGETALL k", "MGET a b", "GET", "HMGET k1 f g", "HMGET k2 f g",
                      "hmget k3 f g", "HMGET k4 f g", "HMGET k5 f", "HMGET k6 f", "GET a", "GET b", "GET b c",
                      "HSET h f v", "HSET h2 f v", "HSET h3 f", "FROB k f g", "FROB k2 f g", "HMGET \"k 7\" f g",
                      "HMGET k8 f g", "MGET a b c", "MGET d b c", "PING", "PING"];
        for format in [TextFormat::Commands, TextFormat::Monitor] {
            let line = |body: &str| match format {
                TextFormat::Monitor => {
                    let quoted: Vec<String> = body.split(' ').map(|a| format!("\"{}\"", a.trim_matches('"'))).collect();
                    format!("1700000000.000001 [0 10.0.0.1:5000] {}", quoted.join(" "))
                }
                _ => body.to_string(),
            };
            let mut one = LineParser::new(format);
            for _ in 0..3 {
                for body in bodies {
                    let line = line(body);
                    let read = |p: &mut LineParser| {
                        let mut got = None;
                        p.parse(line.as_bytes(), false, |c| {
                            got = Some((c.name.to_vec(), c.args.iter().map(<[u8]>::to_vec).collect::<Vec<_>>(), c.info.op))
                        })
                        .map(|_| got)
                    };
                    assert_eq!(read(&mut one), read(&mut LineParser::new(format)), "{line}");
                }
            }
        }
    }

    #[test]
    fn many_arguments_and_long_names() {
        let fields: Vec<String> = (0..100).map(|i| i.to_string()).collect();
        let got = read(TextFormat::Commands, &format!("HMGET k {}", fields.join(" "))).unwrap().unwrap();
        assert_eq!(got.1.len(), 101);
        assert!(read(TextFormat::Commands, &"X".repeat(100)).unwrap_err().contains("unknown command"));
    }

    /// The obvious reading, in several passes: what the one-pass `parse_epoch_ns` must agree with.
    fn epoch_by_parts(s: &[u8]) -> Option<i64> {
        if !looks_like_epoch(s) {
            return None;
        }
        let (secs, frac) = s.split_at(s.iter().position(|&c| c == b'.').unwrap_or(s.len()));
        let frac = frac.get(1..).unwrap_or_default();
        let digits = |d: &[u8]| d.iter().fold(0i64, |acc, &c| acc * 10 + i64::from(c - b'0'));
        digits(secs).checked_mul(1_000_000_000)?.checked_add(digits(frac) * 10i64.pow(9 - frac.len() as u32))
    }

    #[test]
    fn epoch_parsing_agrees_with_the_reading_by_parts() {
        let pieces = ["", "0", "1", "12", "1700000000", "99999999999", "999999999999", ".", "5", "000000001",
                      "123456789", "1234567890", "x", " ", "-1", "9223372036", "854775807", "854775808",
                      "17000000/0", "1700000:00", "00000001", "99999999", "12345678", "1234567:", "/", ":"];
        for a in pieces {
            for b in pieces {
                for s in [format!("{a}{b}"), format!("{a}.{b}"), format!("{a}..{b}"), format!("{a}.{b}x")] {
                    assert_eq!(parse_epoch_ns(s.as_bytes()), epoch_by_parts(s.as_bytes()), "{s:?}");
                }
            }
        }
    }

    /// The head of a MONITOR line read as the general reading does (the first space ends the time), whether
    /// or not the time is where redis-server puts it.
    #[test]
    fn monitor_heads_agree_with_the_general_reading() {
        let general = |line: &[u8]| -> Option<(i64, std::ops::Range<usize>, usize)> {
            let space = line.iter().position(|&c| c == b' ')?;
            let ts = parse_epoch_ns(&line[..space])?;
            let rest = &line[space + 1..];
            let close = rest.iter().position(|&c| c == b']').filter(|_| rest.first() == Some(&b'['))?;
            let at = space + 1;
            Some((ts, at + 1..at + close, at + close + 1))
        };
        let times = ["1700000000.123456", "1700000000.12345", "1700000000.1234567", "170000000.1234567",
                     "1700000000 123456", "1700000000.12345x", "17000000001.23456", "1700000000.1", "x", ""];
        for time in times {
            for tail in [" [0 10.0.0.1:5000] \"GET\" \"k\"", "[0 a:1] GET k", "  [0 a:1] GET k", " [0 a:1", " x"] {
                let line = format!("{time}{tail}");
                assert_eq!(monitor_head(line.as_bytes()).ok(), general(line.as_bytes()), "{line}");
            }
        }
    }

    /// Every byte value in every place of eight digits: a number only when all eight are digits, and theirs.
    #[test]
    fn eight_digits_at_a_time() {
        for at in 0..8 {
            for b in 0..=255u8 {
                let mut digits = *b"12345678";
                digits[at] = b;
                let plain = digits.iter().all(u8::is_ascii_digit).then(|| {
                    digits.iter().fold(0u64, |n, &d| n * 10 + u64::from(d - b'0'))
                });
                assert_eq!(eight_digits(u64::from_le_bytes(digits)), plain, "{b} at {at}");
            }
        }
        assert_eq!(eight_digits(u64::from_le_bytes(*b"00000000")), Some(0));
        assert_eq!(eight_digits(u64::from_le_bytes(*b"99999999")), Some(99_999_999));
    }

    #[test]
    fn epoch_parsing() {
        assert_eq!(parse_epoch_ns(b"1.000000001"), Some(1_000_000_001));
        assert_eq!(parse_epoch_ns(b"12"), Some(12_000_000_000));
        assert_eq!(parse_epoch_ns(b"1.0000000001"), None);
        assert_eq!(parse_epoch_ns(b"x.1"), None);
        assert_eq!(parse_epoch_ns(b"9223372036.854775807"), Some(i64::MAX));
        assert_eq!(parse_epoch_ns(b"9223372036.854775808"), None);
        assert_eq!(parse_epoch_ns(b"99999999999"), None);
        assert!(looks_like_epoch(b"99999999999.5"));
    }
}
