//! A streaming reader of text traces: a bounded line at a time, lookups out in batches of hashed cache keys.
//! Memory is one line plus one batch, whatever the trace's size.

use std::io::{BufRead, Read};
use std::sync::Arc;

use super::commands::{self, Op, Shape};
use super::tokenize::{split_args, Span};
use super::{Granularity, TextFormat};
use crate::error::TraceError;
use crate::fleet::pattern::KeyPattern;
use crate::hash::{field_hash, key_hash};

/// Longest line accepted: far above any real command, low enough that a binary file without newlines cannot
/// make the reader buffer it whole.
pub const MAX_LINE_BYTES: u64 = 64 << 20;

/// Counts over everything read so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TraceStats {
    pub commands: u64,
    /// Read lookups: one per HMGET field, MGET key, GET, ...
    pub lookups: u64,
    /// Keys or fields written (HSET field, SET key, EXPIRE key, ...).
    pub writes: u64,
    /// Keys or fields deleted (HDEL field, DEL key, ...).
    pub deletes: u64,
    /// Commands that touch no cached value (PING, SELECT, EXISTS, ...).
    pub other_commands: u64,
}

/// The events (lookups, writes, deletes) of a stretch of the trace, in order, as columns.
#[derive(Debug, Default)]
pub struct Batch {
    /// The cache key of each event (see `hash`): `(key, field)` or, at entity granularity or without a
    /// field, the key alone.
    pub keys: Vec<u64>,
    /// `Op` of each event as u8 (`OP_READ`, `OP_WRITE`, `OP_DELETE`).
    pub ops: Vec<u8>,
    /// Hash of the Redis key alone: writes and deletes of a whole key reach every field cached under it.
    pub entities: Vec<u64>,
    /// Hash of the field alone (`key_hash(field)`), 0 without a field: what allow-lists and refresh
    /// schedules name.
    pub fields: Vec<u64>,
    /// Bytes of key plus field, for the per-entry memory estimate.
    pub key_bytes: Vec<u32>,
    /// Index of the event's command in the trace: the lookups of one HMGET share it.
    pub reqs: Vec<u64>,
    /// Capture time of each event's command, ns since the epoch; empty when the format has no clock.
    pub ts_ns: Vec<i64>,
    /// The client host of each event's command (an index into `TextReader::hosts`); empty when the format
    /// does not name its clients.
    pub clients: Vec<u32>,
    /// With a key pattern (the key-pattern route): each event's shard id hash, and the keys it did not match.
    pub shards: Vec<u64>,
    pub unmatched_shards: u64,
    shard_of: Option<Arc<KeyPattern>>,
}

pub const OP_READ: u8 = 0;
pub const OP_WRITE: u8 = 1;
pub const OP_DELETE: u8 = 2;

impl Batch {
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    fn push(&mut self, op: u8, key: &[u8], field: Option<&[u8]>, granularity: Granularity, req: u64) {
        let entity = key_hash(key);
        let (cache_key, field_id, field_len) = match field {
            Some(f) if granularity == Granularity::Field => (field_hash(entity, f), key_hash(f), f.len()),
            Some(f) => (entity, key_hash(f), f.len()),
            None => (entity, 0, 0),
        };
        self.keys.push(cache_key);
        self.ops.push(op);
        self.entities.push(entity);
        self.fields.push(field_id);
        self.key_bytes.push((key.len() + field_len).min(u32::MAX as usize) as u32);
        self.reqs.push(req);
        if let Some(pattern) = &self.shard_of {
            let (shard, matched) = pattern.shard(key);
            self.shards.push(shard);
            self.unmatched_shards += u64::from(!matched);
        }
    }
}

pub struct TextReader<R> {
    src: R,
    path: String,
    format: TextFormat,
    granularity: Granularity,
    line_no: u64,
    bytes_read: u64,
    stats: TraceStats,
    line: Vec<u8>,
    spans: Vec<Span>,
    scratch: Vec<u8>,
    /// Client hosts in the order first seen (MONITOR lines name them), and the current line's.
    hosts: Vec<String>,
    host_ids: std::collections::HashMap<Vec<u8>, u32>,
    client: Option<u32>,
    key_pattern: Option<Arc<KeyPattern>>,
}

impl<R: BufRead> TextReader<R> {
    pub fn new(src: R, path: &str, format: TextFormat, granularity: Granularity) -> TextReader<R> {
        TextReader {
            src,
            path: path.to_string(),
            format,
            granularity,
            line_no: 0,
            bytes_read: 0,
            stats: TraceStats::default(),
            line: Vec::new(),
            spans: Vec::new(),
            scratch: Vec::new(),
            hosts: Vec::new(),
            host_ids: std::collections::HashMap::new(),
            client: None,
            key_pattern: None,
        }
    }

    /// Every batch from now on carries the shard id of each event by `pattern` (the key-pattern route).
    pub fn set_key_pattern(&mut self, pattern: KeyPattern) {
        self.key_pattern = Some(Arc::new(pattern));
    }

    /// The client hosts seen so far, by index (`Batch::clients`).
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    /// The index of the client host of `[<db> <client>]`: the address without its port (a service host
    /// opens many connections, from many ports).
    fn client_of(&mut self, bracket: &[u8]) -> u32 {
        let addr = bracket.iter().position(|&c| c == b' ').map_or(bracket, |sp| &bracket[sp + 1..]);
        let host = match addr.iter().rposition(|&c| c == b':') {
            Some(colon) if colon + 1 < addr.len() && addr[colon + 1..].iter().all(u8::is_ascii_digit) => &addr[..colon],
            _ => addr,
        };
        if let Some(&id) = self.host_ids.get(host) {
            return id;
        }
        let id = self.hosts.len() as u32;
        self.hosts.push(String::from_utf8_lossy(host).into_owned());
        self.host_ids.insert(host.to_vec(), id);
        id
    }

    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// Bytes consumed so far, for progress reporting.
    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    /// Reads lines until the batch holds at least `min_events` events or the trace ends; None at the end.
    /// An empty trace (no command at all) is an error rather than a zero hit rate.
    pub fn next_batch(&mut self, min_events: usize) -> Result<Option<Batch>, TraceError> {
        let mut batch = Batch { shard_of: self.key_pattern.clone(), ..Batch::default() };
        while batch.keys.len() < min_events {
            if !self.read_line()? {
                break;
            }
            self.parse_line(&mut batch)?;
        }
        if batch.keys.is_empty() && self.at_end()? {
            if self.stats.commands == 0 {
                return Err(TraceError::whole(&self.path, "empty trace: no commands"));
            }
            return Ok(None);
        }
        Ok(Some(batch))
    }

    fn at_end(&mut self) -> Result<bool, TraceError> {
        let buf = self.src.fill_buf().map_err(|e| TraceError::whole(&self.path, e.to_string()))?;
        Ok(buf.is_empty())
    }

    /// Reads the next line into `self.line` without its line ending; false at the end of the input.
    fn read_line(&mut self) -> Result<bool, TraceError> {
        self.line.clear();
        let n = (&mut self.src)
            .take(MAX_LINE_BYTES + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| TraceError::at(&self.path, self.line_no + 1, format!("read failed: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        self.bytes_read += n as u64;
        if n as u64 > MAX_LINE_BYTES {
            return Err(self.error(format!("line longer than {} MiB: not a text trace", MAX_LINE_BYTES >> 20)));
        }
        while matches!(self.line.last(), Some(b'\n' | b'\r')) {
            self.line.pop();
        }
        if self.line.contains(&0) {
            return Err(self.error("binary data (NUL byte): not a text trace"));
        }
        Ok(true)
    }

    fn error(&self, message: impl Into<String>) -> TraceError {
        TraceError::at(&self.path, self.line_no, message)
    }

    fn parse_line(&mut self, batch: &mut Batch) -> Result<(), TraceError> {
        let line = std::mem::take(&mut self.line);
        let result = match self.format {
            TextFormat::Keys => {
                self.parse_key_line(&line, batch);
                Ok(())
            }
            TextFormat::Commands => self.parse_command_line(&line, 0, None, batch),
            TextFormat::Monitor => self.parse_monitor_line(&line, batch),
        };
        self.line = line;
        result
    }

    fn parse_key_line(&mut self, line: &[u8], batch: &mut Batch) {
        let key = line.trim_ascii();
        if key.is_empty() {
            return;
        }
        self.stats.commands += 1;
        self.stats.lookups += 1;
        batch.push(OP_READ, key, None, self.granularity, self.stats.commands - 1);
    }

    /// `1700000000.123456 [0 10.1.2.3:51234] "HMGET" "st_1" "2496559762"`. The first line of a
    /// `redis-cli MONITOR` session is its `OK`, which is skipped.
    fn parse_monitor_line(&mut self, line: &[u8], batch: &mut Batch) -> Result<(), TraceError> {
        let trimmed = line.trim_ascii();
        if trimmed.is_empty() || (trimmed == b"OK" && self.stats.commands == 0) {
            return Ok(());
        }
        let (ts, client, args_at) = monitor_head(trimmed).map_err(|e| self.error(e))?;
        self.client = Some(self.client_of(&trimmed[client]));
        self.parse_command_line(trimmed, args_at, Some(ts), batch)
    }

    fn parse_command_line(
        &mut self,
        line: &[u8],
        args_at: usize,
        ts: Option<i64>,
        batch: &mut Batch,
    ) -> Result<(), TraceError> {
        let body = &line[args_at..];
        if body.trim_ascii().is_empty() {
            if ts.is_some() {
                return Err(self.error("monitor line without a command"));
            }
            return Ok(());
        }
        split_args(body, &mut self.spans, &mut self.scratch).map_err(|e| self.error(e))?;
        let args: Vec<&[u8]> = self.spans.iter().map(|s| s.get(body, &self.scratch)).collect();
        let info = command_of(&args).map_err(|e| self.error(e))?;
        let args = &args[1..];
        self.stats.commands += 1;
        let req = self.stats.commands - 1;
        let op = match info.op {
            Op::Read => OP_READ,
            Op::Write => OP_WRITE,
            Op::Delete => OP_DELETE,
            Op::Other => {
                self.stats.other_commands += 1;
                return Ok(());
            }
        };
        let before = batch.len();
        push_events(info.shape, op, args, self.granularity, req, batch).map_err(|e| self.error(e))?;
        let n = (batch.len() - before) as u64;
        match info.op {
            Op::Read => self.stats.lookups += n,
            Op::Write => self.stats.writes += n,
            _ => self.stats.deletes += n,
        }
        if let Some(ts) = ts {
            batch.ts_ns.resize(batch.len(), ts);
        }
        if let Some(client) = self.client {
            batch.clients.resize(batch.len(), client);
        }
        Ok(())
    }
}

/// A MONITOR line's time, where its client's name is, and where its arguments begin; `line` is trimmed.
fn monitor_head(line: &[u8]) -> Result<(i64, std::ops::Range<usize>, usize), String> {
    let space = line.iter().position(|&c| c == b' ').ok_or(MONITOR_SHAPE)?;
    let stamp = &line[..space];
    let ts = parse_epoch_ns(stamp).ok_or_else(|| match looks_like_epoch(stamp) {
        // 11-digit seconds would wrap around in nanoseconds: an error, never a time in 1700.
        true => format!("time {} is past 2262-04-11, beyond nanosecond timestamps", printable(stamp)),
        false => MONITOR_SHAPE.to_string(),
    })?;
    let rest = &line[space + 1..];
    if rest.first() != Some(&b'[') {
        return Err(MONITOR_SHAPE.into());
    }
    let close = rest.iter().position(|&c| c == b']').ok_or(MONITOR_SHAPE)?;
    let at = line.len() - rest.len();
    Ok((ts, at + 1..at + close, at + close + 1))
}

/// The command `args` (name first) runs, or why the line is refused: a name no Redis command has, or fewer
/// arguments than it takes.
fn command_of(args: &[&[u8]]) -> Result<commands::CommandInfo, String> {
    let name = args[0].to_ascii_uppercase();
    let Some(info) = commands::lookup(&name) else {
        return Err(format!("unknown command {:?}", printable(args[0])));
    };
    if args.len() - 1 < info.min_args {
        return Err(format!("{} needs at least {} arguments, got {}", printable(&name), info.min_args, args.len() - 1));
    }
    Ok(info)
}

/// One MONITOR line read exactly as `TextReader` reads it (parse.py's MONITOR reader uses this, so that both
/// commands accept and refuse the same lines with the same words): its time, its client, its arguments
/// (name first, unescaped). None for a blank line. The `OK` a session starts with is the caller's to skip.
pub fn monitor_line(line: &[u8]) -> Result<Option<(i64, Vec<u8>, Vec<Vec<u8>>)>, String> {
    let line = line.trim_ascii();
    if line.is_empty() {
        return Ok(None);
    }
    if line.contains(&0) {
        return Err("binary data (NUL byte): not a text trace".into());
    }
    let (ts, client, args_at) = monitor_head(line)?;
    let body = &line[args_at..];
    if body.trim_ascii().is_empty() {
        return Err("monitor line without a command".into());
    }
    let (mut spans, mut scratch) = (Vec::new(), Vec::new());
    split_args(body, &mut spans, &mut scratch)?;
    let args: Vec<&[u8]> = spans.iter().map(|s| s.get(body, &scratch)).collect();
    command_of(&args)?;
    Ok(Some((ts, line[client].to_vec(), args.into_iter().map(<[u8]>::to_vec).collect())))
}

const MONITOR_SHAPE: &str =
    "not a MONITOR line (expected `<unix time> [<db> <client>] \"CMD\" \"arg\" ...`)";

/// Appends the events a command makes, by its shape: one per field of a hash command, one per key otherwise.
fn push_events(shape: Shape, op: u8, args: &[&[u8]], g: Granularity, req: u64, batch: &mut Batch) -> Result<(), String> {
    match shape {
        Shape::Key | Shape::KeyThenArgs => batch.push(op, args[0], None, g, req),
        Shape::Keys => args.iter().for_each(|k| batch.push(op, k, None, g, req)),
        Shape::KeyValuePairs => {
            if args.len() % 2 != 0 {
                return Err("expected key value pairs".into());
            }
            args.iter().step_by(2).for_each(|k| batch.push(op, k, None, g, req));
        }
        Shape::KeyFields => args[1..].iter().for_each(|f| batch.push(op, args[0], Some(f), g, req)),
        Shape::KeyFieldValuePairs => {
            if args.len() % 2 != 1 {
                return Err("expected a key then field value pairs".into());
            }
            args[1..].iter().step_by(2).for_each(|f| batch.push(op, args[0], Some(f), g, req));
        }
        Shape::KeyFieldArg => batch.push(op, args[0], Some(args[1]), g, req),
        Shape::NoKeys => {}
    }
    Ok(())
}

/// `1700000000.123456` (any number of fraction digits up to 9) as ns since the epoch; None when it is not
/// a time, or one past what nanoseconds in an i64 reach (2262-04-11).
pub fn parse_epoch_ns(s: &[u8]) -> Option<i64> {
    if !looks_like_epoch(s) {
        return None;
    }
    let (secs, frac) = s.split_at(s.iter().position(|&c| c == b'.').unwrap_or(s.len()));
    let frac = frac.get(1..).unwrap_or_default();
    let digits = |d: &[u8]| d.iter().fold(0i64, |acc, &c| acc * 10 + i64::from(c - b'0'));
    let frac_ns = digits(frac) * 10i64.pow(9 - frac.len() as u32);
    digits(secs).checked_mul(1_000_000_000)?.checked_add(frac_ns)
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
fn printable(bytes: &[u8]) -> String {
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

    /// The read events' keys and times, and the stats.
    fn read(text: &str, format: TextFormat) -> Result<(Vec<u64>, Vec<i64>, TraceStats), TraceError> {
        let (batches, stats) = read_all(text, format)?;
        let (mut keys, mut ts) = (Vec::new(), Vec::new());
        for b in batches {
            for i in 0..b.len() {
                if b.ops[i] == OP_READ {
                    keys.push(b.keys[i]);
                    if !b.ts_ns.is_empty() {
                        ts.push(b.ts_ns[i]);
                    }
                }
            }
        }
        Ok((keys, ts, stats))
    }

    fn read_all(text: &str, format: TextFormat) -> Result<(Vec<Batch>, TraceStats), TraceError> {
        let mut r = TextReader::new(text.as_bytes(), "t.txt", format, Granularity::Field);
        let mut batches = Vec::new();
        while let Some(b) = r.next_batch(2)? {
            batches.push(b);
        }
        Ok((batches, r.stats()))
    }

    #[test]
    fn writes_and_deletes_are_events() {
        let (batches, _) = read_all("HSET st_1 11 v 22 w\nDEL st_1 st_2\nHMGET st_1 11\n", TextFormat::Commands).unwrap();
        let ops: Vec<u8> = batches.iter().flat_map(|b| b.ops.clone()).collect();
        let reqs: Vec<u64> = batches.iter().flat_map(|b| b.reqs.clone()).collect();
        let fields: Vec<u64> = batches.iter().flat_map(|b| b.fields.clone()).collect();
        assert_eq!(ops, vec![OP_WRITE, OP_WRITE, OP_DELETE, OP_DELETE, OP_READ]);
        assert_eq!(reqs, vec![0, 0, 1, 1, 2]);
        assert_eq!(fields, vec![key_hash(b"11"), key_hash(b"22"), 0, 0, key_hash(b"11")]);
        assert_eq!(batches[0].key_bytes[0], 6);
    }

    #[test]
    fn commands_format() {
        let (keys, ts, stats) =
            read("HMGET st_1 11 22\nhget st_1 11\n\nHSET st_1 11 v\nPING\nGET plain\n", TextFormat::Commands)
                .unwrap();
        let f11 = field_hash(key_hash(b"st_1"), b"11");
        assert_eq!(keys, vec![f11, field_hash(key_hash(b"st_1"), b"22"), f11, key_hash(b"plain")]);
        assert!(ts.is_empty());
        assert_eq!(
            stats,
            TraceStats { commands: 5, lookups: 4, writes: 1, deletes: 0, other_commands: 1 }
        );
    }

    #[test]
    fn monitor_format() {
        let text = "OK\n1700000000.5 [0 10.0.0.1:5000] \"HMGET\" \"st_1\" \"11\" \"22\"\n\
                    1700000001.000001 [0 lua] \"GET\" \"a b\"\n";
        let (keys, ts, stats) = read(text, TextFormat::Monitor).unwrap();
        assert_eq!(keys.len(), 3);
        assert_eq!(keys[2], key_hash(b"a b"));
        assert_eq!(ts, vec![1_700_000_000_500_000_000, 1_700_000_000_500_000_000, 1_700_000_001_000_001_000]);
        assert_eq!(stats.commands, 2);
    }

    #[test]
    fn keys_format() {
        let (keys, _, stats) = read("42\n43\r\n42\n", TextFormat::Keys).unwrap();
        assert_eq!(keys, vec![key_hash(b"42"), key_hash(b"43"), key_hash(b"42")]);
        assert_eq!(stats.lookups, 3);
    }

    #[test]
    fn errors_name_the_line() {
        let err = read("GET a\nFROB x\n", TextFormat::Commands).unwrap_err();
        assert_eq!(err.line, Some(2));
        assert!(err.message.contains("unknown command"), "{}", err.message);
        assert_eq!(read("HMGET a\n", TextFormat::Commands).unwrap_err().line, Some(1));
        assert_eq!(read("GET a\nG\0T b\n", TextFormat::Commands).unwrap_err().line, Some(2));
        assert!(read("HMGET a f\n", TextFormat::Monitor).is_err());
        let empty = read("\n\n", TextFormat::Commands).unwrap_err();
        assert_eq!(empty.line, None);
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
        let err = read("99999999999.000001 [0 1.2.3.4:5] \"GET\" \"a\"\n", TextFormat::Monitor).unwrap_err();
        assert_eq!(err.line, Some(1));
        assert!(err.message.contains("2262"), "{}", err.message);
    }
}
