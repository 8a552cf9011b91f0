//! Property tests of TCP reassembly over random captures.
//!
//! A capture is built from random byte streams (both directions of a few concurrent connections): cut into
//! random segments, extra segments spanning their neighbours (overlaps), duplicates, both directions and all
//! connections interleaved, shuffled within a window, ISNs anywhere (wraparound included), with or without a
//! handshake, with or without FINs, ACKs carrying what the receiver could honestly have acknowledged.
//! - Without losses, every direction comes out exactly, with no gap, and each delivered chunk carries the
//!   timestamp of a segment that held those bytes.
//! - With captured segments dropped and tails cut (snap length), and small limits, every byte up to the end
//!   is delivered or reported as a gap, and every delivered byte is the original byte at that offset.
//! - A soup of random segments never panics, never holds more than the memcap, and keeps the sink's
//!   open/data/close protocol.

use std::collections::HashMap;
use std::net::SocketAddr;

use cachescope::net::{Direction, TcpFlags, TcpSegment};
use cachescope::reassembly::{Limits, ReassemblyStats, Reassembler, StreamSink, PIECE_OVERHEAD};
use proptest::prelude::*;

/// splitmix64: the capture is built from one seed, so a failing case is reproduced by its seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        if n == 0 {
            0
        } else {
            self.next() % n
        }
    }
    fn chance(&mut self, p: f64) -> bool {
        (self.next() >> 11) as f64 / (1u64 << 53) as f64 <= p
    }
}

/// What a capture is made of.
#[derive(Clone, Copy, Debug)]
struct Knobs {
    max_seg: u64,
    window: u64,
    dup: f64,
    overlap: f64,
    drop: f64,
    cut: f64,
}

/// One connection of the capture.
struct Spec {
    client: SocketAddr,
    server: SocketAddr,
    isn: [u32; 2],
    data: [Vec<u8>; 2],
    syn: bool,
    fin: bool,
}

impl Spec {
    /// Sequence number of data offset 0 in direction `d`.
    fn base(&self, d: usize) -> u32 {
        if self.syn {
            self.isn[d].wrapping_add(1)
        } else {
            self.isn[d]
        }
    }
}

/// One segment of the capture, captured or dropped. `off`/`len` are the range it was sent with.
#[derive(Clone, Debug)]
struct Cap {
    conn: usize,
    dir: usize,
    off: u64,
    len: u64,
    payload: Vec<u8>,
    missing: u32,
    flags: u8,
    seq: u32,
    ack: u32,
    ts: i64,
    dropped: bool,
}

fn random_specs(rng: &mut Rng, n: usize, max_len: u64) -> Vec<Spec> {
    (0..n)
        .map(|i| {
            let mut isn = || match rng.below(3) {
                0 => u32::MAX - rng.below(3000) as u32,
                _ => rng.next() as u32,
            };
            let isn = [isn(), isn()];
            let mut bytes = || (0..rng.below(max_len + 1)).map(|_| rng.next() as u8).collect::<Vec<u8>>();
            let data = [bytes(), bytes()];
            Spec {
                client: format!("10.0.{}.{}:{}", i / 200, i % 200 + 1, 40000 + i).parse().unwrap(),
                server: "10.9.9.9:6379".parse().unwrap(),
                isn,
                data,
                syn: rng.chance(0.5),
                fin: rng.chance(0.5),
            }
        })
        .collect()
}

/// The segments of one connection, in capture order, before sequence and ACK numbers are set.
fn connection_segments(rng: &mut Rng, c: usize, spec: &Spec, k: Knobs) -> Vec<Cap> {
    let data_seg = |dir: usize, off: u64, len: u64| Cap {
        conn: c,
        dir,
        off,
        len,
        payload: spec.data[dir][off as usize..(off + len) as usize].to_vec(),
        missing: 0,
        flags: TcpFlags::PSH | TcpFlags::ACK,
        seq: 0,
        ack: 0,
        ts: 0,
        dropped: false,
    };
    let mut per_dir: [Vec<Cap>; 2] = [Vec::new(), Vec::new()];
    for (d, segs) in per_dir.iter_mut().enumerate() {
        let total = spec.data[d].len() as u64;
        let mut off = 0;
        while off < total {
            let len = (1 + rng.below(k.max_seg)).min(total - off);
            segs.push(data_seg(d, off, len));
            if rng.chance(k.overlap) {
                let a = off.saturating_sub(rng.below(20));
                let b = (off + len + rng.below(20)).min(total);
                segs.push(data_seg(d, a, b - a));
            }
            if rng.chance(k.dup) {
                segs.push(data_seg(d, off, len));
            }
            off += len;
        }
    }
    // Interleave the two directions, then shuffle within the window.
    let [mut a, mut b] = per_dir.map(|v| v.into_iter().rev().collect::<Vec<_>>());
    let mut list = Vec::new();
    while !a.is_empty() || !b.is_empty() {
        let from_a = b.is_empty() || (!a.is_empty() && rng.chance(0.5));
        list.push(if from_a { a.pop() } else { b.pop() }.unwrap());
    }
    for i in 0..list.len() {
        let j = (i + rng.below(k.window) as usize).min(list.len() - 1);
        list.swap(i, j);
    }
    if !spec.syn {
        // Picked up mid-stream: a direction starts at its first segment seen, so make that one offset 0.
        for d in 0..2 {
            if let Some(first) = list.iter().position(|s| s.dir == d) {
                let zero = list.iter().position(|s| s.dir == d && s.off == 0).unwrap();
                list.swap(first, zero);
            }
        }
    }
    for i in 0..list.len() {
        let first_of_dir = !list[..i].iter().any(|s| s.dir == list[i].dir);
        let s = &mut list[i];
        s.dropped = rng.chance(k.drop) && (spec.syn || !first_of_dir);
        if !s.dropped && !s.payload.is_empty() && rng.chance(k.cut) {
            let keep = rng.below(s.payload.len() as u64) as usize;
            s.missing = (s.payload.len() - keep) as u32;
            s.payload.truncate(keep);
        }
    }
    let control = |dir: usize, off: u64, flags: u8| Cap { flags, payload: Vec::new(), ..data_seg(dir, off, 0) };
    if spec.syn {
        list.insert(0, control(1, 0, TcpFlags::SYN | TcpFlags::ACK));
        list.insert(0, control(0, 0, TcpFlags::SYN));
    }
    if spec.fin {
        for d in 0..2 {
            list.push(control(d, spec.data[d].len() as u64, TcpFlags::FIN | TcpFlags::ACK));
        }
    }
    list
}

/// A whole capture: connections interleaved, timestamps, sequence numbers and honest ACKs set.
fn build_capture(rng: &mut Rng, specs: &[Spec], k: Knobs) -> Vec<Cap> {
    let mut lists: Vec<Vec<Cap>> = specs
        .iter()
        .enumerate()
        .map(|(c, spec)| connection_segments(rng, c, spec, k).into_iter().rev().collect())
        .collect();
    let mut capture = Vec::new();
    while lists.iter().any(|l| !l.is_empty()) {
        let open: Vec<usize> = (0..lists.len()).filter(|&c| !lists[c].is_empty()).collect();
        let c = open[rng.below(open.len() as u64) as usize];
        capture.push(lists[c].pop().unwrap());
    }
    // What each receiver has got in order so far (every segment sent reaches it; drops are the capture's).
    let mut got: Vec<[Vec<bool>; 2]> = specs.iter().map(|s| s.data.clone().map(|d| vec![false; d.len()])).collect();
    let mut prefix: Vec<[usize; 2]> = vec![[0, 0]; specs.len()];
    for (i, s) in capture.iter_mut().enumerate() {
        let spec = &specs[s.conn];
        s.ts = i as i64 * 1000 + 1;
        let syn = s.flags & TcpFlags::SYN != 0;
        s.seq = if syn { spec.isn[s.dir] } else { spec.base(s.dir).wrapping_add(s.off as u32) };
        if s.flags & TcpFlags::ACK != 0 {
            let peer = 1 - s.dir;
            s.ack = spec.base(peer).wrapping_add(prefix[s.conn][peer] as u32);
        }
        let cover = &mut got[s.conn][s.dir];
        cover[s.off as usize..(s.off + s.len) as usize].iter_mut().for_each(|b| *b = true);
        let p = &mut prefix[s.conn][s.dir];
        while *p < cover.len() && cover[*p] {
            *p += 1;
        }
    }
    capture
}

fn segment<'a>(spec: &Spec, s: &'a Cap) -> TcpSegment<'a> {
    let (src, dst) = if s.dir == 0 { (spec.client, spec.server) } else { (spec.server, spec.client) };
    TcpSegment {
        ts_ns: s.ts,
        src,
        dst,
        seq: s.seq,
        ack: s.ack,
        flags: TcpFlags(s.flags),
        window: 0xffff,
        window_scale: None,
        payload: &s.payload,
        missing_tail: s.missing,
    }
}

/// What one direction of one connection received, in order.
#[derive(Default, Debug)]
struct Received {
    /// (offset, timestamp, bytes) of each delivery.
    chunks: Vec<(u64, i64, Vec<u8>)>,
    gap_bytes: u64,
    /// Offset after the last delivery or gap.
    end: u64,
}

/// Records per connection and direction, and checks the sink protocol as calls arrive.
#[derive(Default)]
struct Collect {
    opened: Vec<(SocketAddr, bool)>,
    closed: Vec<bool>,
    streams: HashMap<(u32, usize), Received>,
    violations: Vec<String>,
}

impl Collect {
    fn check_open(&mut self, conn: u32, what: &str) {
        if conn as usize >= self.opened.len() || self.closed[conn as usize] {
            self.violations.push(format!("{what} on connection {conn} that is not open"));
        }
    }
}

impl StreamSink for Collect {
    fn on_open(&mut self, conn: u32, client: SocketAddr, _server: SocketAddr, _ts: i64, mid_stream: bool) {
        if conn as usize != self.opened.len() {
            self.violations.push(format!("connection id {conn} out of order"));
        }
        self.opened.push((client, mid_stream));
        self.closed.push(false);
    }
    fn on_data(&mut self, conn: u32, dir: Direction, ts: i64, data: &[u8]) {
        self.check_open(conn, "data");
        if data.is_empty() {
            self.violations.push("empty data".into());
        }
        let r = self.streams.entry((conn, dir as usize)).or_default();
        r.chunks.push((r.end, ts, data.to_vec()));
        r.end += data.len() as u64;
    }
    fn on_gap(&mut self, conn: u32, dir: Direction, _ts: i64, n: u64) {
        self.check_open(conn, "gap");
        if n == 0 {
            self.violations.push("empty gap".into());
        }
        let r = self.streams.entry((conn, dir as usize)).or_default();
        r.gap_bytes += n;
        r.end += n;
    }
    fn on_close(&mut self, conn: u32, _ts: i64) {
        self.check_open(conn, "close");
        if let Some(c) = self.closed.get_mut(conn as usize) {
            *c = true;
        }
    }
}

/// Runs a capture through a reassembler, checking the memcap after every segment.
fn replay(specs: &[Spec], capture: &[Cap], limits: Limits) -> Result<(Collect, Reassembler), TestCaseError> {
    let memcap = limits.memcap;
    let mut r = Reassembler::new(&[6379], limits);
    let mut sink = Collect::default();
    for s in capture.iter().filter(|s| !s.dropped) {
        r.process(&segment(&specs[s.conn], s), &mut sink);
        prop_assert!(r.pending_bytes() <= memcap, "held {} > memcap {}", r.pending_bytes(), memcap);
    }
    r.finish(&mut sink);
    prop_assert_eq!(r.pending_bytes(), 0);
    prop_assert!(sink.violations.is_empty(), "{:?}", sink.violations);
    prop_assert!(sink.closed.iter().all(|&c| c), "a connection was never closed");
    prop_assert_eq!(sink.opened.len(), specs.len());
    Ok((sink, r))
}

/// Connection id of each spec, from the client address the sink was given.
fn conn_ids(sink: &Collect, specs: &[Spec]) -> Vec<u32> {
    specs.iter().map(|s| sink.opened.iter().position(|(c, _)| *c == s.client).unwrap() as u32).collect()
}

fn lossless(seed: u64, conns: usize, k: Knobs) -> Result<ReassemblyStats, TestCaseError> {
    let mut rng = Rng(seed);
    let specs = random_specs(&mut rng, conns, 3000);
    let capture = build_capture(&mut rng, &specs, k);
    let (sink, r) = replay(&specs, &capture, Limits::default())?;
    let stats = r.stats().clone();
    prop_assert_eq!(r.stats().gaps, 0);
    let by_ts: HashMap<i64, &Cap> = capture.iter().map(|s| (s.ts, s)).collect();
    for (c, (spec, id)) in specs.iter().zip(conn_ids(&sink, &specs)).enumerate() {
        prop_assert_eq!(sink.opened[id as usize].1, !spec.syn);
        for d in 0..2 {
            let empty = Received::default();
            let got = sink.streams.get(&(id, d)).unwrap_or(&empty);
            let bytes: Vec<u8> = got.chunks.iter().flat_map(|(_, _, b)| b.iter().copied()).collect();
            prop_assert!(bytes == spec.data[d], "conn {} dir {}: {} bytes out of {}", c, d, bytes.len(), spec.data[d].len());
            for (off, ts, b) in &got.chunks {
                let from = by_ts[ts];
                let inside = from.off <= *off && off + b.len() as u64 <= from.off + from.payload.len() as u64;
                prop_assert!(from.conn == c && from.dir == d && inside, "chunk at {} has the timestamp of {:?}", off, from);
            }
        }
    }
    Ok(stats)
}

fn lossy(seed: u64, conns: usize, k: Knobs) -> Result<ReassemblyStats, TestCaseError> {
    let mut rng = Rng(seed);
    let specs = random_specs(&mut rng, conns, 3000);
    let capture = build_capture(&mut rng, &specs, k);
    let limits = Limits {
        max_pending_bytes: 64 + rng.below(6000),
        max_holes: 1 + rng.below(8) as u32,
        memcap: 2 * PIECE_OVERHEAD + rng.below(20_000),
        overlap_window: rng.below(300) as u32,
        ..Limits::default()
    };
    let (sink, r) = replay(&specs, &capture, limits)?;
    for (spec, id) in specs.iter().zip(conn_ids(&sink, &specs)) {
        for d in 0..2 {
            let empty = Received::default();
            let got = sink.streams.get(&(id, d)).unwrap_or(&empty);
            for (off, _, b) in &got.chunks {
                let at = *off as usize;
                prop_assert!(spec.data[d].get(at..at + b.len()) == Some(&b[..]), "wrong bytes at offset {}", off);
            }
            let captured_end = capture
                .iter()
                .filter(|s| std::ptr::eq(&specs[s.conn], spec) && s.dir == d && !s.dropped && s.len > 0)
                .map(|s| s.off + s.len)
                .max()
                .unwrap_or(0);
            let expected = if spec.fin { spec.data[d].len() as u64 } else { captured_end };
            prop_assert_eq!(got.end, expected, "dir {}: delivered + gaps must reach the last byte known", d);
        }
    }
    Ok(r.stats().clone())
}

/// 300 cases a property unless PROPTEST_CASES asks for more (or fewer).
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(300)
}

fn knobs(max_seg: u64, window: u64, dup: f64, overlap: f64, drop: f64, cut: f64) -> Knobs {
    Knobs { max_seg, window, dup, overlap, drop, cut }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(cases()))]

    #[test]
    fn lossless_captures_reassemble_exactly(
        seed in any::<u64>(), conns in 1usize..4, max_seg in 1u64..400, window in 1u64..10,
        dup in 0.0..0.3, overlap in 0.0..0.3,
    ) {
        lossless(seed, conns, knobs(max_seg, window, dup, overlap, 0.0, 0.0))?;
    }

    #[test]
    fn lossy_captures_account_for_every_byte(
        seed in any::<u64>(), conns in 1usize..4, max_seg in 1u64..400, window in 1u64..10,
        dup in 0.0..0.3, overlap in 0.0..0.3, drop in 0.0..0.4, cut in 0.0..0.3,
    ) {
        lossy(seed, conns, knobs(max_seg, window, dup, overlap, drop, cut))?;
    }

    #[test]
    fn random_segment_soup_stays_within_limits(seed in any::<u64>(), n in 1usize..600) {
        soup(seed, n)?;
    }
}

/// The generator must drive reassembly down every path, or the properties above would hold vacuously.
#[test]
fn generated_captures_exercise_every_path() {
    let k = knobs(200, 6, 0.2, 0.2, 0.0, 0.0);
    let mut clean = ReassemblyStats::default();
    let mut lost = ReassemblyStats::default();
    for seed in 0..100 {
        let a = lossless(seed, 2, k).unwrap();
        let b = lossy(seed, 2, Knobs { drop: 0.2, cut: 0.2, ..k }).unwrap();
        for (sum, s) in [(&mut clean, a), (&mut lost, b)] {
            sum.out_of_order_segments += s.out_of_order_segments;
            sum.retransmitted_segments += s.retransmitted_segments;
            sum.overlaps += s.overlaps;
            sum.overlap_conflicts += s.overlap_conflicts;
            sum.mid_stream_connections += s.mid_stream_connections;
            sum.gaps += s.gaps;
            sum.holes_given_up_by_ack += s.holes_given_up_by_ack;
            sum.pending_bytes_limit_hits += s.pending_bytes_limit_hits;
            sum.holes_limit_hits += s.holes_limit_hits;
            sum.memcap_hits += s.memcap_hits;
        }
    }
    assert!(clean.out_of_order_segments > 0 && clean.retransmitted_segments > 0 && clean.overlaps > 0, "{clean:?}");
    assert!(clean.mid_stream_connections > 0, "{clean:?}");
    assert_eq!(clean.overlap_conflicts, 0);
    assert!(lost.gaps > 0 && lost.holes_given_up_by_ack > 0, "{lost:?}");
    assert!(lost.pending_bytes_limit_hits > 0 && lost.holes_limit_hits > 0 && lost.memcap_hits > 0, "{lost:?}");
}

/// Random segments over a few endpoints and nearby sequence numbers, with all flags, cut tails and
/// timestamps that sometimes go backwards.
fn soup(seed: u64, n: usize) -> Result<(), TestCaseError> {
    let mut rng = Rng(seed);
    let limits = Limits {
        max_pending_bytes: 64 + rng.below(3000),
        max_holes: 1 + rng.below(6) as u32,
        memcap: rng.below(4000),
        max_connections: 1 + rng.below(6) as usize,
        idle_timeout_ns: 1 + rng.below(50_000) as i64,
        closed_timeout_ns: rng.below(10_000) as i64,
        overlap_window: rng.below(64) as u32,
    };
    let (memcap, max_conns) = (limits.memcap, limits.max_connections);
    let mut r = Reassembler::new(&[6379, 6380], limits);
    let mut sink = Collect::default();
    let ports = [6379u16, 6380, 1000, 1001, 1002];
    let bases = [0u32, u32::MAX - 100, 1 << 31];
    let mut ts = 0i64;
    let payload: Vec<u8> = (0..300).map(|_| rng.next() as u8).collect();
    for _ in 0..n {
        let endpoint = |rng: &mut Rng| -> SocketAddr {
            SocketAddr::new([10, 0, 0, 1 + rng.below(2) as u8].into(), ports[rng.below(5) as usize])
        };
        let (src, dst) = (endpoint(&mut rng), endpoint(&mut rng));
        let seq = bases[rng.below(3) as usize].wrapping_add(rng.below(600) as u32);
        let ack = bases[rng.below(3) as usize].wrapping_add(rng.below(600) as u32);
        let (a, len) = (rng.below(300) as usize, rng.below(120) as usize);
        ts += rng.below(2000) as i64 - 300;
        let seg = TcpSegment {
            ts_ns: ts,
            src,
            dst,
            seq,
            ack,
            flags: TcpFlags(rng.below(32) as u8),
            window: rng.below(65536) as u16,
            window_scale: None,
            payload: &payload[a..(a + len).min(300)],
            missing_tail: if rng.chance(0.1) { rng.below(100) as u32 } else { 0 },
        };
        r.process(&seg, &mut sink);
        prop_assert!(r.pending_bytes() <= memcap, "held {} > memcap {}", r.pending_bytes(), memcap);
        prop_assert!(r.tracked_connections() <= max_conns);
    }
    r.finish(&mut sink);
    prop_assert!(sink.violations.is_empty(), "{:?}", sink.violations);
    prop_assert!(sink.closed.iter().all(|&c| c));
    prop_assert_eq!(r.pending_bytes(), 0);
    Ok(())
}
