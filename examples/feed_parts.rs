//! Where the simulation's time goes, without Python: a text trace read into memory once, then fed to
//! `Simulation` with one part added at a time. `bench/bench_trace_inputs.py` times whole commands, which vary
//! by a quarter from run to run on a shared 2-core machine; this times each part alone, on one thread.
//!
//! `cargo run --release --example feed_parts TRACE FORMAT [--capacity N] [--repeat N] [--writes MODE]`
//!
//! FORMAT is `keys`, `commands` or `monitor`; MODE `ignore` (the default, as simulate.py's), `invalidate` or
//! `update`. Each configuration is fed the whole trace in batches smaller than the simulation's threshold for
//! threads, so that all of it runs on this thread, and timed by this thread's CPU time (from
//! /proc/thread-self/schedstat, so that other load on the machine counts less); best of N (5 by default):
//!   no runs           what every simulation does besides its runs: checking the batches, the membership
//!                     (which cache keys each Redis key holds, when the trace writes), the timeline's times
//!   lru               that and one LRU run at `--capacity` (100,000 by default)
//!   infinite          that and the infinite cache (simulate.py's upper bound, always run)
//!   lru + infinite    both runs: what `simulate.py TRACE --lru CAPACITY` feeds

use std::fs::File;
use std::ops::Range;

use cachescope::sim::{Events, Options, WriteMode};
use cachescope::simulation::{RunSpec, Simulation};
use cachescope::trace::chunked::ChunkedEvents;
use cachescope::trace::{Batch, Granularity, TextFormat};

/// Events per `feed`: below the simulation's threshold for a thread per run.
const FEED_EVENTS: usize = 60_000;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (Some(path), Some(format)) = (args.first(), args.get(1).and_then(|f| TextFormat::from_name(f))) else {
        eprintln!("usage: feed_parts TRACE keys|commands|monitor [--capacity N] [--repeat N] [--writes MODE]");
        std::process::exit(2);
    };
    let option = |name: &str| args.iter().position(|a| a == name).and_then(|i| args.get(i + 1));
    let number = |name: &str, default: u64| option(name).and_then(|v| v.parse().ok()).unwrap_or(default);
    let (capacity, repeat) = (number("--capacity", 100_000), number("--repeat", 5));
    let writes = match option("--writes").map(String::as_str) {
        None | Some("ignore") => WriteMode::Ignore,
        Some("invalidate") => WriteMode::Invalidate,
        Some("update") => WriteMode::Update,
        Some(other) => {
            eprintln!("--writes {other}: choose from ignore, invalidate, update");
            std::process::exit(2);
        }
    };
    let batches = read_all(path, format);
    let events: usize = batches.iter().map(Batch::len).sum();
    println!("{path}: {events} events, best of {repeat}, one thread");
    let parts: [(&str, Vec<RunSpec>); 4] = [
        ("no runs", vec![]),
        ("lru", vec![RunSpec::entries("lru", capacity)]),
        ("infinite", vec![RunSpec::entries("infinite", 1)]),
        ("lru + infinite", vec![RunSpec::entries("lru", capacity), RunSpec::entries("infinite", 1)]),
    ];
    for (label, runs) in parts {
        let mut best = f64::INFINITY;
        let mut hits = Vec::new();
        for _ in 0..repeat {
            let mut opts = Options::with_window(10_000);
            opts.writes = writes;
            let mut sim = Simulation::new(&runs, opts, None).unwrap_or_else(|e| panic!("{e}"));
            let start = thread_cpu_s();
            for b in &batches {
                feed(&mut sim, b);
            }
            best = best.min(thread_cpu_s() - start);
            hits = sim.runs().iter().map(|r| r.hits()).collect();
        }
        println!("  {label:<15} {best:6.3} s CPU  {:6.1} ns an event  hits {hits:?}", best * 1e9 / events as f64);
    }
}

fn read_all(path: &str, format: TextFormat) -> Vec<Batch> {
    let file = File::open(path).unwrap_or_else(|e| panic!("{path}: {e}"));
    let mut reader = ChunkedEvents::new(file, path, format, Granularity::Field, 1);
    let mut batches = Vec::new();
    while let Some(batch) = reader.next_batch(1 << 20).unwrap_or_else(|e| panic!("{e}")) {
        batches.push(batch);
    }
    batches
}

/// Feeds `b` in pieces of `FEED_EVENTS`, with the columns the format has.
fn feed(sim: &mut Simulation, b: &Batch) {
    let mut at = 0;
    while at < b.len() {
        let r = at..b.len().min(at + FEED_EVENTS);
        let ev = Events {
            keys: &b.keys[r.clone()],
            ops: part(&b.ops, &r),
            entities: part(&b.entities, &r),
            fields: part(&b.fields, &r),
            key_bytes: part(&b.key_bytes, &r),
            reqs: part(&b.reqs, &r),
            ts_ns: part(&b.ts_ns, &r),
            ..Events::default()
        };
        sim.feed(&ev).unwrap_or_else(|e| panic!("{e}"));
        at = r.end;
    }
}

/// Rows `r` of a column, or None when the format has no such column (it is empty).
fn part<'a, T>(column: &'a [T], r: &Range<usize>) -> Option<&'a [T]> {
    (!column.is_empty()).then(|| &column[r.clone()])
}

/// This thread's CPU time so far, in seconds.
fn thread_cpu_s() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").expect("/proc/thread-self/schedstat");
    stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).expect("schedstat's first field") / 1e9
}
