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
    let client: SocketAddr = "10.0.0.1:40000".parse().unwrap();
    let server: SocketAddr = "10.0.0.2:6379".parse().unwrap();
    let mut w = PcapWriter::new(Vec::new(), 1, 65535, true, false).unwrap();
    let mut put = |ts: i64, s: Segment| w.packet(ts, &synth::ethernet(&s.ip_packet(), &[])).unwrap();
    put(T0 - 20, Segment { flags: 0x02, ack: 0, ..Segment::new(client, server, 0, b"") });
    put(T0 - 10, Segment { flags: 0x12, ..Segment::new(server, client, 0, b"") });
    let (mut c_seq, mut s_seq) = (1u32, 1u32);
    for (i, (request, reply)) in EXCHANGES.iter().enumerate() {
        let ts = T0 + 1000 * i as i64;
        put(ts, Segment::new(client, server, c_seq, request));
        put(ts + LATENCY, Segment::new(server, client, s_seq, reply));
        c_seq += request.len() as u32;
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
type Run = (Vec<(Vec<Row>, Vec<(&'static str, u64)>, u64)>, Result<(), TraceError>, Vec<String>, usize);

fn run_plain(bytes: Vec<u8>, min_rows: usize) -> Run {
    let mut p = CaptureParser::new(Cursor::new(bytes), "test.pcap", &ParseConfig::default()).unwrap();
    let mut batches = Vec::new();
    let end = loop {
        match p.next_batch(min_rows) {
            Ok(Some(b)) => batches.push((rows_of(&b, p.cmd_names()), p.counters(), p.offset())),
            Ok(None) => break Ok(()),
            Err(e) => break Err(e),
        }
    };
    (batches, end, p.cmd_names().to_vec(), p.conns().len())
}

fn run_ahead(bytes: Vec<u8>, min_rows: usize) -> Run {
    let p = CaptureParser::new(Cursor::new(bytes), "test.pcap", &ParseConfig::default()).unwrap();
    let mut p = ParseAhead::new(p);
    let mut batches = Vec::new();
    let end = loop {
        match p.next_batch(min_rows) {
            Ok(Some(b)) => batches.push((rows_of(&b, p.cmd_names()), p.counters().to_vec(), p.offset())),
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
    (batches, end, p.cmd_names().to_vec(), p.conns().len())
}

#[test]
fn parsing_ahead_hands_out_the_same_batches_and_state() {
    for min_rows in [1, 3, 1 << 20] {
        let plain = run_plain(capture(), min_rows);
        assert!(plain.1.is_ok());
        assert_eq!(run_ahead(capture(), min_rows), plain, "batches of at least {min_rows} rows");
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
        assert_eq!(run_ahead(bytes.clone(), min_rows), plain, "batches of at least {min_rows} rows");
    }
}

