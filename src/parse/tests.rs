//! The whole parser on a small synthetic capture: one connection with a read, a multi-key read, a hash write,
//! a delete and a plain write. The rows must be exactly these, whatever the batch size they come out in, and
//! every batch's columns must line up.

use std::io::Cursor;
use std::net::SocketAddr;

use super::{CaptureParser, ParseAhead, ParseConfig, RowBatch};
use crate::error::TraceError;
use crate::capture::synth::{self, PcapWriter, Segment};

const T0: i64 = 1_700_000_000_000_000_000;
const LATENCY: i64 = 500;

/// (request, reply) pairs of the conversation.
const EXCHANGES: [(&[u8], &[u8]); 5] = [
    (b"*5\r\n$5\r\nHMGET\r\n$4\r\nst_1\r\n$2\r\nf1\r\n$2\r\nf2\r\n$2\r\nf3\r\n", b"*3\r\n$2\r\nab\r\n$-1\r\n$3\r\nabc\r\n"),
    (b"*3\r\n$4\r\nmget\r\n$1\r\na\r\n$1\r\nb\r\n", b"*2\r\n$1\r\nx\r\n$-1\r\n"),
    (b"*6\r\n$4\r\nHSET\r\n$4\r\nst_2\r\n$2\r\nf1\r\n$1\r\nv\r\n$2\r\nf2\r\n$2\r\nvv\r\n", b":2\r\n"),
    (b"*3\r\n$3\r\nDEL\r\n$1\r\na\r\n$1\r\nb\r\n", b":1\r\n"),
    (b"*3\r\n$3\r\nSET\r\n$1\r\ns\r\n$3\r\nval\r\n", b"+OK\r\n"),
];

/// A pcap (ns timestamps) of the conversation after a handshake; request i is sent at T0 + 1000 i.
fn capture() -> Vec<u8> {
    one_connection(EXCHANGES.iter().map(|&(q, r)| (q.to_vec(), r.to_vec())), usize::MAX)
}

/// A pcap of (request, reply) exchanges on one connection after its handshake: request i sent at
/// T0 + 1000 i in segments of at most `segment` bytes, its reply LATENCY later.
fn one_connection(exchanges: impl IntoIterator<Item = (Vec<u8>, Vec<u8>)>, segment: usize) -> Vec<u8> {
    let client: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    let mut put = |ts: i64, s: Segment| w.packet(ts, &synth::ethernet(&s.ip_packet(), &[])).unwrap();
    put(T0 - 20, Segment { flags: 0x02, ack: 0, ..Segment::new(client, server, 0, b"") });
    put(T0 - 10, Segment { flags: 0x12, ..Segment::new(server, client, 0, b"") });
    let (mut c_seq, mut s_seq) = (1u32, 1u32);
    for (i, (request, reply)) in exchanges.into_iter().enumerate() {
        let ts = T0 + 1000 * i as i64;
        for piece in request.chunks(segment) {
            put(ts, Segment::new(client, server, c_seq, piece));
            c_seq += piece.len() as u32;
        }
        put(ts + LATENCY, Segment::new(server, client, s_seq, &reply));
        s_seq += reply.len() as u32;
    }
    w.into_inner()
}

/// (ts, req, op, cmd, key, field, value_size, found, latency) of each row.
type Row = (i64, u64, u8, String, String, Option<String>, i32, i8, i64);

fn text(data: &[u8], offsets: &[i64], i: usize) -> String {
    String::from_utf8(data[offsets[i] as usize..offsets[i + 1] as usize].to_vec()).unwrap()
}

fn rows_of(b: &RowBatch, cmd_names: &[String]) -> Vec<Row> {
    let n = b.len();
    for len in [b.conn.len(), b.req.len(), b.op.len(), b.cmd.len(), b.field_valid.len(), b.value_size.len()] {
        assert_eq!(len, n, "a column of the batch has {len} rows, not {n}");
    }
    assert_eq!((b.found.len(), b.latency_ns.len(), b.key_offsets.len(), b.field_offsets.len()), (n, n, n + 1, n + 1));
    assert!(b.conn.iter().all(|&c| c == 0));
    (0..n)
        .map(|i| {
            let field = b.field_valid[i].then(|| text(&b.field_data, &b.field_offsets, i));
            let cmd = cmd_names[b.cmd[i] as usize].clone();
            let key = text(&b.key_data, &b.key_offsets, i);
            (b.ts_ns[i], b.req[i], b.op[i], cmd, key, field, b.value_size[i], b.found[i], b.latency_ns[i])
        })
        .collect()
}

/// Every row of the capture, parsed in batches of at least `min_rows`; also the number of batches.
fn parse(min_rows: usize, anonymize_salt: Option<u64>) -> (Vec<Row>, usize) {
    let config = ParseConfig { anonymize_salt, ..ParseConfig::default() };
    let bytes = capture();
    let mut p = CaptureParser::new(&bytes[..], "test.pcap", &config).unwrap();
    let (mut rows, mut batches) = (Vec::new(), 0);
    while let Some(b) = p.next_batch(min_rows).unwrap() {
        rows.extend(rows_of(&b, p.cmd_names()));
        batches += 1;
    }
    (rows, batches)
}

fn row(i: i64, op: u8, cmd: &str, key: &str, field: Option<&str>, value_size: i32, found: i8) -> Row {
    (T0 + 1000 * i, i as u64, op, cmd.into(), key.into(), field.map(Into::into), value_size, found, LATENCY)
}

#[test]
fn rows_of_each_command_shape() {
    let (r, w, d) = (0, 1, 2);
    let expected = vec![
        row(0, r, "HMGET", "st_1", Some("f1"), 2, 1),
        row(0, r, "HMGET", "st_1", Some("f2"), -1, 0),
        row(0, r, "HMGET", "st_1", Some("f3"), 3, 1),
        row(1, r, "MGET", "a", None, 1, 1),
        row(1, r, "MGET", "b", None, -1, 0),
        row(2, w, "HSET", "st_2", Some("f1"), 1, -1),
        row(2, w, "HSET", "st_2", Some("f2"), 2, -1),
        row(3, d, "DEL", "a", None, -1, -1),
        row(3, d, "DEL", "b", None, -1, -1),
        row(4, w, "SET", "s", None, 3, -1),
    ];
    assert_eq!(parse(1 << 20, None), (expected, 1));
}

#[test]
fn batches_cut_between_commands_and_change_nothing() {
    let (whole, _) = parse(1 << 20, None);
    for min_rows in [1, 2, 3, 4] {
        let (rows, batches) = parse(min_rows, None);
        assert_eq!(rows, whole, "batches of at least {min_rows} rows");
        assert!(batches > 1);
    }
}

#[test]
fn anonymized_keys_are_one_hash_per_key() {
    let (plain, _) = parse(1 << 20, None);
    let (hashed, _) = parse(2, Some(42));
    let mut seen = std::collections::HashMap::new();
    for (p, h) in plain.iter().zip(&hashed) {
        assert_eq!(h.4.len(), 16);
        assert!(h.4.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_eq!(seen.entry(p.4.clone()).or_insert_with(|| h.4.clone()), &h.4, "key {} hashed two ways", p.4);
        assert_eq!((&p.5, p.6, p.7), (&h.5, h.6, h.7));
    }
    let distinct: std::collections::HashSet<_> = seen.values().collect();
    assert_eq!(distinct.len(), seen.len(), "two keys share a hash");
}

/// Every batch's rows, the counters after it, and how the parse ended, by the plain parser and parsed ahead.
type Run = (Vec<(Vec<Row>, Vec<(&'static str, u64)>, u64, Vec<Endpoints>)>, Result<(), TraceError>, Vec<String>);
type Endpoints = (u32, SocketAddr, SocketAddr);

fn run_plain(bytes: Vec<u8>, min_rows: usize) -> Run {
    let mut p = CaptureParser::new(Cursor::new(bytes), "test.pcap", &ParseConfig::default()).unwrap();
    let mut batches = Vec::new();
    let end = loop {
        match p.next_batch(min_rows) {
            Ok(Some(b)) => batches.push((rows_of(&b, p.cmd_names()), p.counters(), p.offset(), b.endpoints.clone())),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    (batches, end, p.cmd_names().to_vec())
}

/// Parsed ahead, after a head start of `head` batches; or, without a head start, on this thread (None).
fn run_ahead(bytes: Vec<u8>, min_rows: usize, head: Option<usize>) -> Run {
    let p = CaptureParser::new(Cursor::new(bytes), "test.pcap", &ParseConfig::default()).unwrap();
    let mut p = match head {
        Some(head) => {
            let mut p = ParseAhead::new(p);
            p.head_start(min_rows, head);
            p
        }
        None => ParseAhead::on_callers_thread(p),
    };
    let mut batches = Vec::new();
    let end = loop {
        match p.next_batch(min_rows) {
            Ok(Some(b)) => {
                batches.push((rows_of(&b, p.cmd_names()), p.counters().to_vec(), p.offset(), b.endpoints.clone()))
            }
            Ok(None) => break Ok(()),
            Err(e) => {
                assert_eq!(p.next_batch(min_rows).err(), Some(e.clone()), "the error repeats");
                break Err(e);
            }
        }
    };
    if end.is_ok() {
        assert!(matches!(p.next_batch(min_rows), Ok(None)), "nothing after the end");
    }
    (batches, end, p.cmd_names().to_vec())
}

/// Head starts of none, one, the most, and more than the most batches; and parsed on the caller's thread.
const HEADS: [Option<usize>; 5] = [Some(0), Some(1), Some(super::ahead::MAX_HEAD_START), Some(9), None];

#[test]
fn parsing_ahead_hands_out_the_same_batches_and_state() {
    for min_rows in [1, 3, 1 << 20] {
        let plain = run_plain(capture(), min_rows);
        assert!(plain.1.is_ok());
        assert!(min_rows > 1 || plain.0.len() > super::ahead::MAX_HEAD_START, "more batches than a head start");
        for head in HEADS {
            assert_eq!(run_ahead(capture(), min_rows, head), plain, "batches of at least {min_rows} rows, {head:?} ahead");
        }
    }
}

#[test]
fn parsing_ahead_fails_where_the_plain_parser_does() {
    let mut bytes = capture();
    bytes.extend([0xff; 16]); // a record header claiming 4 GiB of captured bytes
    for min_rows in [1, 1 << 20] {
        let plain = run_plain(bytes.clone(), min_rows);
        let message = plain.1.as_ref().unwrap_err().to_string();
        assert!(message.starts_with("test.pcap") && message.contains("snap length"), "{message}");
        for head in HEADS {
            assert_eq!(run_ahead(bytes.clone(), min_rows, head), plain, "batches of at least {min_rows} rows, {head:?} ahead");
        }
    }
}

/// `n` short connections, one every `every_ns`: handshake, a GET and its reply, FIN both ways, last ACK.
fn short_connections(n: u32, every_ns: i64) -> Vec<u8> {
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    let (get, value) = (&b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n"[..], &b"$1\r\nv\r\n"[..]);
    let (q, r) = (get.len() as u32, value.len() as u32);
    for i in 0..n {
        let client = SocketAddr::new([10, 1, (i >> 16) as u8, (i >> 8) as u8].into(), 1024 + (i & 0xff) as u16);
        let t = T0 + i64::from(i) * every_ns;
        let mut put = |dt: i64, s: Segment| w.packet(t + dt, &synth::ethernet(&s.ip_packet(), &[])).unwrap();
        put(0, Segment { flags: 0x02, ack: 0, ..Segment::new(client, server, 0, b"") });
        put(1, Segment { flags: 0x12, ack: 1, ..Segment::new(server, client, 0, b"") });
        put(2, Segment { ack: 1, ..Segment::new(client, server, 1, get) });
        put(3, Segment { ack: 1 + q, ..Segment::new(server, client, 1, value) });
        put(4, Segment { flags: 0x11, ack: 1 + r, ..Segment::new(client, server, 1 + q, b"") });
        put(5, Segment { flags: 0x11, ack: 2 + q, ..Segment::new(server, client, 1 + r, b"") });
        put(6, Segment { flags: 0x10, ack: 2 + r, ..Segment::new(client, server, 2 + q, b"") });
    }
    w.into_inner()
}

#[test]
fn state_is_held_for_live_connections_only() {
    // 20,000 connections over 200 s: once each has closed (and the batch with its rows was cut), nothing of
    // it may stay but the reassembler's tombstone, and tombstones go after 30 s (3,000 connections' worth).
    let (n, every) = (20_000, 10_000_000);
    let capture = Cursor::new(short_connections(n, every));
    let mut p = CaptureParser::new(capture, "many.pcap", &ParseConfig::default()).unwrap();
    let (mut rows, mut most_held, mut most_tracked) = (0, 0, 0);
    let mut ids = std::collections::BTreeSet::new();
    while let Some(b) = p.next_batch(100).unwrap() {
        rows += b.len();
        assert!(b.conn.iter().all(|c| b.endpoints.binary_search_by_key(c, |e| e.0).is_ok()), "a row's endpoints");
        ids.extend(b.endpoints.iter().map(|e| e.0));
        most_held = most_held.max(p.held_connections());
        most_tracked = most_tracked.max(p.reassembler.tracked_connections());
    }
    assert_eq!((rows, ids.len(), ids.last().copied()), (n as usize, n as usize, Some(n - 1)));
    assert!(most_held <= 200, "{most_held} connections held at once");
    assert!(most_tracked <= 3_100, "{most_tracked} connections tracked at once");
    let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
    assert_eq!((c["connections"], c["segments_after_close"], c["gaps"]), (u64::from(n), u64::from(n), 0));
}

#[test]
fn connections_that_carry_nothing_leave_nothing_behind() {
    // A scan: 50,000 SYNs answered by RSTs, no command anywhere, so no batch is ever cut. Their endpoints
    // must go all the same, without waiting for a batch.
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    let n = 50_000u32;
    for i in 0..n {
        let client = SocketAddr::new([10, 1, (i >> 16) as u8, (i >> 8) as u8].into(), 1024 + (i & 0xff) as u16);
        let t = T0 + i64::from(i) * 1000;
        let syn = Segment { flags: 0x02, ack: 0, ..Segment::new(client, server, 0, b"") };
        let rst = Segment { flags: 0x14, ack: 1, ..Segment::new(server, client, 0, b"") };
        w.packet(t, &synth::ethernet(&syn.ip_packet(), &[])).unwrap();
        w.packet(t + 1, &synth::ethernet(&rst.ip_packet(), &[])).unwrap();
    }
    let mut p = CaptureParser::new(Cursor::new(w.into_inner()), "scan.pcap", &ParseConfig::default()).unwrap();
    assert!(p.next_batch(1).unwrap().is_none());
    assert!(p.held_connections() <= super::CLOSED_BEFORE_CHECK, "{} connections held", p.held_connections());
    let c: std::collections::HashMap<_, _> = p.counters().into_iter().collect();
    assert_eq!((c["connections"], c["ignored_rsts"], c["commands"]), (u64::from(n), 0, 0));
}

#[test]
fn a_batch_of_long_keys_ends_by_its_bytes_not_only_its_rows() {
    // Forty MGETs of 40 keys of 64 KiB each: 100 MiB of keys in 1,600 rows.
    let mgets = (0..40u32).map(|i| {
        let mut request = b"*41\r\n$4\r\nMGET\r\n".to_vec();
        for k in 0..40u32 {
            let key = format!("{i:04}{k:04}").repeat(8 << 10);
            request.extend_from_slice(format!("${}\r\n{key}\r\n", key.len()).as_bytes());
        }
        let mut reply = b"*40\r\n".to_vec();
        (0..40).for_each(|_| reply.extend_from_slice(b"$-1\r\n"));
        (request, reply)
    });
    let bytes = one_connection(mgets, 60_000);
    let mut p = CaptureParser::new(Cursor::new(bytes), "big.pcap", &ParseConfig::default()).unwrap();
    let mut sizes = Vec::new();
    while let Some(b) = p.next_batch(usize::MAX).unwrap() {
        sizes.push((b.len(), b.key_data.len()));
    }
    assert_eq!(sizes.iter().map(|s| s.0).sum::<usize>(), 1600);
    assert!(sizes.len() >= 2, "{sizes:?}");
    let one_command = 40 * (64 << 10);
    assert!(sizes.iter().all(|&(_, key_bytes)| key_bytes <= super::MAX_BATCH_STRING_BYTES + one_command), "{sizes:?}");
}

#[test]
fn connections_whose_replies_never_come_share_one_budget() {
    // A capture of the client side only (a `dst port` filter, a one-way mirror): 64 connections each pipeline
    // 1 MiB of GETs that are never answered. Each would hold its 4 MiB; together they hold their shared budget.
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    let conns = 64u32;
    let client = |i: u32| SocketAddr::new([10, 1, 0, i as u8].into(), 40000);
    for i in 0..conns {
        let syn = Segment { flags: 0x02, ack: 0, ..Segment::new(client(i), server, 0, b"") };
        w.packet(T0 + i64::from(i), &synth::ethernet(&syn.ip_packet(), &[])).unwrap();
    }
    let segment: Vec<u8> = (0..40).flat_map(|k| format!("*2\r\n$3\r\nGET\r\n$8\r\nkey:{k:04}\r\n").into_bytes()).collect();
    let rounds = (1 << 20) / segment.len() as u32;
    for r in 0..rounds {
        for i in 0..conns {
            let s = Segment { ack: 1, ..Segment::new(client(i), server, 1 + r * segment.len() as u32, &segment) };
            let ts = T0 + 1_000 + i64::from(r * conns + i) * 1_000;
            w.packet(ts, &synth::ethernet(&s.ip_packet(), &[])).unwrap();
        }
    }
    let mut p = CaptureParser::new(Cursor::new(w.into_inner()), "one-way.pcap", &ParseConfig::default()).unwrap();
    let (mut rows, mut most) = (0, 0);
    while let Some(b) = p.next_batch(1000).unwrap() {
        rows += b.len();
        let open = p.sink.sessions.values().filter_map(|c| match c {
            super::Conversation::Talking(s) => Some(s.pending_bytes()),
            super::Conversation::Silent { .. } => None,
        });
        // At the end the connections are closed, still holding their commands while they pass them on.
        let held: usize = open.chain(p.sink.closing.iter().map(|c| c.session.pending_bytes())).sum();
        most = most.max(held);
    }
    assert_eq!(rows, (conns * rounds * 40) as usize, "every GET is a row");
    let budget = crate::resp::Limits::default().max_pending_bytes_total;
    assert!(most <= budget + conns as usize * segment.len(), "{most} bytes held at once, budget {budget}");
    assert!(most >= budget / 2, "{most} bytes held at once: the budget is used");
}
