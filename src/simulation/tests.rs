//! Hand-worked cases: each expected number below is derived in the comment next to it.

use super::*;
use crate::sim::{Counters, WriteMode};
use crate::trace::reader::{OP_DELETE, OP_READ, OP_WRITE};

fn entries(policies: &[(&str, u64)], window: u64) -> Simulation {
    let p: Vec<(String, u64)> = policies.iter().map(|(n, c)| (n.to_string(), *c)).collect();
    Simulation::entries(&p, window).unwrap()
}

#[test]
fn windows_split_across_batches() {
    let mut sim = entries(&[("lru", 2), ("infinite", 0)], 3);
    let keys = [1u64, 1, 2, 3, 1, 2, 2, 4];
    let ts = [10i64, 11, 12, 13, 14, 15, 16, 17];
    sim.feed(&Events { ts_ns: Some(&ts[..4]), ..Events::reads(&keys[..4]) }).unwrap();
    sim.feed(&Events { ts_ns: Some(&ts[4..]), ..Events::reads(&keys[4..]) }).unwrap();
    let t = sim.timeline();
    assert_eq!(t.ends, vec![3, 6, 8]);
    assert_eq!(t.ts, vec![12, 15, 17]);
    // lru(2): 1m 1h 2m | 3m 1m 2m | 2h 4m
    assert_eq!(t.hits[0], vec![1, 0, 1]);
    // infinite: 1m 1h 2m | 3m 1h 2h | 2h 4m
    assert_eq!(t.hits[1], vec![1, 2, 1]);
    assert_eq!(sim.runs()[0].hits(), 2);
    assert_eq!(sim.runs()[1].resident(), 4);
}

#[test]
fn parallel_runs_agree_with_serial() {
    let keys: Vec<u64> = (0..200_000u64).map(|i| crate::hash::mix64(i) % 5_000).collect();
    let mut together = entries(&[("lru", 100), ("lru", 1000)], 1000);
    together.feed(&Events::reads(&keys)).unwrap();
    for (i, cap) in [100, 1000].into_iter().enumerate() {
        let mut alone = entries(&[("lru", cap)], 1000);
        for chunk in keys.chunks(999) {
            alone.feed(&Events::reads(chunk)).unwrap();
        }
        assert_eq!(alone.runs()[0].hits(), together.runs()[i].hits());
        assert_eq!(alone.timeline().hits[0], together.timeline().hits[i]);
    }
    assert!(together.timeline().ts.is_empty());
}

#[test]
fn the_general_loop_agrees_with_the_plain_one() {
    let keys: Vec<u64> = (0..50_000u64).map(|i| crate::hash::mix64(i) % 3_000).collect();
    let reqs: Vec<u64> = (0..keys.len() as u64).map(|i| i / 7).collect();
    let mut plain = entries(&[("lru", 500)], 100);
    plain.feed(&Events::reads(&keys)).unwrap();
    let mut general = entries(&[("lru", 500)], 100);
    general.feed(&Events { reqs: Some(&reqs), ..Events::reads(&keys) }).unwrap();
    assert_eq!(plain.runs()[0].hits(), general.runs()[0].hits());
    assert_eq!(plain.timeline().hits, general.timeline().hits);
    assert_eq!(general.runs()[0].counters().commands, keys.len() as u64 / 7 + 1);
    // Without command indices every lookup is its own command, served when it hits, in either loop.
    let ops = vec![crate::trace::reader::OP_READ; keys.len()];
    let mut by_op = entries(&[("lru", 500)], 100);
    by_op.feed(&Events { ops: Some(&ops), ..Events::reads(&keys) }).unwrap();
    let (p, g) = (plain.runs()[0].counters(), by_op.runs()[0].counters());
    assert_eq!((p.commands, p.commands_served), (g.commands, g.commands_served));
    assert_eq!(p.commands_served, p.hits);
}

#[test]
fn mixing_clocked_and_unclocked_batches_is_an_error() {
    let mut sim = entries(&[("lru", 2)], 3);
    sim.feed(&Events { ts_ns: Some(&[1]), ..Events::reads(&[1]) }).unwrap();
    assert!(sim.feed(&Events::reads(&[2])).is_err());
}

/// keys, ops, entities, fields, reqs.
type TraceColumns = (Vec<u64>, Vec<u8>, Vec<u64>, Vec<u64>, Vec<u64>);

/// One HMGET of fields 1, 2 on entity 100, then a write of field 1, a delete of the whole entity, reads.
fn freshness_trace() -> TraceColumns {
    let keys = vec![1, 2, 1, 2, 1, 100, 1, 2];
    let ops = vec![OP_READ, OP_READ, OP_WRITE, OP_READ, OP_READ, OP_DELETE, OP_READ, OP_READ];
    let entities = vec![100; 8];
    let fields = vec![11, 12, 11, 12, 11, 0, 11, 12];
    let reqs = vec![0, 0, 1, 2, 2, 3, 4, 4];
    (keys, ops, entities, fields, reqs)
}

fn run_freshness(mode: WriteMode) -> Counters {
    let (keys, ops, entities, fields, reqs) = freshness_trace();
    let mut opts = Options::with_window(100);
    opts.writes = mode;
    let mut sim = Simulation::new(&[RunSpec::entries("lru", 10)], opts, None).unwrap();
    sim.feed(&Events {
        keys: &keys,
        ops: Some(&ops),
        entities: Some(&entities),
        fields: Some(&fields),
        reqs: Some(&reqs),
        ..Events::default()
    })
    .unwrap();
    sim.runs()[0].counters()
}

#[test]
fn writes_ignored_leave_stale_reads() {
    // Reads: 1m 2m | 2h 1h(stale: written) | 1h(stale) 2h(stale: entity deleted)
    let c = run_freshness(WriteMode::Ignore);
    assert_eq!((c.lookups, c.hits, c.stale_reads, c.invalidations), (6, 4, 3, 0));
    // Commands with lookups: req 0 (miss), 2 (served), 4 (served).
    assert_eq!((c.commands, c.commands_served), (3, 2));
}

#[test]
fn writes_invalidate() {
    // 1m 2m | write 1 removes 1 | 2h 1m | DEL 100 removes 1, 2 | 1m 2m
    let c = run_freshness(WriteMode::Invalidate);
    assert_eq!((c.hits, c.stale_reads, c.invalidations), (1, 0, 3));
    assert_eq!((c.commands, c.commands_served), (3, 0));
}

#[test]
fn writes_update_in_place_but_deletes_remove() {
    // 1m 2m | write 1 keeps 1 | 2h 1h | DEL removes 1, 2 | 1m 2m
    let c = run_freshness(WriteMode::Update);
    assert_eq!((c.hits, c.invalidations), (2, 2));
}

fn clocked_sim(opts: Options, keys: &[u64], ts: &[i64], fields: Option<&[u64]>) -> Counters {
    let ops = vec![OP_READ; keys.len()];
    let mut sim = Simulation::new(&[RunSpec::entries("lru", 10)], opts, None).unwrap();
    sim.feed(&Events { keys, ts_ns: Some(ts), ops: Some(&ops), fields, ..Events::default() }).unwrap();
    sim.runs()[0].counters()
}

#[test]
fn ttl_expires_entries() {
    let mut opts = Options::with_window(100);
    opts.ttl_ns = Some(10);
    // key 1 at t=0 (m, expires 10), t=5 (h), t=10 (expired: m, expires 20), t=19 (h), t=30 (m)
    let c = clocked_sim(opts, &[1, 1, 1, 1, 1], &[0, 5, 10, 19, 30], None);
    assert_eq!((c.hits, c.expirations), (2, 2));
}

#[test]
fn restarts_empty_the_cache() {
    let mut opts = Options::with_window(100);
    opts.restart_every_ns = Some(100);
    // t=0 m, t=50 h, t=100 restart then m, t=150 h, t=200 restart then m; explicit restart at 160 too.
    opts.restarts_at = vec![160];
    let c = clocked_sim(opts, &[1, 1, 1, 1, 1, 1], &[0, 50, 100, 150, 170, 200], None);
    // t=170: after the restart at 160: m. So hits at 50 and 150 only.
    assert_eq!((c.hits, c.restarts), (2, 3));
}

#[test]
fn restarts_in_a_gap_count_once() {
    let mut opts = Options::with_window(100);
    opts.restart_every_ns = Some(1);
    // A gap of 10^12 intervals between lookups: one restart (at the last interval before t), not 10^12.
    let c = clocked_sim(opts, &[1, 1, 1], &[0, 1_000_000_000_000, 1_000_000_000_000], None);
    assert_eq!((c.hits, c.restarts), (1, 1));
}

#[test]
fn refresh_evicts_every_value_of_a_feature() {
    let mut opts = Options::with_window(100);
    opts.refreshes = vec![(50, 11)];
    // Keys 1 (field 11) and 2 (field 12) cached at t=0,1; the refresh of field 11 at t=50 evicts key 1 only.
    let keys = [1, 2, 1, 2];
    let c = clocked_sim(opts, &keys, &[0, 1, 60, 61], Some(&[11, 12, 11, 12]));
    assert_eq!((c.hits, c.refresh_evictions), (1, 1));
}

#[test]
fn allow_list_keeps_other_features_out() {
    let mut opts = Options::with_window(100);
    opts.allow = Some([11u64].into_iter().collect());
    let keys = [1, 2, 1, 2];
    let c = clocked_sim(opts, &keys, &[0, 1, 2, 3], Some(&[11, 12, 11, 12]));
    assert_eq!((c.hits, c.uncacheable), (1, 2));
}

#[test]
fn byte_capacity_weighs_values_keys_and_overhead() {
    // Capacity 100 bytes, overhead 10: entries of value 30 + key 10 + 10 = 50 bytes: two fit, not three.
    let spec = RunSpec { unit: Unit::Bytes { entry_overhead: 10 }, ..RunSpec::entries("lru", 100) };
    let mut sim = Simulation::new(&[spec], Options::with_window(100), None).unwrap();
    let keys = [1, 2, 3, 1, 2, 3];
    let sizes = [30; 6];
    let key_bytes = [10; 6];
    sim.feed(&Events { value_sizes: Some(&sizes), key_bytes: Some(&key_bytes), ..Events::reads(&keys) }).unwrap();
    let c = sim.runs()[0].counters();
    // LRU of two: 1 2 3(evicts 1) 1(evicts 2) 2(evicts 3) 3(evicts 1): all miss.
    assert_eq!((c.hits, c.evictions, c.bytes_looked_up, c.bytes_hit), (0, 4, 180, 0));
}

/// Keys 1 (entity 100, field 11), 2 (100, 12), 3 (200, 11), 4 (200, 12), 5 (300, 12); refreshes of field 11
/// at t=50 and t=150, of field 12 at t=100.
fn refreshed_run(opts_of: impl FnOnce(&mut Options), keys: &[u64], ts: &[i64]) -> Simulation {
    let mut opts = Options::with_window(100);
    opts.refreshes = vec![(150, 11), (50, 11), (100, 12)];
    opts_of(&mut opts);
    let field_of = |k: u64| if k % 2 == 1 && k != 5 { 11 } else { 12 };
    let fields: Vec<u64> = keys.iter().map(|&k| field_of(k)).collect();
    let entities: Vec<u64> = keys.iter().map(|&k| 100 * k.div_ceil(2)).collect();
    let ops = vec![OP_READ; keys.len()];
    let mut sim = Simulation::new(&[RunSpec::entries("lru", 10)], opts, None).unwrap();
    sim.count_by_field();
    sim.feed(&Events { keys, ts_ns: Some(ts), ops: Some(&ops), fields: Some(&fields), entities: Some(&entities),
                       ..Events::default() }).unwrap();
    sim
}

#[test]
fn refresh_cost_per_feature() {
    // t=0..4: 1 2 3 4 5 all miss (cold).
    // t=50 refresh 11 drops 1, 3.             field 11 dropped 2
    // t=60: 1 m (re-fetch 11), t=61: 2 h.      field 11 re-fetched 1
    // t=100 refresh 12 drops 2, 4, 5.          field 12 dropped 3
    // t=110: 2 m (re-fetch 12), t=111: 1 h.    field 12 re-fetched 1
    // t=150 refresh 11 drops 1 (3 is not cached since t=50).   field 11 dropped 3
    // t=160: 3 m (re-fetch 11: dropped at t=50, not looked up since), t=161: 1 m (re-fetch 11),
    // t=162: 4 m (re-fetch 12), t=163: 4 h (counted once). 5 is never looked up again.
    // Field 11: 3 dropped, 3 re-fetched; field 12: 3 dropped, 2 re-fetched.
    let keys: [u64; 13] = [1, 2, 3, 4, 5, 1, 2, 2, 1, 3, 1, 4, 4];
    let ts = [0, 1, 2, 3, 4, 60, 61, 110, 111, 160, 161, 162, 163];
    let sim = refreshed_run(|_| {}, &keys, &ts);
    let run = &sim.runs()[0];
    let c = run.counters();
    assert_eq!((c.hits, c.refresh_evictions, c.refresh_refetches), (3, 6, 5));
    let cost: Vec<(u64, u64, u64)> = run.refresh_by_field().iter().map(|(f, c)| (*f, c.dropped, c.refetched)).collect();
    assert_eq!(cost, vec![(11, 3, 3), (12, 3, 2)]);
    // Lookups and hits per field: 11 looked up at t=0, 2, 60, 111, 160, 161 (hit at 111); 12 at t=1, 3, 4,
    // 61, 110, 162, 163 (hits at 61, 163).
    let hits: Vec<(u64, u64, u64)> =
        run.hits_by_field().unwrap().iter().map(|(f, h)| (*f, h.lookups, h.hits)).collect();
    assert_eq!(hits, vec![(11, 6, 1), (12, 7, 2)]);
}

#[test]
fn a_restart_or_an_invalidation_takes_the_blame_for_the_next_miss() {
    // Refresh 11 at t=50 drops 1 and 3; a restart at t=55 would have emptied the cache anyway: the misses of
    // 1 and 3 at t=60, 61 are the restart's. After the refresh of 12 at t=100 (drops 2, 4), a DEL of entity
    // 100 at t=105 removes what is left of it; 2's miss at t=110 is the invalidation's, 4's at t=111 the
    // refresh's.
    let keys: [u64; 11] = [1, 2, 3, 4, 1, 3, 2, 4, 100, 2, 4];
    let ts = [0, 1, 2, 3, 60, 61, 62, 63, 105, 110, 111];
    let mut ops = vec![OP_READ; keys.len()];
    ops[8] = OP_DELETE;
    let fields: Vec<u64> = keys.iter().map(|&k| match k { 100 => 0, k if k % 2 == 1 => 11, _ => 12 }).collect();
    let entities: Vec<u64> = keys.iter().map(|&k| if k == 100 { 100 } else { 100 * k.div_ceil(2) }).collect();
    let mut opts = Options::with_window(100);
    opts.refreshes = vec![(50, 11), (100, 12)];
    opts.restarts_at = vec![55];
    opts.writes = WriteMode::Invalidate;
    let mut sim = Simulation::new(&[RunSpec::entries("lru", 10)], opts, None).unwrap();
    sim.feed(&Events { keys: &keys, ts_ns: Some(&ts), ops: Some(&ops), fields: Some(&fields),
                       entities: Some(&entities), ..Events::default() }).unwrap();
    let run = &sim.runs()[0];
    let c = run.counters();
    assert_eq!((c.refresh_evictions, c.refresh_refetches, c.restarts), (4, 1, 1));
    let cost: Vec<(u64, u64, u64)> = run.refresh_by_field().iter().map(|(f, c)| (*f, c.dropped, c.refetched)).collect();
    assert_eq!(cost, vec![(11, 2, 0), (12, 2, 1)]);
    assert!(run.hits_by_field().is_none());
}

#[test]
fn no_refresh_schedule_costs_nothing_and_counts_nothing() {
    let sim = refreshed_run(|o| o.refreshes.clear(), &[1, 2, 1, 2], &[0, 1, 60, 61]);
    let c = sim.runs()[0].counters();
    assert_eq!((c.hits, c.refresh_evictions, c.refresh_refetches), (2, 0, 0));
    assert!(sim.runs()[0].refresh_by_field().is_empty());
}

#[test]
fn fleet_windows_over_many_chunks_equal_pods_simulated_apart() {
    // 7 pods take their shares in chunks of 7 x 16 k events; windows of 1000 lookups and feeds of 37 k events
    // cut across the chunks. Reference: one LRU per pod, fed the reads its entity routes to it, in trace order.
    use crate::fleet::route::jump_hash;
    use crate::policy::{lru::Lru, Policy};
    let (pods, capacity, window) = (7u32, 300u64, 1000usize);
    let keys: Vec<u64> = (0..300_000u64).map(|i| crate::hash::mix64(i * 31 % 7919) % 20_000).collect();
    let ops: Vec<u8> = (0..keys.len()).map(|i| if i % 11 == 5 { OP_WRITE } else { OP_READ }).collect();
    let mut sim = entries(&[], window as u64);
    sim.add_fleet("lru", capacity, Unit::Entries, &[], pods, Route::Entity, None).unwrap();
    for (k, o) in keys.chunks(37_000).zip(ops.chunks(37_000)) {
        sim.feed(&Events { ops: Some(o), ..Events::reads(k) }).unwrap();
    }
    let mut lrus: Vec<Lru> = (0..pods).map(|_| Lru::new(capacity)).collect();
    let (mut windows, mut pod_hits, mut open, mut lookups) = (Vec::new(), vec![0u64; pods as usize], 0, 0);
    for (&key, &op) in keys.iter().zip(&ops) {
        if op != OP_READ {
            continue; // writes are ignored by default: they change no cache
        }
        let pod = jump_hash(crate::hash::mix64(key), pods) as usize;
        let hit = lrus[pod].access(key, 1);
        pod_hits[pod] += u64::from(hit);
        open += u64::from(hit);
        lookups += 1;
        if lookups % window == 0 {
            windows.push(open);
            open = 0;
        }
    }
    if lookups % window != 0 {
        windows.push(open);
    }
    let fleet = &sim.fleets()[0];
    assert_eq!(fleet.window_hits(), windows);
    assert_eq!(fleet.counters().iter().map(|c| c.hits).collect::<Vec<_>>(), pod_hits);
}

#[test]
fn fleets_that_route_alike_share_a_routing_and_give_what_each_gives_alone() {
    // Three capacities of one route and pod count share one routing; another pod count gets its own. Each
    // fleet's windows and pods' hits are those of the same fleet simulated alone.
    let keys: Vec<u64> = (0..200_000u64).map(|i| crate::hash::mix64(i * 17 % 6151) % 9_000).collect();
    let reqs: Vec<u64> = (0..keys.len() as u64).map(|i| i / 4).collect();
    let fleets = [(50u64, 8u32, Route::Entity), (500, 8, Route::Entity), (5000, 8, Route::Entity),
                  (500, 3, Route::Entity), (500, 8, Route::Random { seed: 1 })];
    let feed = |sim: &mut Simulation| {
        for (k, r) in keys.chunks(70_001).zip(reqs.chunks(70_001)) {
            sim.feed(&Events { reqs: Some(r), ..Events::reads(k) }).unwrap();
        }
    };
    let mut together = entries(&[], 1000);
    for &(capacity, pods, route) in &fleets {
        together.add_fleet("lru", capacity, Unit::Entries, &[], pods, route, None).unwrap();
    }
    feed(&mut together);
    assert_eq!(together.dispatches.len(), 3);
    for (i, &(capacity, pods, route)) in fleets.iter().enumerate() {
        let mut alone = entries(&[], 1000);
        alone.add_fleet("lru", capacity, Unit::Entries, &[], pods, route, None).unwrap();
        feed(&mut alone);
        let (a, t) = (&alone.fleets()[0], &together.fleets()[i]);
        assert_eq!(a.window_hits(), t.window_hits());
        assert_eq!(a.counters().iter().map(|c| c.hits).collect::<Vec<_>>(),
                   t.counters().iter().map(|c| c.hits).collect::<Vec<_>>());
        assert_eq!(a.served(), t.served());
    }
}

#[test]
fn a_whole_key_delete_reaches_fields_seen_in_batches_the_runs_took_beside_the_membership() {
    // Batch 1 (large enough for threads, no whole-key write): reads of fields 1..=100 of entity 7 over and
    // over, the last event a write of one field; the membership is kept up to date beside the runs. Batch 2:
    // DEL 7 (no field) alone, so only batch 1 can have told which fields entity 7 has. Batch 3: each field
    // read once. Under invalidation the DEL removes all 100 cached fields and the reads miss; with writes
    // ignored the reads are 100 hits, each stale.
    let n = PARALLEL_MIN_BATCH;
    let fields: Vec<u64> = (0..n as u64).map(|i| i % 100 + 1).collect();
    let keys: Vec<u64> = fields.iter().map(|f| 1_000 + f).collect();
    let mut ops = vec![OP_READ; n];
    ops[n - 1] = OP_WRITE;
    let entities = vec![7u64; n];
    let events = |keys, ops, fields, entities| Events { keys, ops: Some(ops), fields: Some(fields),
                                                         entities: Some(entities), ..Events::default() };
    for (mode, invalidated, hits_after, stale) in [(WriteMode::Invalidate, 100, 0, 0), (WriteMode::Ignore, 0, 100, 100)] {
        let mut opts = Options::with_window(1_000);
        opts.writes = mode;
        let mut sim = Simulation::new(&[RunSpec::entries("lru", 1_000), RunSpec::entries("infinite", 0)], opts, None)
            .unwrap();
        sim.feed(&events(&keys, &ops, &fields, &entities)).unwrap();
        sim.feed(&events(&[7], &[OP_DELETE], &[0], &[7])).unwrap();
        let hits_before = sim.runs()[0].hits();
        sim.feed(&events(&keys[..100], &ops[..100], &fields[..100], &entities[..100])).unwrap();
        let c = sim.runs()[0].counters();
        assert_eq!(c.invalidations, invalidated, "{mode:?}");
        assert_eq!(c.hits - hits_before, hits_after, "{mode:?}");
        assert_eq!(c.stale_reads, stale, "{mode:?}");
    }
}

#[test]
fn a_fleets_lru_curve_equals_its_fleets_run_apart_at_every_capacity() {
    // Entities of 4 fields read by commands (one entity each) in batches of 3 commands on 3 connections, with
    // writes that invalidate: for every route, the fleet's curve at each capacity per pod gives the hits,
    // commands served and round trips saved of the fleet run at that capacity.
    use crate::curve::lru::cumulative;
    use crate::curve::Curve;
    let n = 60_000usize;
    let entity_of = |i: usize| crate::hash::mix64((i / 4) as u64 * 7 % 997) % 1_500 + 1;
    let entities: Vec<u64> = (0..n).map(entity_of).collect();
    let fields: Vec<u64> = (0..n).map(|i| (i % 4) as u64 + 1).collect();
    let keys: Vec<u64> = entities.iter().zip(&fields).map(|(e, f)| crate::hash::mix64(e * 16 + f)).collect();
    let ops: Vec<u8> = (0..n).map(|i| if i % 97 == 13 { OP_WRITE } else { OP_READ }).collect();
    let reqs: Vec<u64> = (0..n as u64).map(|i| i / 4).collect();
    let conns: Vec<u64> = (0..n as u64).map(|i| (i / 4) % 3).collect();
    let batches: Vec<u64> = (0..n as u64).map(|i| i / 36).collect();
    let capacities = [1u64, 3, 10, 40, 150, 600, 2_500, 10_000];
    let opts = || Options { writes: WriteMode::Invalidate, ..Options::with_window(1000) };
    let feed = |sim: &mut Simulation| {
        let cut = 7_001;
        for start in (0..n).step_by(cut) {
            let end = n.min(start + cut);
            sim.feed(&Events {
                ops: Some(&ops[start..end]),
                entities: Some(&entities[start..end]),
                fields: Some(&fields[start..end]),
                reqs: Some(&reqs[start..end]),
                conns: Some(&conns[start..end]),
                batches: Some(&batches[start..end]),
                ..Events::reads(&keys[start..end])
            })
            .unwrap();
        }
    };
    for (pods, route) in [(5u32, Route::Entity), (4, Route::Random { seed: 0 }), (3, Route::RoundRobin),
                          (1, Route::Entity)] {
        let mut curve = Simulation::new(&[], opts(), None).unwrap();
        curve.add_fleet_lru_curve(&capacities, Unit::Entries, 8, pods, route).unwrap();
        let mut runs = Simulation::new(&[], opts(), None).unwrap();
        for &c in &capacities {
            runs.add_fleet("lru", c, Unit::Entries, &[], pods, route, None).unwrap();
        }
        feed(&mut curve);
        feed(&mut runs);
        let Curve::Exact(c) = &curve.curves()[0] else { panic!("an exact curve") };
        assert_eq!(c.fleet_shape(), Some((pods, route.name())));
        let counts = c.counts();
        let (hits, served, saved) =
            (cumulative(&counts.hits), cumulative(&counts.commands_served), cumulative(&counts.round_trips_saved));
        for (k, fleet) in runs.fleets().iter().enumerate() {
            let s = fleet.served();
            let fleet_hits: u64 = fleet.counters().iter().map(|c| c.hits).sum();
            let at = format!("{} pods, {}, capacity {}", pods, route.name(), capacities[k]);
            assert_eq!(hits[k], fleet_hits, "hits: {at}");
            assert_eq!((counts.commands, served[k]), (s.commands, s.commands_served), "commands: {at}");
            assert_eq!((counts.round_trips, saved[k]), (s.round_trips, s.round_trips_saved), "round trips: {at}");
        }
        assert!(hits[0] < hits[capacities.len() - 1], "the trace must reach past the smallest capacity");
    }
}

#[test]
fn resident_bytes_peak_follows_what_the_cache_holds() {
    // Keys of value sizes 10..=40 into an LRU of 50 entries: the peak never passes 50 of the heaviest, never
    // falls below 50 of the lightest, and an LRU larger than the keys holds every key's weight once.
    let keys: Vec<u64> = (0..300_000u64).map(|i| crate::hash::mix64(i) % 400).collect();
    let sizes: Vec<u32> = keys.iter().map(|k| 10 + (k % 31) as u32).collect();
    let key_bytes = vec![6u32; keys.len()];
    let mut sim = Simulation::new(&[RunSpec::entries("lru", 50), RunSpec::entries("lru", 1000)],
                                  Options::with_window(1000), None).unwrap();
    sim.track_resident_bytes(100);
    sim.feed(&Events { value_sizes: Some(&sizes), key_bytes: Some(&key_bytes), ..Events::reads(&keys) }).unwrap();
    let small = sim.runs()[0].resident_bytes_peak().unwrap();
    assert!((50 * 116..=50 * 146).contains(&small), "{small}");
    let all: u64 = (0..400u64).map(|k| 116 + k % 31).sum();
    assert_eq!(sim.runs()[1].resident_bytes_peak(), Some(all));
}
