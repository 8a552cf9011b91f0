//! Classic libpcap files (the format of `tcpdump -w`): a 24-byte file header whose magic number gives the
//! byte order and the timestamp unit (micro- or nanoseconds), then records of a 16-byte header (seconds,
//! fraction, captured length, original length) and the captured bytes. The variant Alexey Kuznetzov's
//! patched libpcap wrote (magic 0xa1b2cd34) adds 8 bytes of metadata to each record header.
//! Source: the libpcap file format document (draft-ietf-opsawg-pcap) and libpcap's `sf-pcap.c`.

use super::endian::{array, Endian};
use super::limits;

pub(crate) const FILE_HEADER_LEN: usize = 24;

const MAGIC_MICROS: u32 = 0xa1b2_c3d4;
const MAGIC_NANOS: u32 = 0xa1b2_3c4d;
const MAGIC_KUZNETZOV: u32 = 0xa1b2_cd34;

/// What the file header says about every record.
#[derive(Clone, Copy, Debug)]
pub(crate) struct PcapHeader {
    pub endian: Endian,
    /// Nanoseconds per unit of a record's fraction field: 1000 for microsecond files, 1 for nanosecond.
    pub frac_ns: u32,
    pub record_header_len: usize,
    pub snaplen: u32,
    pub link_type: u32,
}

/// One record's header, decoded.
pub(crate) struct RecordHeader {
    pub ts_ns: i64,
    pub incl_len: u32,
    pub orig_len: u32,
}

/// The byte order, timestamp unit and record header length a magic number announces.
pub(crate) fn magic(head: [u8; 4]) -> Option<(Endian, u32, usize)> {
    for endian in [Endian::Little, Endian::Big] {
        match endian.u32(head) {
            MAGIC_MICROS => return Some((endian, 1000, 16)),
            MAGIC_NANOS => return Some((endian, 1, 16)),
            MAGIC_KUZNETZOV => return Some((endian, 1000, 24)),
            _ => {}
        }
    }
    None
}

impl PcapHeader {
    /// Reads the 24-byte file header; the caller has checked the magic with `magic`.
    pub fn parse(b: &[u8]) -> Result<PcapHeader, String> {
        let (endian, frac_ns, record_header_len) =
            magic(array(b, 0)).ok_or_else(|| "not a pcap file header".to_string())?;
        let major = endian.u16(array(b, 4));
        if major != 2 {
            return Err(format!("pcap version {major} is not supported (only 2.x exists)"));
        }
        // The upper bits of the link type field carry FCS information; the link type is the low 16 bits.
        let link_type = endian.u32(array(b, 20)) & 0xffff;
        let snaplen = endian.u32(array(b, 16));
        Ok(PcapHeader { endian, frac_ns, record_header_len, snaplen, link_type })
    }

    /// Decodes a record header (`b` holds at least `record_header_len` bytes).
    #[inline]
    pub fn record(&self, b: &[u8]) -> RecordHeader {
        let e = self.endian;
        // Seconds are unsigned so that files written after 2038 keep working.
        let secs = e.u32(array(b, 0)) as i64;
        let frac = e.u32(array(b, 4)) as i64;
        RecordHeader {
            ts_ns: secs * 1_000_000_000 + frac * self.frac_ns as i64,
            incl_len: e.u32(array(b, 8)),
            orig_len: e.u32(array(b, 12)),
        }
    }

    /// The largest captured length accepted: a little above the snap length, never an absurd allocation.
    pub fn max_incl_len(&self) -> u32 {
        limits::max_captured(self.snaplen)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_all_four_magics() {
        let cases: [([u8; 4], Endian, u32); 4] = [
            ([0xd4, 0xc3, 0xb2, 0xa1], Endian::Little, 1000),
            ([0xa1, 0xb2, 0xc3, 0xd4], Endian::Big, 1000),
            ([0x4d, 0x3c, 0xb2, 0xa1], Endian::Little, 1),
            ([0xa1, 0xb2, 0x3c, 0x4d], Endian::Big, 1),
        ];
        for (bytes, endian, frac) in cases {
            assert_eq!(magic(bytes), Some((endian, frac, 16)), "{bytes:02x?}");
        }
        assert_eq!(magic(*b"HMGE"), None);
        assert_eq!(magic([0x0a, 0x0d, 0x0d, 0x0a]), None);
    }

    #[test]
    fn record_timestamps_scale_by_the_magic() {
        let mut h = [0u8; 24];
        h[..4].copy_from_slice(&[0xa1, 0xb2, 0x3c, 0x4d]);
        h[4..6].copy_from_slice(&2u16.to_be_bytes());
        h[20..24].copy_from_slice(&(0x1000_0000u32 | 113).to_be_bytes());
        let header = PcapHeader::parse(&h).unwrap();
        assert_eq!(header.link_type, 113, "FCS bits are not part of the link type");
        let mut r = [0u8; 16];
        r[..4].copy_from_slice(&4_000_000_000u32.to_be_bytes());
        r[4..8].copy_from_slice(&123_456_789u32.to_be_bytes());
        r[8..12].copy_from_slice(&60u32.to_be_bytes());
        r[12..16].copy_from_slice(&1514u32.to_be_bytes());
        let rec = header.record(&r);
        assert_eq!(rec.ts_ns, 4_000_000_000_123_456_789, "seconds past 2038 stay positive");
        assert_eq!((rec.incl_len, rec.orig_len), (60, 1514));
        h[4] = 9;
        assert!(PcapHeader::parse(&h).unwrap_err().contains("version"));
    }
}
