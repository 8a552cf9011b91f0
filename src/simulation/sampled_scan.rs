//! An oracleGeneral trace read for sampled curves alone (SHARDS beside the estimated bound): each record's id
//! is hashed into its key on the threads the simulation may use, each thread over its own range of the
//! records, and only what the simulation needs goes on, in trace order: the sampled lookups (about 1% of
//! them), the raises of the unique-key sketch and the time of each window's last lookup. Reading every
//! lookup into batches of keys, times and sizes and handing them through Python cost as much as the sample
//! itself, and hashing them on the simulation's threads rather than beside them left a core idle.
//!
//! The result is the one `Simulation::feed` gives the same records as events: the sample is the curves' own
//! test (`Slices`), and a key it leaves out is in no sample (a fixed-size sample only ever narrows); the
//! sketch's registers after every read are the same, since a raise a thread drops is one its own range, or
//! the registers before the stretch, already hold.

use super::distinct::{register_of_mixed, Raise};
use crate::curve::sample::Slices;
use crate::hash::mix64;
use crate::threads::{self, Job};
use crate::trace::objects::numeric_key_inlined;
use crate::trace::oracle_general::{NS, RECORD};

/// What a scan keeps, from the simulation's state before the stretch.
pub struct ScanPlan<'a> {
    /// Keys whose place (`Slices::value`) is below this are sampled.
    pub sampled_below: u64,
    pub window: u64,
    /// Lookups before the stretch.
    pub lookups_before: u64,
    /// The unique-key sketch's registers before the stretch.
    pub registers: &'a [u8],
    /// Threads to hash on (`crate::threads`).
    pub threads: usize,
}

/// What a stretch of records gives the simulation.
#[derive(Debug, Default, PartialEq)]
pub struct SampledStretch {
    /// Requests of a size above 0, each a lookup; and those of size 0, left out (as `OracleGeneralReader`).
    pub lookups: u64,
    pub zero_size: u64,
    /// Times of the first and last lookups (ns).
    pub first_ts: Option<i64>,
    pub last_ts: i64,
    /// The time of the last lookup of each window that ends in the stretch.
    pub window_ts: Vec<i64>,
    /// The sampled lookups: key, time and size.
    pub keys: Vec<u64>,
    pub ts_ns: Vec<i64>,
    pub value_sizes: Vec<u32>,
    pub raises: Vec<Raise>,
}

/// Below this many records a stretch is hashed on one thread.
const PARALLEL_MIN_RECORDS: usize = 1 << 16;

/// Scans `records` (whole oracleGeneral records) on `plan.threads` threads, each over a range of them.
pub fn scan(records: &[u8], plan: &ScanPlan<'_>) -> SampledStretch {
    let n = records.len() / RECORD;
    let wanted = if plan.threads == threads::UNLIMITED {
        std::thread::available_parallelism().map_or(1, |p| p.get())
    } else {
        plan.threads
    };
    let parts = wanted.min(n / PARALLEL_MIN_RECORDS).max(1);
    let ranges: Vec<&[u8]> = records.chunks(n.div_ceil(parts) * RECORD).collect();
    let mut scans: Vec<RangeScan> = ranges.iter().map(|_| RangeScan::default()).collect();
    let jobs: Vec<Job<'_>> = ranges
        .iter()
        .zip(scans.iter_mut())
        .map(|(&range, out)| Box::new(move || *out = scan_range(range, plan)) as Job<'_>)
        .collect();
    threads::run_jobs(plan.threads, jobs);
    join(&ranges, scans, plan)
}

/// One thread's range: its lookups counted from 0.
#[derive(Default)]
struct RangeScan {
    lookups: u64,
    /// Records of size 0, by their index in the range (rare: libCacheSim's traces have none).
    zeros: Vec<usize>,
    keys: Vec<u64>,
    ts_ns: Vec<i64>,
    value_sizes: Vec<u32>,
    raises: Vec<Raise>,
}

fn scan_range(range: &[u8], plan: &ScanPlan<'_>) -> RangeScan {
    let mut out = RangeScan::default();
    let mut registers = plan.registers.to_vec();
    let mut lookups = 0u64;
    // Keys made a block of records at a time, before any is used: each key is a long chain of multiplies
    // that depends on nothing but its own id, and made one record at a time the chains ran one after
    // another; made side by side the processor overlaps them. Every id is hashed afresh: a table of recent
    // ids' keys (as `numeric_keys_in_place` keeps) cost more here than it saved, its hits and misses a coin
    // toss to the branch predictor.
    for (b, block) in range.chunks(RECORD * KEY_BLOCK).enumerate() {
        let mut keys = [0u64; KEY_BLOCK];
        for (key, rec) in keys.iter_mut().zip(block.chunks_exact(RECORD)) {
            *key = numeric_key_inlined(u64::from_le_bytes(rec[4..12].try_into().unwrap()));
        }
        for (j, (&key, rec)) in keys.iter().zip(block.chunks_exact(RECORD)).enumerate() {
            let size = u32::from_le_bytes(rec[12..16].try_into().unwrap());
            if size == 0 {
                out.zeros.push(b * KEY_BLOCK + j);
                continue;
            }
            let mixed = mix64(key);
            if Slices::value_mixed(mixed) < plan.sampled_below {
                out.keys.push(key);
                out.ts_ns.push(ts_of(rec));
                out.value_sizes.push(size);
            }
            let (register, rank) = register_of_mixed(mixed);
            if rank > registers[register] {
                registers[register] = rank;
                out.raises.push(Raise { at: lookups, register: register as u32, rank });
            }
            lookups += 1;
        }
    }
    out.lookups = lookups;
    out
}

/// Records whose keys are made side by side (`scan_range`).
const KEY_BLOCK: usize = 8;

#[inline]
fn ts_of(rec: &[u8]) -> i64 {
    i64::from(u32::from_le_bytes(rec[0..4].try_into().unwrap())) * NS
}

/// The ranges' scans as one stretch, in trace order.
fn join(ranges: &[&[u8]], scans: Vec<RangeScan>, plan: &ScanPlan<'_>) -> SampledStretch {
    let mut s = SampledStretch::default();
    let sampled = scans.iter().map(|r| r.keys.len()).sum();
    s.keys.reserve(sampled);
    s.ts_ns.reserve(sampled);
    s.value_sizes.reserve(sampled);
    s.raises.reserve(scans.iter().map(|r| r.raises.len()).sum());
    let window = plan.window;
    for (range, scan) in ranges.iter().zip(scans) {
        if scan.lookups > 0 {
            let before = plan.lookups_before + s.lookups;
            let ts = |j: u64| ts_of(&range[record_of(&scan.zeros, j) * RECORD..]);
            s.first_ts.get_or_insert_with(|| ts(0));
            // Window ends in this range: lookups whose 1-based place in the trace is a multiple of the window.
            let mut end = window - before % window - 1;
            while end < scan.lookups {
                s.window_ts.push(ts(end));
                end += window;
            }
            s.last_ts = ts(scan.lookups - 1);
        }
        s.raises.extend(scan.raises.iter().map(|r| Raise { at: r.at + s.lookups, ..*r }));
        s.keys.extend_from_slice(&scan.keys);
        s.ts_ns.extend_from_slice(&scan.ts_ns);
        s.value_sizes.extend_from_slice(&scan.value_sizes);
        s.lookups += scan.lookups;
        s.zero_size += scan.zeros.len() as u64;
    }
    s
}

/// The index in its range of the range's lookup `j` (0-based), past the records of size 0 before it.
fn record_of(zeros: &[usize], j: u64) -> usize {
    let mut at = j as usize;
    for &z in zeros {
        if z <= at {
            at += 1;
        } else {
            break;
        }
    }
    at
}
