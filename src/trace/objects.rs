//! Object traces, as the cache-simulation field writes them: one request per record naming an object id,
//! its size and a time, rather than Redis commands. libCacheSim's `oracleGeneral` binary (`oracle_general`)
//! and CSV with a column spec (`csv`) are read into the same batches.
//!
//! An object id becomes a cache key as the `keys` text format's line would: a numeric id is hashed as its
//! decimal text, so `123` in an `oracleGeneral` file, in a CSV and in a keys trace is the same key (and the
//! same Java `hashCode`, which W-TinyLFU's sketch uses).

use crate::hash::{key_hash, key_hash_ascii_word};

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
#[inline]
pub fn numeric_key(id: u64) -> u64 {
    numeric_key_inlined(id)
}

/// `numeric_key` always inlined, for a loop that makes several keys side by side (`sampled_scan`).
#[inline(always)]
pub fn numeric_key_inlined(id: u64) -> u64 {
    if id < 100_000_000 {
        // Up to eight digits: made in one register (`digit_values8`) and hashed from it. Written to memory two
        // at a time, as below, they were read back by the hash in wider loads that waited for the narrow
        // stores to land (a third of this function's time). The leading zeros are the word's low zero bytes
        // (a count of bits, where `ilog10` took a loop of divisions).
        let values = digit_values8(id as u32);
        let zeros = (values.trailing_zeros() / 8).min(7) as usize;
        return key_hash_ascii_word((values + 0x3030_3030_3030_3030) >> (8 * zeros), 8 - zeros);
    }
    // Two digits at a time from a table: this runs once per record of an object trace, and the division by
    // 100 halves the divisions of a digit-by-digit loop.
    const PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";
    let mut buf = [0u8; 20];
    let mut at = buf.len();
    let mut n = id;
    while n >= 100 {
        let r = (n % 100) as usize * 2;
        n /= 100;
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[r..r + 2]);
    }
    if n >= 10 {
        at -= 2;
        buf[at..at + 2].copy_from_slice(&PAIRS[n as usize * 2..n as usize * 2 + 2]);
    } else {
        at -= 1;
        buf[at] = b'0' + n as u8;
    }
    key_hash(&buf[at..])
}

/// The eight decimal digits of `n` (below 10^8, zero-padded) as ASCII in one word, the most significant in
/// its lowest byte (the text's order in memory): halves, then pairs, then digits split in lanes of 32, 16 and
/// 8 bits, each division a multiply and a shift exact in that range.
#[cfg(test)]
fn digits8(n: u32) -> u64 {
    digit_values8(n) + 0x3030_3030_3030_3030
}

/// `digits8` as the digits' values (0 to 9 a byte) rather than their ASCII.
#[inline(always)]
fn digit_values8(n: u32) -> u64 {
    let n = u64::from(n);
    let halves = (n / 10_000) | ((n % 10_000) << 32);
    let hundreds = ((halves * 10_486) >> 20) & 0x0000_007f_0000_007f;
    let pairs = ((halves - 100 * hundreds) << 16) | hundreds;
    let tens = ((pairs * 103) >> 10) & 0x000f_000f_000f_000f;
    ((pairs - 10 * tens) << 8) | tens
}

/// The keys of the ids met last, in a direct-mapped table of 2^14 (256 KiB, within a core's cache): a trace's
/// popular ids come back again and again (the most popular 16,000 of a Zipf(1) trace over 5 M ids are 60% of
/// its lookups), and a hit costs one load where hashing the id's text costs a dozen multiplies.
struct RecentKeys {
    slots: Vec<(u64, u64)>,
}

impl RecentKeys {
    const BITS: u32 = 14;

    fn new() -> RecentKeys {
        // Every slot a true pair from the start, so that no id needs to be reserved to mark an empty one.
        RecentKeys { slots: vec![(0, numeric_key(0)); 1 << Self::BITS] }
    }

    #[inline]
    fn key(&mut self, id: u64) -> u64 {
        let slot = &mut self.slots[(id.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - Self::BITS)) as usize];
        if slot.0 != id {
            *slot = (id, numeric_key(id));
        }
        slot.1
    }
}

/// Every id of `ids` replaced by its key (`numeric_key`), a large batch in two halves run on up to two
/// threads as `threads` allows (`crate::threads`): hashing is most of the time an object trace takes to read,
/// and the simulation waits for the batch.
pub fn numeric_keys_in_place(ids: &mut [u64], threads: usize) {
    const PARALLEL_MIN: usize = 1 << 16;
    fn hash(part: &mut [u64]) {
        let mut recent = RecentKeys::new();
        part.iter_mut().for_each(|k| *k = recent.key(*k));
    }
    if ids.len() < PARALLEL_MIN {
        return hash(ids);
    }
    let (a, b) = ids.split_at_mut(ids.len() / 2);
    crate::threads::run_jobs(threads, vec![Box::new(move || hash(a)), Box::new(move || hash(b))]);
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
    fn ids_of_up_to_eight_digits_hash_as_their_text_does() {
        // Every width, every power of ten and its neighbours, and a stride through the whole range.
        let mut ids: Vec<u64> = (0..=8).flat_map(|e| { let p = 10u64.pow(e); [p - 1, p, p + 1] }).collect();
        ids.extend((0..100_000_000u64).step_by(9_973));
        ids.extend(0..20_000);
        for id in ids {
            let text = id.to_string();
            assert_eq!(numeric_key(id), key_hash(text.as_bytes()), "id {id}");
            if id < 100_000_000 {
                assert_eq!(&digits8(id as u32).to_le_bytes(), format!("{id:08}").as_bytes(), "id {id}");
            }
        }
    }

    #[test]
    fn a_numeric_id_is_the_key_its_text_is() {
        for id in [0u64, 7, 10, 99, 100, 101, 123_456_789, 1_000_000_000, u64::MAX] {
            assert_eq!(numeric_key(id), key_hash(id.to_string().as_bytes()));
        }
        let mut ids: Vec<u64> = (0..200_000u64).map(|i| i * 7_919).collect();
        // Ids that come back (through the table of recent keys), and ids that share its slots.
        ids.extend((0..100_000u64).map(|i| (i % 97) * 7_919 + ((i % 5) << 14)));
        let want: Vec<u64> = ids.iter().map(|&id| numeric_key(id)).collect();
        for threads in [crate::threads::UNLIMITED, 1] {
            let mut ids = ids.clone();
            numeric_keys_in_place(&mut ids, threads);
            assert_eq!(ids, want);
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
