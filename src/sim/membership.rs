//! Which cache keys belong to which Redis key and which field: how a `DEL entity` or a batch refresh of one
//! feature reaches every `(entity, field)` entry a cache may hold. Built from the events before the runs see
//! them, shared read-only by all runs. Memory: about 40 bytes per unique cache key when writes are modelled.

use super::events::Events;
use crate::hash::{KeyMap, KeySet};
use crate::trace::reader::OP_READ;

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
        let of_entity = key != entity;
        let of_field = field != 0 && !self.scheduled_fields.is_empty() && self.scheduled_fields.contains(&field);
        // A plain key (a GET's) is listed nowhere: it needs no place in `seen`, a set as large as the keys.
        if !(of_entity || of_field) || !self.seen.insert(key) {
            return;
        }
        if of_entity {
            self.by_entity.entry(entity).or_default().push(key);
        }
        if of_field {
            self.by_field.entry(field).or_default().push(key);
        }
    }

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
