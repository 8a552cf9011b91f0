//! TCP stream reassembly: decoded segments of many concurrent connections in, each connection's two byte
//! streams out, in order, with every byte the capture lacks reported as a gap rather than invented.
//!
//! The design follows Suricata's `stream-tcp-reassemble.c`, cut down for an offline reader that sees each
//! packet once and never has to decide what a host accepted:
//!
//! - a connection is its 4-tuple; the server is the endpoint on a Redis port, so every segment has a
//!   direction (`Request` = client to server, `Reply` = server to client) even when the handshake was missed;
//! - each direction unwraps 32-bit sequence numbers (`seq.rs`) into 64-bit offsets from its first byte: the
//!   byte after the SYN, or the first segment seen when the capture began mid-connection;
//! - the next expected segment is handed to the sink straight from the capture buffer; later segments wait in a
//!   map keyed by offset; bytes already held win over a second copy (`stream.rs`, `held.rs`);
//! - a hole is given up (reported as a gap) when the peer's ACK proves the bytes were sent, when the flow
//!   buffers too much or has too many holes, when the global memcap is reached, or when the connection ends;
//! - connections end on an RST within the receiver's window (RFC 5961; others are counted and ignored, as the
//!   hosts ignore them), on FIN in both directions, after an idle time in capture time, when the table is
//!   full, or at the end of the capture (`reassembler.rs`, `table.rs`);
//! - a segment further from the next expected byte than any TCP window reaches (`MAX_WINDOW`) is no data of
//!   the stream: counted and dropped whole, ACK included, so it can neither invent bytes nor give up a hole.
//!
//! Delivery is never driven by ACKs (an offline reader has no reason to wait), the per-connection state is
//! small, and all buffered bytes count against hard limits, so memory is bounded whatever the capture holds.

mod held;
mod reassembler;
mod recent;
pub mod seq;
mod stream;
mod table;

#[cfg(test)]
mod tests;

use std::net::SocketAddr;

pub use crate::net::Direction;
pub use reassembler::{Reassembler, DEFAULT_REDIS_PORT};

/// Receives what the reassembler produces. Per connection: one `on_open`, then `on_data` / `on_gap` calls per
/// direction in stream order, then one `on_close` (for every connection, at the latest from `finish`).
pub trait StreamSink {
    /// A connection was first seen. `mid_stream`: the capture began while it was open (no SYN seen), so each
    /// direction's first bytes may fall in the middle of a command or reply.
    fn on_open(&mut self, conn: u32, client: SocketAddr, server: SocketAddr, ts_ns: i64, mid_stream: bool);
    /// The next bytes of one direction, all captured at `ts_ns` (one call per captured segment, or part of one).
    fn on_data(&mut self, conn: u32, dir: Direction, ts_ns: i64, data: &[u8]);
    /// `missing_bytes` of the direction were sent but are not in the capture; the next `on_data` continues after them.
    fn on_gap(&mut self, conn: u32, dir: Direction, ts_ns: i64, missing_bytes: u64);
    /// The connection ended with a FIN each way, every byte sent before them delivered or reported lost; then
    /// `on_close` follows at once.
    fn on_fins(&mut self, _conn: u32, _ts_ns: i64) {}
    /// The connection ended (RST, FIN both ways, idle timeout, eviction or end of capture). No calls follow.
    fn on_close(&mut self, conn: u32, ts_ns: i64);
}

/// Hard bounds on what reassembly may hold. Every limit that is hit gives up holes as gaps (and is counted);
/// none drops data that could still be delivered in order. Limits are checked before a segment is held; one
/// that would pass a limit is stored only while the call that gives up the holes delivers it at its place, so
/// memory exceeds a limit by at most one segment, and only within a `process` call.
///
/// Memory per connection, apart from held bytes: at most 400 bytes of state (a test checks it) plus
/// `2 * overlap_window` (rounded up to a power of two) once it has delivered data.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Limits {
    /// Out-of-order bytes one direction of a connection may hold (plus `PIECE_OVERHEAD` per held segment).
    pub max_pending_bytes: u64,
    /// Holes one direction may wait on at once.
    pub max_holes: u32,
    /// Out-of-order bytes all connections together may hold; beyond it the largest flows give up their holes.
    pub memcap: u64,
    /// Connections tracked at once (closed ones waiting for stragglers included); beyond it the one idle the
    /// longest is closed.
    pub max_connections: usize,
    /// A connection with no segment for this long (capture time) is closed and forgotten.
    pub idle_timeout_ns: i64,
    /// How long a closed connection is remembered, so that its last ACKs and retransmitted FINs are absorbed
    /// instead of opening a new, mid-stream connection.
    pub closed_timeout_ns: i64,
    /// Bytes of recently delivered data kept per direction to check retransmitted bytes against (overlap
    /// conflicts), rounded up to a power of two (at most 1 MiB); 0 turns the check off for delivered data.
    pub overlap_window: u32,
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_pending_bytes: 4 << 20,
            max_holes: 256,
            memcap: 256 << 20,
            max_connections: 100_000,
            idle_timeout_ns: 600 * 1_000_000_000,
            closed_timeout_ns: 30 * 1_000_000_000,
            overlap_window: 256,
        }
    }
}

/// The largest receive window TCP can offer (65535 << 14, RFC 7323), rounded up: no byte a sender may send
/// lies further than this from the next byte the receiver expects. A segment further away, either way, is
/// not data of the stream (`Stream::in_window`).
pub const MAX_WINDOW: u64 = 1 << 30;
/// The largest window scale shift (RFC 7323), assumed for a connection whose handshake the capture missed.
pub const MAX_WINDOW_SCALE: u8 = 14;

/// Accounting charged for each held out-of-order segment on top of its bytes: the map node, the boxed slice
/// header, the timestamp. It keeps a flood of one-byte segments from hiding behind a byte count.
pub const PIECE_OVERHEAD: u64 = 64;

/// Counters of everything reassembly saw, delivered, dropped or gave up. All monotonic.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ReassemblyStats {
    /// Segments passed to `process`, and their captured payload bytes.
    pub segments: u64,
    pub payload_bytes: u64,
    /// Bytes handed to `on_data`.
    pub delivered_bytes: u64,
    /// Segments with no Redis port on either side (skipped).
    pub non_redis_segments: u64,
    pub connections: u64,
    /// Connections first seen without a SYN.
    pub mid_stream_connections: u64,
    /// A SYN on a 4-tuple already in use started a new connection.
    pub port_reuses: u64,
    pub idle_timeouts: u64,
    /// Segments whose every byte had already been delivered or was already held, and their captured bytes.
    pub retransmitted_segments: u64,
    pub retransmitted_bytes: u64,
    /// Segments that arrived ahead of a hole and had to be held.
    pub out_of_order_segments: u64,
    /// Segments that partly repeated delivered or held bytes (the repeated part is dropped).
    pub overlaps: u64,
    /// Segments whose repeated bytes differ from the copy seen first (which is the one delivered).
    pub overlap_conflicts: u64,
    /// Gaps reported to the sink, and the bytes they stand for.
    pub gaps: u64,
    pub gap_bytes: u64,
    /// Holes given up because the peer acknowledged data beyond them.
    pub holes_given_up_by_ack: u64,
    /// Segments lying entirely before the first byte seen of a direction picked up mid-stream.
    pub segments_before_start: u64,
    /// Segments on a connection already closed by FIN or RST (late ACKs, retransmitted FINs), and their bytes.
    pub segments_after_close: u64,
    pub bytes_after_close: u64,
    /// RSTs whose sequence number lies outside the receiver's window (RFC 5961): a middlebox's, a stale or a
    /// forged one. The connection stays open, as it does in the hosts' stacks.
    pub ignored_rsts: u64,
    /// Segments further from the next expected byte than any TCP window reaches (`MAX_WINDOW`), and their
    /// bytes: dropped whole, their ACK included.
    pub out_of_window_segments: u64,
    pub out_of_window_bytes: u64,
    /// ACKs of bytes further ahead than any window reaches: ignored (no hole is given up on their word).
    pub out_of_window_acks: u64,
    /// Times a direction gave up its holes because of `max_pending_bytes`, `max_holes` or the memcap.
    pub pending_bytes_limit_hits: u64,
    pub holes_limit_hits: u64,
    pub memcap_hits: u64,
    /// Open connections closed early because the table was full.
    pub connection_limit_hits: u64,
}

/// Index of a direction in a connection's pair of streams.
#[inline]
fn dir_index(dir: Direction) -> usize {
    match dir {
        Direction::Request => 0,
        Direction::Reply => 1,
    }
}

#[inline]
fn opposite(dir: Direction) -> Direction {
    match dir {
        Direction::Request => Direction::Reply,
        Direction::Reply => Direction::Request,
    }
}

/// Where one direction's output goes: the sink plus the counters, for one connection and direction.
struct Out<'a, S: StreamSink + ?Sized> {
    sink: &'a mut S,
    stats: &'a mut ReassemblyStats,
    conn: u32,
    dir: Direction,
}

impl<S: StreamSink + ?Sized> Out<'_, S> {
    #[inline]
    fn data(&mut self, ts_ns: i64, data: &[u8]) {
        if !data.is_empty() {
            self.stats.delivered_bytes += data.len() as u64;
            self.sink.on_data(self.conn, self.dir, ts_ns, data);
        }
    }

    fn gap(&mut self, ts_ns: i64, missing_bytes: u64) {
        if missing_bytes > 0 {
            self.stats.gaps += 1;
            self.stats.gap_bytes += missing_bytes;
            self.sink.on_gap(self.conn, self.dir, ts_ns, missing_bytes);
        }
    }
}
