//! Running several policies over one stream of lookups, batch by batch, with a hit-rate timeline.
//!
//! The timeline cuts the stream into consecutive windows of `window` lookups and records each policy's hits
//! per window, plus the time of the window's last lookup when the trace has a clock. The hit rate "over the
//! last W lookups" and the cumulative hit rate both follow from these counts.

use crate::policy::{AnyPolicy, Policy};
use crate::with_policy;

pub struct Run {
    pub name: String,
    pub capacity: u64,
    policy: AnyPolicy,
    hits: u64,
    /// Hits in each completed window.
    window_hits: Vec<u64>,
    open_window_hits: u64,
}

impl Run {
    pub fn hits(&self) -> u64 {
        self.hits
    }
    pub fn resident(&self) -> usize {
        with_policy!(&self.policy, p => p.len())
    }
}

pub struct Simulation {
    runs: Vec<Run>,
    window: u64,
    lookups: u64,
    /// Time of the last lookup of each completed window (only when every batch came with a clock).
    window_ts: Vec<i64>,
    has_clock: Option<bool>,
    last_ts: i64,
}

/// Below this many lookups a batch is not worth a thread per policy.
const PARALLEL_MIN_BATCH: usize = 1 << 16;

impl Simulation {
    /// `policies`: (registry name, capacity in entries). `window`: lookups per timeline window, at least 1.
    pub fn new(policies: &[(String, u64)], window: u64) -> Result<Simulation, String> {
        if window == 0 {
            return Err("the timeline window must be at least 1 lookup".into());
        }
        let runs = policies
            .iter()
            .map(|(name, capacity)| {
                Ok(Run {
                    name: name.clone(),
                    capacity: *capacity,
                    policy: AnyPolicy::new(name, *capacity)?,
                    hits: 0,
                    window_hits: Vec::new(),
                    open_window_hits: 0,
                })
            })
            .collect::<Result<Vec<_>, String>>()?;
        Ok(Simulation { runs, window, lookups: 0, window_ts: Vec::new(), has_clock: None, last_ts: 0 })
    }

    /// Feeds the next lookups in trace order, each of size 1. `ts_ns`, if given, holds one time per key.
    pub fn feed(&mut self, keys: &[u64], ts_ns: Option<&[i64]>) -> Result<(), String> {
        self.feed_sized(keys, None, ts_ns)
    }

    /// As `feed`, with one size per key when `sizes` is given (then capacities count those units, e.g.
    /// bytes); `None` means every size is 1 and capacities count entries.
    pub fn feed_sized(&mut self, keys: &[u64], sizes: Option<&[u32]>, ts_ns: Option<&[i64]>) -> Result<(), String> {
        if let Some(ts) = ts_ns {
            if ts.len() != keys.len() {
                return Err(format!("{} timestamps for {} lookups", ts.len(), keys.len()));
            }
        }
        if let Some(sizes) = sizes {
            if sizes.len() != keys.len() {
                return Err(format!("{} sizes for {} lookups", sizes.len(), keys.len()));
            }
        }
        let clocked = ts_ns.is_some() && !keys.is_empty();
        if !keys.is_empty() {
            match self.has_clock {
                None => self.has_clock = Some(clocked),
                Some(had) if had != clocked => return Err("some batches have timestamps and some do not".into()),
                _ => {}
            }
        }
        let (start, window) = (self.lookups, self.window);
        if self.runs.len() > 1 && keys.len() >= PARALLEL_MIN_BATCH {
            std::thread::scope(|s| {
                for run in self.runs.iter_mut() {
                    s.spawn(move || run_batch(run, keys, sizes, start, window));
                }
            });
        } else {
            for run in self.runs.iter_mut() {
                run_batch(run, keys, sizes, start, window);
            }
        }
        if let Some(ts) = ts_ns {
            let first_end = window - start % window; // 1-based offset of the first window end in this batch
            let mut i = first_end as usize;
            while i <= ts.len() {
                self.window_ts.push(ts[i - 1]);
                i += window as usize;
            }
            if let Some(&t) = ts.last() {
                self.last_ts = t;
            }
        }
        self.lookups += keys.len() as u64;
        Ok(())
    }

    pub fn lookups(&self) -> u64 {
        self.lookups
    }

    pub fn runs(&self) -> &[Run] {
        &self.runs
    }

    pub fn has_clock(&self) -> bool {
        self.has_clock == Some(true)
    }

    /// The timeline so far: the 1-based index of each window's last lookup, its time (if the trace has a
    /// clock), and each run's hits per window. A final partial window is included.
    pub fn timeline(&self) -> Timeline {
        let partial = self.lookups % self.window != 0;
        let complete = self.lookups / self.window;
        let mut ends: Vec<u64> = (1..=complete).map(|w| w * self.window).collect();
        if partial {
            ends.push(self.lookups);
        }
        let mut ts = Vec::new();
        if self.has_clock() {
            ts = self.window_ts.clone();
            if partial {
                ts.push(self.last_ts);
            }
        }
        let hits = self
            .runs
            .iter()
            .map(|r| {
                let mut h = r.window_hits.clone();
                if partial {
                    h.push(r.open_window_hits);
                }
                h
            })
            .collect();
        Timeline { ends, ts, hits }
    }
}

pub struct Timeline {
    pub ends: Vec<u64>,
    pub ts: Vec<i64>,
    /// hits[run][window]
    pub hits: Vec<Vec<u64>>,
}

fn run_batch(run: &mut Run, keys: &[u64], sizes: Option<&[u32]>, start: u64, window: u64) {
    let Run { policy, hits, window_hits, open_window_hits, .. } = run;
    with_policy!(policy, p => {
        let mut pos = 0;
        let mut at = start;
        while pos < keys.len() {
            let to_boundary = (window - at % window) as usize;
            let end = keys.len().min(pos + to_boundary);
            let h = match sizes {
                None => count_hits(p, &keys[pos..end]),
                Some(sizes) => count_sized_hits(p, &keys[pos..end], &sizes[pos..end]),
            };
            *hits += h;
            *open_window_hits += h;
            at += (end - pos) as u64;
            pos = end;
            if at % window == 0 {
                window_hits.push(*open_window_hits);
                *open_window_hits = 0;
            }
        }
    })
}

/// The hot loop, monomorphized per policy: nothing but accesses and a hit counter.
#[inline(always)]
fn count_hits<P: Policy>(policy: &mut P, keys: &[u64]) -> u64 {
    let mut hits = 0u64;
    for &k in keys {
        hits += policy.access(k, 1) as u64;
    }
    hits
}

#[inline(always)]
fn count_sized_hits<P: Policy>(policy: &mut P, keys: &[u64], sizes: &[u32]) -> u64 {
    let mut hits = 0u64;
    for (&k, &size) in keys.iter().zip(sizes) {
        hits += policy.access(k, size) as u64;
    }
    hits
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn windows_split_across_batches() {
        let mut sim = Simulation::new(&[("lru".into(), 2), ("infinite".into(), 0)], 3).unwrap();
        let keys = [1u64, 1, 2, 3, 1, 2, 2, 4];
        sim.feed(&keys[..4], Some(&[10, 11, 12, 13])).unwrap();
        sim.feed(&keys[4..], Some(&[14, 15, 16, 17])).unwrap();
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
        let policies = [("lru".to_string(), 100), ("lru".to_string(), 1000)];
        let mut together = Simulation::new(&policies, 1000).unwrap();
        together.feed(&keys, None).unwrap();
        for (i, p) in policies.iter().enumerate() {
            let mut alone = Simulation::new(std::slice::from_ref(p), 1000).unwrap();
            for chunk in keys.chunks(999) {
                alone.feed(chunk, None).unwrap();
            }
            assert_eq!(alone.runs()[0].hits(), together.runs()[i].hits());
            assert_eq!(alone.timeline().hits[0], together.timeline().hits[i]);
        }
        assert!(together.timeline().ts.is_empty());
    }

    #[test]
    fn sized_lookups_count_against_a_byte_capacity() {
        let mut sim = Simulation::new(&[("fifo".into(), 10), ("lru".into(), 10)], 100).unwrap();
        // 1 (6 bytes), 2 (4): full; 1 hits; 3 (5) evicts 1 in FIFO order but 2 in LRU order.
        sim.feed_sized(&[1, 2, 1, 3, 2, 1], Some(&[6, 4, 6, 5, 4, 6]), None).unwrap();
        // FIFO: m m h m(evicts 1) h m(evicts 2, 3)   LRU: m m h m(evicts 2, 1) m m(evicts 3)
        assert_eq!(sim.runs()[0].hits(), 2);
        assert_eq!(sim.runs()[1].hits(), 1);
        assert!(sim.feed_sized(&[1, 2], Some(&[1]), None).is_err());
    }

    #[test]
    fn mixing_clocked_and_unclocked_batches_is_an_error() {
        let mut sim = Simulation::new(&[("lru".into(), 2)], 3).unwrap();
        sim.feed(&[1], Some(&[1])).unwrap();
        assert!(sim.feed(&[2], None).is_err());
    }
}
