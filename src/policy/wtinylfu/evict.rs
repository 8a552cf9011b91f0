//! W-TinyLFU's eviction, as Caffeine's `evictEntries`: the window's overflow moves to probation, and while the
//! cache is over its capacity, TinyLFU pits each candidate from the window against probation's LRU victim.

use super::{Node, Queue, WTinyLfu, NIL};

const ADMIT_HASHDOS_THRESHOLD: u32 = 6;

impl WTinyLfu {
    pub(super) fn evict_entries(&mut self) {
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
    pub(super) fn evict_entry(&mut self, n: u32) {
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
}
