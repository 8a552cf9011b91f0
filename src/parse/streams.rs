//! Connections given as their two reassembled byte streams, not as packets: what tcpflow writes (one file
//! per direction of each connection) and what users of the older tcpflow-based method still have. The
//! streams go through the same RESP session and row builder as a capture, one connection at a time, in
//! bounded memory (a read buffer per direction, the session's own limits, one batch of rows).
//!
//! Such files have no clock: every row of a connection gets the time the caller gives (tcpflow's
//! modification time of the request file, its first packet), and no latency. Without times the session
//! cannot tell the order of commands and replies, so the driver keeps it: it feeds client bytes until
//! some command waits for a reply, then server bytes only up to as many reply frames as commands wait
//! (`Session::on_reply_frames`); a reply is never read before the command it answers. For the same
//! reason no quiet moment ever shows: once pairing is lost (a connection picked up mid-stream, invalid
//! bytes) it stays lost for that connection, and its replies are unknown.
//!
//! A connection is read from its first byte when the caller says its client spoke first (tcpflow: the
//! request file's first packet is older than the reply file's) and both files begin where a command and a
//! reply begin; otherwise it is taken as picked up mid-stream.

use std::io::{self, Read};

use super::rows::{RowBatch, RowBuilder, RowStats};
use super::add_resp;
use crate::net::Direction;
use crate::resp::{self, is_command_start, is_reply_start, RespStats, Session};

const CHUNK: usize = 64 << 10;
/// Client bytes fed at once: a few hundred commands at most, far below the session's queue bound, so that
/// commands wait for replies the driver has not fed yet rather than overflow the queue.
const PIECE: usize = 4 << 10;

/// One direction's file, read a chunk at a time.
struct Source<R: Read> {
    src: Option<R>,
    buf: Vec<u8>,
    pos: usize,
    len: usize,
    eof: bool,
    bytes: u64,
}

impl<R: Read> Source<R> {
    fn new(src: Option<R>) -> Source<R> {
        let eof = src.is_none();
        Source { src, buf: vec![0; if eof { 0 } else { CHUNK }], pos: 0, len: 0, eof, bytes: 0 }
    }

    /// The unread bytes of the buffer, refilled when empty; empty at the end of the file.
    fn peek(&mut self) -> io::Result<&[u8]> {
        if self.pos == self.len && !self.eof {
            let n = match &mut self.src {
                Some(r) => read_some(r, &mut self.buf)?,
                None => 0,
            };
            (self.pos, self.len, self.eof) = (0, n, n == 0);
            self.bytes += n as u64;
        }
        Ok(&self.buf[self.pos..self.len])
    }

    /// Fills the buffer (or reaches the end) so that a start can be judged.
    fn head(&mut self, want: usize) -> io::Result<&[u8]> {
        while self.len < want.min(self.buf.len()) && !self.eof {
            let n = match &mut self.src {
                Some(r) => read_some(r, &mut self.buf[self.len..])?,
                None => 0,
            };
            self.eof = n == 0;
            self.len += n;
            self.bytes += n as u64;
        }
        Ok(&self.buf[self.pos..self.len])
    }
}

fn read_some<R: Read>(r: &mut R, buf: &mut [u8]) -> io::Result<usize> {
    loop {
        match r.read(buf) {
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            other => return other,
        }
    }
}

/// The connection being read.
struct Flow<R: Read> {
    conn: u32,
    ts_ns: i64,
    session: Session,
    request: Source<R>,
    reply: Source<R>,
}

/// Connections as stream pairs, one after the other, to trace rows.
pub struct StreamParser<R: Read> {
    limits: resp::Limits,
    flow: Option<Flow<R>>,
    rows: RowBuilder,
    /// Counters of the connections already read.
    resp: RespStats,
    connections: u64,
    mid_stream: u64,
    bytes: u64,
}

impl<R: Read> StreamParser<R> {
    pub fn new(limits: resp::Limits, anonymize_salt: Option<u64>) -> StreamParser<R> {
        StreamParser {
            limits,
            flow: None,
            rows: RowBuilder::new(anonymize_salt),
            resp: RespStats::default(),
            connections: 0,
            mid_stream: 0,
            bytes: 0,
        }
    }

    /// Starts connection `conn` (the previous one must have been read to its end): its client's bytes and
    /// its server's (either may be missing), the time its rows get, and whether its client spoke first.
    pub fn open(
        &mut self,
        conn: u32,
        request: Option<R>,
        reply: Option<R>,
        ts_ns: i64,
        client_first: bool,
    ) -> io::Result<()> {
        self.close();
        let (mut request, mut reply) = (Source::new(request), Source::new(reply));
        let from_start = client_first
            && is_command_start(request.head(64)?)
            && reply.head(1)?.first().is_none_or(|&b| is_reply_start(b));
        let session = if from_start { Session::new(self.limits) } else { Session::mid_stream(self.limits) };
        self.connections += 1;
        self.mid_stream += u64::from(!from_start);
        self.flow = Some(Flow { conn, ts_ns, session, request, reply });
        Ok(())
    }

    /// Reads the open connection until at least `min_rows` rows are ready or it ends; None once it has ended
    /// and every row was taken.
    pub fn next_batch(&mut self, min_rows: usize) -> io::Result<Option<RowBatch>> {
        while self.rows.rows() < min_rows && self.rows.string_bytes() < super::MAX_BATCH_STRING_BYTES && self.flow.is_some() {
            if !self.step()? {
                self.close();
            }
        }
        if self.rows.rows() == 0 {
            return Ok(None);
        }
        Ok(Some(self.rows.take()))
    }

    /// One step of the open connection; false when both streams are read.
    fn step(&mut self) -> io::Result<bool> {
        let Some(f) = self.flow.as_mut() else { return Ok(false) };
        let rows = &mut self.rows;
        let (conn, ts) = (f.conn, f.ts_ns);
        let mut out = |c: &resp::Command| rows.push_command(conn, &without_clock(c));
        let waiting = f.session.awaiting_replies();
        if waiting > 0 {
            let data = f.reply.peek()?;
            if !data.is_empty() {
                f.reply.pos += f.session.on_reply_frames(ts, data, waiting, &mut out);
                return Ok(true);
            }
        }
        let data = f.request.peek()?;
        if !data.is_empty() {
            let piece = &data[..data.len().min(PIECE)];
            f.session.on_data(Direction::Request, ts, piece, &mut out);
            f.request.pos += piece.len();
            return Ok(true);
        }
        // Every command is read: the rest of the replies answer them or nothing.
        let data = f.reply.peek()?;
        if !data.is_empty() {
            f.session.on_data(Direction::Reply, ts, data, &mut out);
            f.reply.pos = f.reply.len;
            return Ok(true);
        }
        Ok(false)
    }

    /// Ends the open connection: commands still waiting are emitted with their replies unknown.
    fn close(&mut self) {
        let Some(mut f) = self.flow.take() else { return };
        let rows = &mut self.rows;
        f.session.finish(&mut |c| rows.push_command(f.conn, &without_clock(c)));
        add_resp(&mut self.resp, f.session.stats());
        self.bytes += f.request.bytes + f.reply.bytes;
    }

    pub fn cmd_names(&self) -> &[String] {
        self.rows.cmd_names()
    }

    pub fn row_stats(&self) -> &RowStats {
        self.rows.stats()
    }

    /// Every counter, named as `CaptureParser::counters` names them where they mean the same.
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let mut resp = self.resp;
        let mut bytes = self.bytes;
        if let Some(f) = &self.flow {
            add_resp(&mut resp, f.session.stats());
            bytes += f.request.bytes + f.reply.bytes;
        }
        let rows = self.rows.stats();
        vec![
            ("bytes", bytes),
            ("connections", self.connections),
            ("mid_stream_connections", self.mid_stream),
        ]
        .into_iter()
        .chain(super::command_counters(&resp, rows))
        .collect()
    }
}

/// The session's reply times are the one time given to the whole connection: no latency can be told.
fn without_clock<'a>(c: &resp::Command<'a>) -> resp::Command<'a> {
    resp::Command { reply_ts_ns: None, ..*c }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cmd(args: &[&str]) -> Vec<u8> {
        let mut out = format!("*{}\r\n", args.len()).into_bytes();
        for a in args {
            out.extend_from_slice(format!("${}\r\n{a}\r\n", a.len()).as_bytes());
        }
        out
    }

    /// (conn, key, field, value_size, found, latency) of every row.
    fn read_all(p: &mut StreamParser<&[u8]>) -> Vec<(u32, String, String, i32, i8, i64)> {
        let mut out = Vec::new();
        while let Some(b) = p.next_batch(1).unwrap() {
            for i in 0..b.len() {
                let key = &b.key_data[b.key_offsets[i] as usize..b.key_offsets[i + 1] as usize];
                let field = &b.field_data[b.field_offsets[i] as usize..b.field_offsets[i + 1] as usize];
                let (k, f) = (String::from_utf8_lossy(key).into_owned(), String::from_utf8_lossy(field).into_owned());
                out.push((b.conn[i], k, f, b.value_size[i], b.found[i], b.latency_ns[i]));
            }
        }
        out
    }

    #[test]
    fn many_pipelined_commands_pair_with_their_replies_without_a_clock() {
        // More commands than one read chunk holds, and replies of every size: the driver must never feed a
        // reply before its command, nor hold more than the session's queue.
        let (mut req, mut rep) = (Vec::new(), Vec::new());
        let n = 20_000;
        for i in 0..n {
            req.extend(cmd(&["HMGET", &format!("st_{i}"), "a", "b"]));
            let v = "x".repeat(i % 300);
            rep.extend(format!("*2\r\n${}\r\n{v}\r\n$-1\r\n", v.len()).as_bytes());
        }
        let limits = resp::Limits { max_pending_commands: 1000, ..resp::Limits::default() };
        let mut p = StreamParser::new(limits, None);
        p.open(3, Some(&req[..]), Some(&rep[..]), 42, true).unwrap();
        let rows = read_all(&mut p);
        assert_eq!(rows.len(), 2 * n);
        for (i, pair) in rows.chunks(2).enumerate() {
            assert_eq!(pair[0], (3, format!("st_{i}"), "a".into(), (i % 300) as i32, 1, -1));
            assert_eq!(pair[1], (3, format!("st_{i}"), "b".into(), -1, 0, -1));
        }
        let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
        assert_eq!((c["unknown_replies"], c["unpaired_replies"], c["contradictions"]), (0, 0, 0));
        assert_eq!(c["bytes"], (req.len() + rep.len()) as u64);
    }

    #[test]
    fn connections_not_seen_from_their_start_have_unknown_replies() {
        let req = [&b"567\r\n"[..], &cmd(&["GET", "k1"]), &cmd(&["GET", "k2"])].concat();
        let rep = b"$1\r\nx\r\n$2\r\nxy\r\n$3\r\nxyz\r\n";
        let mut p = StreamParser::new(resp::Limits::default(), None);
        // Cut inside a command; a clean start, but the server spoke first; a clean start with no replies.
        let mut rows = Vec::new();
        for (conn, from, reply, client_first) in [(0, 0, true, true), (1, 5, true, false), (2, 5, false, true)] {
            p.open(conn, Some(&req[from..]), reply.then_some(&rep[..]), 1, client_first).unwrap();
            rows.extend(read_all(&mut p));
        }
        // Picked up mid-stream, a connection's commands are read on probation (they could be a value's text):
        // GET k1 is confirmed by GET k2 following it; GET k2, the last, by nothing, and is dropped.
        let replies: Vec<_> = rows.iter().map(|r| (r.0, r.3, r.4)).collect();
        assert_eq!(replies, [(0, -1, -1), (1, -1, -1), (2, -1, -1), (2, -1, -1)]);
        let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
        assert_eq!((c["connections"], c["mid_stream_connections"], c["unknown_replies"]), (3, 2, 4));
        assert_eq!(c["unconfirmed_commands"], 2);
    }
}
