//! Where the time of parsing a capture goes: each stage of the pipeline added to the previous ones, over one
//! (page-cached) capture file. `bench/bench_parse.py` measures the whole parse against tcpflow; this says
//! which stage to look at when the whole is slow.
//!
//! `cargo run --release --example parse_stages CAPTURE PORT [--repeat N] [--only STAGE] [--batch-rows N]`
//!
//! Stages, each timed alone from the start of the file (best of N, 3 by default), by wall time and by the
//! thread's CPU time (from /proc/thread-self/schedstat, so that other load on a shared machine does not count):
//!   read         pcap records out of the file (`CaptureReader`)
//!   +decode      each frame down to a TCP segment
//!   +reassembly  segments into ordered byte streams, handed to a sink that only counts bytes
//!   +resp        one RESP `Session` per connection: commands paired with reply summaries, counted
//!   +rows        the whole `parse::CaptureParser`: trace rows as columns, in batches of N rows (dropped;
//!                128 Ki by default, as `cachescope.parse.capture_source.BATCH_ROWS`)

use std::fs::File;
use std::net::SocketAddr;
use std::time::Instant;

use cachescope::capture::{CaptureCounters, CaptureReader};
use cachescope::parse::{CaptureParser, ParseConfig};
use cachescope::reassembly::{Direction, Limits, Reassembler, StreamSink};
use cachescope::resp::{self, Session};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(port)) = (args.first(), args.get(1).and_then(|p| p.parse::<u16>().ok())) else {
        eprintln!("usage: parse_stages CAPTURE PORT [--repeat N] [--only STAGE] [--batch-rows N]");
        std::process::exit(2);
    };
    let option = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let repeat: usize = option("--repeat").map_or(3, |v| v.parse().expect("--repeat N"));
    let batch_rows: usize = option("--batch-rows").map_or(1 << 17, |v| v.parse().expect("--batch-rows N"));
    let only = option("--only");
    let size = std::fs::metadata(path).unwrap().len();
    println!("{path}: {:.1} MB, port {port}, best of {repeat}", size as f64 / 1e6);
    let stages: [(&str, &dyn Fn() -> u64); 5] = [
        ("read", &|| read(path)),
        ("+decode", &|| decode(path)),
        ("+reassembly", &|| reassemble(path, port, Bytes::default()).0),
        ("+resp", &|| reassemble(path, port, Commands::default()).1),
        ("+rows", &|| rows(path, port, batch_rows)),
    ];
    let chosen = |name: &str| only.is_none_or(|o| name.trim_start_matches('+') == o);
    for (name, stage) in stages.into_iter().filter(|(name, _)| chosen(name)) {
        let (mut best, mut best_cpu) = (f64::MAX, f64::MAX);
        let mut out = 0;
        for _ in 0..repeat {
            let (t, cpu) = (Instant::now(), cpu_seconds());
            out = stage();
            best = best.min(t.elapsed().as_secs_f64());
            best_cpu = best_cpu.min(cpu_seconds() - cpu);
        }
        let mb = size as f64 / 1e6;
        let (rate, cpu_rate) = (mb / best, mb / best_cpu);
        println!("{name:>12}: {best:7.3} s {rate:6.0} MB/s   CPU {best_cpu:7.3} s {cpu_rate:6.0} MB/s   (count {out})");
    }
}

fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).map_or(f64::NAN, |ns| ns / 1e9)
}

fn reader(path: &str) -> CaptureReader<File> {
    CaptureReader::new(File::open(path).unwrap()).unwrap()
}

fn read(path: &str) -> u64 {
    let mut r = reader(path);
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        n += p.data.len() as u64;
    }
    n
}

fn decode(path: &str) -> u64 {
    let mut r = reader(path);
    let mut c = CaptureCounters::default();
    let mut n = 0;
    while let Some(p) = r.next_packet().unwrap() {
        if let Some(s) = c.decode(&p) {
            n += s.payload.len() as u64;
        }
    }
    n
}

trait Counting: StreamSink {
    fn count(&self) -> u64;
}

/// Returns (bytes delivered, what the sink counted).
fn reassemble<S: Counting>(path: &str, port: u16, mut sink: S) -> (u64, u64) {
    let mut r = reader(path);
    let mut c = CaptureCounters::default();
    let mut re = Reassembler::new(&[port], Limits::default());
    while let Some(p) = r.next_packet().unwrap() {
        if let Some(s) = c.decode(&p) {
            re.process(&s, &mut sink);
        }
    }
    re.finish(&mut sink);
    (re.stats().delivered_bytes, sink.count())
}

#[derive(Default)]
struct Bytes(u64);

impl StreamSink for Bytes {
    fn on_open(&mut self, _: u32, _: SocketAddr, _: SocketAddr, _: i64, _: bool) {}
    fn on_data(&mut self, _: u32, _: Direction, _: i64, data: &[u8]) {
        self.0 += data.len() as u64;
    }
    fn on_gap(&mut self, _: u32, _: Direction, _: i64, _: u64) {}
    fn on_close(&mut self, _: u32, _: i64) {}
}

impl Counting for Bytes {
    fn count(&self) -> u64 {
        self.0
    }
}

#[derive(Default)]
struct Commands {
    sessions: Vec<Option<Session>>,
    commands: u64,
}

impl StreamSink for Commands {
    fn on_open(&mut self, conn: u32, _: SocketAddr, _: SocketAddr, _: i64, mid_stream: bool) {
        let limits = resp::Limits::default();
        let s = if mid_stream { Session::mid_stream(limits) } else { Session::new(limits) };
        if self.sessions.len() <= conn as usize {
            self.sessions.resize_with(conn as usize + 1, || None);
        }
        self.sessions[conn as usize] = Some(s);
    }
    fn on_data(&mut self, conn: u32, dir: Direction, ts_ns: i64, data: &[u8]) {
        let n = &mut self.commands;
        if let Some(Some(s)) = self.sessions.get_mut(conn as usize) {
            s.on_data(dir, ts_ns, data, &mut |_| *n += 1);
        }
    }
    fn on_gap(&mut self, conn: u32, dir: Direction, ts_ns: i64, missing: u64) {
        let n = &mut self.commands;
        if let Some(Some(s)) = self.sessions.get_mut(conn as usize) {
            s.on_gap(dir, ts_ns, missing, &mut |_| *n += 1);
        }
    }
    fn on_close(&mut self, conn: u32, _: i64) {
        let n = &mut self.commands;
        if let Some(Some(mut s)) = self.sessions.get_mut(conn as usize).map(Option::take) {
            s.finish(&mut |_| *n += 1);
        }
    }
}

impl Counting for Commands {
    fn count(&self) -> u64 {
        self.commands
    }
}

fn rows(path: &str, port: u16, batch_rows: usize) -> u64 {
    let config = ParseConfig { ports: vec![port], ..ParseConfig::default() };
    let mut p = CaptureParser::new(File::open(path).unwrap(), path, &config).unwrap();
    let mut n = 0;
    while let Some(b) = p.next_batch(batch_rows).unwrap() {
        n += b.len() as u64;
    }
    n
}
