//! A batch of trace events as borrowed columns. Only `keys` is required: without `ops` every event is a
//! read, without `reqs` every read is a command of its own, without `batches` every command is a round trip
//! of its own, without sizes every entry weighs 1.

use crate::trace::reader::OP_READ;

pub const UNKNOWN_SIZE: u32 = u32::MAX;

#[derive(Clone, Copy, Default)]
pub struct Events<'a> {
    pub keys: &'a [u64],
    pub ops: Option<&'a [u8]>,
    pub entities: Option<&'a [u64]>,
    pub fields: Option<&'a [u64]>,
    /// Bytes of each lookup's value; `UNKNOWN_SIZE` when the trace does not know.
    pub value_sizes: Option<&'a [u32]>,
    pub key_bytes: Option<&'a [u32]>,
    pub reqs: Option<&'a [u64]>,
    /// The connection of each event (any number naming it) and the batch it was sent in on that connection
    /// (its round trip): given together or not at all.
    pub conns: Option<&'a [u64]>,
    pub batches: Option<&'a [u64]>,
    pub ts_ns: Option<&'a [i64]>,
    /// The client host of each event, as a small index stable within the trace (for routing by client).
    pub clients: Option<&'a [u32]>,
    /// The hash of each event's shard id (the key-pattern route).
    pub shards: Option<&'a [u64]>,
}

impl<'a> Events<'a> {
    pub fn reads(keys: &'a [u64]) -> Events<'a> {
        Events { keys, ..Events::default() }
    }

    pub fn len(&self) -> usize {
        self.keys.len()
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    /// Checks that every given column has one value per event.
    pub fn validate(&self) -> Result<(), String> {
        let n = self.keys.len();
        let lens = [
            ("ops", self.ops.map(<[u8]>::len)),
            ("entities", self.entities.map(<[u64]>::len)),
            ("fields", self.fields.map(<[u64]>::len)),
            ("value_sizes", self.value_sizes.map(<[u32]>::len)),
            ("key_bytes", self.key_bytes.map(<[u32]>::len)),
            ("reqs", self.reqs.map(<[u64]>::len)),
            ("conns", self.conns.map(<[u64]>::len)),
            ("batches", self.batches.map(<[u64]>::len)),
            ("ts_ns", self.ts_ns.map(<[i64]>::len)),
            ("clients", self.clients.map(<[u32]>::len)),
            ("shards", self.shards.map(<[u64]>::len)),
        ];
        for (name, len) in lens {
            if let Some(len) = len.filter(|&l| l != n) {
                return Err(format!("{len} values in column {name} for {n} events"));
            }
        }
        if self.conns.is_some() != self.batches.is_some() {
            return Err("batches and their connections go together".into());
        }
        Ok(())
    }

    /// Only reads, nothing but keys (and perhaps times): the plain fast path applies.
    pub fn is_plain(&self) -> bool {
        self.ops.is_none() && self.value_sizes.is_none() && self.reqs.is_none() && self.batches.is_none()
    }

    #[inline]
    pub fn op(&self, i: usize) -> u8 {
        self.ops.map_or(OP_READ, |o| o[i])
    }
    #[inline]
    pub fn entity(&self, i: usize) -> u64 {
        self.entities.map_or(self.keys[i], |e| e[i])
    }
    #[inline]
    pub fn field(&self, i: usize) -> u64 {
        self.fields.map_or(0, |f| f[i])
    }
    #[inline]
    pub fn value_size(&self, i: usize) -> u32 {
        self.value_sizes.map_or(UNKNOWN_SIZE, |v| v[i])
    }
    #[inline]
    pub fn key_bytes(&self, i: usize) -> u32 {
        self.key_bytes.map_or(0, |k| k[i])
    }
    #[inline]
    pub fn req(&self, i: usize) -> Option<u64> {
        self.reqs.map(|r| r[i])
    }
    /// The round trip of event `i`, as (connection, batch), when the trace knows batches (without them every
    /// command is a round trip of its own).
    #[inline]
    pub fn batch(&self, i: usize) -> Option<(u64, u64)> {
        self.conns.zip(self.batches).map(|(c, b)| (c[i], b[i]))
    }
    #[inline]
    pub fn ts(&self, i: usize) -> Option<i64> {
        self.ts_ns.map(|t| t[i])
    }
    #[inline]
    pub fn client(&self, i: usize) -> Option<u32> {
        self.clients.map(|c| c[i])
    }
    #[inline]
    pub fn shard(&self, i: usize) -> Option<u64> {
        self.shards.map(|s| s[i])
    }
}
