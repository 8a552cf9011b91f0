//! Throughput of the capture stage: pcap reading alone, then reading plus decoding every frame to a TCP
//! segment, over a capture file (page-cached, as a benchmark run reads it the second time).
//!
//! `cargo run --release --example capture_throughput [CAPTURE] [--mb N]`
//!
//! Without CAPTURE it writes a synthetic `tcpdump -i lo`-like capture of Redis feature-store traffic (N MB,
//! 256 by default) to the temp directory: 64 connections, HMGET commands of 1-40 fields, replies of one
//! value per field, and a bare ACK after every third reply; frames average a few hundred bytes, the hard
//! case for per-packet costs.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Instant;

use cachescope::capture::synth::{self, PcapWriter, Segment};
use cachescope::capture::{CaptureCounters, CaptureReader};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let mb = args.iter().position(|a| a == "--mb").and_then(|i| args.get(i + 1)).map_or(256, |v| v.parse().unwrap());
    let path = match args.first().filter(|a| !a.starts_with("--")) {
        Some(p) => PathBuf::from(p),
        None => {
            let p = std::env::temp_dir().join(format!("cachescope_loopback_{mb}mb.pcap"));
            if !p.exists() {
                generate(&p, mb << 20).unwrap();
            }
            p
        }
    };
    let size = std::fs::metadata(&path).unwrap().len();
    println!("{}: {:.1} MB", path.display(), size as f64 / 1e6);
    for _ in 0..3 {
        let (secs, packets) = timed(|| read_only(&path));
        report("read", size, secs, packets);
        let (secs, c) = timed(|| read_and_decode(&path));
        report("read+decode", size, secs, c.packets);
        assert_eq!(c.packets, packets);
        println!("  segments {} skipped {} payload-missing {}", c.segments, c.skipped(), c.missing_bytes);
    }
}

fn timed<T>(f: impl FnOnce() -> T) -> (f64, T) {
    let t = Instant::now();
    let out = f();
    (t.elapsed().as_secs_f64(), out)
}

fn report(what: &str, size: u64, secs: f64, packets: u64) {
    println!(
        "{what:>12}: {:7.0} MB/s  {:6.1} M packets/s  ({:.3} s)",
        size as f64 / 1e6 / secs,
        packets as f64 / 1e6 / secs,
        secs
    );
}

fn read_only(path: &PathBuf) -> u64 {
    let mut reader = CaptureReader::new(File::open(path).unwrap()).unwrap();
    let (mut packets, mut sum) = (0u64, 0u64);
    while let Some(p) = reader.next_packet().unwrap() {
        packets += 1;
        sum += p.data.len() as u64;
    }
    std::hint::black_box(sum);
    packets
}

fn read_and_decode(path: &PathBuf) -> CaptureCounters {
    let mut reader = CaptureReader::new(File::open(path).unwrap()).unwrap();
    let mut counters = CaptureCounters::default();
    let mut sum = 0u64;
    while let Some(p) = reader.next_packet().unwrap() {
        if let Some(seg) = counters.decode(&p) {
            sum = sum.wrapping_add(seg.seq as u64 + seg.payload.len() as u64 + seg.src.port() as u64);
        }
    }
    std::hint::black_box(sum);
    counters.truncated_tail = reader.truncated_tail();
    counters
}

/// xorshift64: reproducible traffic.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

fn generate(path: &PathBuf, bytes: usize) -> std::io::Result<()> {
    eprintln!("writing {} ...", path.display());
    let out = BufWriter::with_capacity(1 << 20, File::create(path)?);
    let mut w = PcapWriter::new(out, 1, 262144, false, false)?;
    let server: SocketAddr = "127.0.0.1:6379".parse().unwrap();
    let mut seqs = vec![(1u32, 1u32); 64];
    let mut rng = Rng(0x1234_5678_9abc_def1);
    let (mut written, mut ts, mut n) = (0usize, 1_700_000_000_000_000_000i64, 0u64);
    let (mut cmd, mut reply) = (Vec::new(), Vec::new());
    while written < bytes {
        let conn = rng.below(64) as usize;
        let client: SocketAddr = format!("127.0.0.1:{}", 40000 + conn).parse().unwrap();
        let fields = 1 + rng.below(40) as usize;
        cmd.clear();
        cmd.extend_from_slice(format!("*{}\r\n$5\r\nHMGET\r\n", fields + 2).as_bytes());
        let key = format!("st_{}", rng.below(10_000_000));
        cmd.extend_from_slice(format!("${}\r\n{key}\r\n", key.len()).as_bytes());
        reply.clear();
        reply.extend_from_slice(format!("*{fields}\r\n").as_bytes());
        for _ in 0..fields {
            cmd.extend_from_slice(format!("$10\r\n{:010}\r\n", rng.below(4_294_967_296)).as_bytes());
            if rng.below(10) == 0 {
                reply.extend_from_slice(b"$-1\r\n");
            } else {
                let v = 8 + rng.below(24) as usize;
                reply.extend_from_slice(format!("${v}\r\n{}\r\n", "7".repeat(v)).as_bytes());
            }
        }
        let (c_seq, s_seq) = seqs[conn];
        let mut frames = vec![
            Segment { ack: s_seq, ..Segment::new(client, server, c_seq, &cmd) },
            Segment { ack: c_seq + cmd.len() as u32, ..Segment::new(server, client, s_seq, &reply) },
        ];
        n += 1;
        if n % 3 == 0 {
            frames.push(Segment {
                ack: s_seq + reply.len() as u32,
                flags: 0x10,
                ..Segment::new(client, server, c_seq + cmd.len() as u32, b"")
            });
        }
        for s in &frames {
            ts += 20_000;
            let frame = synth::ethernet(&s.ip_packet(), &[]);
            w.packet(ts, &frame)?;
            written += 16 + frame.len();
        }
        seqs[conn] = (c_seq.wrapping_add(cmd.len() as u32), s_seq.wrapping_add(reply.len() as u32));
    }
    w.into_inner().flush()
}
