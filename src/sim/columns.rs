//! Events copied out of a batch into columns of their own: a sample of the keys, or one pod's share of a
//! fleet's events, handed on as `Events` with the same columns as the batch they came from.

use super::events::Events;

/// The columns are open to the crate for copies made column by column (a fleet's shares, `fleet/share.rs`).
#[derive(Default)]
pub struct Columns {
    pub(crate) keys: Vec<u64>,
    pub(crate) ops: Vec<u8>,
    pub(crate) entities: Vec<u64>,
    pub(crate) fields: Vec<u64>,
    pub(crate) value_sizes: Vec<u32>,
    pub(crate) key_bytes: Vec<u32>,
    pub(crate) reqs: Vec<u64>,
    pub(crate) conns: Vec<u64>,
    pub(crate) batches: Vec<u64>,
    pub(crate) ts_ns: Vec<i64>,
    pub(crate) clients: Vec<u32>,
    pub(crate) shards: Vec<u64>,
}

impl Columns {
    pub fn push(&mut self, ev: &Events, i: usize) {
        self.keys.push(ev.keys[i]);
        if let Some(x) = ev.ops { self.ops.push(x[i]) }
        if let Some(x) = ev.entities { self.entities.push(x[i]) }
        if let Some(x) = ev.fields { self.fields.push(x[i]) }
        if let Some(x) = ev.value_sizes { self.value_sizes.push(x[i]) }
        if let Some(x) = ev.key_bytes { self.key_bytes.push(x[i]) }
        if let Some(x) = ev.reqs { self.reqs.push(x[i]) }
        if let Some(x) = ev.conns { self.conns.push(x[i]) }
        if let Some(x) = ev.batches { self.batches.push(x[i]) }
        if let Some(x) = ev.ts_ns { self.ts_ns.push(x[i]) }
        if let Some(x) = ev.clients { self.clients.push(x[i]) }
        if let Some(x) = ev.shards { self.shards.push(x[i]) }
    }

    /// The kept events, with the same columns as `like` has.
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Empties every column, keeping the room each had (for copies made again and again).
    pub fn clear(&mut self) {
        self.keys.clear();
        self.ops.clear();
        self.entities.clear();
        self.fields.clear();
        self.value_sizes.clear();
        self.key_bytes.clear();
        self.reqs.clear();
        self.conns.clear();
        self.batches.clear();
        self.ts_ns.clear();
        self.clients.clear();
        self.shards.clear();
    }

    pub fn events<'a>(&'a self, like: &Events) -> Events<'a> {
        Events {
            keys: &self.keys,
            ops: like.ops.map(|_| &self.ops[..]),
            entities: like.entities.map(|_| &self.entities[..]),
            fields: like.fields.map(|_| &self.fields[..]),
            value_sizes: like.value_sizes.map(|_| &self.value_sizes[..]),
            key_bytes: like.key_bytes.map(|_| &self.key_bytes[..]),
            reqs: like.reqs.map(|_| &self.reqs[..]),
            conns: like.conns.map(|_| &self.conns[..]),
            batches: like.batches.map(|_| &self.batches[..]),
            ts_ns: like.ts_ns.map(|_| &self.ts_ns[..]),
            clients: like.clients.map(|_| &self.clients[..]),
            shards: like.shards.map(|_| &self.shards[..]),
        }
    }
}
