//! Reader and decoder, on frames and files built by hand with `synth`: `decode` for link layers, IP and
//! TCP, `files` for pcap and pcapng reading.

mod decode;
mod files;

use std::net::SocketAddr;

use super::link::*;
use super::synth::{self, PcapNgWriter, PcapWriter, Segment};
use super::*;
use crate::net::TcpSegment;

pub(super) const TS: i64 = 1_700_000_000_123_456_789;
pub(super) const HMGET: &[u8] = b"*3\r\n$5\r\nHMGET\r\n$4\r\nst_1\r\n$10\r\n2496559762\r\n";

pub(super) fn v4() -> (SocketAddr, SocketAddr) {
    ("10.1.2.3:51234".parse().unwrap(), "10.1.2.4:6379".parse().unwrap())
}

pub(super) fn v6() -> (SocketAddr, SocketAddr) {
    ("[fd00::1]:51234".parse().unwrap(), "[fd00::2]:6379".parse().unwrap())
}

pub(super) fn segment(addrs: (SocketAddr, SocketAddr), payload: &[u8]) -> Segment<'_> {
    Segment::new(addrs.0, addrs.1, 1000, payload)
}

pub(super) fn check(seg: &TcpSegment, addrs: (SocketAddr, SocketAddr), payload: &[u8]) {
    assert_eq!((seg.src, seg.dst), addrs);
    assert_eq!((seg.seq, seg.ack), (1000, 1));
    assert!(seg.flags.has(crate::net::TcpFlags::PSH) && seg.flags.has(crate::net::TcpFlags::ACK));
    assert_eq!(seg.payload, payload);
    assert_eq!(seg.missing_tail, 0);
}

pub(super) fn decode(link: u32, frame: &[u8]) -> Result<TcpSegment<'_>, Skip> {
    decode_tcp(link, TS, frame, frame.len() as u32)
}

/// Every prefix of a frame decodes without panicking, to a segment or a skip reason, as if cut by a snap
/// length (orig_len the full length) or by a lying record (orig_len the prefix).
fn all_prefixes(link: u32, frame: &[u8]) {
    for cut in 0..=frame.len() {
        let _ = decode_tcp(link, TS, &frame[..cut], frame.len() as u32);
        let _ = decode_tcp(link, TS, &frame[..cut], cut as u32);
    }
}
