//! The whole capture-to-rows pipeline (`parse::CaptureParser`: reader, decoder, reassembly, RESP, rows) on
//! broken input. Sources: the committed captures and a few synthesized ones (several interleaved
//! connections of pipelined HMGET/HGET/GET/MGET/HSET/HGETALL/MULTI traffic, RESP2 and RESP3, on Ethernet,
//! Linux cooked v2 and VLAN-tagged IPv6). Each is mutated thousands of times in a fixed, seeded way: packets
//! shuffled, repeated, dropped, cut short and re-timed (what capturing does wrong), then bytes flipped,
//! overwritten, inserted, deleted and the file truncated (what storage does wrong). Every mutant is parsed
//! to its end, in a worker thread that the test watches, and must give:
//! - no panic, and no hang: each capture finishes before a deadline, and the batch loop within a bound
//!   (every batch carries rows, so there are at most rows + 1 calls);
//! - rows only for commands whose bytes were seen: each row's key and field are a run of bytes that
//!   reassembly delivered, between two gaps, on that connection's request stream (an HGETALL field: on its
//!   reply stream), as a second, independent reassembly pass over the same capture records them;
//! - consistent values: a lookup not found has no size, a found one has one, latencies are not negative,
//!   times are the capture's.
//!
//! A failure names its mutant (`<source> round <n>`); `FUZZ_CASE='<source> round <n>' cargo test --test
//! parse_fuzz` writes that mutant to `fuzz_case.pcap` in the temporary directory, to look at.

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use cachescope::capture::synth::{self, PcapNgWriter, PcapWriter, Segment};
use cachescope::capture::{CaptureCounters, CaptureReader};
use cachescope::net::Direction;
use cachescope::parse::{CaptureParser, ParseConfig, RowBatch};
use cachescope::reassembly::{Limits, Reassembler, StreamSink};

const COMMITTED: [&str; 6] = [
    "eth_vlan_ipv4.pcap",
    "sll2_ipv4.pcap",
    "ipv6.pcapng",
    "two_interfaces.pcapng",
    "tcpdump_lo.pcap",
    "tcpdump_any.pcap",
];
const ROUNDS_PER_SOURCE: usize = 2000;
/// A capture of a few kilobytes parses in milliseconds, even unoptimized: this is a hang, not slowness.
const DEADLINE: Duration = Duration::from_secs(30);
const PORT: u16 = 6379;

/// splitmix64: every run mutates the same way; a failure names its round.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
    fn chance(&mut self, percent: usize) -> bool {
        self.below(100) < percent
    }
}

/// One captured packet, owned.
#[derive(Clone)]
struct Pkt {
    ts: i64,
    link: u32,
    data: Vec<u8>,
    orig_len: u32,
}

struct Source {
    name: String,
    file: Vec<u8>,
    packets: Vec<Pkt>,
    /// Rows the unmutated capture must give (synthesized captures only).
    rows: Option<usize>,
}

// ---- synthesized captures ----

fn resp(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

fn bulk(v: Option<&[u8]>, resp3: bool) -> Vec<u8> {
    match v {
        None if resp3 => b"_\r\n".to_vec(),
        None => b"$-1\r\n".to_vec(),
        Some(v) => [format!("${}\r\n", v.len()).as_bytes(), v, b"\r\n"].concat(),
    }
}

/// Planted in every value, sent or answered: no row's key, field or command may ever hold it.
const MARK: &[u8] = b"PLANTED";

/// A value: the marker, then 1 to `max` bytes that look like a feature (a float's text), now and then a
/// whole command whose key carries the marker (a value can spell commands), and the marker again.
fn value(rng: &mut Rng, max: usize) -> Vec<u8> {
    let n = 1 + rng.below(max);
    let mut v = MARK.to_vec();
    v.extend((0..n).map(|_| b"0123456789.e-"[rng.below(13)]));
    match rng.below(8) {
        0 => v.extend(resp(&[b"HMGET", b"PLANTEDkey", b"PLANTEDfield"])),
        1 => v.extend(resp(&[b"GET", b"PLANTEDget"])),
        2 => v.extend(b"\r\nGET PLANTEDinline\r\n"),
        _ => {}
    }
    v.extend(MARK);
    v
}

/// One command, its reply, and the rows it gives.
fn exchange(rng: &mut Rng, conn: usize, resp3: bool) -> (Vec<u8>, Vec<u8>, usize) {
    let key = format!("st_{conn}_{}", rng.below(50)).into_bytes();
    let field = |rng: &mut Rng| format!("{}", rng.next() as u32).into_bytes();
    let maybe = |rng: &mut Rng| if rng.chance(20) { None } else { Some(value(rng, 40)) };
    match rng.below(7) {
        0 | 1 => {
            let n = 1 + rng.below(6);
            let fields: Vec<Vec<u8>> = (0..n).map(|_| field(rng)).collect();
            let mut args: Vec<&[u8]> = vec![b"HMGET", &key];
            args.extend(fields.iter().map(Vec::as_slice));
            let mut reply = format!("*{n}\r\n").into_bytes();
            for _ in 0..n {
                reply.extend(bulk(maybe(rng).as_deref(), resp3));
            }
            (resp(&args), reply, n)
        }
        2 => (resp(&[b"HGET", &key, &field(rng)]), bulk(maybe(rng).as_deref(), resp3), 1),
        3 => (resp(&[b"GET", &key]), bulk(maybe(rng).as_deref(), resp3), 1),
        4 => {
            let (f, v) = (field(rng), value(rng, 30));
            (resp(&[b"HSET", &key, &f, &v]), b":1\r\n".to_vec(), 1)
        }
        5 => {
            let other = format!("plain_{}", rng.below(9)).into_bytes();
            let (a, b) = (maybe(rng), maybe(rng));
            let reply = [&b"*2\r\n"[..], &bulk(a.as_deref(), resp3), &bulk(b.as_deref(), resp3)].concat();
            (resp(&[b"MGET", &key, &other]), reply, 2)
        }
        _ => {
            let (f1, f2) = (field(rng), field(rng));
            let vals = [bulk(Some(&value(rng, 7)), resp3), bulk(Some(&value(rng, 3)), resp3)];
            let head = if resp3 { "%2\r\n" } else { "*4\r\n" };
            let reply =
                [head.as_bytes(), &bulk(Some(&f1), false), &vals[0], &bulk(Some(&f2), false), &vals[1]].concat();
            (resp(&[b"HGETALL", &key]), reply, 2)
        }
    }
}

/// A batch: the commands the client pipelines, then the server's replies.
type Batch = (Vec<u8>, Vec<u8>);

/// A connection's batches, and the rows it gives.
fn conversation(rng: &mut Rng, conn: usize, resp3: bool) -> (Vec<Batch>, usize) {
    let mut batches = Vec::new();
    let mut rows = 0;
    if resp3 {
        let hello = b"%1\r\n$5\r\nproto\r\n:3\r\n".to_vec();
        batches.push((resp(&[b"HELLO", b"3", b"AUTH", b"default", b"pw"]), hello));
    } else {
        batches.push((resp(&[b"AUTH", b"pw"]), b"+OK\r\n".to_vec()));
    }
    for b in 0..3 + rng.below(5) {
        let (mut req, mut rep) = (Vec::new(), Vec::new());
        if b == 2 {
            // A transaction: MULTI, one HMGET queued, EXEC with its reply inside.
            let (q, r, n) = exchange(rng, conn, resp3);
            req.extend([resp(&[b"MULTI"]), q, resp(&[b"EXEC"])].concat());
            rep.extend([&b"+OK\r\n+QUEUED\r\n*1\r\n"[..], &r].concat());
            rows += n;
        }
        for _ in 0..1 + rng.below(5) {
            let (q, r, n) = exchange(rng, conn, resp3);
            req.extend(q);
            rep.extend(r);
            rows += n;
        }
        batches.push((req, rep));
    }
    (batches, rows)
}

/// The segments of a connection, in the order they were sent: handshake, batches cut into random sizes,
/// close. Acknowledgments are what the receiver had received.
fn segments(rng: &mut Rng, client: SocketAddr, server: SocketAddr, batches: &[Batch]) -> Vec<Vec<u8>> {
    let isn = [rng.next() as u32, rng.next() as u32];
    let mut sent = [0u32; 2];
    let mut out = Vec::new();
    let seg = |from_client: bool, sent: &[u32; 2], flags: u8, payload: &[u8]| {
        let (me, peer) = if from_client { (0, 1) } else { (1, 0) };
        let (src, dst) = if from_client { (client, server) } else { (server, client) };
        let seq = isn[me].wrapping_add(1).wrapping_add(sent[me]);
        let ack = isn[peer].wrapping_add(1).wrapping_add(sent[peer]);
        Segment { src, dst, seq, ack, flags, payload, ip_options: &[], tcp_options: &[] }.ip_packet()
    };
    let syn =
        Segment { src: client, dst: server, seq: isn[0], ack: 0, flags: 0x02, payload: &[], ip_options: &[], tcp_options: &[] };
    out.push(syn.ip_packet());
    let synack = Segment { src: server, dst: client, seq: isn[1], ack: isn[0].wrapping_add(1), flags: 0x12, ..syn };
    out.push(synack.ip_packet());
    out.push(seg(true, &sent, 0x10, b""));
    for (req, rep) in batches {
        for (from_client, bytes) in [(true, req), (false, rep)] {
            let mut at = 0;
            while at < bytes.len() {
                let n = (1 + rng.below(120)).min(bytes.len() - at);
                out.push(seg(from_client, &sent, 0x18, &bytes[at..at + n]));
                sent[usize::from(!from_client)] += n as u32;
                at += n;
            }
        }
    }
    out.push(seg(true, &sent, 0x11, b""));
    sent[0] += 1;
    out.push(seg(false, &sent, 0x11, b""));
    sent[1] += 1;
    out.push(seg(true, &sent, 0x10, b""));
    out
}

/// `conns` connections interleaved on one link type; a pcap (pcapng for VLAN-tagged IPv6).
fn synthesized(seed: u64, conns: usize, link: u32, v6: bool) -> Source {
    let mut rng = Rng(seed);
    let mut streams = Vec::new();
    let mut rows = 0;
    for c in 0..conns {
        let (client, server): (SocketAddr, SocketAddr) = if v6 {
            (format!("[fd00::{}]:{}", c + 1, 40000 + c).parse().unwrap(), format!("[fd00::63]:{PORT}").parse().unwrap())
        } else {
            (format!("10.0.{c}.1:{}", 40000 + c).parse().unwrap(), format!("10.0.0.99:{PORT}").parse().unwrap())
        };
        let (batches, n) = conversation(&mut rng, c, c % 2 == 1);
        rows += n;
        streams.push(segments(&mut rng, client, server, &batches).into_iter());
    }
    let mut packets = Vec::new();
    let mut ts = 1_700_000_000_000_000_000i64;
    while !streams.is_empty() {
        let i = rng.below(streams.len());
        match streams[i].next() {
            Some(ip) => {
                ts += 1000 + rng.below(50_000) as i64;
                let data = if v6 { synth::ethernet(&ip, &[100]) } else { synth::frame(link, &ip) };
                packets.push(Pkt { ts, link, orig_len: data.len() as u32, data });
            }
            None => {
                streams.remove(i);
            }
        }
    }
    let file = write(&packets, v6);
    Source { name: format!("synthesized {seed:#x}"), file, packets, rows: Some(rows) }
}

// ---- reading and writing packets ----

fn read_packets(file: &[u8]) -> Vec<Pkt> {
    let mut reader = CaptureReader::new(file).unwrap();
    let mut out = Vec::new();
    while let Some(p) = reader.next_packet().unwrap() {
        out.push(Pkt { ts: p.ts_ns, link: p.link_type, data: p.data.to_vec(), orig_len: p.orig_len });
    }
    out
}

/// Packets as a capture file: pcap when they share a link type (unless `ng`), else pcapng with an interface
/// per link type, in nanoseconds. Captured and original lengths are kept as given.
fn write(packets: &[Pkt], ng: bool) -> Vec<u8> {
    let mut links: Vec<u32> = Vec::new();
    for p in packets {
        if !links.contains(&p.link) {
            links.push(p.link);
        }
    }
    if links.len() <= 1 && !ng {
        let link = links.first().copied().unwrap_or(1);
        let mut w = PcapWriter::new(Vec::new(), link, 262_144, true, false).unwrap();
        for p in packets {
            w.record(p.ts, &p.data, p.orig_len).unwrap();
        }
        return w.into_inner();
    }
    let mut w = PcapNgWriter::new(Vec::new(), false).unwrap();
    for &link in &links {
        w.interface(link as u16, 262_144, Some(9), None).unwrap();
    }
    for p in packets {
        let iface = links.iter().position(|&l| l == p.link).unwrap() as u32;
        let ts = p.ts.max(0) as u64;
        let mut body = Vec::with_capacity(20 + p.data.len());
        for v in [iface, (ts >> 32) as u32, ts as u32, p.data.len() as u32, p.orig_len] {
            body.extend_from_slice(&v.to_le_bytes());
        }
        body.extend_from_slice(&p.data);
        w.block(6, &body).unwrap();
    }
    w.into_inner()
}

// ---- mutations ----

/// What capturing does wrong: reordering, duplicates, drops, snap-length cuts, clock jumps.
fn mutate_packets(rng: &mut Rng, packets: &mut Vec<Pkt>) {
    for _ in 0..1 + rng.below(8) {
        if packets.is_empty() {
            return;
        }
        let i = rng.below(packets.len());
        match rng.below(6) {
            0 => {
                let j = (i + 1 + rng.below(4)).min(packets.len() - 1);
                packets.swap(i, j);
            }
            1 => {
                let copy = packets[i].clone();
                let at = (i + rng.below(6)).min(packets.len());
                packets.insert(at, copy);
            }
            2 => {
                packets.remove(i);
            }
            3 => {
                let keep = rng.below(packets[i].data.len() + 1);
                packets[i].data.truncate(keep);
            }
            4 => packets[i].ts += [-1_000_000_000, -1, 1, 3_600_000_000_000][rng.below(4)],
            _ => {
                // A window of packets in random order.
                let end = (i + 2 + rng.below(8)).min(packets.len());
                for k in (i + 1..end).rev() {
                    let j = i + rng.below(k - i + 1);
                    packets.swap(k, j);
                }
            }
        }
    }
}

/// What storage does wrong: flipped and overwritten bytes, length fields made absurd, bytes inserted and
/// deleted, the file cut.
fn mutate_bytes(rng: &mut Rng, file: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(6) {
        if file.is_empty() {
            return;
        }
        let at = rng.below(file.len());
        match rng.below(7) {
            0 => file[at] ^= 1 << rng.below(8),
            1 => file[at] = rng.next() as u8,
            2 => {
                let v = [0u32, 1, 0xffff_ffff, 0x7fff_fff0, 60, 4096][rng.below(6)];
                let end = (at + 4).min(file.len());
                file[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
            }
            3 => file.truncate(at),
            4 => file.insert(at, rng.next() as u8),
            5 => {
                file.remove(at);
            }
            _ => {
                let end = (at + rng.below(64)).min(file.len());
                file.drain(at..end);
            }
        }
    }
}

// ---- the independent pass: what reassembly delivered ----

/// Per connection and direction, the runs of delivered bytes between gaps.
#[derive(Default)]
struct Delivered {
    runs: HashMap<(u32, bool), Vec<Vec<u8>>>,
    gap_before: HashMap<(u32, bool), bool>,
}

impl StreamSink for Delivered {
    fn on_open(&mut self, _: u32, _: SocketAddr, _: SocketAddr, _: i64, _: bool) {}
    fn on_data(&mut self, conn: u32, dir: Direction, _: i64, data: &[u8]) {
        let k = (conn, dir == Direction::Request);
        let gap = self.gap_before.remove(&k).is_some();
        let runs = self.runs.entry(k).or_default();
        if runs.is_empty() || gap {
            runs.push(Vec::new());
        }
        runs.last_mut().unwrap().extend_from_slice(data);
    }
    fn on_gap(&mut self, conn: u32, dir: Direction, _: i64, _: u64) {
        self.gap_before.insert((conn, dir == Direction::Request), true);
    }
    fn on_close(&mut self, _: u32, _: i64) {}
}

impl Delivered {
    fn contains(&self, conn: u32, request: bool, needle: &[u8]) -> bool {
        self.runs.get(&(conn, request)).is_some_and(|runs| {
            runs.iter().any(|r| needle.is_empty() || r.windows(needle.len()).any(|w| w == needle))
        })
    }
}

/// The delivered bytes and the capture's time range, read the way the parser reads (to its first error).
fn deliver(file: &[u8]) -> (Delivered, i64, i64) {
    let mut d = Delivered::default();
    let (mut lo, mut hi) = (i64::MAX, i64::MIN);
    let Ok(mut reader) = CaptureReader::new(file) else { return (d, lo, hi) };
    let mut counters = CaptureCounters::default();
    let mut re = Reassembler::new(&[PORT], Limits::default());
    while let Ok(Some(p)) = reader.next_packet() {
        if let Some(seg) = counters.decode(&p) {
            lo = lo.min(seg.ts_ns);
            hi = hi.max(seg.ts_ns);
            re.process(&seg, &mut d);
        }
    }
    re.finish(&mut d);
    (d, lo, hi)
}

/// A key or field as the trace holds it back to bytes: verbatim when valid UTF-8, else `\xHH` escapes.
fn unescape(text: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(text.len());
    let mut i = 0;
    while i < text.len() {
        match (text[i], text.get(i + 1)) {
            (b'\\', Some(b'\\')) => {
                out.push(b'\\');
                i += 2;
            }
            (b'\\', Some(b'x')) if i + 4 <= text.len() => {
                let hex = std::str::from_utf8(&text[i + 2..i + 4]).ok().and_then(|h| u8::from_str_radix(h, 16).ok());
                out.push(hex.unwrap_or(b'?'));
                i += 4;
            }
            (b, _) => {
                out.push(b);
                i += 1;
            }
        }
    }
    out
}

fn seen(d: &Delivered, conn: u32, request: bool, text: &[u8]) -> bool {
    d.contains(conn, request, text) || d.contains(conn, request, &unescape(text))
}

// ---- one parse ----

#[derive(Default, Debug)]
struct Tally {
    parses: usize,
    errors: usize,
    rows: usize,
    unmutated_checked: usize,
}

/// Parses a capture to its end and checks its rows; returns (rows, ended in an error).
fn parse_and_check(file: &[u8], what: &str, bytes_intact: bool) -> (usize, bool) {
    if std::env::var("FUZZ_CASE").is_ok_and(|c| c == what) {
        std::fs::write(std::env::temp_dir().join("fuzz_case.pcap"), file).unwrap();
    }
    let config = ParseConfig::default();
    let Ok(mut parser) = CaptureParser::new(file, "fuzz", &config) else { return (0, true) };
    let mut batches = Vec::new();
    let mut calls = 0usize;
    let mut rows = 0usize;
    let failed = loop {
        calls += 1;
        assert!(calls <= rows + 2, "{what}: {calls} batch calls for {rows} rows");
        match parser.next_batch(1 + calls % 7) {
            Ok(Some(b)) => {
                assert!(!b.is_empty(), "{what}: an empty batch");
                rows += b.len();
                batches.push(b);
            }
            Ok(None) => break false,
            Err(e) => {
                assert!(e.to_string().starts_with("fuzz: "), "{what}: {e}");
                break true;
            }
        }
    };
    let counters: HashMap<&str, u64> = parser.counters().into_iter().collect();
    assert!(counters["packets"] as usize <= file.len() / 16 + 1, "{what}: {} packets", counters["packets"]);
    // After an error the rows of the packets read so far stay counted but are not handed out.
    assert!(counters["rows"] as usize == rows || failed && counters["rows"] as usize > rows, "{what}");
    let (delivered, lo, hi) = deliver(file);
    let conns = counters["connections"] as u32;
    let cmds = parser.cmd_names().to_vec();
    for b in &batches {
        check_batch(b, &delivered, (lo, hi), conns, &cmds, what, bytes_intact);
    }
    (rows, failed)
}

/// `planted_checked`: the capture's bytes are as sent (only its packets were lost, repeated, reordered or
/// cut): a row may then never hold a planted value. Bytes flipped in storage can turn a value's text into
/// anything, a key included, as a client could have sent it.
fn check_batch(
    b: &RowBatch,
    d: &Delivered,
    (lo, hi): (i64, i64),
    conns: u32,
    cmds: &[String],
    what: &str,
    planted_checked: bool,
) {
    assert_eq!(*b.key_offsets.last().unwrap() as usize, b.key_data.len(), "{what}");
    assert_eq!(*b.field_offsets.last().unwrap() as usize, b.field_data.len(), "{what}");
    for i in 0..b.len() {
        let key = &b.key_data[b.key_offsets[i] as usize..b.key_offsets[i + 1] as usize];
        let field = &b.field_data[b.field_offsets[i] as usize..b.field_offsets[i + 1] as usize];
        let conn = b.conn[i];
        let cmd = &cmds[b.cmd[i] as usize];
        let (k, f) = (String::from_utf8_lossy(key), String::from_utf8_lossy(field));
        let row = format!("{what}: row {i} {cmd} {k:?} {f:?}");
        assert!(conn < conns && b.op[i] <= 2, "{row}");
        assert!(b.endpoints.binary_search_by_key(&conn, |e| e.0).is_ok(), "{row}: no endpoints for its connection");
        if planted_checked {
            for text in [key, field, cmd.as_bytes()] {
                assert!(!text.windows(MARK.len()).any(|w| w == MARK), "{row}: a planted value reached a row");
            }
        }
        assert!(seen(d, conn, true, key), "{row}: the key was never delivered on its connection");
        if b.field_valid[i] {
            assert!(seen(d, conn, cmd != "HGETALL", field), "{row}: the field was never delivered");
        }
        match b.found[i] {
            0 => assert_eq!(b.value_size[i], -1, "{row}"),
            1 => assert!(b.value_size[i] >= 0, "{row}"),
            f => assert!(f == -1 && (b.op[i] != 0 || b.value_size[i] == -1), "{row}"),
        }
        assert!(b.latency_ns[i] >= -1, "{row}");
        assert!(b.ts_ns[i] >= lo && b.ts_ns[i] <= hi, "{row}: time {} outside the capture", b.ts_ns[i]);
    }
}

/// Every mutant of every source, in order; reports each finished parse on `done`.
fn run_all(sources: &[Source], done: &mpsc::Sender<usize>) -> Tally {
    let mut tally = Tally::default();
    let mut rng = Rng(0x5eed_cafe);
    let mut case = 0;
    for s in sources {
        if let Some(want) = s.rows {
            let (rows, failed) = parse_and_check(&s.file, &s.name, true);
            assert!(!failed && rows == want, "{}: {rows} rows, {want} expected", s.name);
            tally.unmutated_checked += 1;
        }
        for round in 0..ROUNDS_PER_SOURCE {
            let what = format!("{} round {round}", s.name);
            let mode = rng.below(3);
            let file = match mode {
                0 => {
                    let mut f = s.file.clone();
                    mutate_bytes(&mut rng, &mut f);
                    f
                }
                _ => {
                    let mut packets = s.packets.clone();
                    mutate_packets(&mut rng, &mut packets);
                    let mut f = write(&packets, rng.chance(30));
                    if mode == 2 {
                        mutate_bytes(&mut rng, &mut f);
                    }
                    f
                }
            };
            let (rows, failed) = parse_and_check(&file, &what, mode == 1);
            tally.parses += 1;
            tally.rows += rows;
            tally.errors += usize::from(failed);
            case += 1;
            let _ = done.send(case);
        }
    }
    tally
}

#[test]
fn mutated_captures_never_panic_hang_or_invent_rows() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures");
    let mut sources: Vec<Source> = COMMITTED
        .iter()
        .map(|name| {
            let file = std::fs::read(dir.join(name)).unwrap();
            Source { name: name.to_string(), packets: read_packets(&file), file, rows: None }
        })
        .collect();
    sources.push(synthesized(1, 3, 1, false));
    sources.push(synthesized(2, 2, 276, false));
    sources.push(synthesized(3, 2, 1, true));
    let total = sources.len() * ROUNDS_PER_SOURCE;
    let started = Instant::now();
    let (tx, rx) = mpsc::channel();
    let worker = std::thread::spawn(move || run_all(&sources, &tx));
    let mut finished = 0;
    while finished < total {
        match rx.recv_timeout(DEADLINE) {
            Ok(n) => finished = n,
            Err(mpsc::RecvTimeoutError::Timeout) => panic!("mutant {} has not finished in {DEADLINE:?}", finished + 1),
            Err(mpsc::RecvTimeoutError::Disconnected) => break,
        }
    }
    let tally = match worker.join() {
        Ok(t) => t,
        Err(_) => panic!("the pipeline panicked on mutant {} (see above)", finished + 1),
    };
    eprintln!("{tally:?} in {:?}", started.elapsed());
    assert_eq!(tally.parses, total);
    assert_eq!(tally.unmutated_checked, 3);
    // The mutants reach both ends: captures that still give many rows, and files the reader refuses.
    assert!(tally.rows > 10 * total && tally.errors > total / 10 && tally.errors < total / 2, "{tally:?}");
}
