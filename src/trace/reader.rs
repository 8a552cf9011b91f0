//! A streaming reader of text traces: a bounded line at a time, each line's command out to a sink (batches of
//! hashed cache keys for the simulation, trace rows for parse.py). Memory is one read buffer plus one batch,
//! whatever the trace's size.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::sync::Arc;

use super::commands::{Op, Shape};
use super::line::{client_host, LineParser, TextCommand};
use super::lines::{LineError, Lines, MAX_LINE_BYTES};
use super::{Granularity, TextFormat};
use crate::error::TraceError;
use crate::fleet::pattern::KeyPattern;
use crate::hash::{field_hash, key_hash};

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

/// What a reader hands each command it reads to: the simulation's events (`Batch`) or trace rows
/// (`parse::text_rows`). Both see the same commands, numbered the same way.
pub trait CommandSink {
    /// Events or rows made so far.
    fn made(&self) -> usize;
    /// Command `req` of the trace (its index), once `c.info.accepts` its arguments.
    fn command(&mut self, c: &TextCommand, req: u64);
}

/// The events of a batch: `push_events` by the command's shape, with the time and client host of its line.
struct EventSink<'b> {
    batch: &'b mut Batch,
    granularity: Granularity,
    host: Option<u32>,
}

impl CommandSink for EventSink<'_> {
    fn made(&self) -> usize {
        self.batch.len()
    }

    #[inline]
    fn command(&mut self, c: &TextCommand, req: u64) {
        let op = match c.info.op {
            Op::Read => OP_READ,
            Op::Write => OP_WRITE,
            Op::Delete => OP_DELETE,
            Op::Other => return,
        };
        push_events(c.info.shape, op, c.args, self.granularity, req, self.batch);
        if let Some(ts) = c.ts {
            self.batch.ts_ns.resize(self.batch.len(), ts);
        }
        if let Some(host) = self.host {
            self.batch.clients.resize(self.batch.len(), host);
        }
    }
}

/// A text trace read as a stream: lines split in place (`Lines`), each read into its command (`LineParser`),
/// counted, and handed to a sink. The file is read ahead on a thread of its own by the caller's `R`.
pub struct TextReader<R> {
    lines: Lines<R>,
    parser: LineParser,
    path: String,
    format: TextFormat,
    granularity: Granularity,
    stats: TraceStats,
    /// Commands that touch no cached value, by name.
    other_by_name: BTreeMap<String, u64>,
    /// Client hosts in the order first seen (MONITOR lines name them).
    hosts: Vec<String>,
    host_ids: HashMap<Vec<u8>, u32>,
    key_pattern: Option<Arc<KeyPattern>>,
}

impl<R: Read> TextReader<R> {
    pub fn new(src: R, path: &str, format: TextFormat, granularity: Granularity) -> TextReader<R> {
        TextReader {
            lines: Lines::new(src),
            parser: LineParser::new(format),
            path: path.to_string(),
            format,
            granularity,
            stats: TraceStats::default(),
            other_by_name: BTreeMap::new(),
            hosts: Vec::new(),
            host_ids: HashMap::new(),
            key_pattern: None,
        }
    }

    pub fn path(&self) -> &str {
        &self.path
    }

    pub fn format(&self) -> TextFormat {
        self.format
    }

    /// Every batch from now on carries the shard id of each event by `pattern` (the key-pattern route).
    pub fn set_key_pattern(&mut self, pattern: KeyPattern) {
        self.key_pattern = Some(Arc::new(pattern));
    }

    /// The client hosts seen so far, by index (`Batch::clients`).
    pub fn hosts(&self) -> &[String] {
        &self.hosts
    }

    pub fn stats(&self) -> TraceStats {
        self.stats
    }

    /// Commands that touch no cached value, by upper-case name.
    pub fn other_commands(&self) -> &BTreeMap<String, u64> {
        &self.other_by_name
    }

    /// Lines read so far (blank ones included).
    pub fn lines(&self) -> u64 {
        self.lines.line_no()
    }

    /// Bytes consumed so far, for progress reporting.
    pub fn bytes_read(&self) -> u64 {
        self.lines.bytes_read()
    }

    /// Reads lines until the batch holds at least `min_events` events or the trace ends; None at the end.
    /// An empty trace (no command at all) is an error rather than a zero hit rate.
    pub fn next_batch(&mut self, min_events: usize) -> Result<Option<Batch>, TraceError> {
        let mut batch = Batch { shard_of: self.key_pattern.clone(), ..Batch::default() };
        let granularity = self.granularity;
        let mut sink = EventSink { batch: &mut batch, granularity, host: None };
        if !self.read_into(&mut sink, min_events)? {
            return Ok(None);
        }
        Ok(Some(batch))
    }

    /// Reads lines into `sink` until it has made `min` events or rows, or the trace ends; false when it made
    /// none because the trace had ended. A trace without a single command is an error, not a zero hit rate.
    pub fn read_into<S: CommandSink + HostSink>(&mut self, sink: &mut S, min: usize) -> Result<bool, TraceError> {
        let before = sink.made();
        while sink.made() < min {
            let line = match self.lines.next_line() {
                Ok(Some(line)) => line,
                Ok(None) => break,
                Err(e) => return Err(line_error(&self.path, self.lines.line_no(), e)),
            };
            let stats = &mut self.stats;
            let (other, hosts, host_ids) = (&mut self.other_by_name, &mut self.hosts, &mut self.host_ids);
            let first = stats.commands == 0;
            let parsed = self.parser.parse(line, first, |c| {
                let req = stats.commands;
                stats.commands += 1;
                let n = c.info.keys_touched(c.args.len()) as u64;
                match c.info.op {
                    Op::Read => stats.lookups += n,
                    Op::Write => stats.writes += n,
                    Op::Delete => stats.deletes += n,
                    Op::Other => {
                        stats.other_commands += 1;
                        count_other(other, c.name);
                    }
                }
                if let Some(addr) = c.client {
                    sink.set_host(host_id(hosts, host_ids, client_host(addr)));
                }
                sink.command(c, req);
            });
            if let Err(message) = parsed {
                return Err(TraceError::at(&self.path, self.lines.line_no(), message));
            }
        }
        if sink.made() == before && self.at_end()? {
            if self.stats.commands == 0 {
                return Err(TraceError::whole(&self.path, "empty trace: no commands"));
            }
            return Ok(false);
        }
        Ok(true)
    }

    fn at_end(&mut self) -> Result<bool, TraceError> {
        self.lines.at_end().map_err(|e| line_error(&self.path, self.lines.line_no(), e))
    }
}

/// A sink that keeps the client host of the command it gets next (events carry it; rows do not).
pub trait HostSink {
    fn set_host(&mut self, _host: u32) {}
}

impl HostSink for EventSink<'_> {
    fn set_host(&mut self, host: u32) {
        self.host = Some(host);
    }
}

fn count_other(other: &mut BTreeMap<String, u64>, name: &[u8]) {
    let name = String::from_utf8_lossy(name);
    match other.get_mut(name.as_ref()) {
        Some(n) => *n += 1,
        None => {
            other.insert(name.into_owned(), 1);
        }
    }
}

/// The index of a client host, numbered as first seen.
fn host_id(hosts: &mut Vec<String>, ids: &mut HashMap<Vec<u8>, u32>, host: &[u8]) -> u32 {
    if let Some(&id) = ids.get(host) {
        return id;
    }
    let id = hosts.len() as u32;
    hosts.push(String::from_utf8_lossy(host).into_owned());
    ids.insert(host.to_vec(), id);
    id
}

fn line_error(path: &str, line_no: u64, e: LineError) -> TraceError {
    match e {
        LineError::Io(e) => TraceError::at(path, line_no + 1, format!("read failed: {e}")),
        LineError::TooLong => {
            TraceError::at(path, line_no, format!("line longer than {} MiB: not a text trace", MAX_LINE_BYTES >> 20))
        }
    }
}

/// Appends the events a command makes, by its shape: one per field of a hash command, one per key otherwise.
/// The command's argument count is one `CommandInfo::accepts`.
fn push_events(shape: Shape, op: u8, args: &[&[u8]], g: Granularity, req: u64, batch: &mut Batch) {
    match shape {
        Shape::Key | Shape::KeyThenArgs => batch.push(op, args[0], None, g, req),
        Shape::Keys => args.iter().for_each(|k| batch.push(op, k, None, g, req)),
        Shape::KeyValuePairs => args.iter().step_by(2).for_each(|k| batch.push(op, k, None, g, req)),
        Shape::KeyFields => args[1..].iter().for_each(|f| batch.push(op, args[0], Some(f), g, req)),
        Shape::KeyFieldValuePairs => args[1..].iter().step_by(2).for_each(|f| batch.push(op, args[0], Some(f), g, req)),
        Shape::KeyFieldArg => batch.push(op, args[0], Some(args[1]), g, req),
        Shape::NoKeys => {}
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
    fn a_time_past_2262_is_refused() {
        let err = read("99999999999.000001 [0 1.2.3.4:5] \"GET\" \"a\"\n", TextFormat::Monitor).unwrap_err();
        assert_eq!(err.line, Some(1));
        assert!(err.message.contains("2262"), "{}", err.message);
    }
}
