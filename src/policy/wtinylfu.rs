//! W-TinyLFU, as the Caffeine library (3.2.3, `BoundedLocalCache`) deploys it.
//!
//! TinyLFU (Einziger, Friedman, Manes: "TinyLFU: A Highly Efficient Cache Admission Policy", ACM Transactions
//! on Storage 13(4), 2017) is an admission filter: a compact, aging frequency sketch of the recent access
//! history decides whether a newcomer is worth the entry it would evict. Alone it shuts out bursts of new
//! keys, so W-TinyLFU puts a small LRU *window* in front: every new entry enters the window, and only what
//! falls out of the window's LRU end meets the filter. Behind it, the *main* space is a segmented LRU, a
//! *probation* segment (the filter's victims are taken from its LRU end) and a *protected* segment (80% of
//! main) that probation entries reach on their next hit, and that demotes its own LRU entries back to
//! probation when it overflows. The window starts at 1% of the capacity. A candidate leaving the window is
//! admitted if its estimated frequency is strictly higher than the victim's; on a tie the victim stays.
//!
//! What Caffeine adds, all reproduced here because each one moves the hit rate:
//! - **Hill climbing of the window size** (the paper's later "adaptive W-TinyLFU"): hits and misses are
//!   counted over samples of `10 * maximum` requests; when a sample's hit rate beats the previous one the
//!   window keeps moving in the same direction, otherwise it reverses. The step starts at 6.25% of the
//!   capacity, decays by 0.98 each sample and restarts at 6.25% when the hit rate jumps by 5 points or more.
//!   Window growth is taken from protected; entries move between the segments as the quotas change.
//! - **A lazily built sketch**: the sketch (`sketch.rs`, one 4-bit counter row per entry, no doorkeeper) is only
//!   allocated once the cache is half full. Before that nothing is counted, and hits do not even reorder the
//!   LRU lists (Caffeine's `skipReadBuffer` fast path).
//! - **Buffered reads**: a hit is not applied to the policy when it happens; it is appended to a 16-slot ring
//!   buffer that the cache drains in its maintenance cycle. With maintenance on the caller's thread, a cycle
//!   runs after every write (so after every miss, which inserts) and whenever a hit finds the buffer full;
//!   that hit is then *dropped*: it counts as a hit, but neither reorders nor increments the sketch. Writes
//!   are applied in the same cycle, after the pending reads.
//! - **Admission noise against HashDoS**: when the candidate is warm (frequency >= 6) but no more frequent
//!   than the victim, it is admitted anyway with probability 1/128, so that an attacker who inflates the
//!   victims' counters cannot freeze the cache. Caffeine draws from `ThreadLocalRandom`; we draw from a
//!   splitmix64 generator with a fixed seed, which makes runs repeatable with the same admission rate. This is
//!   why a real Caffeine cache's hit rate varies from run to run: by ~0.02 points on cloudPhysicsIO, but by
//!   over a point on a loop slightly longer than the cache, where one early admission decides which keys
//!   stay. Over seeds, ours varies the same way; a given seed is one draw of that distribution.
//!
//! The sketch is indexed by the key's Java `hashCode()`, and that matters more than one would think: which
//! keys share counters decides many of the admission ties, and a real Caffeine cache's hit rate on the
//! cloudPhysicsIO trace moves by up to ~3 points when only the keys' `hashCode` changes (any good hash gives
//! the same *distribution* of hit rates, but not the same draw). So the sketch here sees exactly what
//! Caffeine's sees: `crate::hash::java_hash_code(key)`, which is the `String.hashCode` of the key text for keys
//! hashed by `key_hash` (the trace readers embed it in the 64-bit key), and `Long.hashCode` for keys given as
//! integers. With that, the hit counts agree with a real Caffeine cache of `String` keys to within a few
//! hundredths of a point, which is Caffeine's own run-to-run noise. Composite `(key, field)` keys have no
//! canonical Java hash (it depends on the key class a service would write); they get a uniform one.
//!
//! Capacity: `new` is `Caffeine.maximumSize(capacity)`: every entry weighs 1 whatever its size. `weighted` is
//! `maximumWeight(capacity)` with a weigher returning the size, where Caffeine sizes the sketch by the number
//! of entries rather than by the capacity (re-sizing it, and so forgetting its counts, as the entries grow).
//!
//! Structure: the three segments are doubly linked lists threaded through one slab of 24-byte nodes by u32
//! index, as in `lru.rs`; a hit costs one hash lookup and a buffer push, a miss one insert and usually one
//! eviction with two sketch reads. The eviction (`evict.rs`) and the hill climber (`climber.rs`) have their
//! own files.

use std::sync::Arc;

use super::sketch::FrequencySketch;
use super::{Param, Policy, Registered, Spec};
use crate::hash::{java_hash_code, KeyMap};
use hashbrown::hash_map::Entry;

const NIL: u32 = u32::MAX;

const PERCENT_MAIN: f64 = 0.99;
const PERCENT_MAIN_PROTECTED: f64 = 0.80;
/// The hill climber's step, as a share of the capacity (also its restart value).
const HILL_CLIMBER_STEP_PERCENT: f64 = 0.0625;
/// Caffeine's `BoundedBuffer.BUFFER_SIZE`: with one thread there is one ring of this many reads.
const READ_BUFFER_SIZE: usize = 16;
const ADMIT_SEED: u64 = 0x5eed_cafe_f00d_d00d;

#[derive(Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
enum Queue {
    Window = 0,
    Probation = 1,
    Protected = 2,
}

#[derive(Clone, Copy)]
struct Node {
    key: u64,
    weight: u32,
    prev: u32,
    next: u32,
    queue: Queue,
}

/// One access-order list: `first` is the least recently used end (victims), `last` the most recent.
#[derive(Clone, Copy)]
struct Deque {
    first: u32,
    last: u32,
}

pub struct WTinyLfu {
    index: KeyMap<u32>,
    nodes: Vec<Node>,
    free: Vec<u32>,
    /// Indexed by `Queue`.
    deques: [Deque; 3],
    /// `maximumWeight` semantics (weights are sizes, sketch sized by entry count) rather than `maximumSize`.
    weighted: bool,
    maximum: i64,
    weighted_size: i64,
    window_maximum: i64,
    window_weighted_size: i64,
    main_protected_maximum: i64,
    main_protected_weighted_size: i64,
    sketch: FrequencySketch,
    read_buffer: [u32; READ_BUFFER_SIZE],
    read_len: usize,
    // The hill climber's state, with Caffeine's Java types.
    hits_in_sample: i32,
    misses_in_sample: i32,
    previous_sample_hit_rate: f64,
    step_size: f64,
    adjustment: i64,
    /// splitmix64 state, standing in for `ThreadLocalRandom` in `admit`.
    rng: u64,
    /// Which draw of the admission coin this cache makes (0: the default one); kept across restarts.
    seed: u64,
}

impl WTinyLfu {
    /// `Caffeine.newBuilder().maximumSize(capacity)`: capacity in entries, sizes ignored.
    pub fn new(capacity: u64) -> WTinyLfu {
        Self::with_weighing(capacity, false)
    }

    /// `Caffeine.newBuilder().maximumWeight(capacity).weigher((k, v) -> size)`.
    pub fn weighted(capacity: u64) -> WTinyLfu {
        Self::with_weighing(capacity, true)
    }

    /// The same cache drawing its admission coin from another seed: another draw of Caffeine's spread (seed 0
    /// is the default draw).
    pub fn seeded(mut self, seed: u64) -> WTinyLfu {
        self.seed = seed;
        self.rng = if seed == 0 { ADMIT_SEED } else { ADMIT_SEED ^ crate::hash::mix64(seed) };
        self
    }

    pub fn seed(&self) -> u64 {
        self.seed
    }

    fn with_weighing(capacity: u64, weighted: bool) -> WTinyLfu {
        let empty = Deque { first: NIL, last: NIL };
        let mut cache = WTinyLfu {
            index: KeyMap::default(),
            nodes: Vec::new(),
            free: Vec::new(),
            deques: [empty; 3],
            weighted,
            maximum: 0,
            weighted_size: 0,
            window_maximum: 0,
            window_weighted_size: 0,
            main_protected_maximum: 0,
            main_protected_weighted_size: 0,
            sketch: FrequencySketch::default(),
            read_buffer: [NIL; READ_BUFFER_SIZE],
            read_len: 0,
            hits_in_sample: 0,
            misses_in_sample: 0,
            previous_sample_hit_rate: 0.0,
            step_size: 0.0,
            adjustment: 0,
            rng: ADMIT_SEED,
            seed: 0,
        };
        cache.set_maximum_size(capacity.min(i64::MAX as u64) as i64);
        cache
    }

    /// Caffeine's `setMaximumSize`: 1% window, and 80% of the main space protected.
    fn set_maximum_size(&mut self, max: i64) {
        let window = max - (PERCENT_MAIN * max as f64) as i64;
        self.maximum = max;
        self.window_maximum = window;
        self.main_protected_maximum = (PERCENT_MAIN_PROTECTED * (max - window) as f64) as i64;
        self.hits_in_sample = 0;
        self.misses_in_sample = 0;
        self.step_size = -HILL_CLIMBER_STEP_PERCENT * max as f64;
        if !self.weighted && self.weighted_size >= (max >> 1) {
            self.sketch.ensure_capacity(max as u64);
        }
    }

    /// The window's current share of the capacity (the hill climber moves it).
    pub fn window_maximum(&self) -> u64 {
        self.window_maximum as u64
    }

    // ---- the sketch's view of a key ------------------------------------------------------------------------

    #[inline]
    fn frequency(&self, n: u32) -> u32 {
        self.sketch.frequency(java_hash_code(self.nodes[n as usize].key))
    }

    #[inline]
    fn increment(&mut self, n: u32) {
        self.sketch.increment(java_hash_code(self.nodes[n as usize].key));
    }

    // ---- linked lists --------------------------------------------------------------------------------------

    #[inline]
    fn unlink(&mut self, n: u32) {
        let Node { prev, next, queue, .. } = self.nodes[n as usize];
        let d = &mut self.deques[queue as usize];
        if prev == NIL {
            d.first = next;
        } else {
            self.nodes[prev as usize].next = next;
        }
        if next == NIL {
            d.last = prev;
        } else {
            self.nodes[next as usize].prev = prev;
        }
        let node = &mut self.nodes[n as usize];
        node.prev = NIL;
        node.next = NIL;
    }

    /// Appends an unlinked node at the most recent end of `queue`, which becomes its segment.
    #[inline]
    fn link_last(&mut self, n: u32, queue: Queue) {
        let d = &mut self.deques[queue as usize];
        let old_last = d.last;
        d.last = n;
        if old_last == NIL {
            d.first = n;
        } else {
            self.nodes[old_last as usize].next = n;
        }
        let node = &mut self.nodes[n as usize];
        node.prev = old_last;
        node.next = NIL;
        node.queue = queue;
    }

    /// Prepends an unlinked node at the least recent end of `queue`.
    fn link_first(&mut self, n: u32, queue: Queue) {
        let d = &mut self.deques[queue as usize];
        let old_first = d.first;
        d.first = n;
        if old_first == NIL {
            d.last = n;
        } else {
            self.nodes[old_first as usize].prev = n;
        }
        let node = &mut self.nodes[n as usize];
        node.prev = NIL;
        node.next = old_first;
        node.queue = queue;
    }

    #[inline]
    fn move_to(&mut self, n: u32, queue: Queue) {
        self.unlink(n);
        self.link_last(n, queue);
    }

    #[inline]
    fn move_to_back(&mut self, n: u32) {
        let queue = self.nodes[n as usize].queue;
        if self.deques[queue as usize].last != n {
            self.move_to(n, queue);
        }
    }

    #[inline]
    fn first(&self, queue: Queue) -> u32 {
        self.deques[queue as usize].first
    }

    #[inline]
    fn next(&self, n: u32) -> u32 {
        self.nodes[n as usize].next
    }

    #[inline]
    fn weight(&self, n: u32) -> i64 {
        i64::from(self.nodes[n as usize].weight)
    }

    // ---- the read path -------------------------------------------------------------------------------------

    /// `afterRead`: buffer the hit, or run maintenance (dropping this hit) when the buffer is full.
    #[inline]
    fn after_read(&mut self, n: u32) {
        if !self.sketch.is_initialized() {
            return; // skipReadBuffer: the fast path of a cache that is not yet half full
        }
        if self.read_len == READ_BUFFER_SIZE {
            self.maintenance(None);
            return;
        }
        self.read_buffer[self.read_len] = n;
        self.read_len += 1;
        // The drain will touch the node (and the key's counters, which `access` prefetched): load it meanwhile.
        super::prefetch(&self.nodes[n as usize]);
    }

    /// Applies the buffered hits in the order they happened. `retired` is an entry being removed (NIL if none).
    fn drain_read_buffer(&mut self, retired: u32) {
        for i in 0..self.read_len {
            let n = self.read_buffer[i];
            if n == retired {
                // A removed entry: Caffeine counts the hit and increments a sentinel key's counter, nothing more.
                self.hits_in_sample = self.hits_in_sample.wrapping_add(1);
            } else {
                self.on_access(n);
            }
        }
        self.read_len = 0;
    }

    /// `onAccess`: count the hit, and move the entry to its segment's most recent end (a probation hit goes
    /// to protected).
    fn on_access(&mut self, n: u32) {
        self.increment(n);
        match self.nodes[n as usize].queue {
            Queue::Probation => self.reorder_probation(n),
            _ => self.move_to_back(n),
        }
        self.hits_in_sample = self.hits_in_sample.wrapping_add(1);
    }

    fn reorder_probation(&mut self, n: u32) {
        let weight = self.weight(n);
        if weight > self.main_protected_maximum {
            self.move_to_back(n);
            return;
        }
        // Overflowing protected is fixed at the end of the maintenance cycle (`demote_from_main_protected`).
        self.main_protected_weighted_size += weight;
        self.move_to(n, Queue::Protected);
    }

    // ---- the write path ------------------------------------------------------------------------------------

    /// A node for a new entry: a recycled one, else a new one. A function of the two fields rather than a
    /// method, so that it can run while the index is borrowed by a vacant entry.
    #[inline]
    fn new_node(nodes: &mut Vec<Node>, free: &mut Vec<u32>, key: u64, weight: u32) -> u32 {
        let node = Node { key, weight, prev: NIL, next: NIL, queue: Queue::Window };
        if let Some(n) = free.pop() {
            nodes[n as usize] = node;
            return n;
        }
        nodes.push(node);
        (nodes.len() - 1) as u32
    }

    /// `maintenance`: apply pending reads, then the pending write, evict down to the capacity, and climb.
    fn maintenance(&mut self, added: Option<u32>) {
        self.drain_read_buffer(NIL);
        if let Some(n) = added {
            self.add_task(n);
        }
        self.evict_entries();
        self.climb();
    }

    /// Caffeine's `AddTask`.
    fn add_task(&mut self, n: u32) {
        let weight = self.weight(n);
        self.weighted_size += weight;
        self.window_weighted_size += weight;
        if self.weighted_size >= (self.maximum >> 1) {
            // Lazily initialize the sketch when close to the maximum.
            let capacity = if self.weighted { self.index.len() as u64 } else { self.maximum as u64 };
            self.sketch.ensure_capacity(capacity);
        }
        self.increment(n);
        self.misses_in_sample = self.misses_in_sample.wrapping_add(1);
        if weight > self.maximum {
            self.evict_entry(n);
        } else if weight > self.window_maximum {
            self.link_first(n, Queue::Window);
        } else {
            self.link_last(n, Queue::Window);
        }
    }
}

impl Registered for WTinyLfu {
    const SPEC: Spec = Spec {
        params: &[Param {
            name: "seed",
            default: 0.0,
            help: "which draw of the random admission (1 in 128 ties) a run makes; 0 is the default draw, and \
                   a real Caffeine cache makes a different one every run",
        }],
        ..Spec::plain("wtinylfu", "W-TinyLFU", "Caffeine's policy: an LRU window, then a segmented LRU behind a TinyLFU frequency filter, with a hill-climbed window size")
    };

    fn build(capacity: u64, params: &[f64], _future: Option<&Arc<[u64]>>) -> Result<WTinyLfu, String> {
        Ok(WTinyLfu::new(capacity).seeded(admission_seed(params[0])?))
    }

    fn emptied(&self) -> WTinyLfu {
        WTinyLfu::with_weighing(self.maximum as u64, self.weighted).seeded(self.seed)
    }
}

/// The `seed` parameter as a seed: a whole number from 0 to 2^53 (what a float holds exactly).
fn admission_seed(value: f64) -> Result<u64, String> {
    if value.fract() != 0.0 || !(0.0..=9_007_199_254_740_992.0).contains(&value) {
        return Err(format!("wtinylfu: seed must be a whole number from 0 to 2^53, not {value}"));
    }
    Ok(value as u64)
}

impl Policy for WTinyLfu {
    /// `getIfPresent(key)`, then `put(key, value)` on a miss, as a cache-aside client does.
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        // Hit or miss, this key's counters will be incremented: start loading them while the index is probed.
        self.sketch.prefetch(java_hash_code(key));
        let n = match self.index.entry(key) {
            Entry::Occupied(hit) => {
                let n = *hit.get();
                self.after_read(n);
                return true;
            }
            // A miss: `put` inserts the entry, and the write's maintenance cycle adds it to the policy.
            Entry::Vacant(slot) => {
                let weight = if self.weighted { size } else { 1 };
                *slot.insert(Self::new_node(&mut self.nodes, &mut self.free, key, weight))
            }
        };
        self.maintenance(Some(n));
        false
    }

    /// `invalidate(key)`: the entry leaves the map at once and the policy in the maintenance cycle that the
    /// write triggers.
    fn remove(&mut self, key: u64) -> bool {
        let Some(&n) = self.index.get(&key) else {
            return false;
        };
        self.drain_read_buffer(n);
        self.evict_entry(n);
        self.evict_entries();
        self.climb();
        true
    }

    fn contains(&self, key: u64) -> bool {
        self.index.contains_key(&key)
    }

    fn len(&self) -> usize {
        self.index.len()
    }
}

mod climber;
mod evict;
#[cfg(test)]
mod tests;
