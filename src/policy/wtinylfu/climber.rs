//! W-TinyLFU's hill climber, as Caffeine's `climb`: the share of the capacity given to the LRU window is tuned
//! by comparing the hit rate of successive samples of requests, and entries move between the segments to
//! follow the new quotas.

use super::{Queue, WTinyLfu, HILL_CLIMBER_STEP_PERCENT, NIL};

const HILL_CLIMBER_RESTART_THRESHOLD: f64 = 0.05;
const HILL_CLIMBER_STEP_DECAY_RATE: f64 = 0.98;
/// Most entries moved between segments in one maintenance cycle; the rest waits for the next cycle.
const QUEUE_TRANSFER_THRESHOLD: usize = 1_000;

impl WTinyLfu {
    /// `climb`: at the end of every maintenance cycle, resize the window by the pending adjustment.
    pub(super) fn climb(&mut self) {
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
