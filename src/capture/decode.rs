//! From a captured link-layer frame to a `TcpSegment`: link layer (`link`), IP (`ip`), then the TCP header
//! here. Anything that is not a whole TCP segment is a `Skip` reason for the caller to count, never an
//! error and never a panic, whatever the bytes. Payload is a slice of the frame, without copying.
//! Source: RFC 9293 for the TCP header.

use std::net::SocketAddr;

use super::endian::{be16, be32};
use super::ip::ip;
use super::link::network_layer;
use crate::net::{TcpFlags, TcpSegment};

/// Why a frame yielded no TCP segment.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Skip {
    /// A link type this decoder does not know (the LINKTYPE_ value).
    UnsupportedLink(u32),
    /// Not IPv4 or IPv6 (ARP, LLDP, ...).
    NotIp,
    /// IP, but not TCP (UDP, ICMP, ...).
    NotTcp,
    /// An IP fragment; fragments are not reassembled.
    Fragment,
    /// The snap length cut the frame inside its headers.
    Truncated,
    /// Headers that contradict themselves or the frame's length.
    Malformed,
}

/// The frame being decoded: its captured bytes and its length on the wire.
pub(crate) struct Frame<'a> {
    pub bytes: &'a [u8],
    pub wire_len: usize,
}

impl Frame<'_> {
    /// The reason for headers that need more bytes than were captured: the snap length if the frame was
    /// cut, otherwise a header that claims more than there is.
    #[inline]
    pub fn short(&self) -> Skip {
        if self.bytes.len() < self.wire_len {
            Skip::Truncated
        } else {
            Skip::Malformed
        }
    }
}

/// Decodes one captured frame of link type `link_type`, `orig_len` bytes long on the wire.
#[inline]
pub fn decode_tcp<'a>(link_type: u32, ts_ns: i64, frame: &'a [u8], orig_len: u32) -> Result<TcpSegment<'a>, Skip> {
    let f = Frame { bytes: frame, wire_len: (orig_len as usize).max(frame.len()) };
    let (at, version) = network_layer(link_type, &f)?;
    let ip = ip(&f, at, version)?;
    let (b, tcp) = (frame, ip.l4);
    if ip.end < tcp + 20 {
        return Err(Skip::Malformed);
    }
    if b.len() < tcp + 20 {
        return Err(f.short());
    }
    let header_len = (b[tcp + 12] >> 4) as usize * 4;
    if header_len < 20 || ip.end < tcp + header_len {
        return Err(Skip::Malformed);
    }
    let payload_at = tcp + header_len;
    if b.len() < payload_at {
        return Err(f.short());
    }
    let captured_end = ip.end.min(b.len());
    let flags = TcpFlags(b[tcp + 13]);
    let window_scale = if flags.has(TcpFlags::SYN) { window_scale(&b[tcp + 20..payload_at]) } else { None };
    Ok(TcpSegment {
        ts_ns,
        src: SocketAddr::new(ip.src, be16(b, tcp)),
        dst: SocketAddr::new(ip.dst, be16(b, tcp + 2)),
        seq: be32(b, tcp + 4),
        ack: be32(b, tcp + 8),
        flags,
        window: be16(b, tcp + 14),
        window_scale,
        payload: &b[payload_at..captured_end],
        missing_tail: (ip.end - captured_end) as u32,
    })
}

/// The window scale option among a SYN's TCP options (kind 3, length 3), if present and well formed.
/// Source: RFC 7323 section 2; a shift over 14 is taken as 14, as the RFC says.
fn window_scale(mut options: &[u8]) -> Option<u8> {
    while let Some(&kind) = options.first() {
        match kind {
            0 => return None,
            1 => options = &options[1..],
            _ => {
                let len = usize::from(*options.get(1)?);
                if len < 2 || len > options.len() {
                    return None;
                }
                if kind == 3 && len == 3 {
                    return Some(options[2].min(14));
                }
                options = &options[len..];
            }
        }
    }
    None
}
