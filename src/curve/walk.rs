//! The walk every curve makes over the events: restarts when they fall due, then each read or write in trace
//! order. Runs do the same in `sim::run` with more (TTLs, refreshes), which curves do not model.

use crate::sim::events::Events;
use crate::sim::options::{Options, WriteMode};
use crate::sim::{next_restart, Membership};
use crate::trace::reader::{OP_READ, OP_WRITE};

pub trait Observer {
    /// Every cache restarts empty.
    fn restart(&mut self);
    fn read(&mut self, ev: &Events, i: usize, opts: &Options);
    /// A key the trace wrote or deleted leaves every cache (an invalidation).
    fn invalidate(&mut self, key: u64);
    /// Event `i` writes or deletes (whatever the write mode): its round trip goes to Redis.
    fn change(&mut self, _ev: &Events, _i: usize) {}
}

/// Feeds `ev` to `o`; `last_restart` is the observer's own restart clock, kept between batches.
pub fn walk<O: Observer>(o: &mut O, last_restart: &mut Option<i64>, ev: &Events, members: &Membership,
                         opts: &Options, first_ts: Option<i64>) {
    let mut next = next_restart(opts, first_ts, *last_restart);
    for i in 0..ev.len() {
        if let (Some(t), Some(mut r)) = (ev.ts(i), next) {
            if t >= r {
                // Several restarts may fall before this event: the caches are empty after each.
                while t >= r {
                    *last_restart = Some(r);
                    match next_restart(opts, first_ts, *last_restart) {
                        Some(n) => r = n,
                        None => break,
                    }
                }
                o.restart();
                next = next_restart(opts, first_ts, *last_restart);
            }
        }
        match ev.op(i) {
            OP_READ => o.read(ev, i, opts),
            op => {
                o.change(ev, i);
                let invalidates = match opts.writes {
                    WriteMode::Ignore => false,
                    WriteMode::Update => op != OP_WRITE,
                    WriteMode::Invalidate => true,
                };
                if invalidates {
                    o.invalidate(ev.keys[i]);
                    if ev.field(i) == 0 {
                        for &k in members.entity_members(ev.entity(i)) {
                            o.invalidate(k);
                        }
                    }
                }
            }
        }
    }
}
