//! Commands with their reply summaries in, trace rows out (the schema of DESIGN.md), as columns.
//!
//! One row per lookup (an HMGET field, an MGET key, a GET, each field an HGETALL returned), per written
//! field or key, per deleted field or key. A lookup's `value_size` and `found` come from its reply; a
//! write's `value_size` is the length of the value it sent. Other commands only count, by name. Argument
//! values never reach a row: only keys, fields and lengths do. A command answered with an error has its
//! rows marked with the error's code (`error`): Redis did not run it (a cluster's MOVED or ASK, LOADING) or
//! refused it (WRONGTYPE), so it was no lookup and no write; the readers that simulate drop such rows.

use std::collections::BTreeMap;
use std::io::Write;
use std::net::SocketAddr;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::resp::{Command, ErrorCode, Reply};
use crate::trace::commands::{self, Op, Shape};
use crate::trace::reader::{OP_DELETE, OP_READ, OP_WRITE};

/// Rows as columns. Offsets start at 0 (Arrow layout); -1 means unknown in `value_size`, `found` and
/// `latency_ns`.
#[derive(Debug, Default)]
pub struct RowBatch {
    pub ts_ns: Vec<i64>,
    pub conn: Vec<u32>,
    pub req: Vec<u64>,
    /// The round trip the command was sent in: its ordinal on its connection (`resp::Command::batch`).
    pub batch: Vec<u64>,
    pub op: Vec<u8>,
    /// Index into `RowBuilder::cmd_names`.
    pub cmd: Vec<u16>,
    pub key_offsets: Vec<i64>,
    pub key_data: Vec<u8>,
    pub field_offsets: Vec<i64>,
    pub field_data: Vec<u8>,
    pub field_valid: Vec<bool>,
    pub value_size: Vec<i32>,
    pub found: Vec<i8>,
    pub latency_ns: Vec<i64>,
    /// The code of the error that answered the row's command, as an index into `RowBuilder::error_names`;
    /// -1 when the reply was no error or is unknown.
    pub error: Vec<i16>,
    /// The codes `error` indexes (all the builder has named so far: a few, at most `MAX_ERROR_CODES`).
    pub error_names: Vec<String>,
    /// (conn, client, server) of each connection the rows name, by conn; filled by the capture parser only.
    pub endpoints: Vec<(u32, SocketAddr, SocketAddr)>,
}

impl RowBatch {
    fn new() -> RowBatch {
        RowBatch { key_offsets: vec![0], field_offsets: vec![0], ..RowBatch::default() }
    }

    pub fn empty() -> RowBatch {
        RowBatch::new()
    }

    /// An empty batch with room for `rows` rows and the given string bytes, so that filling it never moves
    /// what it holds (growing a column of a million rows by doubling copies it, and faults in fresh pages).
    fn with_capacity(rows: usize, key_bytes: usize, field_bytes: usize) -> RowBatch {
        let mut b = RowBatch {
            ts_ns: Vec::with_capacity(rows),
            conn: Vec::with_capacity(rows),
            req: Vec::with_capacity(rows),
            batch: Vec::with_capacity(rows),
            op: Vec::with_capacity(rows),
            cmd: Vec::with_capacity(rows),
            key_offsets: Vec::with_capacity(rows + 1),
            key_data: Vec::with_capacity(key_bytes),
            field_offsets: Vec::with_capacity(rows + 1),
            field_data: Vec::with_capacity(field_bytes),
            field_valid: Vec::with_capacity(rows),
            value_size: Vec::with_capacity(rows),
            found: Vec::with_capacity(rows),
            latency_ns: Vec::with_capacity(rows),
            error: Vec::with_capacity(rows),
            error_names: Vec::new(),
            endpoints: Vec::new(),
        };
        b.key_offsets.push(0);
        b.field_offsets.push(0);
        b
    }

    /// An empty batch with room for `rows` rows whose keys and fields are as long, on average, as this
    /// batch's, and some slack.
    pub fn with_room_for(&self, rows: usize) -> RowBatch {
        let per_row = |bytes: usize| bytes.div_ceil(self.len().max(1));
        let room = |n: usize| n + n / 16 + 1024;
        RowBatch::with_capacity(room(rows), room(rows * per_row(self.key_data.len())),
                                room(rows * per_row(self.field_data.len())))
    }

    pub fn len(&self) -> usize {
        self.ts_ns.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ts_ns.is_empty()
    }
}

/// A row's reply-derived values.
#[derive(Clone, Copy)]
struct Outcome {
    value_size: i32,
    found: i8,
}

const UNKNOWN: Outcome = Outcome { value_size: -1, found: -1 };

/// A length as the trace's int32 `value_size`. Redis refuses bulk strings over 512 MiB (and the RESP limits
/// with it), so the cap is never reached by real traffic.
fn size(len: usize) -> i32 {
    i32::try_from(len).unwrap_or(i32::MAX)
}

fn looked_up(len: Option<u32>) -> Outcome {
    match len {
        Some(n) => Outcome { value_size: size(n as usize), found: 1 },
        None => Outcome { value_size: -1, found: 0 },
    }
}

#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RowStats {
    pub commands: u64,
    pub rows: u64,
    /// Commands whose name is no Redis command we know (garbage that looked like RESP, or a module's).
    pub unknown_commands: u64,
    /// Known commands with an argument count Redis rejects (it answers an error and runs nothing).
    pub malformed_commands: u64,
    /// Commands that touch no cached value, by upper-case name.
    pub other_commands: BTreeMap<String, u64>,
    /// Rows not written because their key or field was not kept (longer than the argument limit, or cut by a
    /// gap): an unknown key must not become the empty key, which all such keys would share.
    pub elided_keys: u64,
    /// Commands answered with an error, by its code (`MOVED`, `ASK`, `WRONGTYPE`, ...), whatever the command.
    pub error_replies: BTreeMap<String, u64>,
    /// The same by code and command, as "CODE COMMAND" (`error_commands`): what each code answered.
    pub error_commands: BTreeMap<String, u64>,
}

/// Distinct error codes named in the `error` column; any further code reads `?` (hostile traffic could
/// otherwise make the table grow without bound).
const MAX_ERROR_CODES: usize = 1024;

pub struct RowBuilder {
    batch: RowBatch,
    /// The current key as it goes into the trace (as text, or anonymized): made once per key of a command,
    /// copied into each of its rows.
    key: Vec<u8>,
    /// The current key was not kept: its rows are dropped (`RowStats::elided_keys`).
    key_lost: bool,
    /// Which arguments of the current command (name excluded) were not kept; empty when all were.
    lost: Vec<bool>,
    cmd_names: Vec<String>,
    cmd_index: BTreeMap<Vec<u8>, u16>,
    error_names: Vec<String>,
    error_index: BTreeMap<ErrorCode, i16>,
    anonymize_salt: Option<u64>,
    stats: RowStats,
}

impl RowBuilder {
    pub fn new(anonymize_salt: Option<u64>) -> RowBuilder {
        RowBuilder {
            batch: RowBatch::new(),
            key: Vec::new(),
            key_lost: false,
            lost: Vec::new(),
            cmd_names: Vec::new(),
            cmd_index: BTreeMap::new(),
            error_names: Vec::new(),
            error_index: BTreeMap::new(),
            anonymize_salt,
            stats: RowStats::default(),
        }
    }

    pub fn rows(&self) -> usize {
        self.batch.len()
    }

    /// Bytes of keys and fields in the batch so far: with long keys (a huge MGET of long keys, say) these, not
    /// the rows, are what a batch's memory is.
    pub fn string_bytes(&self) -> usize {
        self.batch.key_data.len() + self.batch.field_data.len()
    }

    /// The rows so far; the next batch starts with room for as many (and some slack, since a batch ends
    /// after the command that reaches the caller's row count).
    pub fn take(&mut self) -> RowBatch {
        let next = self.batch.with_room_for(self.batch.len());
        let mut batch = std::mem::replace(&mut self.batch, next);
        batch.error_names = self.error_names.clone();
        batch
    }

    /// The rows made so far, unsorted (the capture's `order` takes them), leaving none.
    pub fn take_made(&mut self) -> RowBatch {
        std::mem::replace(&mut self.batch, RowBatch::new())
    }

    /// Gives back rows `take_made` took and kept; rows made since come after them.
    pub fn put_back(&mut self, mut held: RowBatch) {
        let made = std::mem::replace(&mut self.batch, RowBatch::new());
        held.append_range(&made, 0..made.len());
        self.batch = held;
    }

    /// The rows made and not yet taken.
    pub fn made(&self) -> &RowBatch {
        &self.batch
    }

    pub fn cmd_names(&self) -> &[String] {
        &self.cmd_names
    }

    /// The error codes the `error` column indexes.
    pub fn error_names(&self) -> &[String] {
        &self.error_names
    }

    /// The `conn` of each row of the batch being built.
    pub fn batch_conns(&self) -> &[u32] {
        &self.batch.conn
    }

    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    pub fn push_command(&mut self, conn: u32, c: &Command) {
        let req = self.stats.commands;
        self.stats.commands += 1;
        let error = match c.reply {
            Reply::Error(code) => {
                *self.stats.error_replies.entry(code.as_str().to_string()).or_default() += 1;
                super::error_commands::count(&mut self.stats.error_commands, code, c.args);
                self.error_code(code)
            }
            _ => -1,
        };
        let Some(name) = c.args.get(0) else { return };
        let upper = name.to_ascii_uppercase();
        let Some(info) = commands::lookup(&upper) else {
            self.stats.unknown_commands += 1;
            return;
        };
        if info.op == Op::Other {
            *self.stats.other_commands.entry(String::from_utf8_lossy(&upper).into_owned()).or_default() += 1;
            return;
        }
        let args: Vec<&[u8]> = c.args.iter().skip(1).collect();
        if !info.accepts(args.len()) {
            self.stats.malformed_commands += 1;
            return;
        }
        let cmd = self.cmd_code(&upper);
        let latency = c.reply_ts_ns.map_or(-1, |r| (r - c.ts_ns).max(0));
        self.lost.clear();
        if c.elided_args > 0 {
            self.lost.extend((1..=args.len()).map(|i| c.args.is_elided(i)));
        }
        match info.op {
            Op::Read => self.push_reads(info.shape, &args, &c.reply),
            Op::Write | Op::Delete => self.push_changes(info.shape, &args, value_arg(&upper)),
            Op::Other => unreachable!("returned above"),
        }
        let op = match info.op {
            Op::Read => OP_READ,
            Op::Write => OP_WRITE,
            _ => OP_DELETE,
        };
        self.fill_command_columns(Row { ts: c.ts_ns, conn, req, batch: c.batch, op, cmd, latency, error });
    }

    /// The columns all rows of a command share, filled in once its rows are pushed (a fill of n equal
    /// values is much cheaper than n pushes).
    fn fill_command_columns(&mut self, row: Row) {
        let b = &mut self.batch;
        let n = b.field_valid.len();
        b.ts_ns.resize(n, row.ts);
        b.conn.resize(n, row.conn);
        b.req.resize(n, row.req);
        b.batch.resize(n, row.batch);
        b.op.resize(n, row.op);
        b.cmd.resize(n, row.cmd);
        b.latency_ns.resize(n, row.latency);
        b.error.resize(n, row.error);
    }

    fn error_code(&mut self, code: ErrorCode) -> i16 {
        if let Some(&i) = self.error_index.get(&code) {
            return i;
        }
        let code = if self.error_names.len() >= MAX_ERROR_CODES { ErrorCode::UNNAMED } else { code };
        if let Some(&i) = self.error_index.get(&code) {
            return i;
        }
        let i = self.error_names.len() as i16;
        self.error_names.push(code.as_str().to_string());
        self.error_index.insert(code, i);
        i
    }

    fn cmd_code(&mut self, upper: &[u8]) -> u16 {
        if let Some(&code) = self.cmd_index.get(upper) {
            return code;
        }
        let code = self.cmd_names.len() as u16;
        self.cmd_names.push(String::from_utf8_lossy(upper).into_owned());
        self.cmd_index.insert(upper.to_vec(), code);
        code
    }

    fn push_reads(&mut self, shape: Shape, args: &[&[u8]], reply: &Reply) {
        match shape {
            Shape::KeyFields => {
                let fields = &args[1..];
                self.set_key(args, 0);
                for (i, f) in fields.iter().enumerate() {
                    self.push_field(f, i + 1, element_outcome(reply, fields.len(), i));
                }
            }
            Shape::Keys => {
                for i in 0..args.len() {
                    self.set_key(args, i);
                    self.push(None, element_outcome(reply, args.len(), i));
                }
            }
            // HGETALL: a row per field the reply holds; a missing key (empty reply) is one row, not found.
            _ => {
                self.set_key(args, 0);
                match reply {
                    Reply::Map { fields, value_lens } if !value_lens.is_empty() => {
                        for (f, &len) in fields.iter().zip(value_lens.iter()) {
                            self.push(Some(f), looked_up(len));
                        }
                    }
                    Reply::Map { .. } | Reply::Nil => self.push(None, Outcome { value_size: -1, found: 0 }),
                    Reply::Bulk { len } => self.push(None, looked_up(Some(*len))),
                    _ => self.push(None, UNKNOWN),
                }
            }
        }
    }

    /// `value_at`: for a key-then-arguments command, which argument is the value written (if any). A value
    /// not kept (too long to store) has an unknown size, not 0.
    fn push_changes(&mut self, shape: Shape, args: &[&[u8]], value_at: Option<usize>) {
        let sent = |b: &RowBuilder, i: Option<usize>| Outcome {
            value_size: match i.filter(|&i| i < args.len()) {
                Some(i) if !b.is_lost(i) => size(args[i].len()),
                _ => -1,
            },
            found: -1,
        };
        match shape {
            Shape::Key => {
                self.set_key(args, 0);
                self.push(None, UNKNOWN);
            }
            Shape::KeyThenArgs => {
                self.set_key(args, 0);
                self.push(None, sent(self, value_at));
            }
            Shape::Keys => {
                for i in 0..args.len() {
                    self.set_key(args, i);
                    self.push(None, UNKNOWN);
                }
            }
            Shape::KeyValuePairs => {
                for i in (0..args.len()).step_by(2) {
                    self.set_key(args, i);
                    self.push(None, sent(self, Some(i + 1)));
                }
            }
            Shape::KeyFields => {
                self.set_key(args, 0);
                (1..args.len()).for_each(|i| self.push_field(args[i], i, UNKNOWN));
            }
            Shape::KeyFieldValuePairs => {
                self.set_key(args, 0);
                for i in (1..args.len()).step_by(2) {
                    let o = sent(self, Some(i + 1));
                    self.push_field(args[i], i, o);
                }
            }
            Shape::KeyFieldArg => {
                self.set_key(args, 0);
                self.push_field(args[1], 1, UNKNOWN);
            }
            Shape::NoKeys => {}
        }
    }

    /// Argument `i` (the command name excluded) was not kept.
    #[inline]
    fn is_lost(&self, i: usize) -> bool {
        self.lost.get(i).copied().unwrap_or(false)
    }

    /// A row for the field that is argument `i`, dropped (and counted) when the field was not kept.
    fn push_field(&mut self, field: &[u8], i: usize, o: Outcome) {
        if self.is_lost(i) {
            if !self.key_lost {
                self.stats.elided_keys += 1;
            }
            return;
        }
        self.push(Some(field), o);
    }

    /// Makes argument `i` the key of the rows pushed next.
    fn set_key(&mut self, args: &[&[u8]], i: usize) {
        let key = args[i];
        self.key_lost = self.is_lost(i);
        self.key.clear();
        match self.anonymize_salt {
            Some(salt) => {
                let _ = write!(self.key, "{:016x}", xxh3_64_with_seed(key, salt));
            }
            None => push_text(&mut self.key, key),
        }
    }

    /// One row of the key set last (`set_key`): its own columns; `fill_command_columns` does the rest.
    fn push(&mut self, field: Option<&[u8]>, o: Outcome) {
        if self.key_lost {
            self.stats.elided_keys += 1;
            return;
        }
        let b = &mut self.batch;
        b.key_data.extend_from_slice(&self.key);
        b.key_offsets.push(b.key_data.len() as i64);
        if let Some(f) = field {
            push_text(&mut b.field_data, f);
        }
        b.field_offsets.push(b.field_data.len() as i64);
        b.field_valid.push(field.is_some());
        b.value_size.push(o.value_size);
        b.found.push(o.found);
        self.stats.rows += 1;
    }
}

#[derive(Clone, Copy)]
struct Row {
    ts: i64,
    conn: u32,
    req: u64,
    batch: u64,
    op: u8,
    cmd: u16,
    latency: i64,
    error: i16,
}

/// Where the written value sits among a plain-key write's arguments: `SET key value`, `SETEX key ttl value`.
/// Increments and expiries write no value whose size would mean anything.
fn value_arg(upper_name: &[u8]) -> Option<usize> {
    match upper_name {
        b"SET" | b"SETNX" | b"GETSET" | b"APPEND" => Some(1),
        b"SETEX" | b"PSETEX" => Some(2),
        _ => None,
    }
}

/// The outcome of lookup `i` of `n` from an array reply; unknown when the reply is not such an array.
#[inline]
fn element_outcome(reply: &Reply, n: usize, i: usize) -> Outcome {
    match reply {
        Reply::Array(lens) if lens.len() == n => looked_up(lens[i]),
        // HGET and GET answer with one bulk or nil.
        Reply::Bulk { len } if n == 1 => looked_up(Some(*len)),
        Reply::Nil if n == 1 => looked_up(None),
        _ => UNKNOWN,
    }
}

/// Keys and fields as text, one-to-one: valid UTF-8 without a backslash as it is (nearly every key);
/// anything else escaped, a backslash as `\\` and every byte outside printable ASCII as `\xHH`. A text holds a
/// backslash exactly when it is escaped, so two distinct byte strings never give the same text (a key really
/// spelled `\x80` reads `\\x80`, the byte 0x80 reads `\x80`), the Parquet string column stays valid UTF-8,
/// and the bytes can be read back (`cachescope.parse.keytext.key_bytes`).
fn push_text(out: &mut Vec<u8>, bytes: &[u8]) {
    // Keys and fields are ASCII nearly always, and short: the word-at-a-time ASCII test is the fast path.
    let plain = (bytes.is_ascii() || std::str::from_utf8(bytes).is_ok()) && !bytes.contains(&b'\\');
    if plain {
        out.extend_from_slice(bytes);
        return;
    }
    for &b in bytes {
        match b {
            b'\\' => out.extend_from_slice(b"\\\\"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::net::Direction;
    use crate::resp::{Limits, Session};

    /// The rows of a conversation: `request` then `reply`, through a session with `limits`.
    fn rows(limits: Limits, request: &[u8], reply: &[u8]) -> RowBatch {
        let mut session = Session::new(limits);
        let mut rows = RowBuilder::new(None);
        session.on_data(Direction::Request, 1, request, &mut |c| rows.push_command(0, c));
        session.on_data(Direction::Reply, 2, reply, &mut |c| rows.push_command(0, c));
        session.finish(&mut |c| rows.push_command(0, c));
        rows.take()
    }

    #[test]
    fn a_value_too_long_to_store_has_an_unknown_size_not_zero() {
        let limits = Limits { max_arg_bytes: 8, ..Limits::default() };
        let request = b"*6\r\n$4\r\nHSET\r\n$1\r\nk\r\n$1\r\na\r\n$12\r\n0123456789ab\r\n$1\r\nb\r\n$3\r\nxyz\r\n";
        let b = rows(limits, request, b":2\r\n");
        assert_eq!(b.value_size, [-1, 3]);
        assert_eq!(rows(Limits::default(), request, b":2\r\n").value_size, [12, 3]);
    }

    /// Keys too long to store used to come out as the empty key, shared by all of them: false hits. Their
    /// rows are dropped and counted; the other rows of the command stay.
    #[test]
    fn keys_and_fields_too_long_to_store_give_no_row_and_are_counted() {
        let limits = Limits { max_arg_bytes: 8, ..Limits::default() };
        let mut session = Session::new(limits);
        let mut rows = RowBuilder::new(None);
        let mut out = |c: &Command| rows.push_command(0, c);
        let request = [
            "*2\r\n$3\r\nGET\r\n$10\r\nlong-key-1\r\n",
            "*2\r\n$3\r\nGET\r\n$10\r\nlong-key-2\r\n",
            "*3\r\n$4\r\nMGET\r\n$1\r\na\r\n$10\r\nlong-key-3\r\n",
            "*4\r\n$5\r\nHMGET\r\n$1\r\nh\r\n$12\r\nlong-field-1\r\n$1\r\nf\r\n",
            "*2\r\n$3\r\nGET\r\n$0\r\n\r\n",
        ]
        .concat();
        session.on_data(Direction::Request, 1, request.as_bytes(), &mut out);
        let reply = "$1\r\nx\r\n$1\r\ny\r\n*2\r\n$2\r\nab\r\n$-1\r\n*2\r\n$-1\r\n$3\r\nabc\r\n$-1\r\n";
        session.on_data(Direction::Reply, 2, reply.as_bytes(), &mut out);
        let b = rows.take();
        let keys: Vec<&[u8]> = b.key_offsets.windows(2).map(|w| &b.key_data[w[0] as usize..w[1] as usize]).collect();
        // MGET a, HMGET h f, and the real empty key; never the long ones as "".
        assert_eq!(keys, [&b"a"[..], b"h", b""]);
        assert_eq!(b.value_size, [2, 3, -1]);
        assert_eq!(rows.stats().elided_keys, 4);
    }

    /// A key with a byte that is not UTF-8 used to read `\x80`, as a key really spelled so does: two keys,
    /// one text, false hits. The text is one-to-one now.
    #[test]
    fn keys_as_text_are_one_to_one() {
        let text = |k: &[u8]| {
            let mut out = Vec::new();
            push_text(&mut out, k);
            String::from_utf8(out).unwrap()
        };
        assert_eq!(text(b"st_1"), "st_1");
        assert_eq!(text("é".as_bytes()), "é");
        assert_eq!(text(b"a\x80"), r"a\x80");
        assert_eq!(text(br"a\x80"), r"a\\x80");
        assert_eq!(text(br"a\\x80"), r"a\\\\x80");
        assert_eq!(text(b"a\\\x80"), r"a\\\x80");
        assert_eq!(text(b"k\0z"), "k\0z");
        let keys: [&[u8]; 5] = [b"a\x80", br"a\x80", br"a\\x80", b"a\\\x80", br"a\\\x80"];
        let texts: std::collections::BTreeSet<String> = keys.iter().map(|k| text(k)).collect();
        assert_eq!(texts.len(), keys.len());
    }

    /// Error replies used to look like unknown ones (value_size and found null): a cluster's MOVED and ASK
    /// attempts then counted as lookups. Their rows carry the code now; other rows carry none.
    #[test]
    fn rows_of_a_command_answered_with_an_error_carry_its_code() {
        let request = [
            "*4\r\n$5\r\nHMGET\r\n$1\r\nh\r\n$1\r\na\r\n$1\r\nb\r\n",
            "*1\r\n$6\r\nASKING\r\n",
            "*4\r\n$5\r\nHMGET\r\n$1\r\nh\r\n$1\r\na\r\n$1\r\nb\r\n",
            "*2\r\n$3\r\nGET\r\n$1\r\nh\r\n",
            "*4\r\n$4\r\nHSET\r\n$1\r\nk\r\n$1\r\nf\r\n$1\r\nv\r\n",
            "*2\r\n$3\r\nGET\r\n$1\r\nk\r\n",
            "*2\r\n$3\r\nGET\r\n$1\r\nm\r\n",
        ]
        .concat();
        let reply = [
            "-ASK 3999 127.0.0.1:7001\r\n",
            "+OK\r\n",
            "*2\r\n$2\r\nxy\r\n$-1\r\n",
            "-WRONGTYPE Operation against a key holding the wrong kind of value\r\n",
            "-MOVED 3999 127.0.0.1:7002\r\n",
            "!21\r\nLOADING Redis is busy\r\n",
            "$-1\r\n",
        ]
        .concat();
        let mut session = Session::new(Limits::default());
        let mut rows = RowBuilder::new(None);
        session.on_data(Direction::Request, 1, request.as_bytes(), &mut |c| rows.push_command(0, c));
        session.on_data(Direction::Reply, 2, reply.as_bytes(), &mut |c| rows.push_command(0, c));
        let b = rows.take();
        let codes: Vec<Option<&str>> =
            b.error.iter().map(|&e| (e >= 0).then(|| b.error_names[e as usize].as_str())).collect();
        let (ask, moved, wrong, loading) = (Some("ASK"), Some("MOVED"), Some("WRONGTYPE"), Some("LOADING"));
        assert_eq!(codes, [ask, ask, None, None, wrong, moved, loading, None]);
        assert_eq!(b.found, [-1, -1, 1, 0, -1, -1, -1, 0]);
        let counted: Vec<(&str, u64)> = rows.stats().error_replies.iter().map(|(k, &v)| (k.as_str(), v)).collect();
        assert_eq!(counted, [("ASK", 1), ("LOADING", 1), ("MOVED", 1), ("WRONGTYPE", 1)]);
    }

    /// A queued command's error comes as an element of EXEC's array: it is that command's code.
    #[test]
    fn an_error_inside_exec_marks_the_command_it_answers() {
        let request = [
            "*1\r\n$5\r\nMULTI\r\n",
            "*2\r\n$3\r\nGET\r\n$1\r\na\r\n",
            "*2\r\n$3\r\nGET\r\n$1\r\nb\r\n",
            "*1\r\n$4\r\nEXEC\r\n",
        ]
        .concat();
        let reply = "+OK\r\n+QUEUED\r\n+QUEUED\r\n*2\r\n-WRONGTYPE no\r\n$1\r\nx\r\n";
        let b = rows(Limits::default(), request.as_bytes(), reply.as_bytes());
        assert_eq!(b.error, [0, -1]);
        assert_eq!(b.error_names, ["WRONGTYPE"]);
        assert_eq!(b.found, [-1, 1]);
    }

    #[test]
    fn commands_redis_refuses_for_their_argument_count_give_no_row() {
        let mut session = Session::new(Limits::default());
        let mut rows = RowBuilder::new(None);
        let mut out = |c: &Command| rows.push_command(0, c);
        session.on_data(Direction::Request, 1, b"*3\r\n$3\r\nGET\r\n$1\r\n/\r\n$8\r\nHTTP/1.1\r\n", &mut out);
        session.on_data(Direction::Reply, 2, b"-ERR wrong number of arguments for 'get' command\r\n", &mut out);
        assert!(rows.take().is_empty());
        assert_eq!((rows.stats().commands, rows.stats().malformed_commands), (1, 1));
    }
}
