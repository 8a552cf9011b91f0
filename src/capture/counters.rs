//! What a caller reports about a capture: packets and bytes read, TCP segments decoded, and how many
//! frames were skipped for each reason. Skips are anomalies to show in a summary, not errors.

use super::decode::{decode_tcp, Skip};
use super::reader::Packet;
use crate::net::TcpSegment;

#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CaptureCounters {
    pub packets: u64,
    /// Captured bytes of all packets (record headers not included).
    pub bytes: u64,
    /// Packets decoded to a TCP segment.
    pub segments: u64,
    /// Payload bytes that segments lacked because the snap length cut them off.
    pub missing_bytes: u64,
    pub unsupported_link: u64,
    /// The last unsupported link type seen, to name in a report.
    pub unsupported_link_type: Option<u32>,
    pub not_ip: u64,
    pub not_tcp: u64,
    pub fragments: u64,
    pub truncated: u64,
    pub malformed: u64,
    /// Offset of a last record cut off by the end of the file (copied from the reader at the end).
    pub truncated_tail: Option<u64>,
}

impl CaptureCounters {
    /// Decodes a packet and counts it, and its skip reason if it is not a TCP segment.
    #[inline]
    pub fn decode<'a>(&mut self, p: &Packet<'a>) -> Option<TcpSegment<'a>> {
        self.packets += 1;
        self.bytes += p.data.len() as u64;
        match decode_tcp(p.link_type, p.ts_ns, p.data, p.orig_len) {
            Ok(segment) => {
                self.segments += 1;
                self.missing_bytes += segment.missing_tail as u64;
                Some(segment)
            }
            Err(skip) => {
                self.skip(skip);
                None
            }
        }
    }

    pub fn skip(&mut self, skip: Skip) {
        match skip {
            Skip::UnsupportedLink(link) => {
                self.unsupported_link += 1;
                self.unsupported_link_type = Some(link);
            }
            Skip::NotIp => self.not_ip += 1,
            Skip::NotTcp => self.not_tcp += 1,
            Skip::Fragment => self.fragments += 1,
            Skip::Truncated => self.truncated += 1,
            Skip::Malformed => self.malformed += 1,
        }
    }

    /// Packets that gave no segment, for any reason.
    pub fn skipped(&self) -> u64 {
        self.unsupported_link + self.not_ip + self.not_tcp + self.fragments + self.truncated + self.malformed
    }
}
