//! Sampled curves at the limits where they must be exact, and near the exact curve where they sample.

use super::lru::cumulative;
use super::{LruCurve, MiniSim, Shards};
use crate::sim::events::Events;
use crate::sim::options::{Options, Unit};
use crate::sim::Membership;

fn zipf_keys(n: usize, seed: u64) -> Vec<u64> {
    (0..n as u64)
        .map(|i| {
            let u = (crate::hash::mix64(i ^ seed) >> 11) as f64 / (1u64 << 53) as f64;
            // Heavy-tailed over ~20,000 keys.
            (20_000.0 * u.powi(3)) as u64
        })
        .collect()
}

const CAPS: [u64; 6] = [10, 100, 500, 1_000, 3_000, 10_000];

fn exact(keys: &[u64]) -> Vec<u64> {
    let mut curve = LruCurve::new(&CAPS, Unit::Entries, 8).unwrap();
    curve.process(&Events::reads(keys), &Membership::new([]), &Options::with_window(1000), None);
    cumulative(&curve.counts().hits)
}

#[test]
fn at_rate_one_the_samples_are_the_stream() {
    let keys = zipf_keys(50_000, 1);
    let ev = Events::reads(&keys);
    let (members, opts) = (Membership::new([]), Options::with_window(1000));
    let want = exact(&keys);
    for max_keys in [None, Some(1 << 20)] {
        let mut shards = Shards::new(&CAPS, Unit::Entries, 1.0, 1, max_keys).unwrap();
        shards.process(&ev, &members, &opts, None);
        let (hits, total) = shards.samples[0].estimate();
        assert_eq!((total, shards.samples[0].rate()), (keys.len() as f64, 1.0));
        assert_eq!(hits.iter().map(|&h| h as u64).collect::<Vec<_>>(), want);
    }
    assert!(Shards::new(&CAPS, Unit::Entries, 0.5, 3, None).is_err(), "three halves do not fit");
    let mut mini = MiniSim::new("lru", &CAPS, Unit::Entries, &[], 1.0, 1).unwrap();
    mini.process(&ev, &members, &opts, None);
    for salt in mini.counters() {
        assert_eq!(salt.iter().map(|c| c.hits).collect::<Vec<_>>(), want);
    }
}

#[test]
fn sampled_curves_come_near_the_exact_one() {
    let keys = zipf_keys(400_000, 2);
    let ev = Events::reads(&keys);
    let (members, opts) = (Membership::new([]), Options::with_window(1000));
    let n = keys.len() as f64;
    let want: Vec<f64> = exact(&keys).iter().map(|&h| h as f64 / n).collect();
    for max_keys in [None, Some(1_500)] {
        let mut shards = Shards::new(&CAPS, Unit::Entries, 0.1, 5, max_keys).unwrap();
        shards.process(&ev, &members, &opts, None);
        let rate = shards.samples[1].rate();
        assert!(rate <= 0.1 + 1e-6 && (max_keys.is_none() || rate < 0.09), "{rate}");
        // The mean of the five samples, as the curve reports it.
        let per_sample: Vec<Vec<f64>> = shards.samples.iter().map(|s| s.hit_rates(keys.len() as u64)).collect();
        let got: Vec<f64> = (0..CAPS.len()).map(|c| per_sample.iter().map(|s| s[c]).sum::<f64>() / 5.0).collect();
        // Capacities under a few times 1 / rate are below what a sample can resolve.
        for (g, w) in got.iter().zip(&want).skip(2) {
            assert!((g - w).abs() < 0.02, "{got:?} vs {want:?} ({max_keys:?})");
        }
    }
    let mut mini = MiniSim::new("lru", &CAPS, Unit::Entries, &[], 0.1, 3).unwrap();
    mini.process(&ev, &members, &opts, None);
    let c = &mini.counters()[2];
    for (i, w) in want.iter().enumerate().skip(2) {
        let got = c[i].hits as f64 / c[i].lookups as f64;
        assert!((got - w).abs() < 0.03, "capacity {}: {got} vs {w}", CAPS[i]);
    }
}

#[test]
fn at_rate_one_a_fleets_samples_are_its_exact_curve() {
    // Every read routed (round-robin counts requests), each pod its own stack: at rate 1 the SHARDS curve of a
    // fleet is its exact curve, for a sharded and a replicated route, fixed rate and fixed size.
    use crate::fleet::Route;
    let keys = zipf_keys(60_000, 2);
    let reqs: Vec<u64> = (0..keys.len() as u64).map(|i| i / 3).collect();
    let ev = Events { reqs: Some(&reqs), ..Events::reads(&keys) };
    let (members, opts) = (Membership::new([]), Options::with_window(1000));
    for route in [Route::Entity, Route::RoundRobin] {
        let mut exact = LruCurve::fleet(&CAPS, Unit::Entries, 8, 5, route).unwrap();
        exact.process(&ev, &members, &opts, None);
        let want = cumulative(&exact.counts().hits);
        let single = {
            let mut one = LruCurve::new(&CAPS, Unit::Entries, 8).unwrap();
            one.process(&ev, &members, &opts, None);
            cumulative(&one.counts().hits)
        };
        assert_ne!(want, single, "{}: five pods are not one cache", route.name());
        for max_keys in [None, Some(1 << 20)] {
            let mut shards = Shards::fleet(&CAPS, Unit::Entries, 1.0, 1, max_keys, 5, route).unwrap();
            shards.process(&ev, &members, &opts, None);
            assert_eq!(shards.fleet_shape(), Some((5, route.name())));
            let (hits, _) = shards.samples[0].estimate();
            assert_eq!(hits.iter().map(|&h| h as u64).collect::<Vec<_>>(), want, "{}", route.name());
        }
    }
}

#[test]
fn at_rate_one_a_fleets_miniature_simulation_is_the_fleet() {
    // Rate 1, one sample: the miniature fleet is the fleet itself, pod for pod, for a sharded and a replicated
    // route; with writes that invalidate, which reach every pod.
    use crate::fleet::{Fleet, Route};
    use crate::sim::options::WriteMode;
    use crate::trace::reader::{OP_READ, OP_WRITE};
    let keys = zipf_keys(60_000, 3);
    let reqs: Vec<u64> = (0..keys.len() as u64).map(|i| i / 3).collect();
    let ops: Vec<u8> = (0..keys.len()).map(|i| if i % 53 == 7 { OP_WRITE } else { OP_READ }).collect();
    let fields = vec![1u64; keys.len()];
    let ev = Events { reqs: Some(&reqs), ops: Some(&ops), fields: Some(&fields), ..Events::reads(&keys) };
    let members = Membership::new([]);
    let opts = Options { writes: WriteMode::Invalidate, ..Options::with_window(1000) };
    for route in [Route::Entity, Route::RoundRobin] {
        let mut mini = MiniSim::fleet("s3fifo", &CAPS[2..], Unit::Entries, &[], 1.0, 1, 5, route).unwrap();
        mini.process(&ev, &members, &opts, None);
        assert_eq!(mini.fleet_shape(), Some((5, route.name())));
        for (k, &c) in CAPS[2..].iter().enumerate() {
            let mut sim = crate::simulation::Simulation::new(&[], opts.clone(), None).unwrap();
            sim.add_fleet("s3fifo", c, Unit::Entries, &[], 5, route, None).unwrap();
            sim.feed(&ev).unwrap();
            let fleet: &Fleet = &sim.fleets()[0];
            let hits: u64 = fleet.counters().iter().map(|c| c.hits).sum();
            assert_eq!(mini.counters()[0][k].hits, hits, "{} at {c}", route.name());
        }
    }
}
