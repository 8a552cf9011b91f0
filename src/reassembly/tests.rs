//! One test per reassembly case, with segments built by hand. Property tests over random segmentations live
//! in `tests/reassembly_props.rs`.

use std::net::SocketAddr;

use super::*;
use crate::net::{TcpFlags, TcpSegment};

#[derive(Debug, Clone, PartialEq)]
enum Event {
    Open { conn: u32, client: SocketAddr, server: SocketAddr, ts: i64, mid_stream: bool },
    Data { conn: u32, dir: Direction, ts: i64, data: Vec<u8> },
    Gap { conn: u32, dir: Direction, ts: i64, n: u64 },
    Fins { conn: u32, ts: i64 },
    Close { conn: u32, ts: i64 },
}

#[derive(Default)]
struct Rec {
    events: Vec<Event>,
}

impl StreamSink for Rec {
    fn on_open(&mut self, conn: u32, client: SocketAddr, server: SocketAddr, ts: i64, mid_stream: bool) {
        self.events.push(Event::Open { conn, client, server, ts, mid_stream });
    }
    fn on_data(&mut self, conn: u32, dir: Direction, ts: i64, data: &[u8]) {
        self.events.push(Event::Data { conn, dir, ts, data: data.to_vec() });
    }
    fn on_gap(&mut self, conn: u32, dir: Direction, ts: i64, n: u64) {
        self.events.push(Event::Gap { conn, dir, ts, n });
    }
    fn on_close(&mut self, conn: u32, ts: i64) {
        self.events.push(Event::Close { conn, ts });
    }
    fn on_fins(&mut self, conn: u32, ts: i64) {
        self.events.push(Event::Fins { conn, ts });
    }
}

impl Rec {
    /// One direction as text: data as is, gaps as `<n>`.
    fn text(&self, conn: u32, dir: Direction) -> String {
        let mut s = String::new();
        for e in &self.events {
            match e {
                Event::Data { conn: c, dir: d, data, .. } if *c == conn && *d == dir => {
                    s.push_str(&String::from_utf8_lossy(data))
                }
                Event::Gap { conn: c, dir: d, n, .. } if *c == conn && *d == dir => s.push_str(&format!("<{n}>")),
                _ => {}
            }
        }
        s
    }

    /// (timestamp, bytes) of each data delivery of one direction.
    fn chunks(&self, conn: u32, dir: Direction) -> Vec<(i64, String)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Data { conn: c, dir: d, ts, data } if *c == conn && *d == dir => {
                    Some((*ts, String::from_utf8_lossy(data).into_owned()))
                }
                _ => None,
            })
            .collect()
    }

    fn opens(&self) -> Vec<(u32, bool)> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Open { conn, mid_stream, .. } => Some((*conn, *mid_stream)),
                _ => None,
            })
            .collect()
    }

    fn closes(&self) -> Vec<u32> {
        self.events
            .iter()
            .filter_map(|e| match e {
                Event::Close { conn, .. } => Some(*conn),
                _ => None,
            })
            .collect()
    }
}

const REQ: Direction = Direction::Request;
const REP: Direction = Direction::Reply;
const SEC: i64 = 1_000_000_000;

fn addr(s: &str) -> SocketAddr {
    s.parse().unwrap()
}

/// A segment of the default connection 10.0.0.1:40000 -> 10.0.0.2:6379, no flags but PSH, at time 0.
fn seg(dir: Direction, seq: u32, payload: &[u8]) -> TcpSegment<'_> {
    seg_on("10.0.0.1:40000", dir, seq, payload)
}

fn seg_on<'a>(client: &str, dir: Direction, seq: u32, payload: &'a [u8]) -> TcpSegment<'a> {
    let (c, s) = (addr(client), addr("10.0.0.2:6379"));
    let (src, dst) = if dir == REQ { (c, s) } else { (s, c) };
    let flags = TcpFlags(TcpFlags::PSH);
    TcpSegment { ts_ns: 0, src, dst, seq, ack: 0, flags, window: 0, window_scale: None, payload, missing_tail: 0 }
}

fn with(mut s: TcpSegment<'_>, flags: u8) -> TcpSegment<'_> {
    s.flags = TcpFlags(flags);
    s
}

fn acking(mut s: TcpSegment<'_>, ack: u32) -> TcpSegment<'_> {
    s.flags = TcpFlags(s.flags.0 | TcpFlags::ACK);
    s.ack = ack;
    s
}

fn at(mut s: TcpSegment<'_>, ts: i64) -> TcpSegment<'_> {
    s.ts_ns = ts;
    s
}

fn run(r: &mut Reassembler, segs: &[TcpSegment<'_>]) -> Rec {
    let mut rec = Rec::default();
    for s in segs {
        r.process(s, &mut rec);
    }
    rec
}

fn reassembler() -> Reassembler {
    Reassembler::new(&[6379], Limits::default())
}

/// A handshake with client ISN 1000 and server ISN 5000: request data starts at 1001, replies at 5001.
fn handshake() -> [TcpSegment<'static>; 3] {
    [
        with(seg(REQ, 1000, b""), TcpFlags::SYN),
        acking(with(seg(REP, 5000, b""), TcpFlags::SYN), 1001),
        acking(seg(REQ, 1001, b""), 5001),
    ]
}

#[test]
fn in_order_segments_are_delivered_one_by_one_with_their_timestamps() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.push(at(seg(REQ, 1001, b"GET a\r\n"), 10));
    segs.push(at(seg(REP, 5001, b"$1\r\n"), 20));
    segs.push(at(seg(REP, 5005, b"x\r\n"), 21));
    segs.push(at(seg(REQ, 1008, b"GET b\r\n"), 30));
    let rec = run(&mut r, &segs);
    assert_eq!(rec.opens(), vec![(0, false)]);
    assert_eq!(rec.chunks(0, REQ), vec![(10, "GET a\r\n".into()), (30, "GET b\r\n".into())]);
    assert_eq!(rec.chunks(0, REP), vec![(20, "$1\r\n".into()), (21, "x\r\n".into())]);
    let st = r.stats();
    assert_eq!((st.segments, st.connections, st.mid_stream_connections), (7, 1, 0));
    assert_eq!((st.payload_bytes, st.delivered_bytes, st.gaps), (21, 21, 0));
    assert_eq!(r.pending_bytes(), 0);
}

#[test]
fn reordered_segments_come_out_in_stream_order_each_with_its_own_timestamp() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.push(at(seg(REQ, 1007, b"ghi"), 3));
    segs.push(at(seg(REQ, 1004, b"def"), 2));
    assert_eq!(run(&mut r, &segs).text(0, REQ), "");
    assert!(r.pending_bytes() > 0);
    let rec = run(&mut r, &[at(seg(REQ, 1001, b"abc"), 1)]);
    assert_eq!(rec.chunks(0, REQ), vec![(1, "abc".into()), (2, "def".into()), (3, "ghi".into())]);
    assert_eq!(r.stats().out_of_order_segments, 2);
    assert_eq!(r.pending_bytes(), 0);
}

#[test]
fn retransmissions_are_dropped_and_counted() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([seg(REQ, 1001, b"abc"), seg(REQ, 1001, b"abc"), seg(REQ, 1004, b"def"), seg(REQ, 1002, b"bc")]);
    // A retransmission of held (not yet delivered) bytes is dropped as well.
    segs.extend([seg(REQ, 1010, b"jk"), seg(REQ, 1010, b"jk"), seg(REQ, 1007, b"ghi")]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "abcdefghijk");
    let st = r.stats();
    assert_eq!((st.retransmitted_segments, st.retransmitted_bytes), (3, 7));
    assert_eq!((st.overlaps, st.overlap_conflicts), (0, 0));
}

#[test]
fn partial_overlaps_are_trimmed_and_counted() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([seg(REQ, 1001, b"hello"), seg(REQ, 1004, b"loworld")]);
    // Held pieces overlapping each other: only the new bytes of the second one are stored.
    segs.extend([seg(REQ, 1015, b"cdef"), seg(REQ, 1013, b"abcdefgh"), seg(REQ, 1011, b"!!")]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "helloworld!!abcdefgh");
    let st = r.stats();
    assert_eq!((st.overlaps, st.overlap_conflicts, st.retransmitted_segments), (2, 0, 0));
}

#[test]
fn a_segment_filling_the_hole_and_repeating_held_bytes_delivers_them_at_once() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([at(seg(REQ, 1001, b"abc"), 1), at(seg(REQ, 1007, b"ghi"), 3)]);
    // New bytes `def` and a repeat of the held `gh`: the held piece continues the stream right away.
    segs.push(at(seg(REQ, 1004, b"defgh"), 2));
    let rec = run(&mut r, &segs);
    assert_eq!(rec.chunks(0, REQ), vec![(1, "abc".into()), (2, "def".into()), (3, "ghi".into())]);
    assert_eq!(r.pending_bytes(), 0);
    let st = r.stats();
    assert_eq!((st.overlaps, st.retransmitted_segments, st.out_of_order_segments), (1, 0, 1));
}

#[test]
fn overlapping_bytes_that_differ_are_conflicts_and_the_first_copy_wins() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    // Against delivered bytes (the recent window), and against held bytes.
    segs.extend([seg(REQ, 1001, b"hello"), seg(REQ, 1004, b"XXwo")]);
    segs.extend([seg(REQ, 1010, b"rld"), seg(REQ, 1009, b"rZZ")]);
    // A full retransmission with other bytes is a retransmission and a conflict.
    segs.push(seg(REQ, 1001, b"j"));
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "hellowo");
    run(&mut r, &[seg(REQ, 1008, b"r")]);
    let st = r.stats();
    assert_eq!((st.overlaps, st.overlap_conflicts, st.retransmitted_segments), (2, 3, 1));
}

#[test]
fn snap_length_cut_is_a_gap_of_the_missing_tail() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    let mut cut = at(seg(REQ, 1001, b"abcd"), 7);
    cut.missing_tail = 6;
    segs.extend([cut, seg(REQ, 1011, b"next")]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "abcd<6>next");
    assert!(rec.events.contains(&Event::Gap { conn: 0, dir: REQ, ts: 7, n: 6 }));
    assert_eq!((r.stats().gaps, r.stats().gap_bytes), (1, 6));
}

#[test]
fn snap_length_cut_of_a_held_segment_is_reported_when_it_reaches_the_front() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    let mut cut = seg(REQ, 1005, b"ef");
    cut.missing_tail = 4;
    // Bytes 1011.. arrive; the cut tail 1007..1011 lies between them and the cut segment.
    segs.extend([seg(REQ, 1011, b"kl"), cut, seg(REQ, 1001, b"abcd")]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "abcdef<4>kl");
    // Another copy that does hold the cut bytes fills them instead of the gap.
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([cut, seg(REQ, 1007, b"gh"), seg(REQ, 1001, b"abcd"), seg(REQ, 1011, b"kl")]);
    assert_eq!(run(&mut r, &segs).text(0, REQ), "abcdefgh<2>kl");
}

#[test]
fn a_hole_is_given_up_once_the_peer_acknowledges_data_beyond_it() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([seg(REQ, 1001, b"abc"), at(seg(REQ, 1007, b"ghi"), 5)]);
    // The server acknowledges only what precedes the hole: nothing is given up.
    segs.push(acking(seg(REP, 5001, b""), 1004));
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "abc");
    // Acknowledging the data after the hole proves the hole's bytes were received: the capture lost them.
    let rec = run(&mut r, &[acking(seg(REP, 5001, b""), 1010)]);
    assert_eq!(rec.text(0, REQ), "<3>ghi");
    assert!(rec.events.contains(&Event::Gap { conn: 0, dir: REQ, ts: 5, n: 3 }));
    assert_eq!(r.stats().holes_given_up_by_ack, 1);
    // The lost bytes turning up late are dropped, never delivered out of place.
    run(&mut r, &[seg(REQ, 1004, b"def")]);
    assert_eq!(r.stats().retransmitted_segments, 1);
}

#[test]
fn what_an_ack_gives_up_goes_out_before_the_data_of_its_segment() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([at(seg(REQ, 1001, b"abc"), 1), at(seg(REQ, 1007, b"ghi"), 2)]);
    // The reply acknowledges the request bytes after the hole: they were sent before it, so they (and the
    // gap) come first, and the RESP session sees the commands before their replies.
    segs.push(at(acking(seg(REP, 5001, b"+OK\r\n"), 1010), 3));
    let rec = run(&mut r, &segs);
    let tail: Vec<Event> = rec.events[rec.events.len() - 3..].to_vec();
    assert_eq!(
        tail,
        vec![
            Event::Gap { conn: 0, dir: REQ, ts: 2, n: 3 },
            Event::Data { conn: 0, dir: REQ, ts: 2, data: b"ghi".to_vec() },
            Event::Data { conn: 0, dir: REP, ts: 3, data: b"+OK\r\n".to_vec() },
        ]
    );
    assert_eq!(r.pending_bytes(), 0);
}

#[test]
fn data_arriving_after_an_ack_beyond_it_is_delivered_past_the_hole() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([seg(REQ, 1001, b"abc"), acking(seg(REP, 5001, b""), 1010), seg(REQ, 1007, b"ghi")]);
    assert_eq!(run(&mut r, &segs).text(0, REQ), "abc<3>ghi");
}

#[test]
fn too_many_pending_bytes_gives_up_the_holes() {
    let limits = Limits { max_pending_bytes: 2 * PIECE_OVERHEAD + 8, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let mut segs = handshake().to_vec();
    segs.extend([seg(REQ, 1001, b"ab"), seg(REQ, 1005, b"ef"), seg(REQ, 1009, b"ij")]);
    assert_eq!(run(&mut r, &segs).text(0, REQ), "ab");
    // The third held piece would pass the limit: every hole is given up, the held bytes delivered.
    let rec = run(&mut r, &[seg(REQ, 1013, b"mn")]);
    assert_eq!(rec.text(0, REQ), "<2>ef<2>ij<2>mn");
    assert_eq!(r.stats().pending_bytes_limit_hits, 1);
    assert_eq!(r.pending_bytes(), 0);
    // The stream goes on from there.
    assert_eq!(run(&mut r, &[seg(REQ, 1015, b"op")]).text(0, REQ), "op");
}

#[test]
fn too_many_holes_gives_up_the_holes() {
    let limits = Limits { max_holes: 3, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let mut segs = handshake().to_vec();
    // Contiguous held pieces make one hole, not three.
    segs.extend([seg(REQ, 1003, b"c"), seg(REQ, 1004, b"d"), seg(REQ, 1005, b"e")]);
    segs.extend([seg(REQ, 1007, b"g"), seg(REQ, 1009, b"i")]);
    assert_eq!(run(&mut r, &segs).text(0, REQ), "");
    let rec = run(&mut r, &[seg(REQ, 1011, b"k")]);
    assert_eq!(rec.text(0, REQ), "<2>cde<1>g<1>i<1>k");
    assert_eq!(r.stats().holes_limit_hits, 1);
}

#[test]
fn a_connection_picked_up_mid_stream_starts_at_the_first_segment_seen() {
    let mut r = reassembler();
    let segs = [
        at(seg(REP, 777_000, b"ply tail\r\n"), 1),
        at(seg(REQ, 42, b"T b\r\n"), 2),
        at(seg(REQ, 47, b"GET c\r\n"), 3),
        // Bytes from before the first segment seen of the direction cannot be placed.
        at(seg(REQ, 30, b"old bytes"), 4),
    ];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.opens(), vec![(0, true)]);
    assert_eq!(rec.text(0, REQ), "T b\r\nGET c\r\n");
    assert_eq!(rec.text(0, REP), "ply tail\r\n");
    let st = r.stats();
    assert_eq!((st.mid_stream_connections, st.segments_before_start), (1, 1));
    let client = addr("10.0.0.1:40000");
    assert!(matches!(rec.events[0], Event::Open { client: c, ts: 1, .. } if c == client));
}

#[test]
fn sequence_numbers_wrap_around_2_pow_32() {
    let mut r = reassembler();
    let isn = u32::MAX - 3;
    // Data starts at isn + 1 = 2^32 - 3 (u32::MAX - 2): "abc" ends exactly at the wrap, "def" starts at 0.
    let segs = [
        with(seg(REQ, isn, b""), TcpFlags::SYN),
        seg(REQ, 3, b"ghi"),
        seg(REQ, 0, b"def"),
        seg(REQ, u32::MAX - 2, b"abc"),
        seg(REQ, 6, b"jkl"),
        seg(REQ, u32::MAX, b"cdefg"),
    ];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "abcdefghijkl");
    assert_eq!(r.stats().retransmitted_segments, 1);
}

#[test]
fn a_new_syn_on_a_reused_port_opens_a_new_connection() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([
        seg(REQ, 1001, b"PING\r\n"),
        with(seg(REQ, 1007, b""), TcpFlags::FIN | TcpFlags::ACK),
        with(seg(REP, 5001, b"+PONG\r\n"), TcpFlags::FIN | TcpFlags::ACK),
        acking(seg(REQ, 1008, b""), 5009),
    ]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.closes(), vec![0]);
    assert_eq!(r.stats().segments_after_close, 1);
    // Same 4-tuple, new handshake.
    let segs = [with(seg(REQ, 90_000, b""), TcpFlags::SYN), seg(REQ, 90_001, b"PING\r\n")];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.opens(), vec![(1, false)]);
    assert_eq!(rec.text(1, REQ), "PING\r\n");
    // A SYN with yet another ISN while connection 1 is still open: the port was reused without a close seen.
    let segs = [with(seg(REQ, 7, b""), TcpFlags::SYN), seg(REQ, 8, b"ECHO\r\n")];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.closes(), vec![1]);
    assert_eq!(rec.text(2, REQ), "ECHO\r\n");
    assert_eq!(r.stats().port_reuses, 2);
    // A retransmitted SYN (same ISN) is not a new connection.
    run(&mut r, &[with(seg(REQ, 7, b""), TcpFlags::SYN)]);
    assert_eq!((r.stats().connections, r.stats().port_reuses), (3, 2));
}

#[test]
fn rst_closes_the_connection_and_gives_up_its_holes() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([seg(REQ, 1001, b"ab"), seg(REQ, 1005, b"ef"), at(with(seg(REP, 5001, b""), TcpFlags::RST), 9)]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "ab<2>ef");
    assert_eq!(rec.events.last(), Some(&Event::Close { conn: 0, ts: 9 }));
    // An RST says nothing of what was sent before it (a session does not count its replies).
    assert!(!rec.events.iter().any(|e| matches!(e, Event::Fins { .. })));
    // Stragglers on the closed connection are absorbed, not opened as a new one.
    run(&mut r, &[seg(REQ, 1007, b"gh")]);
    assert_eq!((r.stats().connections, r.stats().segments_after_close), (1, 1));
    assert_eq!(r.pending_bytes(), 0);
}

#[test]
fn fin_both_ways_closes_once_every_byte_is_accounted_for() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    // The client's FIN arrives before its last data segment; the server closes too.
    segs.extend([
        with(seg(REQ, 1004, b"def"), TcpFlags::FIN | TcpFlags::ACK),
        with(seg(REP, 5001, b""), TcpFlags::FIN | TcpFlags::ACK),
    ]);
    let rec = run(&mut r, &segs);
    assert!(rec.closes().is_empty());
    let rec = run(&mut r, &[at(seg(REQ, 1001, b"abc"), 4)]);
    assert_eq!(rec.text(0, REQ), "abcdef");
    // Every byte before the FINs delivered, the sink hears so just before the close.
    let n = rec.events.len();
    assert_eq!(rec.events[n - 2..], [Event::Fins { conn: 0, ts: 4 }, Event::Close { conn: 0, ts: 4 }]);
}

#[test]
fn idle_connections_time_out_in_capture_time() {
    let limits = Limits { idle_timeout_ns: 600 * SEC, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let mut segs = handshake().to_vec();
    segs.extend([at(seg(REQ, 1001, b"a"), SEC), at(seg(REQ, 1003, b"c"), 2 * SEC)]);
    segs.push(at(seg_on("10.0.0.9:1234", REQ, 1, b"x"), 500 * SEC));
    let rec = run(&mut r, &segs);
    assert!(rec.closes().is_empty());
    // 600 s after the last segment of connection 0, a segment of connection 1 times it out.
    let rec = run(&mut r, &[at(seg_on("10.0.0.9:1234", REQ, 2, b"y"), 603 * SEC)]);
    assert_eq!(rec.text(0, REQ), "<1>c");
    assert!(rec.events.contains(&Event::Close { conn: 0, ts: 2 * SEC }));
    assert_eq!(r.stats().idle_timeouts, 1);
    // The same 4-tuple again is a new connection, picked up mid-stream.
    let rec = run(&mut r, &[at(seg(REQ, 1004, b"d"), 604 * SEC)]);
    assert_eq!(rec.opens(), vec![(2, true)]);
    assert_eq!(rec.text(2, REQ), "d");
}

#[test]
fn memcap_makes_the_largest_holders_give_up_their_holes() {
    let limits = Limits { memcap: 2 * PIECE_OVERHEAD + 40, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let big = [b'B'; 30];
    let segs = [
        seg_on("10.0.0.1:1", REQ, 100, b"a"),
        seg_on("10.0.0.1:1", REQ, 102, b"cd"),
        seg_on("10.0.0.1:2", REQ, 100, b"a"),
        seg_on("10.0.0.1:2", REQ, 110, &big),
    ];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(1, REQ), "a");
    assert!(r.pending_bytes() <= r.limits().memcap);
    // A third flow needs room: connection 1 (the largest holder) gives up its hole; connection 0 keeps its.
    let rec = run(&mut r, &[seg_on("10.0.0.1:3", REQ, 100, b"a"), seg_on("10.0.0.1:3", REQ, 105, b"fgh")]);
    assert_eq!(rec.text(1, REQ), "<9>BBBBBBBBBBBBBBBBBBBBBBBBBBBBBB");
    assert_eq!(rec.text(0, REQ), "");
    assert_eq!(r.stats().memcap_hits, 1);
    assert!(r.pending_bytes() <= r.limits().memcap);
    assert_eq!(run(&mut r, &[seg_on("10.0.0.1:1", REQ, 101, b"b")]).text(0, REQ), "bcd");
}

#[test]
fn a_segment_larger_than_the_memcap_gives_up_its_own_hole() {
    let limits = Limits { memcap: 100, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let big = [b'x'; 200];
    let rec = run(&mut r, &[seg(REQ, 1, b"a"), seg(REQ, 10, &big)]);
    assert_eq!(rec.text(0, REQ).len(), "a<8>".len() + 200);
    assert_eq!(r.stats().memcap_hits, 1);
    assert_eq!(r.pending_bytes(), 0);
}

#[test]
fn a_full_table_closes_the_connection_idle_longest() {
    let limits = Limits { max_connections: 2, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let segs = [
        at(seg_on("10.0.0.1:1", REQ, 1, b"a"), 1),
        at(seg_on("10.0.0.1:2", REQ, 1, b"a"), 2),
        at(seg_on("10.0.0.1:1", REQ, 2, b"b"), 3),
        at(seg_on("10.0.0.1:3", REQ, 1, b"a"), 4),
    ];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.closes(), vec![1]);
    assert_eq!((r.stats().connection_limit_hits, r.tracked_connections()), (1, 2));
}

#[test]
fn tombstones_make_room_before_open_connections() {
    let limits = Limits { max_connections: 2, ..Limits::default() };
    let mut r = Reassembler::new(&[6379], limits);
    let segs = [
        seg_on("10.0.0.1:1", REQ, 1, b"a"),
        seg_on("10.0.0.1:2", REQ, 1, b"a"),
        with(seg_on("10.0.0.1:2", REQ, 2, b""), TcpFlags::RST),
        seg_on("10.0.0.1:3", REQ, 1, b"a"),
    ];
    let rec = run(&mut r, &segs);
    assert_eq!(rec.closes(), vec![1]);
    assert_eq!(r.stats().connection_limit_hits, 0);
}

#[test]
fn segments_without_a_redis_port_are_skipped_and_several_ports_can_be_servers() {
    let mut r = Reassembler::new(&[6379, 7000], Limits::default());
    let mut other = seg(REQ, 1, b"HTTP");
    other.dst = addr("10.0.0.2:80");
    let mut second = seg(REP, 1, b"+OK\r\n");
    second.src = addr("10.0.0.2:7000");
    let rec = run(&mut r, &[other, second]);
    assert_eq!(r.stats().non_redis_segments, 1);
    assert!(matches!(rec.events[0], Event::Open { server, .. } if server == addr("10.0.0.2:7000")));
    assert_eq!(rec.text(0, REP), "+OK\r\n");
}

#[test]
fn finish_gives_up_every_hole_and_closes_in_id_order() {
    let mut r = reassembler();
    let segs = [
        at(seg_on("10.0.0.1:2", REQ, 1, b"a"), 1),
        at(seg_on("10.0.0.1:1", REQ, 1, b"a"), 2),
        at(seg_on("10.0.0.1:2", REQ, 5, b"e"), 3),
        at(seg_on("10.0.0.1:2", REQ, 2, b"b"), 4),
    ];
    let mut rec = run(&mut r, &segs);
    r.finish(&mut rec);
    assert_eq!(rec.text(0, REQ), "ab<2>e");
    assert_eq!(rec.closes(), vec![0, 1]);
    assert!(rec.events.contains(&Event::Close { conn: 0, ts: 4 }));
    assert_eq!((r.pending_bytes(), r.tracked_connections()), (0, 0));
}

#[test]
fn conn_ids_are_dense_in_order_of_first_appearance() {
    let mut r = reassembler();
    let segs: Vec<String> = (0..5).map(|i| format!("10.0.0.1:{}", 100 - i)).collect();
    let segs: Vec<_> = segs.iter().map(|c| seg_on(c, REQ, 1, b"x")).collect();
    let rec = run(&mut r, &segs);
    assert_eq!(rec.opens(), (0..5).map(|i| (i, true)).collect::<Vec<_>>());
}

#[test]
fn bytes_missing_before_a_fin_are_a_gap_when_the_connection_ends() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    // The segment before the FIN (1004..1007) is never captured.
    segs.extend([seg(REQ, 1001, b"abc"), with(seg(REQ, 1007, b""), TcpFlags::FIN | TcpFlags::ACK)]);
    let mut rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "abc");
    r.finish(&mut rec);
    assert_eq!(rec.text(0, REQ), "abc<3>");
}

#[test]
fn when_both_ports_are_redis_ports_the_handshake_decides_and_sticks() {
    let mut r = Reassembler::new(&[6379, 6380], Limits::default());
    let (a, b) = (addr("10.0.0.1:6380"), addr("10.0.0.2:6379"));
    let mk = |src, dst, seq, flags, payload: &'static [u8]| TcpSegment {
        ts_ns: 0,
        src,
        dst,
        seq,
        ack: 0,
        flags: TcpFlags(flags),
        window: 0,
        window_scale: None,
        payload,
        missing_tail: 0,
    };
    // a opens to b: a is the client although b's port is the lower one.
    let segs = [
        mk(a, b, 10, TcpFlags::SYN, b""),
        mk(b, a, 90, TcpFlags::SYN | TcpFlags::ACK, b""),
        mk(a, b, 11, TcpFlags::ACK, b"SYNC\r\n"),
        mk(b, a, 91, TcpFlags::ACK, b"+FULLRESYNC\r\n"),
    ];
    let rec = run(&mut r, &segs);
    assert!(matches!(rec.events[0], Event::Open { client, server, .. } if client == a && server == b));
    assert_eq!((rec.text(0, REQ), rec.text(0, REP)), ("SYNC\r\n".into(), "+FULLRESYNC\r\n".into()));
    assert_eq!(r.stats().connections, 1);
}

#[test]
fn ipv6_and_ipv4_flows_are_told_apart() {
    let mut r = reassembler();
    let mut v6 = seg(REQ, 1, b"six");
    v6.src = addr("[::ffff:10.0.0.1]:40000");
    v6.dst = addr("[::ffff:10.0.0.2]:6379");
    let rec = run(&mut r, &[seg(REQ, 1, b"four"), v6]);
    assert_eq!((rec.text(0, REQ), rec.text(1, REQ)), ("four".into(), "six".into()));
}

#[test]
fn gaps_carry_the_timestamp_of_the_bytes_after_them() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([at(seg(REQ, 1001, b"a"), 1), at(seg(REQ, 1003, b"c"), 3), at(acking(seg(REP, 5001, b""), 1004), 4)]);
    let rec = run(&mut r, &segs);
    assert!(rec.events.contains(&Event::Gap { conn: 0, dir: REQ, ts: 3, n: 1 }));
}

fn windowed(mut s: TcpSegment<'_>, window: u16) -> TcpSegment<'_> {
    s.window = window;
    s
}

#[test]
fn an_rst_outside_the_receivers_window_is_ignored() {
    let mut r = reassembler();
    // The handshake agrees on no scaling; the server offers a window of 1000 bytes.
    let mut segs = handshake().to_vec();
    segs[1] = windowed(segs[1], 1000);
    segs.extend([
        acking(windowed(seg(REQ, 1001, b"GET a\r\n"), 500), 5001),
        acking(windowed(seg(REP, 5001, b"$1\r\nx\r\n"), 1000), 1008),
        // A middlebox's RST far outside the window, one just beyond it, and one behind what the server acked.
        with(seg(REQ, 1008 + 3_000_000, b""), TcpFlags::RST),
        with(seg(REQ, 1008 + 1002, b""), TcpFlags::RST),
        with(seg(REQ, 1000, b""), TcpFlags::RST),
        acking(windowed(seg(REQ, 1008, b"GET b\r\n"), 500), 5008),
    ]);
    let rec = run(&mut r, &segs);
    assert_eq!(rec.text(0, REQ), "GET a\r\nGET b\r\n");
    assert!(rec.closes().is_empty());
    assert_eq!((r.stats().ignored_rsts, r.stats().segments_after_close), (3, 0));
    // An RST within the window closes (a host takes it after its challenge ACK).
    run(&mut r, &[with(seg(REQ, 1015 + 999, b""), TcpFlags::RST)]);
    run(&mut r, &[seg(REQ, 1015, b"GET c\r\n")]);
    assert_eq!((r.stats().ignored_rsts, r.stats().segments_after_close, r.stats().bytes_after_close), (3, 1, 7));
}

#[test]
fn the_rst_window_is_scaled_as_the_handshake_agreed_and_wide_when_it_was_not_seen() {
    // Both SYNs carry window scale 7: the server's 100 stands for 12800 bytes.
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs[0].window_scale = Some(2);
    segs[1].window_scale = Some(7);
    segs[2] = windowed(segs[2], 100);
    segs.push(acking(windowed(seg(REP, 5001, b""), 100), 1001));
    let rec = run(&mut r, &[segs.clone(), vec![with(seg(REQ, 1001 + 12_000, b""), TcpFlags::RST)]].concat());
    assert_eq!((rec.closes(), r.stats().ignored_rsts), (vec![0], 0));
    // Mid-stream, the scale is unknown: the largest one is assumed (100 << 14 bytes), nothing beyond.
    let mut r = reassembler();
    let segs = [
        seg(REQ, 995, b"PING\r\n"),
        windowed(acking(seg(REP, 5001, b"+PONG\r\n"), 1001), 100),
        with(seg(REQ, 1001 + (100 << 14) + 5, b""), TcpFlags::RST),
        with(seg(REQ, 1001 + (100 << 14) - 5, b""), TcpFlags::RST),
    ];
    let rec = run(&mut r, &segs);
    assert_eq!((rec.closes(), r.stats().ignored_rsts), (vec![0], 1));
}

#[test]
fn a_segment_beyond_any_window_is_no_data_and_gives_up_no_hole() {
    let mut r = reassembler();
    let mut segs = handshake().to_vec();
    segs.extend([
        seg(REQ, 1001, b"GET a\r\n"),
        // "GET b" is not captured yet; the next command waits beyond the hole.
        seg(REQ, 1015, b"GET c\r\n"),
        // Nearly 2^31 ahead (and 1.5 GiB behind) of the next byte, acknowledging all the server could send.
        acking(seg(REQ, 1008u32.wrapping_add((1 << 31) - 100), b"SET forged 1\r\n"), 5001 + (1 << 30)),
        acking(seg(REQ, 1008u32.wrapping_sub(3 << 29), b"SET forged 2\r\n"), 5001),
        // A server segment acknowledging beyond any window: the client's hole stays.
        acking(seg(REP, 5001, b""), 1008 + (3 << 29)),
        seg(REQ, 1008, b"GET b\r\n"),
    ]);
    let mut rec = run(&mut r, &segs);
    r.finish(&mut rec);
    assert_eq!(rec.text(0, REQ), "GET a\r\nGET b\r\nGET c\r\n");
    let s = r.stats();
    assert_eq!((s.out_of_window_segments, s.out_of_window_bytes, s.out_of_window_acks), (2, 28, 1));
    assert_eq!((s.gaps, s.holes_given_up_by_ack, s.pending_bytes_limit_hits), (0, 0, 0));
}
