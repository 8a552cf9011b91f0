//! One direction of a TCP connection: a segment's bytes placed at their stream offset, delivered in order,
//! held when they arrive beyond a hole, dropped when already seen.
//!
//! As in Suricata's stream-tcp-reassemble.c, but for an offline reader:
//! - `next` is the first offset not yet accounted for: every byte before it was delivered or reported lost.
//! - A segment starting at `next` while nothing is held goes to the sink straight from the capture buffer (the
//!   fast path: no copy). One starting later is copied into `held`, keyed by offset.
//! - Bytes seen first win: a repeated range is dropped (a retransmission when all of a segment was seen, an
//!   overlap when part was); held pieces never overlap (`held.rs`). A repeat whose bytes differ from the first
//!   copy is an overlap conflict (checked against held pieces, and against the `Recent` window of delivered
//!   bytes).
//! - Bytes a snap length cut from a segment (`missing`) are lost for good: once they reach the front of the
//!   stream they are reported as a gap at once, unless a held piece carries them.
//! - The front hole (from `next` to the first held piece) waits until the caller gives it up: when the peer
//!   has acknowledged data beyond it (`acked`), or when a limit is reached, or the connection ends; then it is
//!   reported as a gap and delivery continues with the piece after it.

use super::held::{Held, Piece};
use super::recent::Recent;
use super::{seq, Limits, Out, StreamSink, MAX_WINDOW, MAX_WINDOW_SCALE, PIECE_OVERHEAD};

/// A segment's bytes at their stream offset: `data`, then `missing` bytes the capture does not have.
#[derive(Clone, Copy)]
struct Span<'a> {
    off: u64,
    data: &'a [u8],
    missing: u64,
    ts_ns: i64,
}

impl<'a> Span<'a> {
    fn len(&self) -> u64 {
        self.data.len() as u64 + self.missing
    }

    fn end(&self) -> u64 {
        self.off + self.len()
    }

    /// The span without its first `n` bytes (`n <= len`).
    fn skip(self, n: u64) -> Span<'a> {
        let from_data = n.min(self.data.len() as u64);
        Span { off: self.off + n, data: &self.data[from_data as usize..], missing: self.missing - (n - from_data), ..self }
    }
}

/// Bytes known lost (a snap-length cut) ending at `until`, reported with the timestamp `ts_ns`.
#[derive(Clone, Copy)]
struct Lost {
    until: u64,
    ts_ns: i64,
}

const NOTHING_LOST: Lost = Lost { until: 0, ts_ns: 0 };

/// What one segment turned out to repeat, counted once per segment.
#[derive(Default)]
struct Marks {
    /// Every byte had been seen before.
    repeat: bool,
    /// Some bytes had been seen before.
    overlap: bool,
    /// Some repeated bytes differ from the first copy.
    conflict: bool,
}

pub(super) struct Stream {
    started: bool,
    /// The SYN's sequence number when the direction began with one.
    syn_isn: Option<u32>,
    /// Sequence number of offset 0.
    base_seq: u32,
    next: u64,
    /// Offset of the FIN, once seen.
    fin: Option<u64>,
    /// Highest offset the peer has acknowledged.
    acked: u64,
    held: Held,
    recent: Recent,
    window: u32,
    /// The window scale option of this direction's SYN (RFC 7323), when the SYN carried one.
    syn_scale: Option<u8>,
    /// The receive window this direction's sender last advertised (for the peer's bytes), unscaled.
    advertised: Option<u16>,
}

impl Stream {
    pub fn new(overlap_window: u32) -> Stream {
        Stream {
            started: false,
            syn_isn: None,
            base_seq: 0,
            next: 0,
            fin: None,
            acked: 0,
            held: Held::default(),
            recent: Recent::new(),
            window: overlap_window,
            syn_scale: None,
            advertised: None,
        }
    }

    pub fn started(&self) -> bool {
        self.started
    }

    /// Memory held for out-of-order bytes (bytes plus per-piece overhead).
    pub fn pending_mem(&self) -> u64 {
        self.held.mem()
    }

    /// Starts the direction at its SYN: offset 0 is the byte after it.
    pub fn start_syn(&mut self, isn: u32, window_scale: Option<u8>) {
        self.started = true;
        self.syn_isn = Some(isn);
        self.syn_scale = window_scale;
        self.base_seq = isn.wrapping_add(1);
    }

    /// Starts the direction at the first segment seen of it (the capture began mid-connection).
    pub fn start_at(&mut self, seq: u32) {
        self.started = true;
        self.base_seq = seq;
    }

    /// A SYN with this ISN belongs to a new connection on the same 4-tuple, not to this one.
    pub fn is_foreign_syn(&self, isn: u32) -> bool {
        self.started && self.syn_isn != Some(isn)
    }

    /// The stream offset of a sequence number (negative: before the first byte).
    #[inline]
    pub fn offset_of(&self, seq: u32) -> i64 {
        seq::unwrap(seq, self.next, seq::seq_at(self.base_seq, self.next))
    }

    /// Records the receive window this direction's sender advertises in a segment it sent.
    #[inline]
    pub fn note_window(&mut self, window: u16) {
        self.advertised = Some(window);
    }

    /// The receive window, in bytes, that this direction's sender last offered `peer` (the other direction):
    /// scaled as the handshake agreed (RFC 7323: only when both SYNs carried the option); the largest scale
    /// when the handshake was not seen; `MAX_WINDOW` when this direction has advertised nothing yet.
    fn offered(&self, peer: &Stream) -> u64 {
        let Some(window) = self.advertised else { return MAX_WINDOW };
        let shift = match (self.syn_isn, peer.syn_isn, self.syn_scale, peer.syn_scale) {
            (Some(_), Some(_), Some(mine), Some(_)) => mine,
            (Some(_), Some(_), _, _) => 0,
            _ => MAX_WINDOW_SCALE,
        };
        (u64::from(window) << shift).min(MAX_WINDOW)
    }

    /// Whether a segment of this direction at sequence number `seq` lies where data of this stream can
    /// plausibly be: within `MAX_WINDOW` of the next expected byte, either way. Further than any window can
    /// reach, it is no byte of this stream (a corrupt or forged header, or another connection's segment).
    #[inline]
    pub fn in_window(&self, seq: u32) -> bool {
        if !self.started || seq == seq::seq_at(self.base_seq, self.next) {
            return true;
        }
        let from_next = self.offset_of(seq) - self.next as i64;
        from_next.unsigned_abs() <= MAX_WINDOW
    }

    /// RFC 5961 section 3: an RST of this direction is acted on only when its sequence number lies in the
    /// window the peer (`peer`, the receiver) offered, from the next byte it expects. That byte lies between
    /// what it acknowledged and the next byte the capture saw sent, whichever order these are in; one more is
    /// allowed for a FIN's sequence number. A stack answers any other RST with a challenge ACK and stays
    /// connected, and so does the reader. With nothing seen of this direction yet, there is nothing to judge
    /// by: the RST is taken (a port's refusal of a SYN).
    pub fn accepts_rst(&self, seq: u32, peer: &Stream) -> bool {
        if !self.started {
            return true;
        }
        let off = self.offset_of(seq);
        let (lo, hi) = (self.next.min(self.acked), self.next.max(self.acked));
        let window = peer.offered(self);
        off >= lo as i64 && off <= (hi + window + 1) as i64
    }

    /// Bytes at `off` would be held (copied) rather than delivered at once.
    pub fn would_hold(&self, off: i64) -> bool {
        off > self.next as i64 || !self.held.is_empty()
    }

    /// All bytes up to the FIN are accounted for.
    pub fn finished(&self) -> bool {
        matches!(self.fin, Some(fin) if self.next >= fin && self.held.is_empty())
    }

    pub fn on_fin(&mut self, fin_off: i64) {
        if self.fin.is_none() && fin_off >= 0 {
            self.fin = Some(fin_off as u64);
        }
    }

    /// The fast path: when `seq` is exactly the next expected byte, nothing is held and no FIN was seen,
    /// delivers `data` straight from the capture buffer and answers true; otherwise does nothing.
    #[inline]
    pub fn take_next<S: StreamSink + ?Sized>(&mut self, seq: u32, data: &[u8], ts_ns: i64, out: &mut Out<'_, S>) -> bool {
        let next_seq = seq::seq_at(self.base_seq, self.next);
        if !self.started || seq != next_seq || !self.held.is_empty() || self.fin.is_some() {
            return false;
        }
        self.deliver(ts_ns, data, out);
        true
    }

    /// Takes a segment's bytes at offset `off` (from `offset_of`): `data`, then `missing` bytes the capture cut.
    /// `budget` is what the global memcap still allows this direction to hold.
    pub fn receive<S: StreamSink + ?Sized>(
        &mut self,
        off: i64,
        data: &[u8],
        missing: u64,
        ts_ns: i64,
        (limits, budget): (&Limits, u64),
        out: &mut Out<'_, S>,
    ) {
        let mut marks = Marks::default();
        if let Some(span) = self.trim_seen(off, data, missing, ts_ns, &mut marks, out) {
            self.place(span, limits, budget, &mut marks, out);
        }
        let stats = &mut *out.stats;
        if marks.repeat {
            stats.retransmitted_segments += 1;
            stats.retransmitted_bytes += data.len() as u64;
        } else if marks.overlap {
            stats.overlaps += 1;
        }
        stats.overlap_conflicts += u64::from(marks.conflict);
    }

    /// Drops the bytes before `next` (already delivered or given up) and places the rest.
    fn trim_seen<'a, S: StreamSink + ?Sized>(
        &mut self,
        off: i64,
        data: &'a [u8],
        missing: u64,
        ts_ns: i64,
        marks: &mut Marks,
        out: &mut Out<'_, S>,
    ) -> Option<Span<'a>> {
        let span = Span { off: 0, data, missing, ts_ns };
        if span.len() == 0 {
            return None;
        }
        let span = if off < 0 {
            // Before the first byte of a direction picked up mid-stream: nothing to place it against.
            let before = off.unsigned_abs();
            if before >= span.len() {
                out.stats.segments_before_start += 1;
                return None;
            }
            span.skip(before)
        } else {
            Span { off: off as u64, ..span }
        };
        if span.off >= self.next {
            return Some(span);
        }
        let seen = self.next - span.off;
        let repeated = &span.data[..seen.min(span.data.len() as u64) as usize];
        marks.conflict |= self.recent.differs(self.next, span.off, repeated);
        if seen >= span.len() {
            marks.repeat = true;
            return None;
        }
        marks.overlap = true;
        Some(span.skip(seen))
    }

    fn place<S: StreamSink + ?Sized>(
        &mut self,
        span: Span<'_>,
        limits: &Limits,
        budget: u64,
        marks: &mut Marks,
        out: &mut Out<'_, S>,
    ) {
        if span.off == self.next {
            let Some((first, _)) = self.held.first() else {
                self.deliver_direct(span, out);
                return;
            };
            // The bytes before the first held piece continue the stream: out they go, uncopied.
            let head = first.saturating_sub(span.off).min(span.data.len() as u64);
            self.deliver(span.ts_ns, &span.data[..head as usize], out);
            let rest = span.skip(head);
            if rest.data.is_empty() {
                self.drain(Lost { until: rest.end(), ts_ns: rest.ts_ns }, self.acked, out);
                return;
            }
            self.hold(rest, limits, budget, marks, out);
            if head > 0 && marks.repeat {
                // The head was new bytes: a segment that also repeats held ones is an overlap, not a retransmission.
                marks.repeat = false;
                marks.overlap = true;
            }
        } else {
            out.stats.out_of_order_segments += 1;
            self.hold(span, limits, budget, marks, out);
        }
    }

    /// The fast path: `span` starts at `next` and nothing is held.
    #[inline]
    fn deliver_direct<S: StreamSink + ?Sized>(&mut self, span: Span<'_>, out: &mut Out<'_, S>) {
        self.deliver(span.ts_ns, span.data, out);
        if span.missing > 0 {
            self.skip_to(self.next + span.missing, span.ts_ns, out);
        }
    }

    #[inline]
    fn deliver<S: StreamSink + ?Sized>(&mut self, ts_ns: i64, data: &[u8], out: &mut Out<'_, S>) {
        out.data(ts_ns, data);
        self.next += data.len() as u64;
        self.recent.record(self.window, self.next, data);
    }

    /// Reports the bytes from `next` to `to` as a gap and continues after them.
    fn skip_to<S: StreamSink + ?Sized>(&mut self, to: u64, ts_ns: i64, out: &mut Out<'_, S>) {
        out.gap(ts_ns, to - self.next);
        self.next = to;
        self.recent.forget_before(to);
    }

    /// Stores the parts of `span` (which starts at or after `next`) that no held piece covers, and where its
    /// cut-off tail lies, then delivers whatever became contiguous. A limit reached gives up every hole.
    fn hold<S: StreamSink + ?Sized>(
        &mut self,
        span: Span<'_>,
        limits: &Limits,
        budget: u64,
        marks: &mut Marks,
        out: &mut Out<'_, S>,
    ) {
        let parts = if span.data.is_empty() {
            Vec::new()
        } else {
            let cov = self.held.coverage(span.off, span.data);
            marks.overlap |= cov.overlap;
            marks.conflict |= cov.conflict;
            marks.repeat |= cov.parts.is_empty();
            cov.parts
        };
        if parts.is_empty() && span.missing == 0 {
            // Nothing new to store; but the head of this segment, just delivered, may have reached the first
            // held piece, which must go out now rather than wait for the next segment.
            self.drain(NOTHING_LOST, self.acked, out);
            return;
        }
        let tail_cost = if span.missing > 0 { PIECE_OVERHEAD } else { 0 };
        let cost: u64 = parts.iter().map(|&(a, b)| b - a + PIECE_OVERHEAD).sum::<u64>() + tail_cost;
        let over_bytes = self.held.mem() + cost > limits.max_pending_bytes;
        let over_memcap = cost > budget;
        for &(a, b) in &parts {
            let data = span.data[(a - span.off) as usize..(b - span.off) as usize].into();
            self.held.insert(a, Piece { ts_ns: span.ts_ns, data, missing: 0 });
        }
        if span.missing > 0 {
            self.held.mark_lost(span.off + span.data.len() as u64, span.missing, span.ts_ns);
        }
        // Over a limit, the segment is stored all the same (memory exceeds the limit by at most one segment,
        // within this call) so that giving up every hole still delivers its bytes at their place.
        let stats = &mut *out.stats;
        let give_up = if over_bytes {
            stats.pending_bytes_limit_hits += 1;
            true
        } else if over_memcap {
            stats.memcap_hits += 1;
            true
        } else {
            false
        };
        self.drain(NOTHING_LOST, if give_up { u64::MAX } else { self.acked }, out);
        if self.held.holes() > limits.max_holes {
            out.stats.holes_limit_hits += 1;
            self.flush(out);
        }
    }

    /// Delivers held pieces that continue the stream. Holes are reported as gaps when their bytes are known
    /// lost (`lost`, and the cut-off tails of delivered pieces) or when the piece after them starts at or
    /// before `give_up_until`; the first hole that is neither stops delivery.
    fn drain<S: StreamSink + ?Sized>(&mut self, mut lost: Lost, give_up_until: u64, out: &mut Out<'_, S>) {
        loop {
            match self.held.first() {
                Some((start, _)) if start <= self.next => {
                    let Some((start, piece)) = self.held.pop_first() else { return };
                    let end = start + piece.data.len() as u64;
                    if end > self.next {
                        let fresh = &piece.data[(self.next - start) as usize..];
                        self.deliver(piece.ts_ns, fresh, out);
                    }
                    if piece.missing > 0 && end + piece.missing > lost.until {
                        lost = Lost { until: end + piece.missing, ts_ns: piece.ts_ns };
                    }
                }
                Some((start, _)) if self.next < lost.until => self.skip_to(lost.until.min(start), lost.ts_ns, out),
                Some((start, ts_ns)) if start <= give_up_until => self.skip_to(start, ts_ns, out),
                Some(_) => return,
                None => {
                    if self.next < lost.until {
                        self.skip_to(lost.until, lost.ts_ns, out);
                    }
                    return;
                }
            }
        }
    }

    /// The peer acknowledged everything before `ack`: a hole with acknowledged data after it was sent and
    /// received, so the capture lost it.
    pub fn on_ack<S: StreamSink + ?Sized>(&mut self, ack: u32, out: &mut Out<'_, S>) {
        if !self.started {
            return;
        }
        let acked = self.offset_of(ack);
        if acked <= self.acked as i64 {
            return;
        }
        if acked - self.next as i64 > MAX_WINDOW as i64 {
            // Acknowledges bytes further ahead than any window lets a sender go: not an ACK of this stream.
            out.stats.out_of_window_acks += 1;
            return;
        }
        self.acked = acked as u64;
        if matches!(self.held.first(), Some((first, _)) if first <= self.acked) {
            let holes = self.held.holes();
            self.drain(NOTHING_LOST, self.acked, out);
            out.stats.holes_given_up_by_ack += u64::from(holes - self.held.holes());
        }
    }

    /// Gives up every hole: delivers all held bytes, with gaps for what is missing between them.
    pub fn flush<S: StreamSink + ?Sized>(&mut self, out: &mut Out<'_, S>) {
        self.drain(NOTHING_LOST, u64::MAX, out);
    }

    /// The connection ends: every hole is given up, and bytes missing before a FIN seen are a gap too.
    pub fn end<S: StreamSink + ?Sized>(&mut self, ts_ns: i64, out: &mut Out<'_, S>) {
        self.flush(out);
        if let Some(fin) = self.fin {
            if self.next < fin {
                self.skip_to(fin, ts_ns, out);
            }
        }
    }

    /// Frees all memory (the connection is closed; nothing more will be delivered).
    pub fn release(&mut self) {
        self.held.clear();
        self.recent.release();
    }
}
