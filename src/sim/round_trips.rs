//! Round trips to Redis saved by the cache: a batch (the commands a connection sent before waiting for their
//! replies) is served from the cache only when every lookup of every command in it hits, and when it writes
//! or deletes nothing (a write goes to Redis whatever the cache holds).
//!
//! The rows of a batch are not contiguous in a trace in send order (another connection's commands can come
//! between two parts of a pipeline), so each connection has its batch open until its next batch begins.
//!
//! A fleet that runs only some of its pods (one task of a split sweep) cannot count a sharded batch served:
//! the batch's other lookups are other tasks' pods'. It logs instead which batches missed on its pods, as one
//! bit per batch numbered in the order the batches open (the same in every task, whatever hit), and the
//! tasks' logs ORed together give the batches missed anywhere (`RoundTrips::logging_misses`).

use crate::hash::KeyMap;

/// Round trips with at least one lookup, and those served whole by the bucket of their worst lookup (see
/// `RoundTrips::note`); a round trip that writes is served in none.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RoundTripCounts {
    pub round_trips: u64,
    pub served_by_bucket: Vec<u64>,
}

impl RoundTripCounts {
    /// Round trips served when the lookups of buckets `0..=bucket` hit.
    pub fn served_up_to(&self, bucket: usize) -> u64 {
        self.served_by_bucket.iter().take(bucket + 1).sum()
    }

    fn close(&mut self, b: Open) {
        if !b.lookups {
            return;
        }
        self.round_trips += 1;
        if !b.changes {
            let worst = b.worst as usize;
            if self.served_by_bucket.len() <= worst {
                self.served_by_bucket.resize(worst + 1, 0);
            }
            self.served_by_bucket[worst] += 1;
        }
    }
}

#[derive(Clone, Copy)]
struct Open {
    batch: u64,
    /// The how-manieth batch opened (from 0), the batch's bit in a miss log.
    seq: u64,
    lookups: bool,
    worst: u32,
    changes: bool,
}

impl Open {
    fn new(batch: u64, seq: u64) -> Open {
        Open { batch, seq, lookups: false, worst: 0, changes: false }
    }

    #[inline]
    fn note(&mut self, lookup: Option<u32>) {
        match lookup {
            Some(bucket) => {
                self.lookups = true;
                self.worst = self.worst.max(bucket);
            }
            None => self.changes = true,
        }
    }

    /// A batch that would be served but for a lookup that missed (bucket above 0).
    fn missed(&self) -> bool {
        self.lookups && !self.changes && self.worst > 0
    }
}

/// Follows each connection's open batch. A lookup is noted with a bucket: 0 for a hit and 1 for a miss in
/// one run; the capacity it first fits at in a curve, where a batch is served at every capacity its worst
/// lookup fits.
#[derive(Default)]
pub struct RoundTrips {
    open: KeyMap<Open>,
    /// The connection of the latest event and its batch (most events follow one of the same connection).
    last: Option<(u64, Open)>,
    closed: RoundTripCounts,
    opened: u64,
    /// With `logging_misses`: bit `seq` set for each closed batch that `missed`.
    misses: Option<Vec<u64>>,
}

impl RoundTrips {
    /// Round trips that also log which batches missed (see the module comment). Memory: one bit per batch.
    pub fn logging_misses() -> RoundTrips {
        RoundTrips { misses: Some(Vec::new()), ..RoundTrips::default() }
    }

    /// A lookup (`Some(bucket)`) or a write or delete (`None`) of batch `batch` on connection `conn`.
    #[inline]
    pub fn note(&mut self, conn: u64, batch: u64, lookup: Option<u32>) {
        match &mut self.last {
            // Most events continue the latest event's batch: updated in place.
            Some((c, cur)) if *c == conn && cur.batch == batch => cur.note(lookup),
            _ => self.note_elsewhere(conn, batch, lookup),
        }
    }

    /// `note` for an event of another connection or of a new batch.
    fn note_elsewhere(&mut self, conn: u64, batch: u64, lookup: Option<u32>) {
        let mut cur = match self.last {
            Some((c, open)) if c == conn => open,
            last => {
                if let Some((c, open)) = last {
                    self.open.insert(c, open);
                }
                match self.open.remove(&conn) {
                    Some(open) => open,
                    None => self.open_new(batch),
                }
            }
        };
        if cur.batch != batch {
            self.close(cur);
            cur = self.open_new(batch);
        }
        cur.note(lookup);
        self.last = Some((conn, cur));
    }

    fn open_new(&mut self, batch: u64) -> Open {
        self.opened += 1;
        Open::new(batch, self.opened - 1)
    }

    fn close(&mut self, b: Open) {
        if let (Some(log), true) = (self.misses.as_mut(), b.missed()) {
            set_bit(log, b.seq);
        }
        self.closed.close(b);
    }

    /// The batches that missed so far (the open ones included), one bit per batch opened; `None` unless
    /// `logging_misses`.
    pub fn miss_log(&self) -> Option<Vec<u64>> {
        let mut log = self.misses.clone()?;
        self.open.values().chain(self.last.iter().map(|(_, o)| o)).filter(|o| o.missed()).for_each(|o| set_bit(&mut log, o.seq));
        log.resize(self.opened.div_ceil(64) as usize, 0);
        Some(log)
    }

    /// Whether any event was noted (a trace without batches notes none: its round trips are its commands).
    pub fn is_used(&self) -> bool {
        self.last.is_some()
    }

    /// The counts so far, the batches still open included (the input may end in the middle of none).
    pub fn counts(&self) -> RoundTripCounts {
        let mut c = self.closed.clone();
        self.open.values().chain(self.last.iter().map(|(_, o)| o)).for_each(|&b| c.close(b));
        c
    }
}

fn set_bit(log: &mut Vec<u64>, bit: u64) {
    let word = (bit / 64) as usize;
    if log.len() <= word {
        log.resize(word + 1, 0);
    }
    log[word] |= 1 << (bit % 64);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_batch_is_saved_only_when_every_lookup_hits_and_nothing_is_written() {
        let (hit, miss) = (Some(0), Some(1));
        let mut r = RoundTrips::default();
        // Connection 1: batch 0 all hits, interleaved with connection 2's batch 0 (one miss).
        r.note(1, 0, hit);
        r.note(2, 0, hit);
        r.note(1, 0, hit);
        r.note(2, 0, miss);
        // Connection 1, batch 1: hits and a write.
        r.note(1, 1, hit);
        r.note(1, 1, None);
        // Connection 3: only writes, no round trip counted.
        r.note(3, 0, None);
        r.note(1, 2, hit);
        let c = r.counts();
        assert_eq!((c.round_trips, c.served_up_to(0)), (4, 2));
    }

    #[test]
    fn a_batch_is_served_at_the_bucket_of_its_worst_lookup() {
        let mut r = RoundTrips::default();
        [2, 0, 5].into_iter().for_each(|b| r.note(7, 0, Some(b)));
        r.note(7, 1, Some(1));
        let c = r.counts();
        assert_eq!(c.round_trips, 2);
        assert_eq!((c.served_up_to(1), c.served_up_to(4), c.served_up_to(5)), (1, 1, 2));
    }

    #[test]
    fn the_miss_log_has_a_bit_for_each_batch_that_missed_and_wrote_nothing() {
        let (hit, miss) = (Some(0), Some(1));
        let mut r = RoundTrips::logging_misses();
        r.note(1, 0, miss); // batch #0: missed
        r.note(2, 0, hit); // #1: served
        r.note(1, 1, miss); // #2: missed, but writes: never served, not logged
        r.note(1, 1, None);
        r.note(3, 0, None); // #3: writes only
        r.note(2, 1, hit); // #4, still open: missed
        r.note(2, 1, miss);
        assert_eq!(r.miss_log(), Some(vec![0b10001]));
        assert_eq!(RoundTrips::default().miss_log(), None);
    }
}
