//! Commands with their reply summaries in, trace rows out (the schema of DESIGN.md), as columns.
//!
//! One row per lookup (an HMGET field, an MGET key, a GET, each field an HGETALL returned), per written
//! field or key, per deleted field or key. A lookup's `value_size` and `found` come from its reply; a
//! write's `value_size` is the length of the value it sent. Other commands only count, by name. Argument
//! values never reach a row: only keys, fields and lengths do.

use std::collections::BTreeMap;

use xxhash_rust::xxh3::xxh3_64_with_seed;

use crate::resp::{Command, Reply};
use crate::trace::commands::{self, Op, Shape};
use crate::trace::reader::{OP_DELETE, OP_READ, OP_WRITE};

/// Rows as columns. Offsets start at 0 (Arrow layout); -1 means unknown in `value_size`, `found` and
/// `latency_ns`.
#[derive(Debug, Default)]
pub struct RowBatch {
    pub ts_ns: Vec<i64>,
    pub conn: Vec<u32>,
    pub req: Vec<u64>,
    pub op: Vec<u8>,
    /// Index into `RowBuilder::cmd_names`.
    pub cmd: Vec<u16>,
    pub key_offsets: Vec<i64>,
    pub key_data: Vec<u8>,
    pub field_offsets: Vec<i64>,
    pub field_data: Vec<u8>,
    pub field_valid: Vec<bool>,
    pub value_size: Vec<i64>,
    pub found: Vec<i8>,
    pub latency_ns: Vec<i64>,
}

impl RowBatch {
    fn new() -> RowBatch {
        RowBatch { key_offsets: vec![0], field_offsets: vec![0], ..RowBatch::default() }
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
    value_size: i64,
    found: i8,
}

const UNKNOWN: Outcome = Outcome { value_size: -1, found: -1 };

fn looked_up(len: Option<u32>) -> Outcome {
    match len {
        Some(n) => Outcome { value_size: i64::from(n), found: 1 },
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
}

pub struct RowBuilder {
    batch: RowBatch,
    cmd_names: Vec<String>,
    cmd_index: BTreeMap<Vec<u8>, u16>,
    anonymize_salt: Option<u64>,
    stats: RowStats,
}

impl RowBuilder {
    pub fn new(anonymize_salt: Option<u64>) -> RowBuilder {
        RowBuilder {
            batch: RowBatch::new(),
            cmd_names: Vec::new(),
            cmd_index: BTreeMap::new(),
            anonymize_salt,
            stats: RowStats::default(),
        }
    }

    pub fn rows(&self) -> usize {
        self.batch.len()
    }

    pub fn take(&mut self) -> RowBatch {
        std::mem::replace(&mut self.batch, RowBatch::new())
    }

    pub fn cmd_names(&self) -> &[String] {
        &self.cmd_names
    }

    pub fn stats(&self) -> &RowStats {
        &self.stats
    }

    pub fn push_command(&mut self, conn: u32, c: &Command) {
        let req = self.stats.commands;
        self.stats.commands += 1;
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
        let row = Row { ts: c.ts_ns, conn, req, cmd, latency };
        match info.op {
            Op::Read => self.push_reads(row, info.shape, &args, &c.reply),
            Op::Write | Op::Delete => {
                self.push_changes(row, info.op, info.shape, &args, value_arg(&upper), c.elided_args > 0)
            }
            Op::Other => unreachable!("returned above"),
        }
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

    fn push_reads(&mut self, row: Row, shape: Shape, args: &[&[u8]], reply: &Reply) {
        match shape {
            Shape::KeyFields => {
                let fields = &args[1..];
                let outcomes = element_outcomes(reply, fields.len());
                for (f, o) in fields.iter().zip(outcomes) {
                    self.push(row, OP_READ, args[0], Some(f), o);
                }
            }
            Shape::Keys => {
                let outcomes = element_outcomes(reply, args.len());
                for (k, o) in args.iter().zip(outcomes) {
                    self.push(row, OP_READ, k, None, o);
                }
            }
            // HGETALL: a row per field the reply holds; a missing key (empty reply) is one row, not found.
            _ => match reply {
                Reply::Map { fields, value_lens } if !value_lens.is_empty() => {
                    for (f, &len) in fields.iter().zip(value_lens.iter()) {
                        self.push(row, OP_READ, args[0], Some(f), looked_up(len));
                    }
                }
                Reply::Map { .. } | Reply::Nil => {
                    self.push(row, OP_READ, args[0], None, Outcome { value_size: -1, found: 0 })
                }
                Reply::Bulk { len } => self.push(row, OP_READ, args[0], None, looked_up(Some(*len))),
                _ => self.push(row, OP_READ, args[0], None, UNKNOWN),
            },
        }
    }

    /// `value_at`: for a key-then-arguments command, which argument is the value written (if any). `elided`:
    /// some arguments were too long to store and came out empty, so an empty value's size is unknown.
    fn push_changes(&mut self, row: Row, op: Op, shape: Shape, args: &[&[u8]], value_at: Option<usize>, elided: bool) {
        let code = if op == Op::Write { OP_WRITE } else { OP_DELETE };
        let size = |v: &[u8]| if v.is_empty() && elided { -1 } else { v.len() as i64 };
        let sent = |value: Option<&&[u8]>| Outcome { value_size: value.map_or(-1, |v| size(v)), found: -1 };
        match shape {
            Shape::Key => self.push(row, code, args[0], None, UNKNOWN),
            Shape::KeyThenArgs => self.push(row, code, args[0], None, sent(value_at.and_then(|i| args.get(i)))),
            Shape::Keys => args.iter().for_each(|k| self.push(row, code, k, None, UNKNOWN)),
            Shape::KeyValuePairs => args.chunks(2).for_each(|kv| self.push(row, code, kv[0], None, sent(kv.get(1)))),
            Shape::KeyFields => args[1..].iter().for_each(|f| self.push(row, code, args[0], Some(f), UNKNOWN)),
            Shape::KeyFieldValuePairs => {
                args[1..].chunks(2).for_each(|fv| self.push(row, code, args[0], Some(fv[0]), sent(fv.get(1))))
            }
            Shape::KeyFieldArg => self.push(row, code, args[0], Some(args[1]), UNKNOWN),
            Shape::NoKeys => {}
        }
    }

    fn push(&mut self, row: Row, op: u8, key: &[u8], field: Option<&[u8]>, o: Outcome) {
        let b = &mut self.batch;
        b.ts_ns.push(row.ts);
        b.conn.push(row.conn);
        b.req.push(row.req);
        b.op.push(op);
        b.cmd.push(row.cmd);
        match self.anonymize_salt {
            Some(salt) => b.key_data.extend_from_slice(format!("{:016x}", xxh3_64_with_seed(key, salt)).as_bytes()),
            None => push_text(&mut b.key_data, key),
        }
        b.key_offsets.push(b.key_data.len() as i64);
        if let Some(f) = field {
            push_text(&mut b.field_data, f);
        }
        b.field_offsets.push(b.field_data.len() as i64);
        b.field_valid.push(field.is_some());
        b.value_size.push(o.value_size);
        b.found.push(o.found);
        b.latency_ns.push(row.latency);
        self.stats.rows += 1;
    }
}

#[derive(Clone, Copy)]
struct Row {
    ts: i64,
    conn: u32,
    req: u64,
    cmd: u16,
    latency: i64,
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

/// Per-element outcomes of an array reply for `n` lookups; unknown when the reply is not such an array.
fn element_outcomes<'r>(reply: &'r Reply, n: usize) -> Box<dyn Iterator<Item = Outcome> + 'r> {
    match reply {
        Reply::Array(lens) if lens.len() == n => Box::new(lens.iter().map(|&l| looked_up(l))),
        // HGET and GET answer with one bulk or nil.
        Reply::Bulk { len } if n == 1 => Box::new(std::iter::once(looked_up(Some(*len)))),
        Reply::Nil if n == 1 => Box::new(std::iter::once(looked_up(None))),
        _ => Box::new(std::iter::repeat_n(UNKNOWN, n)),
    }
}

/// Keys and fields as text: valid UTF-8 as it is, anything else with its non-ASCII bytes as `\xHH` (and
/// backslashes doubled) so that the Parquet string column stays valid and the bytes can be read back.
fn push_text(out: &mut Vec<u8>, bytes: &[u8]) {
    if std::str::from_utf8(bytes).is_ok() {
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
