//! A streaming reader of text traces: a bounded line at a time, each line's command out to a sink (batches of
//! hashed cache keys for the simulation, trace rows for parse.py). Memory is one read buffer plus one batch,
//! whatever the trace's size.

use std::collections::{BTreeMap, HashMap};
use std::io::Read;
use std::mem::MaybeUninit;
use std::sync::Arc;

use super::commands::{Op, Shape};
use super::line::{client_host, LineParser, TextCommand};
use super::lines::{LineError, Lines, MAX_LINE_BYTES};
use super::memo::{FieldIds, Memo};
use super::same_tail::Rest;
use super::tokenize::Args;
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

/// The `count` slots past `column`'s end, reserved, for the caller to write and then take in with `set_len`.
#[inline(always)]
fn room<T>(column: &mut Vec<T>, count: usize) -> &mut [MaybeUninit<T>] {
    column.reserve(count);
    &mut column.spare_capacity_mut()[..count]
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

    /// An empty batch with room for `n` events in every column it fills, so that filling it never copies
    /// what it holds (the columns go to numpy as they are: they cannot be reused).
    pub(crate) fn with_capacity(n: usize, lean: bool, clock: bool, shard_of: Option<Arc<KeyPattern>>) -> Batch {
        let full = if lean { 0 } else { n };
        Batch {
            keys: Vec::with_capacity(n),
            key_bytes: Vec::with_capacity(n),
            ops: Vec::with_capacity(full),
            entities: Vec::with_capacity(full),
            fields: Vec::with_capacity(full),
            reqs: Vec::with_capacity(full),
            ts_ns: Vec::with_capacity(if clock { n } else { 0 }),
            clients: Vec::with_capacity(if clock { n } else { 0 }),
            shards: Vec::with_capacity(if shard_of.is_some() { n } else { 0 }),
            unmatched_shards: 0,
            shard_of,
        }
    }

    /// One lookup of a plain key in a batch of a `keys` trace: only `keys` and `key_bytes` are filled (every
    /// event is a read, of a command of its own, without a field: what absent `ops`, `reqs`, `entities` and
    /// `fields` mean to the simulation).
    #[inline]
    pub(crate) fn push_lean(&mut self, key: &[u8]) {
        self.keys.push(key_hash(key));
        self.key_bytes.push(key.len().min(u32::MAX as usize) as u32);
        self.push_shard(key);
    }

    /// One event of the plain Redis key `key` (no field), whose hash is `entity`.
    #[inline]
    fn push(&mut self, op: u8, key: &[u8], entity: u64, req: u64) {
        self.keys.push(entity);
        self.ops.push(op);
        self.entities.push(entity);
        self.fields.push(0);
        self.key_bytes.push(key.len().min(u32::MAX as usize) as u32);
        self.reqs.push(req);
        self.push_shard(key);
    }

    /// The events of the fields of one command on the Redis key `key` (hash `entity`, the command's first
    /// argument): `count` fields, the arguments 1, 1 + `step`, ... (the shard id taken from the key once).
    /// Pushed a field at a time into every column, by index: `Vec::resize` filled the columns the fields share
    /// with loops of their own, and `step_by` and `take` added their own (2-3% of reading a `commands` line).
    #[inline]
    #[allow(clippy::too_many_arguments)]
    fn push_fields(&mut self, op: u8, key: &[u8], entity: u64, args: Args, (step, count): (usize, usize),
                   granularity: Granularity, req: u64, (ids, rest): (&mut FieldIds, Rest)) {
        // Each column's room is reserved once, and its slots written in place: a push a column a field checked
        // the capacity 24 times a line of four fields (7% of reading a `commands` line, callgrind).
        debug_assert!([self.fields.len(), self.key_bytes.len(), self.ops.len(), self.entities.len(), self.reqs.len()]
            .iter().all(|&n| n == self.keys.len()));
        let keys = room(&mut self.keys, count);
        ids.write(args, step, rest, room(&mut self.fields, count));
        let key_bytes = room(&mut self.key_bytes, count);
        let ops = room(&mut self.ops, count);
        let entities = room(&mut self.entities, count);
        let reqs = room(&mut self.reqs, count);
        for k in 0..count {
            let f = args.get(1 + k * step);
            keys[k].write(if granularity == Granularity::Field { field_hash(entity, f) } else { entity });
            key_bytes[k].write((key.len() + f.len()).min(u32::MAX as usize) as u32);
            ops[k].write(op);
            entities[k].write(entity);
            reqs[k].write(req);
        }
        // SAFETY: `room` reserved the `count` slots past each column's end, `FieldIds::write` wrote those of
        // `fields` and the loop above the others'; the columns are equally long (every event fills each).
        unsafe {
            let n = self.keys.len() + count;
            self.keys.set_len(n);
            self.fields.set_len(n);
            self.key_bytes.set_len(n);
            self.ops.set_len(n);
            self.entities.set_len(n);
            self.reqs.set_len(n);
        }
        if let Some(pattern) = &self.shard_of {
            let (shard, matched) = pattern.shard(key);
            self.shards.resize(self.keys.len(), shard);
            self.unmatched_shards += count as u64 * u64::from(!matched);
        }
    }

    /// Appends another batch's events (of the same trace, so with the same columns filled).
    pub(crate) fn append(&mut self, other: Batch) {
        self.keys.extend_from_slice(&other.keys);
        self.ops.extend_from_slice(&other.ops);
        self.entities.extend_from_slice(&other.entities);
        self.fields.extend_from_slice(&other.fields);
        self.key_bytes.extend_from_slice(&other.key_bytes);
        self.reqs.extend_from_slice(&other.reqs);
        self.ts_ns.extend_from_slice(&other.ts_ns);
        self.clients.extend_from_slice(&other.clients);
        self.shards.extend_from_slice(&other.shards);
        self.unmatched_shards += other.unmatched_shards;
    }

    #[inline]
    fn push_shard(&mut self, key: &[u8]) {
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
pub(crate) struct EventSink<'b> {
    pub batch: &'b mut Batch,
    pub granularity: Granularity,
    pub host: Option<u32>,
    /// A `keys` trace: lean events (`Batch::push_lean`).
    pub lean: bool,
    pub field_ids: FieldIds,
}

impl<'b> EventSink<'b> {
    pub fn new(batch: &'b mut Batch, granularity: Granularity, lean: bool) -> EventSink<'b> {
        EventSink { batch, granularity, host: None, lean, field_ids: FieldIds::default() }
    }
}

impl CommandSink for EventSink<'_> {
    fn made(&self) -> usize {
        self.batch.len()
    }

    #[inline]
    fn command(&mut self, c: &TextCommand, req: u64) {
        if self.lean {
            self.batch.push_lean(c.args.get(0));
            return;
        }
        let op = match c.info.op {
            Op::Read => OP_READ,
            Op::Write => OP_WRITE,
            Op::Delete => OP_DELETE,
            Op::Other => return,
        };
        push_events(c, op, self.granularity, req, self.batch, &mut self.field_ids);
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
    tally: Tally,
    key_pattern: Option<Arc<KeyPattern>>,
}

/// What reading lines counts and names: the counters, the other commands by name, the client hosts in the
/// order first seen (MONITOR lines name them). Kept by the reader, or by each chunk of `chunked`.
#[derive(Debug, Default)]
pub struct Tally {
    pub stats: TraceStats,
    pub other_by_name: BTreeMap<String, u64>,
    pub hosts: Vec<String>,
    host_ids: HashMap<Vec<u8>, u32>,
    /// The host index of each client address (port included) seen lately.
    by_address: Memo,
}

impl Tally {
    /// Reads one line into `sink`, counting its command; Ok(false) for a line without one, Err with why
    /// the line is refused. `first`: no command was read before it (a MONITOR log's `OK` is skipped).
    #[inline]
    pub fn read_line<S: CommandSink + HostSink>(
        &mut self,
        parser: &mut LineParser,
        line: &[u8],
        first: bool,
        sink: &mut S,
    ) -> Result<bool, String> {
        let stats = &mut self.stats;
        let (other, hosts, host_ids, by_address) =
            (&mut self.other_by_name, &mut self.hosts, &mut self.host_ids, &mut self.by_address);
        parser.parse(line, first, |c| {
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
                let host = by_address.get(addr, |a| u64::from(host_id(hosts, host_ids, client_host(a))));
                sink.set_host(host as u32);
            }
            sink.command(c, req);
        })
    }

    /// The index of a client host, numbered as first seen.
    pub fn host_id(&mut self, host: &str) -> u32 {
        host_id(&mut self.hosts, &mut self.host_ids, host.as_bytes())
    }

    /// Adds another tally's counts (its hosts are the caller's to renumber).
    pub fn add_counts(&mut self, other: &Tally) {
        let (s, o) = (&mut self.stats, &other.stats);
        s.commands += o.commands;
        s.lookups += o.lookups;
        s.writes += o.writes;
        s.deletes += o.deletes;
        s.other_commands += o.other_commands;
        for (name, n) in &other.other_by_name {
            *self.other_by_name.entry(name.clone()).or_default() += n;
        }
    }
}

impl<R: Read> TextReader<R> {
    pub fn new(src: R, path: &str, format: TextFormat, granularity: Granularity) -> TextReader<R> {
        TextReader {
            lines: Lines::new(src),
            parser: LineParser::new(format),
            path: path.to_string(),
            format,
            granularity,
            tally: Tally::default(),
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
        &self.tally.hosts
    }

    pub fn stats(&self) -> TraceStats {
        self.tally.stats
    }

    /// Commands that touch no cached value, by upper-case name.
    pub fn other_commands(&self) -> &BTreeMap<String, u64> {
        &self.tally.other_by_name
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
        let lean = self.format == TextFormat::Keys;
        let clock = self.format == TextFormat::Monitor;
        // A command of many keys (a long MGET) may take a batch past `min_events`: a little room to spare.
        let room = min_events.saturating_add(min_events / 64 + 64).min(1 << 26);
        let mut batch = Batch::with_capacity(room, lean, clock, self.key_pattern.clone());
        let granularity = self.granularity;
        let mut sink = EventSink::new(&mut batch, granularity, lean);
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
            let first = self.tally.stats.commands == 0;
            let parsed = self.tally.read_line(&mut self.parser, line, first, sink);
            if let Err(message) = parsed {
                return Err(TraceError::at(&self.path, self.lines.line_no(), message));
            }
        }
        if sink.made() == before && self.at_end()? {
            if self.tally.stats.commands == 0 {
                return Err(TraceError::whole(&self.path, EMPTY));
            }
            return Ok(false);
        }
        Ok(true)
    }

    fn at_end(&mut self) -> Result<bool, TraceError> {
        self.lines.at_end().map_err(|e| line_error(&self.path, self.lines.line_no(), e))
    }
}

pub const EMPTY: &str = "empty trace: no commands";

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

pub(crate) fn line_error(path: &str, line_no: u64, e: LineError) -> TraceError {
    match e {
        LineError::Io(e) => TraceError::at(path, line_no + 1, format!("read failed: {e}")),
        LineError::TooLong => {
            TraceError::at(path, line_no, format!("line longer than {} MiB: not a text trace", MAX_LINE_BYTES >> 20))
        }
        LineError::Nul => TraceError::at(path, line_no, "binary data (NUL byte): not a text trace"),
    }
}

/// Appends the events a command makes, by its shape: one per field of a hash command, one per key otherwise.
/// The command's argument count is one `CommandInfo::accepts`. A key is hashed once for all its fields.
fn push_events(c: &TextCommand, op: u8, g: Granularity, req: u64, batch: &mut Batch, ids: &mut FieldIds) {
    let (shape, args) = (c.info.shape, c.args);
    let key = |batch: &mut Batch, k: &[u8]| batch.push(op, k, key_hash(k), req);
    match shape {
        Shape::Key | Shape::KeyThenArgs => key(batch, args.get(0)),
        Shape::Keys => args.iter().for_each(|k| key(batch, k)),
        Shape::KeyValuePairs => args.iter().step_by(2).for_each(|k| key(batch, k)),
        Shape::KeyFields | Shape::KeyFieldValuePairs | Shape::KeyFieldArg => {
            let key = args.get(0);
            // The fields after the key: all of them, the one before an argument, or every other one.
            let fields = match shape {
                Shape::KeyFields => (1, args.len() - 1),
                Shape::KeyFieldArg => (1, 1),
                _ => (2, (args.len() - 1) / 2),
            };
            batch.push_fields(op, key, key_hash(key), args, fields, g, req, (ids, c.rest));
        }
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
                if b.ops.get(i).is_none_or(|&op| op == OP_READ) {
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
