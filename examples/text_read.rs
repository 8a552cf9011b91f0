//! How fast the core reads a text trace into events, without Python: `bench/bench_text_readers.py` measures
//! the reader through the Python API against an earlier build; this says what one worker costs a line.
//!
//! `cargo run --release --example text_read TRACE FORMAT [--workers N] [--repeat N]`
//!
//! FORMAT is `keys`, `commands` or `monitor`. Best of N runs (3 by default) over the page-cached file, with
//! `--workers` parsing threads besides the one reading the file (1 by default, so that the time is one
//! core's). Prints MB/s, events and ns per line.

use std::fs::File;
use std::time::Instant;

use cachescope::trace::chunked::ChunkedEvents;
use cachescope::trace::{Granularity, TextFormat};

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(format)) = (args.first(), args.get(1).and_then(|f| TextFormat::from_name(f))) else {
        eprintln!("usage: text_read TRACE keys|commands|monitor [--workers N] [--repeat N]");
        std::process::exit(2);
    };
    let option = |name: &str, default: usize| {
        args.iter().position(|a| a == name).and_then(|i| args.get(i + 1)).and_then(|v| v.parse().ok()).unwrap_or(default)
    };
    let (workers, repeat) = (option("--workers", 1), option("--repeat", 3));
    let mut best = f64::INFINITY;
    let (mut events, mut lines, mut bytes) = (0, 0, 0);
    for _ in 0..repeat {
        let file = File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        let start = Instant::now();
        let mut reader = ChunkedEvents::new(file, path, format, Granularity::Field, workers);
        events = 0;
        while let Some(batch) = reader.next_batch(1 << 20).unwrap_or_else(|e| panic!("{e}")) {
            events += batch.len();
        }
        best = best.min(start.elapsed().as_secs_f64());
        (lines, bytes) = (reader.lines(), reader.bytes_read());
    }
    println!(
        "{path}: {:.0} MB/s, {events} events, {lines} lines, {:.1} ns a line ({workers} worker(s), best of {repeat})",
        bytes as f64 / best / 1e6,
        best * 1e9 / lines as f64
    );
}
