//! Which cache keys belong to which Redis key and which field: how a `DEL entity` or a batch refresh of one
//! feature reaches every `(entity, field)` entry a cache may hold. Built from the events before the runs see
//! them, shared read-only by all runs. Memory: about 40 bytes per unique cache key when writes are modelled.

use crate::hash::{KeyMap, KeySet};

#[derive(Default)]
pub struct Membership {
    seen: KeySet,
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
        if !self.seen.insert(key) {
            return;
        }
        if key != entity {
            self.by_entity.entry(entity).or_default().push(key);
        }
        if field != 0 && self.scheduled_fields.contains(&field) {
            self.by_field.entry(field).or_default().push(key);
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
