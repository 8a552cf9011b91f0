//! The infinite cache's commands and round trips served, estimated from a sample of entities. A command (an
//! HMGET of 40 fields) is served only if none of its lookups is a key's first reference, which a count of
//! unique keys (`distinct.rs`) cannot tell. A command reads one entity (a Redis hash), so the commands split by
//! entity: for every entity of a spatial sample (its mixed hash below a threshold, as SHARDS samples keys) the
//! keys it has had are kept exactly, each of its commands is known to be served or not, and the unserved
//! commands of the whole trace are estimated as those of the sample divided by its rate (Horvitz-Thompson,
//! with the variance of a Poisson sample of entities). The sample has a fixed size: when it holds more than
//! `max_keys` keys, the entity with the largest hash leaves it with its keys and counts, and the threshold
//! drops to it, so that what remains is exactly the sample at the lower rate.
//!
//! Round trips (a pipeline's batch on a connection) are counted the same way, per connection. A command or
//! round trip that reads several entities (an MGET, a pipeline over several hashes) cannot be told from a
//! sample of entities: it is counted apart (`several`), and the band covers it served or not.

use std::collections::BTreeSet;

use crate::curve::sample::MODULUS;
use crate::hash::{mix64, KeyMap, KeySet};
use crate::sim::Events;
use crate::trace::reader::OP_READ;

/// Commands (index 0) and round trips (index 1).
const KINDS: usize = 2;
const COMMANDS: usize = 0;
const TRIPS: usize = 1;
/// Entities the map may hold before its first sweep (see `shrink`).
const SWEEP_SLACK: usize = 1024;

#[derive(Default)]
struct Entity {
    place: u64,
    keys: Vec<u64>,
    /// Groups of each kind this entity had alone, and those that were not served.
    groups: [u64; KINDS],
    unserved: [u64; KINDS],
}

#[derive(Clone, Copy)]
struct Open {
    id: u64,
    entity: u64,
    all_seen: bool,
    several: bool,
}

/// What the sample says of one kind of group: all groups read, those that read several entities, the
/// unserved single-entity groups of the sample, the sum of their squares per entity (for the variance), and
/// the sample's rate.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct ServedCounts {
    pub groups: u64,
    pub several: u64,
    pub sampled_unserved: u64,
    pub sampled_unserved_squares: u64,
    pub rate: f64,
}

pub struct ServedSample {
    threshold: u64,
    max_keys: usize,
    entities: KeyMap<Entity>,
    /// Size of `entities` past which `shrink` sweeps it, and the sweeps so far.
    sweep_at: usize,
    sweeps: u64,
    order: BTreeSet<(u64, u64)>,
    seen: KeySet,
    open_command: Option<Open>,
    /// Open round trips by connection: connections interleave in a trace.
    open_trips: KeyMap<Open>,
    /// Lookups without a command index are commands of their own, numbered here.
    next_solo: u64,
    groups: [u64; KINDS],
    several: [u64; KINDS],
    unserved: [u64; KINDS],
    squares: [u64; KINDS],
    has_trips: bool,
}

impl ServedSample {
    pub fn new(max_keys: usize) -> ServedSample {
        ServedSample {
            threshold: MODULUS,
            max_keys: max_keys.max(1),
            entities: KeyMap::default(),
            sweep_at: SWEEP_SLACK,
            sweeps: 0,
            order: BTreeSet::new(),
            seen: KeySet::default(),
            open_command: None,
            open_trips: KeyMap::default(),
            next_solo: 0,
            groups: [0; KINDS],
            several: [0; KINDS],
            unserved: [0; KINDS],
            squares: [0; KINDS],
            has_trips: false,
        }
    }

    /// The entity's place in [0, MODULUS): mixed with a constant of its own, so that this sample is not the
    /// SHARDS samples' keys.
    #[inline]
    fn place(entity: u64) -> u64 {
        mix64(entity ^ 0x5851_f42d_4c95_7f2d) >> 40
    }

    pub fn feed(&mut self, ev: &Events) {
        for i in 0..ev.len() {
            if ev.op(i) != OP_READ {
                continue;
            }
            let (key, entity) = (ev.keys[i], ev.entity(i));
            let place = Self::place(entity);
            let first = place < self.threshold && self.first_reference(key, entity, place);
            let command = ev.req(i).unwrap_or_else(|| {
                self.next_solo += 1;
                u64::MAX - self.next_solo
            });
            let open = self.open_command;
            self.open_command = Some(self.step(COMMANDS, open, command, entity, first));
            if let Some((conn, batch)) = ev.batch(i) {
                self.has_trips = true;
                let open = self.open_trips.get(&conn).copied();
                let next = self.step(TRIPS, open, batch, entity, first);
                self.open_trips.insert(conn, next);
            }
            if self.seen.len() > self.max_keys {
                self.shrink();
            }
        }
    }

    /// Whether `key` of a sampled entity is read for the first time (it is remembered).
    fn first_reference(&mut self, key: u64, entity: u64, place: u64) -> bool {
        if !self.seen.insert(key) {
            return false;
        }
        let e = self.entities.entry(entity).or_insert_with(|| Entity { place, ..Entity::default() });
        if e.keys.is_empty() {
            self.order.insert((place, entity));
        }
        e.keys.push(key);
        true
    }

    /// One lookup of a group of `kind`: the open group closes if this lookup starts another.
    fn step(&mut self, kind: usize, open: Option<Open>, id: u64, entity: u64, first: bool) -> Open {
        let mut g = match open {
            Some(g) if g.id == id => g,
            other => {
                if let Some(g) = other {
                    self.close(kind, g);
                }
                Open { id, entity, all_seen: true, several: false }
            }
        };
        g.several |= entity != g.entity;
        g.all_seen &= !first;
        g
    }

    fn close(&mut self, kind: usize, g: Open) {
        self.groups[kind] += 1;
        if g.several {
            self.several[kind] += 1;
            return;
        }
        if Self::place(g.entity) >= self.threshold {
            return;
        }
        let e = self.entities.entry(g.entity).or_insert_with(|| Entity { place: Self::place(g.entity), ..Entity::default() });
        e.groups[kind] += 1;
        if !g.all_seen {
            let u = e.unserved[kind];
            e.unserved[kind] += 1;
            self.unserved[kind] += 1;
            self.squares[kind] += 2 * u + 1;
        }
    }

    /// The entity with the largest place leaves (with every other at that place), until the keys fit.
    fn shrink(&mut self) {
        while self.seen.len() > self.max_keys {
            let Some(&(place, _)) = self.order.last() else { break };
            self.threshold = place;
            while let Some(&(p, entity)) = self.order.last().filter(|(p, _)| *p == place) {
                self.order.remove(&(p, entity));
                if let Some(e) = self.entities.remove(&entity) {
                    e.keys.iter().for_each(|k| {
                        self.seen.remove(k);
                    });
                    for kind in 0..KINDS {
                        self.unserved[kind] -= e.unserved[kind];
                        self.squares[kind] -= e.unserved[kind] * e.unserved[kind];
                    }
                }
            }
        }
        // Entities with groups but no key (none of their lookups a first reference) are not in `order`; those
        // now above the threshold are never read again (`close` and `counts` skip them) and only take room.
        // They are swept once the map has doubled since the last sweep: a sweep at every shrink scanned the
        // whole map for each key the full sample took in (three quarters of a sampled run's time).
        if self.entities.len() > self.sweep_at {
            let threshold = self.threshold;
            self.entities.retain(|_, e| e.place < threshold);
            self.sweep_at = 2 * self.entities.len() + SWEEP_SLACK;
            self.sweeps += 1;
        }
    }

    /// The counts of commands and of round trips (None when the trace has no round trips), the groups still
    /// open at the end closed.
    pub fn counts(&self) -> (ServedCounts, Option<ServedCounts>) {
        // The counts so far, in a sample of its own with no entities and no open groups (nothing left to evict).
        let mut done = ServedSample {
            threshold: self.threshold,
            groups: self.groups,
            several: self.several,
            unserved: self.unserved,
            squares: self.squares,
            has_trips: self.has_trips,
            ..ServedSample::new(usize::MAX)
        };
        // Closing an open group reads only its entity's counts: copied for the entities of the open groups.
        let open: Vec<(usize, Open)> = self.open_command.map(|g| (COMMANDS, g)).into_iter()
            .chain(self.open_trips.values().map(|&g| (TRIPS, g)))
            .collect();
        for (_, g) in &open {
            if let Some(e) = self.entities.get(&g.entity) {
                done.entities.insert(g.entity, Entity { place: e.place, keys: Vec::new(), groups: e.groups,
                                                        unserved: e.unserved });
            }
        }
        for (kind, g) in open {
            done.close(kind, g);
        }
        let rate = self.threshold as f64 / MODULUS as f64;
        let of = |kind: usize| ServedCounts {
            groups: done.groups[kind],
            several: done.several[kind],
            sampled_unserved: done.unserved[kind],
            sampled_unserved_squares: done.squares[kind],
            rate,
        };
        (of(COMMANDS), self.has_trips.then(|| of(TRIPS)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// HMGETs: command c reads `fields` fields of entity `entities[c]`, as keys entity * 1000 + field.
    fn hmgets(entities: &[u64], fields: u64) -> (Vec<u64>, Vec<u64>, Vec<u64>) {
        let (mut keys, mut ents, mut reqs) = (Vec::new(), Vec::new(), Vec::new());
        for (c, &e) in entities.iter().enumerate() {
            for f in 0..fields {
                keys.push(e * 1000 + f);
                ents.push(e);
                reqs.push(c as u64);
            }
        }
        (keys, ents, reqs)
    }

    fn counted(entities: &[u64], fields: u64, max_keys: usize) -> ServedCounts {
        let (keys, ents, reqs) = hmgets(entities, fields);
        let mut ev = Events::reads(&keys);
        ev.entities = Some(&ents);
        ev.reqs = Some(&reqs);
        let mut s = ServedSample::new(max_keys);
        s.feed(&ev);
        s.counts().0
    }

    #[test]
    fn with_room_for_every_key_the_count_is_exact() {
        // Entities 0..50 each first read once (unserved), then every command again (served).
        let entities: Vec<u64> = (0..50).chain(0..50).chain(0..50).collect();
        let c = counted(&entities, 10, 1 << 20);
        assert_eq!((c.groups, c.several, c.sampled_unserved, c.rate), (150, 0, 50, 1.0));
        assert_eq!(c.sampled_unserved_squares, 50);
    }

    #[test]
    fn a_small_sample_estimates_the_unserved_commands_within_its_error() {
        // 20,000 entities of 20 fields, each read 3 times: 20,000 unserved commands of 60,000.
        let n = 20_000u64;
        let entities: Vec<u64> = (0..3 * n).map(|i| (i * 2_654_435_761) % n).collect();
        let c = counted(&entities, 20, 20_000); // about 1,000 entities of 20,000
        assert!(c.rate < 0.1 && c.rate > 0.02, "{}", c.rate);
        let estimate = c.sampled_unserved as f64 / c.rate;
        let sd = ((1.0 - c.rate) / (c.rate * c.rate) * c.sampled_unserved_squares as f64).sqrt();
        assert!((estimate - n as f64).abs() < 3.0 * sd, "{estimate} vs {n}, sd {sd}");
        assert!(sd < 0.05 * n as f64, "{sd}");
    }

    /// Keys pass through a full sample one by one (each entity read once): the map of entities is swept as it
    /// doubles, not at every key the sample lets go (a sweep scans the whole map: quadratic in the trace).
    #[test]
    fn a_full_sample_sweeps_its_entities_as_the_map_doubles() {
        let entities: Vec<u64> = (0..200_000).collect();
        let (keys, ents, reqs) = hmgets(&entities, 1);
        let mut ev = Events::reads(&keys);
        ev.entities = Some(&ents);
        ev.reqs = Some(&reqs);
        let mut s = ServedSample::new(2_000);
        s.feed(&ev);
        // The sample lets go of some 9,000 entities (2,000 x ln 100) on the way, one shrink each.
        assert!(s.counts().0.rate < 0.02, "{}", s.counts().0.rate);
        assert!(s.sweeps <= 64, "{} sweeps", s.sweeps);
        assert!(s.entities.len() <= 2 * s.order.len() + 2 * SWEEP_SLACK, "{} entities kept", s.entities.len());
    }

    #[test]
    fn a_command_over_several_entities_is_counted_apart() {
        let keys = [1u64, 2, 3, 1];
        let ents = [10u64, 20, 10, 10];
        let reqs = [0u64, 0, 1, 2];
        let mut ev = Events::reads(&keys);
        ev.entities = Some(&ents);
        ev.reqs = Some(&reqs);
        let mut s = ServedSample::new(100);
        s.feed(&ev);
        let (c, trips) = s.counts();
        // Command 0 reads two entities; command 1 reads a new key (unserved); command 2 repeats key 1 (served).
        assert_eq!((c.groups, c.several, c.sampled_unserved), (3, 1, 1));
        assert!(trips.is_none());
    }
}
