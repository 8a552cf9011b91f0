//! Throughput of RESP parsing and pairing on pipelined feature-store traffic: HMGETs of 20 fields and
//! their array replies, in batches of 100 commands, delivered in chunks of up to 64 KiB (as a reassembler
//! hands them over). Prints MB/s of input (both directions), by CPU time of the thread (from
//! /proc/thread-self/schedstat, so that other load on a shared machine does not count) and by wall time.
//! Run with `cargo run --release --example resp_throughput [commands]`.

use std::time::Instant;

use cachescope::resp::{Direction, Limits, Reply, Session};

fn main() {
    let commands: usize = std::env::args().nth(1).and_then(|a| a.parse().ok()).unwrap_or(400_000);
    let chunks = traffic(commands);
    let bytes: usize = chunks.iter().map(|(_, c)| c.len()).sum();
    let (mut best, mut best_wall) = (f64::MAX, f64::MAX);
    let mut check = (0u64, 0u64);
    for _ in 0..5 {
        let (start, cpu) = (Instant::now(), cpu_seconds());
        let mut session = Session::new(Limits::default());
        let (mut emitted, mut value_bytes) = (0u64, 0u64);
        let mut out = |c: &cachescope::resp::Command| {
            emitted += 1;
            if let Reply::Array(lens) = c.reply {
                value_bytes += lens.iter().flatten().map(|&l| l as u64).sum::<u64>();
            }
        };
        for (i, (dir, chunk)) in chunks.iter().enumerate() {
            session.on_data(*dir, i as i64, chunk, &mut out);
        }
        session.finish(&mut out);
        best_wall = best_wall.min(start.elapsed().as_secs_f64());
        best = best.min(cpu_seconds() - cpu);
        check = (emitted, value_bytes);
        assert_eq!(session.stats().paired, commands as u64);
    }
    println!(
        "{commands} HMGETs of 20 fields, {:.1} MB in {} chunks: best of 5 {:.3} s CPU = {:.0} MB/s, {:.2} M \
         commands/s ({:.0} MB/s by wall time; emitted {}, value bytes {})",
        bytes as f64 / 1e6,
        chunks.len(),
        best,
        bytes as f64 / 1e6 / best,
        commands as f64 / 1e6 / best,
        bytes as f64 / 1e6 / best_wall,
        check.0,
        check.1
    );
}

/// CPU time of this thread so far.
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/thread-self/schedstat").unwrap_or_default();
    stat.split_whitespace().next().and_then(|ns| ns.parse::<f64>().ok()).map_or(f64::NAN, |ns| ns / 1e9)
}

/// The conversation, cut into chunks of at most 64 KiB per direction and batch.
fn traffic(commands: usize) -> Vec<(Direction, Vec<u8>)> {
    let mut chunks = Vec::new();
    let mut seed = 0x2545_f491_4f6c_dd1du64;
    let mut rand = move || {
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        seed
    };
    for batch in 0..commands.div_ceil(100) {
        let (mut req, mut rep) = (Vec::new(), Vec::new());
        for c in 0..100.min(commands - batch * 100) {
            let key = format!("st_{}", 1_000_000 + (batch * 100 + c) % 8_000_000);
            req.extend(format!("*22\r\n$5\r\nHMGET\r\n${}\r\n{key}\r\n", key.len()).as_bytes());
            rep.extend(b"*20\r\n");
            for _ in 0..20 {
                let field = 1_000_000_000 + rand() % 3_000_000_000;
                req.extend(format!("$10\r\n{field}\r\n").as_bytes());
                if rand() % 10 == 0 {
                    rep.extend(b"$-1\r\n");
                } else {
                    rep.extend(b"$8\r\n\x01\x02\x03\x04\x05\x06\x07\x08\r\n");
                }
            }
        }
        for (dir, bytes) in [(Direction::Request, req), (Direction::Reply, rep)] {
            chunks.extend(bytes.chunks(64 << 10).map(|c| (dir, c.to_vec())));
        }
    }
    chunks
}
