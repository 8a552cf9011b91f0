//! What batch refreshes cost a cache, per feature: the entries each refresh dropped, and the lookups that then
//! missed because a refresh had dropped their entry (each one a re-fetch from Redis the refresh caused). A
//! run builds this at its first refresh, so the runs of a trace without a refresh schedule pay nothing for it.
//!
//! A dropped key counts once, at its next lookup (which misses: only a lookup admits a key again). A restart,
//! an expiry or an invalidation that would have removed the entry anyway before that lookup takes the blame
//! instead: the key is then forgotten.

use crate::hash::KeyMap;

/// One feature's cost: entries its refreshes dropped, and lookups that missed because of them.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FieldRefreshCost {
    pub dropped: u64,
    pub refetched: u64,
}

#[derive(Default)]
pub(super) struct RefreshCost {
    /// Keys a refresh dropped that no lookup asked for since, each with the field whose refresh dropped it.
    dropped: KeyMap<u64>,
    by_field: KeyMap<FieldRefreshCost>,
}

impl RefreshCost {
    /// A refresh of `field` is applied (whether or not it finds anything cached).
    pub fn refreshed(&mut self, field: u64) {
        self.by_field.entry(field).or_default();
    }

    /// The refresh of `field` removed `key` from the cache.
    pub fn dropped(&mut self, key: u64, field: u64) {
        self.dropped.insert(key, field);
        self.by_field.entry(field).or_default().dropped += 1;
    }

    /// A lookup of `key` missed: whether a refresh had dropped it (counted once).
    #[inline]
    pub fn missed(&mut self, key: u64) -> bool {
        if self.dropped.is_empty() {
            return false;
        }
        match self.dropped.remove(&key) {
            Some(field) => {
                self.by_field.entry(field).or_default().refetched += 1;
                true
            }
            None => false,
        }
    }

    /// Something else would have removed `key` by now (an expiry, an invalidation): its next miss is not the
    /// refresh's.
    #[inline]
    pub fn forget(&mut self, key: u64) {
        if !self.dropped.is_empty() {
            self.dropped.remove(&key);
        }
    }

    /// The cache restarted empty: every next miss is the restart's.
    pub fn restarted(&mut self) {
        self.dropped.clear();
    }

    /// (field hash, cost) of every field refreshed so far, by field hash.
    pub fn by_field(&self) -> Vec<(u64, FieldRefreshCost)> {
        let mut out: Vec<(u64, FieldRefreshCost)> = self.by_field.iter().map(|(&f, &c)| (f, c)).collect();
        out.sort_unstable_by_key(|e| e.0);
        out
    }
}
