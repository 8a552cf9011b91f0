//! One pod's share of a chunk of the stream, copied out in trace order.
//!
//! A pod of a 64-pod fleet takes about one event in 64. Reading them where they lie would fetch a cache line
//! of every column for each event; copying the shares out in one sequential pass over each column, and
//! letting each pod read its own share in sequence, costs a few bytes per event and spares those misses.
//! Only the columns a pod's cache uses are copied: clients and shards serve the routing, done before.

use crate::sim::events::Events;
use crate::sim::Columns;

#[derive(Default)]
pub struct Share {
    /// Where each event of the share lies in the chunk.
    pub at: Vec<u32>,
    columns: Columns,
}

/// The pod of an event that reaches every pod (a write or a delete).
pub const EVERY_POD: u32 = u32::MAX;
/// The pod of an event that no pod here takes (a lookup of a pod another task runs).
pub const NO_POD: u32 = u32::MAX - 1;

impl Share {
    /// The share as events, with the columns `like` has but those of the routing.
    pub fn events<'a>(&'a self, like: &Events) -> Events<'a> {
        Events { clients: None, shards: None, ..self.columns.events(like) }
    }

    pub fn is_empty(&self) -> bool {
        self.at.is_empty()
    }
}

/// Copies events `start..start + pods.len()` of `ev` into the shares of their pods (`EVERY_POD`: into all,
/// `NO_POD`: into none), column by column.
pub fn share_out(ev: &Events, start: usize, pods: &[u32], shares: &mut [Share]) {
    for share in shares.iter_mut() {
        share.at.clear();
        share.columns.clear();
    }
    for (at, &pod) in (0u32..).zip(pods) {
        match pod {
            EVERY_POD => shares.iter_mut().for_each(|s| s.at.push(at)),
            NO_POD => {}
            _ => shares[pod as usize].at.push(at),
        }
    }
    let end = start + pods.len();
    scatter(&ev.keys[start..end], pods, shares, |s| &mut s.columns.keys);
    if let Some(c) = ev.ops {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.ops);
    }
    if let Some(c) = ev.entities {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.entities);
    }
    if let Some(c) = ev.fields {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.fields);
    }
    if let Some(c) = ev.value_sizes {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.value_sizes);
    }
    if let Some(c) = ev.key_bytes {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.key_bytes);
    }
    if let Some(c) = ev.reqs {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.reqs);
    }
    if let Some(c) = ev.conns {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.conns);
    }
    if let Some(c) = ev.batches {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.batches);
    }
    if let Some(c) = ev.ts_ns {
        scatter(&c[start..end], pods, shares, |s| &mut s.columns.ts_ns);
    }
}

fn scatter<T: Copy>(column: &[T], pods: &[u32], shares: &mut [Share], of: impl Fn(&mut Share) -> &mut Vec<T>) {
    for (&value, &pod) in column.iter().zip(pods) {
        match pod {
            EVERY_POD => shares.iter_mut().for_each(|s| of(s).push(value)),
            NO_POD => {}
            _ => of(&mut shares[pod as usize]).push(value),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_pod_gets_its_events_in_order_and_every_pod_the_writes() {
        let keys = [10, 11, 12, 13, 14];
        let ops = [0u8, 1, 0, 0, 2];
        let ev = Events { keys: &keys, ops: Some(&ops), ..Events::default() };
        let mut shares: Vec<Share> = (0..2).map(|_| Share::default()).collect();
        share_out(&ev, 0, &[NO_POD, EVERY_POD, 1, 0, EVERY_POD], &mut shares);
        assert_eq!(shares[0].at, [1, 3, 4]);
        assert_eq!(shares[0].events(&ev).keys, [11, 13, 14]);
        assert_eq!(shares[1].events(&ev).keys, [11, 12, 14]);
        assert_eq!(shares[1].events(&ev).ops, Some(&[1u8, 0, 2][..]));
        assert!(shares[1].events(&ev).reqs.is_none());
    }
}
