//! Object traces, as the cache-simulation field writes them: one request per record naming an object id,
//! its size and a time, rather than Redis commands. libCacheSim's `oracleGeneral` binary (`oracle_general`)
//! and CSV with a column spec (`csv`) are read into the same batches.
//!
//! An object id becomes a cache key as the `keys` text format's line would: a numeric id is hashed as its
//! decimal text, so `123` in an `oracleGeneral` file, in a CSV and in a keys trace is the same key (and the
//! same Java `hashCode`, which W-TinyLFU's sketch uses).

use crate::hash::key_hash;

use super::reader::{OP_DELETE, OP_READ, OP_WRITE};

/// The requests of a stretch of an object trace, as columns.
#[derive(Debug, Default)]
pub struct ObjectBatch {
    pub keys: Vec<u64>,
    /// `OP_READ`, `OP_WRITE` or `OP_DELETE`.
    pub ops: Vec<u8>,
    /// ns since the trace's epoch (libCacheSim's clock is in seconds).
    pub ts_ns: Vec<i64>,
    /// The object's size: the entry's value bytes.
    pub value_sizes: Vec<u32>,
    /// Bytes of the key besides the value (a CSV's key-size column), 0 when the trace has none.
    pub key_bytes: Vec<u32>,
    /// The request's index in the trace.
    pub reqs: Vec<u64>,
    /// `oracleGeneral` only: the index of the object's next request, -1 for none, as the file says.
    pub next_access: Vec<i64>,
}

impl ObjectBatch {
    pub fn len(&self) -> usize {
        self.keys.len()
    }
    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }
}

/// Counts over the requests read so far.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ObjectStats {
    pub requests: u64,
    pub lookups: u64,
    pub writes: u64,
    pub deletes: u64,
    /// Requests of size 0, left out as libCacheSim's readers leave them out (`ignore_size_zero_req`, on by
    /// default): an object of no bytes is no cache entry, and the hits stay equal to libCacheSim's.
    pub zero_size: u64,
}

impl ObjectStats {
    pub fn count(&mut self, op: u8) {
        self.requests += 1;
        match op {
            OP_READ => self.lookups += 1,
            OP_WRITE => self.writes += 1,
            OP_DELETE => self.deletes += 1,
            _ => {}
        }
    }
}

/// The cache key of a numeric object id: the hash of its decimal text.
pub fn numeric_key(id: u64) -> u64 {
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = id;
    loop {
        at -= 1;
        buf[at] = b'0' + (n % 10) as u8;
        n /= 10;
        if n == 0 {
            break;
        }
    }
    key_hash(&buf[at..])
}

/// The op a request's operation name stands for (memcached's and Twitter's names, and libCacheSim's), case
/// ignored; None for a name that is none of them.
pub fn op_of(name: &[u8]) -> Option<u8> {
    let lower = name.trim_ascii().to_ascii_lowercase();
    Some(match lower.as_slice() {
        b"get" | b"gets" | b"read" | b"lookup" => OP_READ,
        b"set" | b"add" | b"replace" | b"cas" | b"append" | b"prepend" | b"incr" | b"decr" | b"write"
        | b"update" | b"insert" => OP_WRITE,
        b"delete" | b"del" | b"remove" => OP_DELETE,
        _ => return None,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_numeric_id_is_the_key_its_text_is() {
        for id in [0u64, 7, 10, 123_456_789, u64::MAX] {
            assert_eq!(numeric_key(id), key_hash(id.to_string().as_bytes()));
        }
    }

    #[test]
    fn operations_by_name() {
        assert_eq!(op_of(b"GET"), Some(OP_READ));
        assert_eq!(op_of(b" gets "), Some(OP_READ));
        assert_eq!(op_of(b"cas"), Some(OP_WRITE));
        assert_eq!(op_of(b"delete"), Some(OP_DELETE));
        assert_eq!(op_of(b"frob"), None);
    }
}
