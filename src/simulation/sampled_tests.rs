//! `feed_sampled_records` against `feed` of the same records as lean batches: the same simulation, whatever
//! the threads, the batch sizes, the window and the records of size 0.

use std::io::Cursor;

use super::*;
use crate::sim::Options;
use crate::trace::oracle_general::{OracleGeneralReader, RECORD};

/// `n` records over a skewed set of ids (ids of every width up to 10 digits), times rising a second every 50
/// records, a size of 0 every 97th record and for the first 5.
fn records(n: u64) -> Vec<u8> {
    (0..n)
        .flat_map(|i| {
            let id = match crate::hash::mix64(i) % 100 {
                0..=59 => crate::hash::mix64(i ^ 7) % 500,
                60..=94 => crate::hash::mix64(i ^ 9) % 200_000,
                _ => crate::hash::mix64(i ^ 11) % 20_000_000_000,
            };
            let size: u32 = if i < 5 || i % 97 == 0 { 0 } else { 1 + (id % 300) as u32 };
            let ts = (1_000 + i / 50) as u32;
            [&ts.to_le_bytes()[..], &id.to_le_bytes(), &size.to_le_bytes(), &(-1i64).to_le_bytes()].concat()
        })
        .collect()
}

fn sampled(window: u64, unit: Unit, max_keys: Option<usize>, threads: usize) -> Simulation {
    let mut sim = Simulation::new(&[], Options::with_window(window), None).unwrap();
    sim.estimate_unique_reads().unwrap();
    sim.add_shards(&[10, 100, 1_000, 10_000], unit, 0.05, 3, max_keys).unwrap();
    sim.limit_threads(threads);
    sim
}

/// Everything a result reads of a simulation of sampled curves.
fn outcome(sim: &Simulation) -> String {
    let t = sim.timeline();
    let d = sim.distinct_reads().unwrap();
    let curves: Vec<_> = sim
        .curves()
        .iter()
        .map(|c| match c {
            Curve::Shards(s) => s.samples.iter().map(|x| (x.rate(), x.hit_rates(sim.lookups()))).collect::<Vec<_>>(),
            _ => unreachable!(),
        })
        .collect();
    format!("{} {:?} {:?} {:?} {:?} {} {:?} {:?}", sim.lookups(), sim.first_ts(), t.ends, t.ts, d.window_estimates(),
            d.estimate(), curves, sim.has_clock())
}

fn fed_as_batches(data: &[u8], mut sim: Simulation, batch: usize) -> (String, crate::trace::objects::ObjectStats) {
    let mut r = OracleGeneralReader::new(Cursor::new(data.to_vec()), "t").lean();
    while let Some(b) = r.next_batch(batch).unwrap() {
        let ev = Events { ts_ns: Some(&b.ts_ns), value_sizes: Some(&b.value_sizes), ..Events::reads(&b.keys) };
        sim.feed(&ev).unwrap();
    }
    (outcome(&sim), r.stats())
}

fn fed_sampled(data: &[u8], mut sim: Simulation, batch: usize) -> (String, crate::trace::objects::ObjectStats) {
    let mut r = OracleGeneralReader::new(Cursor::new(data.to_vec()), "t").lean();
    while let Some(records) = r.next_records(batch).unwrap() {
        let (lookups, zero_size) = sim.feed_sampled_records(records).unwrap();
        r.counted(lookups, zero_size);
    }
    (outcome(&sim), r.stats())
}

#[test]
fn a_sample_of_the_records_gives_the_simulation_every_record_gives() {
    let data = records(420_000);
    for (window, unit, max_keys) in [
        (10_000, Unit::Entries, None),
        (777, Unit::Bytes { entry_overhead: 50 }, None),
        (1, Unit::Entries, Some(300)),
    ] {
        let want = fed_as_batches(&data, sampled(window, unit, max_keys, 1), 1 << 20);
        for (threads, batch) in [(1, 100_000), (2, 200_000), (3, 333_333), (threads::UNLIMITED, 1 << 20), (2, 1)] {
            let got = fed_sampled(&data, sampled(window, unit, max_keys, threads), batch);
            assert_eq!(got, want, "window {window}, {threads} threads, batches of {batch}");
        }
    }
    let stats = fed_sampled(&data, sampled(10_000, Unit::Entries, None, 2), 200_000).1;
    assert_eq!((stats.requests, stats.zero_size), (420_000 - stats.zero_size, 5 + 420_000 / 97));
}

#[test]
fn only_sampled_curves_beside_the_estimated_bound_are_fed_a_sample() {
    assert!(sampled(10, Unit::Entries, None, 1).sampled_below().is_some());
    let mut exact = sampled(10, Unit::Entries, None, 1);
    exact.add_lru_curve(&[10], Unit::Entries, 1).unwrap();
    let mut with_run = Simulation::new(&[RunSpec::entries("lru", 10)], Options::with_window(10), None).unwrap();
    with_run.estimate_unique_reads().unwrap();
    with_run.add_shards(&[10], Unit::Entries, 0.1, 1, None).unwrap();
    let mut exact_bound = Simulation::new(&[], Options::with_window(10), None).unwrap();
    exact_bound.add_shards(&[10], Unit::Entries, 0.1, 1, None).unwrap();
    let mut fleet = sampled(10, Unit::Entries, None, 1);
    fleet.add_fleet_shards(&[10], Unit::Entries, 0.1, 1, None, 4, Route::RoundRobin).unwrap();
    for sim in [&mut exact, &mut with_run, &mut exact_bound, &mut fleet] {
        assert!(sim.sampled_below().is_none());
        assert!(sim.feed_sampled_records(&records(10)).is_err());
    }
    // The records of a trace are whole ones: what the reader hands on.
    assert_eq!(records(3).len(), 3 * RECORD);
}
