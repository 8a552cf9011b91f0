//! The reassembler: routes each segment to its connection and direction, and runs connection lifecycles and
//! the limits that span connections.
//!
//! Per segment: classify it by the Redis port (the server side), time out connections idle too long, find or
//! open the connection (a SYN on a 4-tuple whose connection is closed, or whose direction began with another
//! ISN, is port reuse: a new connection with a new id), hand the ACK to the opposite direction (first: what
//! it acknowledges was sent before this segment), the bytes to the direction's `Stream`, the FIN to it, and
//! close on RST or when both directions are finished. Before the ACK and the bytes are looked at, `admit`
//! drops a segment no host would take: an RST outside the window, or bytes beyond any window.
//!
//! Memory held for out-of-order bytes is summed over all connections; before a segment that must be held
//! would push it past the memcap, the connections holding the most give up their holes (down to 3/4 of the
//! memcap, so that this scan over the table is paid rarely). The number of connections is capped the same
//! way: the oldest tombstone, else the connection idle the longest, makes room.

use super::table::{Conn, FlowKey, State, Table};
use super::{dir_index, opposite, Direction, Limits, Out, ReassemblyStats, StreamSink, PIECE_OVERHEAD};
use crate::net::{TcpFlags, TcpSegment};

/// The port Redis listens on, used when no port is given.
pub const DEFAULT_REDIS_PORT: u16 = 6379;

pub struct Reassembler {
    /// Bitset over the 65536 ports: set for Redis (server) ports.
    redis_ports: Box<[u64; 1024]>,
    limits: Limits,
    table: Table,
    next_id: u32,
    /// Sum of every open connection's `pending_mem`.
    pending_total: u64,
    stats: ReassemblyStats,
}

impl Reassembler {
    /// `redis_ports`: the ports that identify the server side (empty: 6379).
    pub fn new(redis_ports: &[u16], limits: Limits) -> Reassembler {
        let mut bits = Box::new([0u64; 1024]);
        let ports = if redis_ports.is_empty() { &[DEFAULT_REDIS_PORT][..] } else { redis_ports };
        for &p in ports {
            bits[usize::from(p >> 6)] |= 1 << (p & 63);
        }
        Reassembler {
            redis_ports: bits,
            limits,
            table: Table::new(),
            next_id: 0,
            pending_total: 0,
            stats: ReassemblyStats::default(),
        }
    }

    pub fn stats(&self) -> &ReassemblyStats {
        &self.stats
    }

    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Memory held for out-of-order bytes right now (bytes plus per-piece overhead), across all connections.
    pub fn pending_bytes(&self) -> u64 {
        self.pending_total
    }

    /// Connections remembered right now, open or recently closed.
    pub fn tracked_connections(&self) -> usize {
        self.table.len()
    }

    /// Takes one captured segment, in capture order; whatever it completes goes to `sink` before it returns.
    pub fn process<S: StreamSink + ?Sized>(&mut self, seg: &TcpSegment<'_>, sink: &mut S) {
        self.stats.segments += 1;
        self.stats.payload_bytes += seg.payload.len() as u64;
        let Some(dir) = self.classify(seg) else {
            self.stats.non_redis_segments += 1;
            return;
        };
        self.expire(seg.ts_ns, sink);
        let syn = seg.flags.has(TcpFlags::SYN);
        let key = match dir {
            Direction::Request => FlowKey::new(&seg.src, &seg.dst),
            Direction::Reply => FlowKey::new(&seg.dst, &seg.src),
        };
        let slot = match self.table.find(&key) {
            None => self.open(key, dir, seg, sink),
            Some(slot) => {
                let conn = self.table.get(slot);
                let closed = conn.state == State::Closed;
                if syn && (closed || conn.streams[dir_index(dir)].is_foreign_syn(seg.seq)) {
                    self.stats.port_reuses += 1;
                    self.forget(slot, seg.ts_ns, sink);
                    self.open(key, dir, seg, sink)
                } else if closed {
                    self.stats.segments_after_close += 1;
                    self.stats.bytes_after_close += seg.payload.len() as u64;
                    return;
                } else {
                    self.table.touch(slot, seg.ts_ns);
                    slot
                }
            }
        };
        self.segment(slot, dir, seg, sink);
    }

    /// End of capture: every open connection gives up its holes and is closed, in id order.
    pub fn finish<S: StreamSink + ?Sized>(&mut self, sink: &mut S) {
        for slot in self.table.open_slots() {
            let last = self.table.get(slot).last_ts;
            self.forget(slot, last, sink);
        }
        // Closed connections hold nothing, and every open one was just flushed: `pending_total` is back to 0.
        self.table = Table::new();
    }

    fn is_redis(&self, port: u16) -> bool {
        self.redis_ports[usize::from(port >> 6)] >> (port & 63) & 1 == 1
    }

    /// Direction of a segment, or None when neither side is on a Redis port.
    #[inline]
    fn classify(&self, seg: &TcpSegment<'_>) -> Option<Direction> {
        match (self.is_redis(seg.src.port()), self.is_redis(seg.dst.port())) {
            (false, true) => Some(Direction::Request),
            (true, false) => Some(Direction::Reply),
            (false, false) => None,
            (true, true) => Some(self.guess_direction(seg)),
        }
    }

    /// Both ports are Redis ports (two servers replicating, or a client bound to one): a connection already
    /// known decides, else the handshake, else the lower port is taken for the server.
    fn guess_direction(&self, seg: &TcpSegment<'_>) -> Direction {
        if self.table.find(&FlowKey::new(&seg.src, &seg.dst)).is_some() {
            return Direction::Request;
        }
        if self.table.find(&FlowKey::new(&seg.dst, &seg.src)).is_some() {
            return Direction::Reply;
        }
        if seg.flags.has(TcpFlags::SYN) {
            return if seg.flags.has(TcpFlags::ACK) { Direction::Reply } else { Direction::Request };
        }
        if (seg.dst.port(), seg.dst.ip()) <= (seg.src.port(), seg.src.ip()) {
            Direction::Request
        } else {
            Direction::Reply
        }
    }

    /// Opens a connection for `seg`, making room in the table first.
    fn open<S: StreamSink + ?Sized>(&mut self, key: FlowKey, dir: Direction, seg: &TcpSegment<'_>, sink: &mut S) -> u32 {
        while self.table.len() >= self.limits.max_connections.max(1) {
            if let Some(slot) = self.table.oldest_closed() {
                self.table.remove(slot);
            } else if let Some(slot) = self.table.oldest_open() {
                self.stats.connection_limit_hits += 1;
                let last = self.table.get(slot).last_ts;
                self.forget(slot, last, sink);
            } else {
                break;
            }
        }
        let id = self.next_id;
        self.next_id = self.next_id.wrapping_add(1);
        let mid_stream = !seg.flags.has(TcpFlags::SYN);
        self.stats.connections += 1;
        self.stats.mid_stream_connections += u64::from(mid_stream);
        let (client, server) = match dir {
            Direction::Request => (seg.src, seg.dst),
            Direction::Reply => (seg.dst, seg.src),
        };
        sink.on_open(id, client, server, seg.ts_ns, mid_stream);
        self.table.insert(Conn::new(id, key, seg.ts_ns, self.limits.overlap_window))
    }

    /// One segment of an open connection.
    #[inline]
    fn segment<S: StreamSink + ?Sized>(&mut self, slot: u32, dir: Direction, seg: &TcpSegment<'_>, sink: &mut S) {
        let plain = seg.flags.0 & (TcpFlags::SYN | TcpFlags::FIN | TcpFlags::RST) == 0 && seg.missing_tail == 0;
        let d = dir_index(dir);
        let Reassembler { table, stats, pending_total, .. } = self;
        let conn = table.conn(slot);
        if !admit(conn, d, seg, stats) {
            return;
        }
        let mut out = Out { sink: &mut *sink, stats, conn: conn.id, dir: opposite(dir) };
        // The ACK before the data: the peer's bytes it acknowledges were received before this segment was
        // sent, so the holes it gives up and the held bytes after them go to the sink first. The other way
        // round, a reply would reach the RESP session before the commands it answers.
        if seg.flags.has(TcpFlags::ACK) {
            let peer = &mut conn.streams[1 - d];
            let held_before = peer.pending_mem();
            peer.on_ack(seg.ack, &mut out);
            *pending_total -= held_before - peer.pending_mem();
        }
        out.dir = dir;
        // The fast path: the next expected bytes, nothing held, no control flag.
        if plain && conn.streams[d].take_next(seg.seq, seg.payload, seg.ts_ns, &mut out) {
            return;
        }
        self.segment_slow(slot, dir, seg, sink);
    }

    fn segment_slow<S: StreamSink + ?Sized>(&mut self, slot: u32, dir: Direction, seg: &TcpSegment<'_>, sink: &mut S) {
        let flags = seg.flags;
        if flags.has(TcpFlags::RST) {
            self.close(slot, seg.ts_ns, sink);
            return;
        }
        let d = dir_index(dir);
        let syn = flags.has(TcpFlags::SYN);
        let stream = &mut self.table.conn(slot).streams[d];
        if !stream.started() {
            if syn {
                stream.start_syn(seg.seq, seg.window_scale);
            } else {
                stream.start_at(seg.seq);
            }
        }
        let off = stream.offset_of(if syn { seg.seq.wrapping_add(1) } else { seg.seq });
        let missing = u64::from(seg.missing_tail);
        if !seg.payload.is_empty() || missing > 0 {
            self.make_room(slot, d, off, seg.payload.len() as u64, sink);
        }
        let budget = self.limits.memcap.saturating_sub(self.pending_total);
        let Reassembler { table, stats, limits, .. } = self;
        let conn = table.conn(slot);
        let held_before = conn.pending_mem();
        let mut out = Out { sink: &mut *sink, stats, conn: conn.id, dir };
        conn.streams[d].receive(off, seg.payload, missing, seg.ts_ns, (limits, budget), &mut out);
        if flags.has(TcpFlags::FIN) {
            conn.streams[d].on_fin(off.wrapping_add(seg.payload.len() as i64).wrapping_add(missing as i64));
        }
        let held_after = conn.pending_mem();
        let finished = conn.streams.iter().all(|s| s.finished());
        self.pending_total = self.pending_total + held_after - held_before;
        if finished {
            self.close(slot, seg.ts_ns, sink);
        }
    }

    /// Before a segment that must be held would push held memory past the memcap, the largest holders give up
    /// their holes.
    fn make_room<S: StreamSink + ?Sized>(&mut self, slot: u32, d: usize, off: i64, len: u64, sink: &mut S) {
        let need = len + PIECE_OVERHEAD;
        let memcap = self.limits.memcap;
        if self.pending_total + need <= memcap || !self.table.get(slot).streams[d].would_hold(off) {
            return;
        }
        let target = (memcap / 4 * 3).min(memcap.saturating_sub(need));
        for (_, holder) in self.table.largest_holders() {
            if self.pending_total <= target {
                break;
            }
            self.stats.memcap_hits += 1;
            self.flush(holder, None, sink);
        }
    }

    /// Gives up every hole of a connection, both directions; when it ends (at `end_ts`), also the bytes missing
    /// before a FIN.
    fn flush<S: StreamSink + ?Sized>(&mut self, slot: u32, end_ts: Option<i64>, sink: &mut S) {
        let Reassembler { table, stats, .. } = self;
        let conn = table.conn(slot);
        let held = conn.pending_mem();
        for dir in [Direction::Request, Direction::Reply] {
            let mut out = Out { sink: &mut *sink, stats: &mut *stats, conn: conn.id, dir };
            let stream = &mut conn.streams[dir_index(dir)];
            match end_ts {
                Some(ts_ns) => stream.end(ts_ns, &mut out),
                None => stream.flush(&mut out),
            }
        }
        self.pending_total -= held - conn.pending_mem();
    }

    /// Ends an open connection (RST, or FIN both ways) and keeps it as a tombstone for its last segments.
    fn close<S: StreamSink + ?Sized>(&mut self, slot: u32, ts_ns: i64, sink: &mut S) {
        self.flush(slot, Some(ts_ns), sink);
        let conn = self.table.get(slot);
        if conn.streams.iter().all(|s| s.finished()) {
            sink.on_fins(conn.id, ts_ns);
        }
        sink.on_close(self.table.get(slot).id, ts_ns);
        self.table.mark_closed(slot, ts_ns);
    }

    /// Ends a connection if still open, and forgets it.
    fn forget<S: StreamSink + ?Sized>(&mut self, slot: u32, ts_ns: i64, sink: &mut S) {
        if self.table.get(slot).state == State::Open {
            self.flush(slot, Some(ts_ns), sink);
            sink.on_close(self.table.get(slot).id, ts_ns);
        }
        self.table.remove(slot);
    }

    /// Closes connections idle longer than the idle timeout and forgets tombstones past theirs, as of `now`.
    fn expire<S: StreamSink + ?Sized>(&mut self, now: i64, sink: &mut S) {
        let idle_since = now.saturating_sub(self.limits.idle_timeout_ns);
        while let Some(slot) = self.table.oldest_open() {
            let last = self.table.get(slot).last_ts;
            if last >= idle_since {
                break;
            }
            self.stats.idle_timeouts += 1;
            self.forget(slot, last, sink);
        }
        let closed_since = now.saturating_sub(self.limits.closed_timeout_ns);
        while let Some(slot) = self.table.oldest_closed() {
            if self.table.get(slot).last_ts >= closed_since {
                break;
            }
            self.table.remove(slot);
        }
    }
}

/// Whether a segment of an open connection is taken at all (and if so, notes the window it advertises). An
/// RST outside the receiver's window, or any segment further than a window reaches from the next expected
/// byte, is counted and dropped whole: its bytes would be invented data, its ACK would give up holes, its
/// RST would end a connection that goes on. A SYN is judged by the caller (retransmitted, or port reuse).
#[inline]
fn admit(conn: &mut Conn, d: usize, seg: &TcpSegment<'_>, stats: &mut ReassemblyStats) -> bool {
    if seg.flags.has(TcpFlags::SYN) {
        return true;
    }
    let (sender, peer) = (&conn.streams[d], &conn.streams[1 - d]);
    if seg.flags.has(TcpFlags::RST) {
        if sender.accepts_rst(seg.seq, peer) {
            return true;
        }
        stats.ignored_rsts += 1;
        return false;
    }
    if !sender.in_window(seg.seq) {
        stats.out_of_window_segments += 1;
        stats.out_of_window_bytes += seg.payload.len() as u64;
        return false;
    }
    if seg.flags.has(TcpFlags::ACK) {
        conn.streams[d].note_window(seg.window);
    }
    true
}
