//! Which cache keys belong to which Redis key and which field: how a `DEL entity` or a batch refresh of one
//! feature reaches every `(entity, field)` entry a cache may hold. Built from the events before the runs see
//! them (or beside them, in a batch where no run can consult it: `consulted_by`), shared read-only by all
//! runs. Memory: about 40 bytes per unique cache key listed, when writes are modelled.

use super::events::Events;
use crate::hash::{mix64, KeyMap, KeySet};
use crate::trace::reader::OP_READ;

#[derive(Default)]
pub struct Membership {
    /// Cache keys listed in `by_entity`.
    seen: KeySet,
    /// (cache key, field) pairs listed in `by_field`, hashed: at entity granularity one cache key (the whole
    /// hash) holds many fields, and a refresh of any of them reaches it.
    seen_in_field: KeySet,
    /// Cache keys of each Redis key, for keys whose cache entries are per field.
    by_entity: KeyMap<Vec<u64>>,
    /// Cache keys of each field that a refresh schedule names.
    by_field: KeyMap<Vec<u64>>,
    scheduled_fields: KeySet,
}

impl Membership {
    pub fn new(scheduled_fields: impl IntoIterator<Item = u64>) -> Membership {
        Membership { scheduled_fields: scheduled_fields.into_iter().collect(), ..Membership::default() }
    }

    #[inline]
    pub fn observe(&mut self, key: u64, entity: u64, field: u64) {
        // A plain key (a GET's, or any at entity granularity) belongs to no other key: it takes no place in
        // `seen`, a set as large as the keys.
        if key != entity && self.seen.insert(key) {
            self.by_entity.entry(entity).or_default().push(key);
        }
        let scheduled = field != 0 && !self.scheduled_fields.is_empty() && self.scheduled_fields.contains(&field);
        if scheduled && self.seen_in_field.insert(key ^ mix64(field)) {
            self.by_field.entry(field).or_default().push(key);
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
        self.by_entity.get(&entity).map_or(&[], Vec::as_slice)
    }

    pub fn field_members(&self, field: u64) -> &[u64] {
        self.by_field.get(&field).map_or(&[], Vec::as_slice)
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
}
