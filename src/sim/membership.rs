//! Which cache keys belong to which Redis key and which field: how a `DEL entity` or a batch refresh of one
//! feature reaches every `(entity, field)` entry a cache may hold. Built from the events before the runs see
//! them (or beside them, in a batch where no run can consult it: `consulted_by`), shared read-only by all
//! runs. Memory, when writes are modelled: 8 bytes per unique cache key listed (10-18 more where its Redis key
//! has over `SCAN_MAX` of them), and ~60 per Redis key.

use super::events::Events;
use crate::hash::{KeyMap, KeySet};
use crate::trace::reader::OP_READ;

#[derive(Default)]
pub struct Membership {
    /// Cache keys of each Redis key, for keys whose cache entries are per field: `members[by_entity[key]]`.
    by_entity: KeyMap<usize>,
    members: Vec<Members>,
    /// The Redis key of the last event listed, and its place in `members` (a command's events share it).
    last: Option<(u64, usize)>,
    /// Cache keys of each field that a refresh schedule names: at entity granularity one cache key (the whole
    /// hash) holds many fields, and a refresh of any of them reaches it.
    by_field: KeyMap<Members>,
    scheduled_fields: KeySet,
}

/// The cache keys listed under one Redis key (or one refreshed field), in the order first seen. Each key's
/// place is looked for among its own Redis key's members, not in one set of every key of the trace: the events
/// of a command are fields of one key, whose members stay in the processor's cache from one event to the next,
/// where a lookup in a set of every key waited on memory at each event.
#[derive(Default)]
struct Members {
    keys: Vec<u64>,
    /// The same keys as a set, once there are more than `SCAN_MAX` (a few are quicker to look through).
    index: Option<Box<KeySet>>,
}

/// Members looked through one by one up to this many.
const SCAN_MAX: usize = 8;

impl Members {
    /// Lists `key` unless it is listed already.
    #[inline]
    fn add(&mut self, key: u64) {
        let new = match &mut self.index {
            Some(set) => set.insert(key),
            None => !self.keys.contains(&key),
        };
        if new {
            self.keys.push(key);
            if self.index.is_none() && self.keys.len() > SCAN_MAX {
                self.index = Some(Box::new(self.keys.iter().copied().collect()));
            }
        }
    }
}

impl Membership {
    pub fn new(scheduled_fields: impl IntoIterator<Item = u64>) -> Membership {
        Membership { scheduled_fields: scheduled_fields.into_iter().collect(), ..Membership::default() }
    }

    #[inline]
    pub fn observe(&mut self, key: u64, entity: u64, field: u64) {
        // A plain key (a GET's, or any at entity granularity) belongs to no other key.
        if key != entity {
            let at = match self.last {
                Some((e, at)) if e == entity => at,
                _ => {
                    let members = &mut self.members;
                    let at = *self.by_entity.entry(entity).or_insert_with(|| {
                        members.push(Members::default());
                        members.len() - 1
                    });
                    self.last = Some((entity, at));
                    at
                }
            };
            self.members[at].add(key);
        }
        let scheduled = field != 0 && !self.scheduled_fields.is_empty() && self.scheduled_fields.contains(&field);
        if scheduled {
            self.by_field.entry(field).or_default().add(key);
        }
    }

    /// `observe` for every event of `ev`, in order.
    pub fn observe_all(&mut self, ev: &Events) {
        for i in 0..ev.len() {
            self.observe(ev.keys[i], ev.entity(i), ev.field(i));
        }
    }

    /// Whether a run can consult the membership while taking `ev`: at a whole-key write or delete (one
    /// without a field), which reaches every field of its key, or at a refresh, which may fall due at any
    /// event when a schedule is given.
    pub fn consulted_by(&self, ev: &Events) -> bool {
        if !self.scheduled_fields.is_empty() {
            return true;
        }
        match (ev.ops, ev.fields) {
            (None, _) => false,
            (Some(ops), None) => ops.iter().any(|&op| op != OP_READ),
            (Some(ops), Some(fields)) => ops.iter().zip(fields).any(|(&op, &f)| op != OP_READ && f == 0),
        }
    }

    /// Every field-level cache key seen under `entity` (the entity's own key not included).
    pub fn entity_members(&self, entity: u64) -> &[u64] {
        self.by_entity.get(&entity).map_or(&[], |&at| self.members[at].keys.as_slice())
    }

    pub fn field_members(&self, field: u64) -> &[u64] {
        self.by_field.get(&field).map_or(&[], |m| m.keys.as_slice())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_key_is_listed_once_under_its_key_and_under_every_refreshed_field_it_holds() {
        let mut m = Membership::new([7, 8]);
        // Field granularity: cache key 100 is field 7 of key 1, listed once however often it comes.
        for _ in 0..3 {
            m.observe(100, 1, 7);
        }
        m.observe(101, 1, 9);
        assert_eq!((m.entity_members(1), m.field_members(7)), (&[100, 101][..], &[100][..]));
        // Entity granularity: cache key 2 is key 2 itself and holds fields 9, 7 and 8: listed under no key,
        // and under both refreshed fields, though the first field it came with is not refreshed.
        for field in [9, 7, 8, 7] {
            m.observe(2, 2, field);
        }
        assert_eq!(m.entity_members(2), &[] as &[u64]);
        assert_eq!((m.field_members(7), m.field_members(8)), (&[100, 2][..], &[2][..]));
    }

    /// Keys of Redis keys whose events interleave, some with more members than are looked through one by one:
    /// each key listed once, in the order first seen, under its own Redis key only.
    #[test]
    fn keys_of_interleaved_redis_keys_are_listed_once_in_first_seen_order() {
        let mut m = Membership::new([]);
        let sizes = [(1u64, 3u64), (2, SCAN_MAX as u64 + 5), (3, 40)];
        for round in 0..3 {
            for k in 0..40 {
                for &(entity, size) in &sizes {
                    // Fields come in a different order in each round; entity e's field f is key e * 1000 + f.
                    let f = (k * 7 + round * 3) % 40;
                    if f < size {
                        m.observe(entity * 1000 + f, entity, f + 1);
                    }
                }
            }
        }
        for (entity, size) in sizes {
            let first_seen: Vec<u64> = (0..40).map(|k| (k * 7) % 40).filter(|&f| f < size).map(|f| entity * 1000 + f).collect();
            assert_eq!(m.entity_members(entity), &first_seen[..], "Redis key {entity}");
        }
        assert_eq!(m.entity_members(4), &[] as &[u64]);
    }
}
