//! A text trace (MONITOR log, `commands`, `keys`) read as trace rows: the same reader as the simulation's
//! (`trace::TextReader`, so the same lines are accepted and refused with the same words, and counted the same
//! way), each command it reads handed to the capture's row builder as a command whose reply is unknown. Rows
//! of a text trace are thus made by the code and command table that make a capture's; their reply fields are
//! null. A MONITOR log's connections are its client addresses, numbered as first seen.

use std::collections::HashMap;
use std::io::Read;

use super::rows::{RowBatch, RowBuilder, RowStats};
use crate::error::TraceError;
use crate::resp::{Command, OwnedArgs, Reply};
use crate::trace::line::TextCommand;
use crate::trace::{CommandSink, Granularity, HostSink, TextFormat, TextReader, TraceStats};

pub struct TextRows<R> {
    reader: TextReader<R>,
    sink: RowSink,
}

struct RowSink {
    rows: RowBuilder,
    args: OwnedArgs,
    /// Client addresses by conn, and back.
    clients: Vec<String>,
    conn_ids: HashMap<Vec<u8>, u32>,
}

impl<R: Read> TextRows<R> {
    /// `anonymize_salt`: keys replaced by their salted hash, as a capture's are.
    pub fn new(src: R, path: &str, format: TextFormat, anonymize_salt: Option<u64>) -> TextRows<R> {
        TextRows {
            // Rows hold keys as text, whatever the granularity events would hash them at.
            reader: TextReader::new(src, path, format, Granularity::Field),
            sink: RowSink { rows: RowBuilder::new(anonymize_salt), args: OwnedArgs::default(), clients: Vec::new(), conn_ids: HashMap::new() },
        }
    }

    /// The next rows, at least `min_rows` unless the trace ends; None at the end.
    pub fn next_batch(&mut self, min_rows: usize) -> Result<Option<RowBatch>, TraceError> {
        if !self.reader.read_into(&mut self.sink, min_rows)? {
            return Ok(None);
        }
        Ok(Some(self.sink.rows.take()))
    }

    pub fn has_clock(&self) -> bool {
        self.reader.format() == TextFormat::Monitor
    }

    /// The reader's counters (commands, lookups, writes, deletes, other commands).
    pub fn stats(&self) -> TraceStats {
        self.reader.stats()
    }

    pub fn reader(&self) -> &TextReader<R> {
        &self.reader
    }

    pub fn row_stats(&self) -> &RowStats {
        self.sink.rows.stats()
    }

    pub fn cmd_names(&self) -> &[String] {
        self.sink.rows.cmd_names()
    }

    /// The client address of each conn (MONITOR); empty for formats that do not name clients.
    pub fn clients(&self) -> &[String] {
        &self.sink.clients
    }
}

impl RowSink {
    fn conn_of(&mut self, addr: &[u8]) -> u32 {
        if let Some(&id) = self.conn_ids.get(addr) {
            return id;
        }
        let id = self.clients.len() as u32;
        self.clients.push(String::from_utf8_lossy(addr).into_owned());
        self.conn_ids.insert(addr.to_vec(), id);
        id
    }
}

impl HostSink for RowSink {}

impl CommandSink for RowSink {
    fn made(&self) -> usize {
        self.rows.rows()
    }

    fn command(&mut self, c: &TextCommand, req: u64) {
        let conn = c.client.map_or(0, |addr| self.conn_of(addr));
        self.args.clear();
        self.args.push(c.name);
        c.args.iter().for_each(|a| self.args.push(a));
        let command = Command {
            ts_ns: c.ts.unwrap_or(0),
            args: self.args.view(),
            elided_args: 0,
            reply: Reply::Unknown,
            reply_ts_ns: None,
            inline: false,
            // A text trace shows no replies, so no round trips: each command is a batch of its own.
            batch: req,
        };
        self.rows.push_command(conn, &command);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::reader::OP_WRITE;

    fn rows(text: &str, format: TextFormat) -> (RowBatch, TraceStats, Vec<String>) {
        let mut r = TextRows::new(text.as_bytes(), "t", format, None);
        let mut all = RowBatch::empty();
        while let Some(b) = r.next_batch(2).unwrap() {
            all.append_range(&b, 0..b.len());
        }
        (all, r.stats(), r.clients().to_vec())
    }

    /// The writes simulate.py counted (INCR, SETNX, GETDEL, HINCRBY, PERSIST) were "other commands" in
    /// parse.py's own MONITOR table: both come from the one command table now.
    #[test]
    fn monitor_rows_follow_the_capture_command_table() {
        let text = "OK\n1.1 [0 1.2.3.4:5] \"INCR\" \"a\"\n1.2 [0 1.2.3.4:6] \"SETNX\" \"b\" \"xyz\"\n\
                    1.3 [1 1.2.3.4:5] \"GETDEL\" \"c\"\n1.4 [0 lua] \"HINCRBY\" \"h\" \"f\" \"1\"\n\
                    1.5 [0 1.2.3.4:5] \"PERSIST\" \"d\"\n1.6 [0 1.2.3.4:5] \"PING\"\n";
        let (b, stats, clients) = rows(text, TextFormat::Monitor);
        assert_eq!(b.op, [OP_WRITE, OP_WRITE, crate::trace::reader::OP_DELETE, OP_WRITE, OP_WRITE]);
        assert_eq!(b.conn, [0, 1, 0, 2, 0]);
        assert_eq!(clients, ["1.2.3.4:5", "1.2.3.4:6", "lua"]);
        assert_eq!(b.value_size, [-1, 3, -1, -1, -1]);
        assert_eq!(b.req, [0, 1, 2, 3, 4]);
        assert_eq!(b.ts_ns[0], 1_100_000_000);
        assert_eq!((stats.commands, stats.writes, stats.deletes, stats.other_commands), (6, 4, 1, 1));
    }

    #[test]
    fn keys_lines_are_gets() {
        let (b, stats, _) = rows("a\n\nb\n", TextFormat::Keys);
        assert_eq!(b.len(), 2);
        assert_eq!(b.key_data, b"ab");
        assert_eq!((stats.commands, stats.lookups), (2, 2));
    }
}
