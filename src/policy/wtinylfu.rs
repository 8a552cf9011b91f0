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
//!   splitmix64 generator with a fixed seed, which makes runs repeatable with the same admission rate (real
//!   Caffeine varies by ~0.02 points of hit rate from run to run for this reason alone).
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
//! eviction with two sketch reads.

use super::sketch::FrequencySketch;
use super::Policy;
use crate::hash::{java_hash_code, KeyMap};
use hashbrown::hash_map::Entry;

const NIL: u32 = u32::MAX;

const PERCENT_MAIN: f64 = 0.99;
const PERCENT_MAIN_PROTECTED: f64 = 0.80;
const HILL_CLIMBER_RESTART_THRESHOLD: f64 = 0.05;
const HILL_CLIMBER_STEP_PERCENT: f64 = 0.0625;
const HILL_CLIMBER_STEP_DECAY_RATE: f64 = 0.98;
const ADMIT_HASHDOS_THRESHOLD: u32 = 6;
/// Most entries moved between segments in one maintenance cycle; the rest waits for the next cycle.
const QUEUE_TRANSFER_THRESHOLD: usize = 1_000;
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
    rng: u64,
}

impl WTinyLfu {
    /// `Caffeine.newBuilder().maximumSize(capacity)`: capacity in entries, sizes ignored.
    pub fn new(capacity: u64) -> WTinyLfu {
        Self::build(capacity, false)
    }

    /// `Caffeine.newBuilder().maximumWeight(capacity).weigher((k, v) -> size)`.
    pub fn weighted(capacity: u64) -> WTinyLfu {
        Self::build(capacity, true)
    }

    fn build(capacity: u64, weighted: bool) -> WTinyLfu {
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
    fn after_read(&mut self, n: u32, key: u64) {
        if !self.sketch.is_initialized() {
            return; // skipReadBuffer: the fast path of a cache that is not yet half full
        }
        if self.read_len == READ_BUFFER_SIZE {
            self.maintenance(None);
            return;
        }
        self.read_buffer[self.read_len] = n;
        self.read_len += 1;
        // The drain will touch the node and the key's counters: have them in cache by then.
        super::prefetch(&self.nodes[n as usize]);
        self.sketch.prefetch(java_hash_code(key));
    }

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

    // ---- eviction ------------------------------------------------------------------------------------------

    fn evict_entries(&mut self) {
        let candidate = self.evict_from_window();
        self.evict_from_main(candidate);
    }

    /// Moves the window's LRU entries to probation's MRU end while the window is over its share; returns the
    /// first one moved (the first admission candidate), or NIL.
    fn evict_from_window(&mut self) -> u32 {
        let mut first = NIL;
        let mut n = self.first(Queue::Window);
        while self.window_weighted_size > self.window_maximum && n != NIL {
            let next = self.next(n);
            let weight = self.weight(n);
            if weight != 0 {
                self.move_to(n, Queue::Probation);
                if first == NIL {
                    first = n;
                }
                self.window_weighted_size -= weight;
            }
            n = next;
        }
        first
    }

    /// Caffeine's `evictFromMain`: while over capacity, pit the candidates (entries just moved out of the
    /// window, oldest first, then the window itself) against the victims (probation's LRU end, then protected,
    /// then the window), evicting the less frequent of each pair; a tie keeps the victim.
    fn evict_from_main(&mut self, mut candidate: u32) {
        let mut victim_queue = Queue::Probation;
        let mut candidate_queue = Queue::Probation;
        let mut victim = self.first(Queue::Probation);
        while self.weighted_size > self.maximum {
            if candidate == NIL && candidate_queue == Queue::Probation {
                candidate = self.first(Queue::Window);
                candidate_queue = Queue::Window;
            }
            if candidate == NIL && victim == NIL {
                match victim_queue {
                    Queue::Probation => {
                        victim = self.first(Queue::Protected);
                        victim_queue = Queue::Protected;
                        continue;
                    }
                    Queue::Protected => {
                        victim = self.first(Queue::Window);
                        victim_queue = Queue::Window;
                        continue;
                    }
                    Queue::Window => break,
                }
            }
            if victim != NIL && self.weight(victim) == 0 {
                victim = self.next(victim);
                continue;
            } else if candidate != NIL && self.weight(candidate) == 0 {
                candidate = self.next(candidate);
                continue;
            }
            if victim == NIL {
                let evict = candidate;
                candidate = self.next(candidate);
                self.evict_entry(evict);
                continue;
            } else if candidate == NIL {
                let evict = victim;
                victim = self.next(victim);
                self.evict_entry(evict);
                continue;
            }
            if candidate == victim {
                victim = self.next(victim);
                self.evict_entry(candidate);
                candidate = NIL;
                continue;
            }
            if self.weight(candidate) > self.maximum {
                let evict = candidate;
                candidate = self.next(candidate);
                self.evict_entry(evict);
                continue;
            }
            if self.admit(candidate, victim) {
                let evict = victim;
                victim = self.next(victim);
                self.evict_entry(evict);
                candidate = self.next(candidate);
            } else {
                let evict = candidate;
                candidate = self.next(candidate);
                self.evict_entry(evict);
            }
        }
    }

    /// TinyLFU's test: admit the candidate if it is more frequent than the victim; a warm candidate that is
    /// not is still admitted with probability 1/128 (Caffeine's defence against hash flooding).
    fn admit(&mut self, candidate: u32, victim: u32) -> bool {
        let candidate_freq = self.frequency(candidate);
        let victim_freq = self.frequency(victim);
        if candidate_freq > victim_freq {
            return true;
        }
        if candidate_freq >= ADMIT_HASHDOS_THRESHOLD {
            return self.next_random() & 127 == 0;
        }
        false
    }

    /// splitmix64, standing in for `ThreadLocalRandom.nextInt()`.
    fn next_random(&mut self) -> u32 {
        self.rng = self.rng.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.rng;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        ((z ^ (z >> 31)) >> 32) as u32
    }

    /// Unlinks and forgets an entry (`evictEntry` and `makeDead`).
    fn evict_entry(&mut self, n: u32) {
        let Node { key, queue, prev, next, .. } = self.nodes[n as usize];
        let weight = self.weight(n);
        // A node dropped by `add_task` for outweighing the whole cache was never linked.
        if prev != NIL || next != NIL || self.first(queue) == n {
            self.unlink(n);
        }
        match queue {
            Queue::Window => self.window_weighted_size -= weight,
            Queue::Protected => self.main_protected_weighted_size -= weight,
            Queue::Probation => {}
        }
        self.weighted_size -= weight;
        self.index.remove(&key);
        self.free.push(n);
    }

    // ---- the hill climber ----------------------------------------------------------------------------------

    /// `climb`: at the end of every maintenance cycle, resize the window by the pending adjustment.
    fn climb(&mut self) {
        self.determine_adjustment();
        self.demote_from_main_protected();
        if self.adjustment > 0 {
            self.increase_window();
        } else if self.adjustment < 0 {
            self.decrease_window();
        }
    }

    /// Once a sample of `10 * maximum` requests is complete, compares its hit rate with the previous
    /// sample's and sets the next step (keep direction if better, reverse if worse; decay, or restart on a
    /// large change).
    fn determine_adjustment(&mut self) {
        if !self.sketch.is_initialized() {
            self.previous_sample_hit_rate = 0.0;
            self.misses_in_sample = 0;
            self.hits_in_sample = 0;
            return;
        }
        let request_count = self.hits_in_sample.wrapping_add(self.misses_in_sample);
        if request_count < self.sketch.sample_size() {
            return;
        }
        let hit_rate = f64::from(self.hits_in_sample) / f64::from(request_count);
        let hit_rate_change = hit_rate - self.previous_sample_hit_rate;
        let amount = if hit_rate_change >= 0.0 { self.step_size } else { -self.step_size };
        let next_step_size = if hit_rate_change.abs() >= HILL_CLIMBER_RESTART_THRESHOLD {
            HILL_CLIMBER_STEP_PERCENT * self.maximum as f64 * if amount >= 0.0 { 1.0 } else { -1.0 }
        } else {
            HILL_CLIMBER_STEP_DECAY_RATE * amount
        };
        self.previous_sample_hit_rate = hit_rate;
        self.adjustment = amount as i64; // Java's (long) cast: truncation toward zero
        self.step_size = next_step_size;
        self.misses_in_sample = 0;
        self.hits_in_sample = 0;
    }

    /// Grows the window at the expense of protected, moving probation's (then protected's) LRU entries into
    /// the window; what cannot be moved this cycle stays as the pending adjustment.
    fn increase_window(&mut self) {
        if self.main_protected_maximum == 0 {
            return;
        }
        let mut quota = self.adjustment.min(self.main_protected_maximum);
        self.main_protected_maximum -= quota;
        self.window_maximum += quota;
        self.demote_from_main_protected();
        for _ in 0..QUEUE_TRANSFER_THRESHOLD {
            let mut candidate = self.first(Queue::Probation);
            let mut probation = true;
            if candidate == NIL || quota < self.weight(candidate) {
                candidate = self.first(Queue::Protected);
                probation = false;
            }
            if candidate == NIL {
                break;
            }
            let weight = self.weight(candidate);
            if quota < weight {
                break;
            }
            quota -= weight;
            if !probation {
                self.main_protected_weighted_size -= weight;
            }
            self.window_weighted_size += weight;
            self.move_to(candidate, Queue::Window);
        }
        self.main_protected_maximum += quota;
        self.window_maximum -= quota;
        self.adjustment = quota;
    }

    /// Shrinks the window in favour of protected, moving the window's LRU entries to probation.
    fn decrease_window(&mut self) {
        if self.window_maximum <= 1 {
            return;
        }
        let mut quota = (-self.adjustment).min((self.window_maximum - 1).max(0));
        self.main_protected_maximum += quota;
        self.window_maximum -= quota;
        for _ in 0..QUEUE_TRANSFER_THRESHOLD {
            let candidate = self.first(Queue::Window);
            if candidate == NIL {
                break;
            }
            let weight = self.weight(candidate);
            if quota < weight {
                break;
            }
            quota -= weight;
            self.window_weighted_size -= weight;
            self.move_to(candidate, Queue::Probation);
        }
        self.main_protected_maximum -= quota;
        self.window_maximum += quota;
        self.adjustment = -quota;
    }

    /// Moves protected's LRU entries to probation while protected is over its share.
    fn demote_from_main_protected(&mut self) {
        let mut size = self.main_protected_weighted_size;
        for _ in 0..QUEUE_TRANSFER_THRESHOLD {
            if size <= self.main_protected_maximum {
                break;
            }
            let demoted = self.first(Queue::Protected);
            if demoted == NIL {
                break;
            }
            self.move_to(demoted, Queue::Probation);
            size -= self.weight(demoted);
        }
        self.main_protected_weighted_size = size;
    }
}

impl Policy for WTinyLfu {
    /// `getIfPresent(key)`, then `put(key, value)` on a miss, as a cache-aside client does.
    #[inline]
    fn access(&mut self, key: u64, size: u32) -> bool {
        let n = match self.index.entry(key) {
            Entry::Occupied(hit) => {
                let n = *hit.get();
                self.after_read(n, key);
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

    fn len(&self) -> usize {
        self.index.len()
    }
}

#[cfg(test)]
mod tests;
