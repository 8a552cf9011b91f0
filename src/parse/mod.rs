//! A packet capture to trace rows, as a stream: `capture` reads and decodes packets, `reassembly` puts each
//! connection's bytes back in order, `resp` pairs commands with their replies, `rows` writes the trace, and
//! `order` passes the rows on in send order. Memory is bounded by the reader's buffer, the reassembly and RESP
//! limits, one batch of rows, the rows waiting in `order` (bounded there), and the
//! connections open at once (a closed connection's state is freed). `discover` finds the Redis ports by
//! content when none are given.

pub mod ahead;
pub mod discover;
pub mod error_commands;
pub mod order;
pub mod rows;
pub mod streams;
pub mod text_out;
pub mod text_rows;
#[cfg(test)]
mod order_tests;
#[cfg(test)]
mod tests;

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};
use std::io::Read;
use std::net::SocketAddr;

use crate::capture::{CaptureCounters, CaptureReader};
use crate::error::TraceError;
use crate::net::Direction;
use crate::reassembly::{self, Reassembler, StreamSink};
use crate::resp::{self, RespStats, Session};
use order::Reorder;
pub use ahead::ParseAhead;
pub use discover::{discover_ports, PortReport};
pub use rows::{RowBatch, RowBuilder, RowStats};
pub use streams::StreamParser;

#[derive(Clone, Debug)]
pub struct ParseConfig {
    /// Server ports of Redis: the side of a connection on one of these is the server.
    pub ports: Vec<u16>,
    pub reassembly: reassembly::Limits,
    pub resp: resp::Limits,
    /// Replace keys by a salted hash (consistent within one parse).
    pub anonymize_salt: Option<u64>,
}

impl Default for ParseConfig {
    fn default() -> ParseConfig {
        ParseConfig {
            ports: vec![6379],
            reassembly: reassembly::Limits::default(),
            resp: resp::Limits::default(),
            anonymize_salt: None,
        }
    }
}

/// Arguments (about rows) a closed connection's waiting commands are passed on at a time: between two such
/// parts the rows made are released and a batch may be handed out, so that a connection that closes (or is
/// open at the capture's end) holding a million keys of pipelined MGETs is not made into rows all at once.
pub const CLOSING_ARGS: usize = 1 << 14;
/// And at most this many bytes of their arguments at a time (long keys: a batch ends by its bytes too).
pub const CLOSING_BYTES: usize = 1 << 20;

/// A batch also ends once its keys and fields reach this many bytes (it then holds at most this plus one
/// command's, itself bounded by `resp::Limits`), so that long keys cannot make a batch of many rows huge.
pub const MAX_BATCH_STRING_BYTES: usize = 64 << 20;

pub struct CaptureParser<R: Read> {
    path: String,
    reader: CaptureReader<R>,
    decode: CaptureCounters,
    reassembler: Reassembler,
    sink: Sink,
    /// The capture has been read to its end (closed connections may still be passing on their commands).
    read_all: bool,
    done: bool,
}

/// Where reassembled bytes go: one RESP session per connection, commands out as rows.
///
/// Only connections still open keep state here, so memory follows the live connections, not every one the
/// capture ever held: a session is dropped when its connection closes, and its endpoints once the batch
/// holding its last rows has been cut. Connection ids keep increasing (the rows' `conn`); nothing is
/// indexed by them.
struct Sink {
    limits: resp::Limits,
    sessions: HashMap<u32, Conversation>,
    /// (client, server) of open connections, and of those closed since the last batch was cut.
    endpoints: HashMap<u32, (SocketAddr, SocketAddr)>,
    /// Connections closed since the last batch was cut: their endpoints go once it is.
    closed: Vec<u32>,
    rows: RowBuilder,
    /// Rows made wait there to leave in send order.
    order: Reorder,
    /// Time of the newest bytes seen.
    now: i64,
    /// Counters of sessions already finished.
    resp: RespStats,
    /// Open connections holding commands: they share `limits.max_pending_bytes_total`.
    holders: usize,
    /// Closed connections whose waiting commands are still being passed on (`Session::finish_some`), oldest
    /// waiting command first: taken a part at a time, in send order across them.
    closing: BinaryHeap<Closing>,
}

/// A closed connection still passing on its commands, ordered by its oldest one's send time (then its id).
struct Closing {
    oldest: i64,
    conn: u32,
    session: Box<Session>,
}

impl PartialEq for Closing {
    fn eq(&self, other: &Closing) -> bool {
        (self.oldest, self.conn) == (other.oldest, other.conn)
    }
}
impl Eq for Closing {}
impl PartialOrd for Closing {
    fn partial_cmp(&self, other: &Closing) -> Option<std::cmp::Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Closing {
    /// Reversed: the heap's top is the oldest.
    fn cmp(&self, other: &Closing) -> std::cmp::Ordering {
        Reverse((self.oldest, self.conn)).cmp(&Reverse((other.oldest, other.conn)))
    }
}

/// An open connection's RESP session, made when its first bytes (or a loss) arrive: a connection that
/// carries none (a port scan's SYN, a health check) costs a few bytes, not a session.
enum Conversation {
    Silent { mid_stream: bool },
    Talking(Box<Session>),
}

/// Connections closed before their endpoints are checked against the batch being built.
const CLOSED_BEFORE_CHECK: usize = 4096;

impl<R: Read> CaptureParser<R> {
    pub fn new(src: R, path: &str, config: &ParseConfig) -> Result<CaptureParser<R>, TraceError> {
        let reader = CaptureReader::new(src).map_err(|e| TraceError::whole(path, e.to_string()))?;
        Ok(CaptureParser {
            path: path.to_string(),
            reader,
            decode: CaptureCounters::default(),
            reassembler: Reassembler::new(&config.ports, config.reassembly.clone()),
            sink: Sink {
                limits: config.resp,
                sessions: HashMap::new(),
                holders: 0,
                endpoints: HashMap::new(),
                closed: Vec::new(),
                rows: RowBuilder::new(config.anonymize_salt),
                order: Reorder::default(),
                now: i64::MIN,
                resp: RespStats::default(),
                closing: BinaryHeap::new(),
            },
            read_all: false,
            done: false,
        })
    }

    /// Parses packets until at least `min_rows` rows are ready or the capture ends; None at the end.
    pub fn next_batch(&mut self, min_rows: usize) -> Result<Option<RowBatch>, TraceError> {
        while !self.done && self.sink.order.out.len() < min_rows && batch_string_bytes(&self.sink.order.out) < MAX_BATCH_STRING_BYTES {
            if !self.sink.closing.is_empty() {
                // Closed connections' commands go before any more packets are read: their rows are older.
                self.sink.pass_on_closing();
            } else if self.read_all {
                self.sink.release(true);
                self.done = true;
                break;
            } else {
                match self.reader.next_packet() {
                    Ok(Some(packet)) => {
                        if let Some(segment) = self.decode.decode(&packet) {
                            self.reassembler.process(&segment, &mut self.sink);
                        }
                    }
                    Ok(None) => {
                        self.decode.truncated_tail = self.reader.truncated_tail();
                        self.reassembler.finish(&mut self.sink);
                        self.sink.finish_all();
                        self.read_all = true;
                    }
                    Err(e) => return Err(TraceError::whole(&self.path, e.to_string())),
                }
            }
            if self.sink.order.due(self.sink.rows.made(), min_rows.saturating_sub(self.sink.order.out.len())) {
                self.sink.release(false);
            }
        }
        if self.done && self.sink.order.out.is_empty() {
            return Ok(None);
        }
        Ok(Some(self.sink.take(min_rows)))
    }

    /// Bytes of the capture consumed, for progress.
    pub fn offset(&self) -> u64 {
        self.reader.offset()
    }

    /// Connections whose state is held right now (open, or closed since the last batch): what memory
    /// beyond the limits' buffers grows with.
    pub fn held_connections(&self) -> usize {
        self.sink.endpoints.len().max(self.sink.sessions.len() + self.sink.closing.len())
    }

    pub fn cmd_names(&self) -> &[String] {
        self.sink.rows.cmd_names()
    }

    pub fn row_stats(&self) -> &RowStats {
        self.sink.rows.stats()
    }

    /// Every counter, named: packets and decoding, reassembly, RESP (finished and open sessions together).
    pub fn counters(&self) -> Vec<(&'static str, u64)> {
        let d = &self.decode;
        let r = self.reassembler.stats();
        let mut resp = self.sink.resp;
        for c in self.sink.sessions.values() {
            if let Conversation::Talking(s) = c {
                add_resp(&mut resp, s.stats());
            }
        }
        for c in self.sink.closing.iter() {
            add_resp(&mut resp, c.session.stats());
        }
        let rows = self.sink.rows.stats();
        vec![
            ("packets", d.packets),
            ("bytes", self.reader.offset()),
            ("tcp_segments", d.segments),
            ("skipped_packets", d.skipped()),
            ("snaplen_cut_bytes", d.missing_bytes),
            ("truncated_tail", u64::from(d.truncated_tail.is_some())),
            ("connections", r.connections),
            ("mid_stream_connections", r.mid_stream_connections),
            ("port_reuses", r.port_reuses),
            ("non_redis_segments", r.non_redis_segments),
            ("retransmissions", r.retransmitted_segments),
            ("out_of_order", r.out_of_order_segments),
            ("overlaps", r.overlaps),
            ("overlap_conflicts", r.overlap_conflicts),
            ("gaps", r.gaps),
            ("gap_bytes", r.gap_bytes),
            ("reassembly_limit_hits", r.pending_bytes_limit_hits + r.holes_limit_hits + r.memcap_hits + r.connection_limit_hits),
            // Everything reassembly dropped or gave up, one counter each (the sum above is kept for its name).
            ("retransmitted_bytes", r.retransmitted_bytes),
            ("segments_before_start", r.segments_before_start),
            ("segments_after_close", r.segments_after_close),
            ("bytes_after_close", r.bytes_after_close),
            ("ignored_rsts", r.ignored_rsts),
            ("out_of_window_segments", r.out_of_window_segments),
            ("out_of_window_bytes", r.out_of_window_bytes),
            ("out_of_window_acks", r.out_of_window_acks),
            ("holes_given_up_by_ack", r.holes_given_up_by_ack),
            ("pending_bytes_limit_hits", r.pending_bytes_limit_hits),
            ("holes_limit_hits", r.holes_limit_hits),
            ("memcap_hits", r.memcap_hits),
            ("connection_limit_hits", r.connection_limit_hits),
            ("idle_timeouts", r.idle_timeouts),
            ("rows_out_of_order", self.sink.order.out_of_order),
        ]
        .into_iter()
        .chain(command_counters(&resp, rows))
        .collect()
    }
}

impl Sink {
    fn finish_all(&mut self) {
        let mut open: Vec<u32> = self.sessions.keys().copied().collect();
        open.sort_unstable();
        for conn in open {
            self.close(conn);
        }
    }

    /// The connection's session goes to `closing`, which passes its commands on a part at a time.
    fn close(&mut self, conn: u32) {
        let Some(conversation) = self.sessions.remove(&conn) else { return };
        match conversation {
            Conversation::Talking(session) => {
                self.holders -= session.holds_commands() as usize;
                let oldest = session.oldest_pending_ts().unwrap_or(i64::MIN);
                self.closing.push(Closing { oldest, conn, session });
            }
            Conversation::Silent { .. } => self.closed_done(conn),
        }
    }

    /// A part of the commands of the closing connection with the oldest: up to `CLOSING_ARGS` arguments
    /// (`CLOSING_BYTES` of them), and none sent after the oldest of the next one's (so the rows made can leave in order at once).
    fn pass_on_closing(&mut self) {
        let Some(mut c) = self.closing.pop() else { return };
        let until = self.closing.peek().map_or(i64::MAX, |next| next.oldest);
        let (conn, rows) = (c.conn, &mut self.rows);
        if c.session.finish_some(CLOSING_ARGS, CLOSING_BYTES, until, &mut |cmd| rows.push_command(conn, cmd)) {
            add_resp(&mut self.resp, c.session.stats());
            self.closed_done(conn);
        } else {
            c.oldest = c.session.oldest_pending_ts().unwrap_or(i64::MIN);
            self.closing.push(c);
        }
    }

    /// A closed connection has passed on all its rows: its endpoints go once no row waiting names it.
    fn closed_done(&mut self, conn: u32) {
        self.closed.push(conn);
        if self.closed.len() >= CLOSED_BEFORE_CHECK.max(self.rows.rows() + self.order.out.len()) {
            self.forget_closed();
        }
    }

    /// Forgets the endpoints of closed connections that have no row in the batch being built (a long stretch
    /// of connections without commands must not pile up until the next batch is cut). The scan of the batch
    /// is paid once per as many closes as the batch has rows.
    fn forget_closed(&mut self) {
        let mut named = self.rows.batch_conns().to_vec();
        named.extend_from_slice(&self.order.out.conn);
        named.sort_unstable();
        named.dedup();
        let endpoints = &mut self.endpoints;
        self.closed.retain(|id| {
            let keep = named.binary_search(id).is_ok();
            if !keep {
                endpoints.remove(id);
            }
            keep
        });
    }

    /// Passes on the rows no pending command can precede (all of them with `all`), in send order.
    fn release(&mut self, all: bool) {
        let pending = self
            .sessions
            .values()
            .filter_map(|c| match c {
                Conversation::Talking(s) => s.oldest_pending_ts(),
                Conversation::Silent { .. } => None,
            })
            .chain(self.closing.peek().map(|c| c.oldest))
            .min();
        let made = self.rows.take_made();
        let held = self.order.release(made, pending, self.now, all);
        self.rows.put_back(held);
    }

    fn with_session(&mut self, conn: u32, f: impl FnOnce(&mut Session, &mut RowBuilder)) {
        let Some(conversation) = self.sessions.get_mut(&conn) else { return };
        if let Conversation::Silent { mid_stream } = *conversation {
            let session = if mid_stream { Session::mid_stream(self.limits) } else { Session::new(self.limits) };
            *conversation = Conversation::Talking(Box::new(session));
        }
        if let Conversation::Talking(session) = conversation {
            let held = session.holds_commands();
            session.share_pending_bytes(self.limits.pending_share(self.holders + !held as usize));
            f(session, &mut self.rows);
            match (held, session.holds_commands()) {
                (false, true) => self.holders += 1,
                (true, false) => self.holders -= 1,
                _ => {}
            }
        }
    }

    /// The rows so far, with the endpoints of the connections they name; then the endpoints of connections
    /// closed meanwhile are forgotten (no later row can name them).
    ///
    /// At most `max_rows` rows or `MAX_BATCH_STRING_BYTES` of keys and fields (up to the end of the command
    /// that reaches either): a bound of the reorder window
    /// can release many more at once (rows held behind a command whose reply never came), and a batch of
    /// half a million MGET keys cost Python hundreds of MiB to convert. The rest leaves in the next batches.
    fn take(&mut self, max_rows: usize) -> RowBatch {
        let out = &self.order.out;
        let bytes_before = |i: usize| (out.key_offsets[i] - out.key_offsets[0] + out.field_offsets[i] - out.field_offsets[0]) as usize;
        // The first row before which the batch's strings reach the bound (they only grow row by row).
        let (mut lo, mut hi) = (0, out.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            if bytes_before(mid) < MAX_BATCH_STRING_BYTES { lo = mid + 1 } else { hi = mid }
        }
        let by_bytes = lo;
        let mut cut = max_rows.min(by_bytes).max(1).min(out.len());
        while cut < out.len() && (out.conn[cut], out.req[cut]) == (out.conn[cut - 1], out.req[cut - 1]) {
            cut += 1;
        }
        let mut batch = if cut < out.len() {
            let mut head = out.with_room_for(cut);
            head.append_range(out, 0..cut);
            let mut rest = out.with_room_for(out.len() - cut);
            rest.append_range(out, cut..out.len());
            self.order.out = rest;
            head
        } else {
            // The next batch with room for as many rows as this one (see `RowBatch::with_room_for`).
            let next = out.with_room_for(out.len());
            std::mem::replace(&mut self.order.out, next)
        };
        batch.error_names = self.rows.error_names().to_vec();
        let mut ids = batch.conn.clone();
        ids.sort_unstable();
        ids.dedup();
        batch.endpoints = ids.into_iter().filter_map(|id| self.endpoints.get(&id).map(|&(c, s)| (id, c, s))).collect();
        // Closed connections whose rows still wait keep their endpoints until those rows leave.
        let mut waiting = self.rows.batch_conns().to_vec();
        waiting.extend_from_slice(&self.order.out.conn);
        waiting.sort_unstable();
        waiting.dedup();
        let endpoints = &mut self.endpoints;
        self.closed.retain(|id| {
            let keep = waiting.binary_search(id).is_ok();
            if !keep {
                endpoints.remove(id);
            }
            keep
        });
        if self.endpoints.capacity() > 4 * self.endpoints.len() + 1024 {
            // A burst of connections has passed: give its room back.
            self.endpoints.shrink_to_fit();
            self.sessions.shrink_to_fit();
        }
        batch
    }
}

impl StreamSink for Sink {
    fn on_open(&mut self, conn: u32, client: SocketAddr, server: SocketAddr, _ts_ns: i64, mid_stream: bool) {
        self.sessions.insert(conn, Conversation::Silent { mid_stream });
        self.endpoints.insert(conn, (client, server));
    }

    fn on_data(&mut self, conn: u32, dir: Direction, ts_ns: i64, data: &[u8]) {
        self.now = self.now.max(ts_ns);
        self.with_session(conn, |s, rows| s.on_data(dir, ts_ns, data, &mut |c| rows.push_command(conn, c)));
    }

    fn on_gap(&mut self, conn: u32, dir: Direction, ts_ns: i64, missing_bytes: u64) {
        self.now = self.now.max(ts_ns);
        self.with_session(conn, |s, rows| s.on_gap(dir, ts_ns, missing_bytes, &mut |c| rows.push_command(conn, c)));
    }

    fn on_fins(&mut self, conn: u32, ts_ns: i64) {
        self.with_session(conn, |s, _| s.ended(ts_ns));
    }

    fn on_close(&mut self, conn: u32, _ts_ns: i64) {
        self.close(conn);
    }
}

/// The counters of the RESP and rows stages, shared by every parser (capture or tcpflow streams).
pub(crate) fn command_counters(resp: &RespStats, rows: &RowStats) -> Vec<(&'static str, u64)> {
    vec![
        ("commands", rows.commands),
        ("rows", rows.rows),
        ("unknown_replies", resp.unknown_replies),
        ("damaged_commands", resp.damaged_commands),
        ("unknown_commands", rows.unknown_commands),
        ("malformed_commands", rows.malformed_commands),
        ("redacted_args", resp.redacted_args),
        ("invalid_requests", resp.invalid_requests),
        ("invalid_replies", resp.invalid_replies),
        ("resyncs", resp.request_resyncs + resp.reply_resyncs),
        ("skipped_bytes", resp.request_skipped_bytes + resp.reply_skipped_bytes),
        ("unpaired_replies", resp.unpaired_replies),
        ("contradictions", resp.contradictions),
        ("oversized_commands", resp.oversized_commands),
        ("oversized_replies", resp.oversized_replies),
        ("elided_args", resp.elided_args),
        ("elided_keys", rows.elided_keys),
        ("args_lost_in_gaps", resp.args_lost_in_gaps),
        ("unconfirmed_commands", resp.unconfirmed_commands),
        ("realigned_replies", resp.realigned_replies),
        ("refused_inline_lines", resp.refused_inline_lines),
        ("unparsable_bytes", resp.unparsable_bytes),
        ("encrypted_connections", resp.encrypted_connections),
    ]
}

fn add_resp(total: &mut RespStats, s: &RespStats) {
    macro_rules! sum {
        ($($f:ident),*) => { $( total.$f += s.$f; )* };
    }
    sum!(commands, paired, unknown_replies, no_reply, damaged_commands, oversized_commands, elided_args,
         redacted_args, inline_commands, unpaired_replies, pushes, oversized_replies, request_gaps, reply_gaps,
         request_gap_bytes, reply_gap_bytes, invalid_requests, invalid_replies, request_skipped_bytes,
         reply_skipped_bytes, request_resyncs, reply_resyncs, pairing_resyncs, contradictions, queue_overflows,
         args_lost_in_gaps, unconfirmed_commands, refused_inline_lines, realigned_replies, unparsable_bytes, encrypted_connections);
}

fn batch_string_bytes(b: &RowBatch) -> usize {
    b.key_data.len() + b.field_data.len()
}
