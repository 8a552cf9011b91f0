//! libCacheSim's `oracleGeneral` binary traces: 24-byte little-endian records of `u32` time (seconds),
//! `u64` object id, `u32` object size and `i64` the index of the object's next request (-1 for none).
//! Every record is a read, as libCacheSim simulates them. The public traces come as `.oracleGeneral.zst`;
//! decompression is the input layer's (`crate::input`).

use std::io::{self, Read};

use super::objects::{numeric_keys_in_place, ObjectBatch, ObjectStats};
use crate::input::mapped::Mapped;
use super::reader::OP_READ;
use crate::error::TraceError;

pub const RECORD: usize = 24;
pub const NS: i64 = 1_000_000_000;

pub struct OracleGeneralReader<R> {
    src: R,
    path: String,
    offset: u64,
    stats: ObjectStats,
    buf: Vec<u8>,
    /// A last record cut short: reported after the whole records before it have been handed out.
    cut: Option<TraceError>,
    /// Only the columns a simulation reads of an oracleGeneral trace (`lean`).
    lean: bool,
    /// The file mapped, for `next_records` (`mapped`).
    map: Option<Mapped>,
    /// Threads the ids may be hashed on (`crate::threads`).
    threads: usize,
}

impl<R: Read> OracleGeneralReader<R> {
    pub fn new(src: R, path: &str) -> Self {
        OracleGeneralReader { src, path: path.to_string(), offset: 0, stats: ObjectStats::default(), buf: Vec::new(), cut: None, lean: false, map: None,
                              threads: crate::threads::UNLIMITED }
    }

    /// Batches of keys, times and sizes only: every record is a read and a request of its own, and the
    /// key is its entity, so `ops`, `reqs`, `key_bytes` and `next_access` say nothing a simulation without
    /// Belady reads (`Events` takes their absence as exactly that), and building them was a fifth of a
    /// sampled curve's time.
    pub fn lean(mut self) -> Self {
        self.lean = true;
        self
    }

    /// The ids of each batch hashed on at most `threads` threads (`crate::threads`: a Dask task's share).
    pub fn threads(mut self, threads: usize) -> Self {
        self.threads = threads;
        self
    }

    /// `next_records` hands out slices of `map` (the whole file `src` reads, mapped) instead of reading.
    pub fn mapped(mut self, map: Mapped) -> Self {
        self.map = Some(map);
        self
    }

    pub fn stats(&self) -> ObjectStats {
        self.stats
    }

    pub fn bytes_read(&self) -> u64 {
        self.offset
    }

    /// At least `min_events` requests unless the trace ends; None at the end. An empty trace, and a last
    /// record cut short, are errors naming the byte.
    pub fn next_batch(&mut self, min_events: usize) -> Result<Option<ObjectBatch>, TraceError> {
        let from = self.offset as usize;
        let Some(got) = self.fill(min_events)? else {
            return Ok(None);
        };
        if let Some(map) = &self.map {
            self.buf.clear();
            self.buf.extend_from_slice(&map.bytes()[from..from + got]);
        }
        if self.lean {
            return Ok(Some(self.lean_batch(got)));
        }
        let mut b = ObjectBatch::default();
        for rec in self.buf[..got].chunks_exact(RECORD) {
            let ts = u32::from_le_bytes(rec[0..4].try_into().unwrap());
            let id = u64::from_le_bytes(rec[4..12].try_into().unwrap());
            let size = u32::from_le_bytes(rec[12..16].try_into().unwrap());
            let next = i64::from_le_bytes(rec[16..24].try_into().unwrap());
            if size == 0 {
                self.stats.zero_size += 1;
                continue;
            }
            b.keys.push(id); // hashed below, all at once
            b.ops.push(OP_READ);
            b.ts_ns.push(i64::from(ts) * NS);
            b.value_sizes.push(size);
            b.key_bytes.push(0);
            b.reqs.push(self.stats.requests);
            b.next_access.push(next);
            self.stats.count(OP_READ);
        }
        numeric_keys_in_place(&mut b.keys, self.threads);
        self.offset += got as u64;
        Ok(Some(b))
    }

    /// The next `min_events` whole records (fewer at the end) as bytes, the offset moved past them, for a
    /// caller that decodes them itself (`crate::simulation::sampled_scan`) and then says what it found
    /// (`counted`); None at the end. The same errors as `next_batch`.
    pub fn next_records(&mut self, min_events: usize) -> Result<Option<&[u8]>, TraceError> {
        let from = self.offset as usize;
        let Some(got) = self.fill(min_events)? else {
            return Ok(None);
        };
        self.offset += got as u64;
        Ok(Some(match &self.map {
            Some(map) => &map.bytes()[from..from + got],
            None => &self.buf[..got],
        }))
    }

    /// Reads up to `min_events` records into `buf` (or finds them in the mapping): the bytes of the whole
    /// ones, None at the end.
    fn fill(&mut self, min_events: usize) -> Result<Option<usize>, TraceError> {
        if let Some(e) = self.cut.take() {
            return Err(e);
        }
        let want = min_events.max(1) * RECORD;
        let got = match &self.map {
            Some(map) => want.min(map.bytes().len() - self.offset as usize),
            None => {
                self.buf.resize(want, 0);
                read_full(&mut self.src, &mut self.buf)
                    .map_err(|e| TraceError::whole(&self.path, format!("byte {}: read failed: {e}", self.offset)))?
            }
        };
        if got % RECORD != 0 {
            let at = self.offset + (got - got % RECORD) as u64;
            let e = TraceError::whole(
                &self.path,
                format!("byte {at}: oracleGeneral record cut short ({} of {RECORD} bytes)", got % RECORD),
            );
            if got < RECORD {
                return Err(e);
            }
            self.cut = Some(e);
        }
        let got = got - got % RECORD;
        if got == 0 {
            if self.stats.requests == 0 {
                return Err(TraceError::whole(&self.path, "empty trace: no requests"));
            }
            return Ok(None);
        }
        Ok(Some(got))
    }
}

impl<R> OracleGeneralReader<R> {
    /// Records decoded by the caller (`next_records`): `lookups` requests, each a read of its own, and
    /// `zero_size` left out.
    pub fn counted(&mut self, lookups: u64, zero_size: u64) {
        self.stats.requests += lookups;
        self.stats.lookups += lookups;
        self.stats.zero_size += zero_size;
    }

    /// The first `got` bytes of `buf` as a lean batch (`lean`): keys hashed as the records are decoded.
    fn lean_batch(&mut self, got: usize) -> ObjectBatch {
        let records = got / RECORD;
        let mut b = ObjectBatch {
            keys: Vec::with_capacity(records),
            ts_ns: Vec::with_capacity(records),
            value_sizes: Vec::with_capacity(records),
            ..ObjectBatch::default()
        };
        for rec in self.buf[..got].chunks_exact(RECORD) {
            let size = u32::from_le_bytes(rec[12..16].try_into().unwrap());
            if size == 0 {
                self.stats.zero_size += 1;
                continue;
            }
            b.keys.push(u64::from_le_bytes(rec[4..12].try_into().unwrap()));
            b.ts_ns.push(i64::from(u32::from_le_bytes(rec[0..4].try_into().unwrap())) * NS);
            b.value_sizes.push(size);
        }
        let n = b.keys.len() as u64;
        self.stats.requests += n;
        self.stats.lookups += n;
        numeric_keys_in_place(&mut b.keys, self.threads);
        self.offset += got as u64;
        b
    }
}

/// Reads until `buf` is full or the input ends; the bytes read.
fn read_full(src: &mut impl Read, buf: &mut [u8]) -> io::Result<usize> {
    let mut n = 0;
    while n < buf.len() {
        match src.read(&mut buf[n..]) {
            Ok(0) => break,
            Ok(k) => n += k,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;
    use crate::trace::objects::numeric_key;

    fn record(ts: u32, id: u64, size: u32, next: i64) -> Vec<u8> {
        [&ts.to_le_bytes()[..], &id.to_le_bytes(), &size.to_le_bytes(), &next.to_le_bytes()].concat()
    }

    #[test]
    fn reads_records_in_batches() {
        let data: Vec<u8> = (0..10).flat_map(|i| record(100 + i, u64::from(i % 3), 10 * i + 1, -1)).collect();
        let mut r = OracleGeneralReader::new(Cursor::new(data), "t");
        let a = r.next_batch(4).unwrap().unwrap();
        assert_eq!(a.len(), 4);
        assert_eq!(a.keys[0], numeric_key(0));
        assert_eq!(a.keys[3], a.keys[0]);
        assert_eq!((a.ts_ns[1], a.value_sizes[1]), (101 * NS, 11));
        let b = r.next_batch(100).unwrap().unwrap();
        assert_eq!((b.len(), b.reqs[0]), (6, 4));
        assert!(r.next_batch(4).unwrap().is_none());
        assert_eq!(r.stats().lookups, 10);
    }

    #[test]
    fn requests_of_size_zero_are_left_out_and_counted() {
        let data: Vec<u8> = [record(1, 5, 0, -1), record(2, 6, 10, -1), record(3, 5, 0, -1)].concat();
        let mut r = OracleGeneralReader::new(Cursor::new(data), "t");
        let b = r.next_batch(10).unwrap().unwrap();
        assert_eq!((b.keys.clone(), b.reqs.clone()), (vec![numeric_key(6)], vec![0]));
        assert_eq!((r.stats().requests, r.stats().zero_size), (1, 2));
    }

    #[test]
    fn a_lean_batch_has_the_full_batchs_keys_times_and_sizes_only() {
        let data: Vec<u8> = (0..10).flat_map(|i| record(100 + i, u64::from(i % 3), (i % 4) * 7, 5)).collect();
        let mut full = OracleGeneralReader::new(Cursor::new(data.clone()), "t");
        let mut lean = OracleGeneralReader::new(Cursor::new(data), "t").lean();
        for want in [4, 100] {
            let (a, b) = (full.next_batch(want).unwrap().unwrap(), lean.next_batch(want).unwrap().unwrap());
            assert_eq!((&b.keys, &b.ts_ns, &b.value_sizes), (&a.keys, &a.ts_ns, &a.value_sizes));
            assert!(b.ops.is_empty() && b.reqs.is_empty() && b.key_bytes.is_empty() && b.next_access.is_empty());
            assert_eq!(lean.bytes_read(), full.bytes_read());
        }
        assert!(lean.next_batch(4).unwrap().is_none());
        let (f, l) = (full.stats(), lean.stats());
        assert_eq!((l.requests, l.lookups, l.zero_size), (f.requests, f.lookups, f.zero_size));
        assert_eq!(l.zero_size, 3, "sizes 0 of records 0, 4 and 8 left out");
    }

    #[test]
    fn a_mapped_file_gives_the_records_and_errors_a_read_one_does() {
        let dir = std::env::temp_dir().join(format!("cachescope-og-map-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.oracleGeneral");
        let mut data: Vec<u8> = (0..10).flat_map(|i| record(i, u64::from(i % 4), i % 3, -1)).collect();
        data.extend_from_slice(&[9, 9, 9]);
        std::fs::write(&path, &data).unwrap();
        let map = Mapped::of(&std::fs::File::open(&path).unwrap()).unwrap().unwrap();
        let mut mapped = OracleGeneralReader::new(Cursor::new(Vec::new()), "t").lean().mapped(map);
        let mut read = OracleGeneralReader::new(Cursor::new(data), "t").lean();
        for want in [4, 4, 4] {
            let a = read.next_records(want).unwrap().map(<[u8]>::to_vec);
            assert_eq!(mapped.next_records(want).unwrap().map(<[u8]>::to_vec), a);
            assert_eq!(mapped.bytes_read(), read.bytes_read());
            read.counted(1, 0);
            mapped.counted(1, 0);
        }
        let e = mapped.next_records(4).unwrap_err().to_string();
        assert_eq!(e, read.next_records(4).unwrap_err().to_string());
        assert_eq!(e, "t: byte 240: oracleGeneral record cut short (3 of 24 bytes)");
        std::fs::remove_dir_all(&dir).unwrap();
    }

    #[test]
    fn a_cut_record_and_an_empty_file_are_errors() {
        let mut data = record(1, 2, 3, 4);
        data.extend_from_slice(&[1, 2, 3]);
        let mut r = OracleGeneralReader::new(Cursor::new(data), "t.oracleGeneral");
        assert_eq!(r.next_batch(10).unwrap().unwrap().len(), 1, "the whole record before the cut first");
        let e = r.next_batch(10).unwrap_err();
        assert_eq!(e.to_string(), "t.oracleGeneral: byte 24: oracleGeneral record cut short (3 of 24 bytes)");
        assert!(OracleGeneralReader::new(Cursor::new(Vec::new()), "t").next_batch(1).is_err());
    }
}
