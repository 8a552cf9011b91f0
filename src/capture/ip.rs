//! IPv4 and IPv6 down to the TCP header. The IP length, not the frame length, says where the packet ends,
//! so Ethernet padding (frames padded to 60 bytes) and trailers never become payload, and bytes the snap
//! length cut off are known. A length of 0 is what captures of TSO/GSO super-packets (and IPv6 jumbograms)
//! show; the frame's length on the wire is used then, as Wireshark does. Fragments are not reassembled:
//! Redis traffic over TCP does not fragment in practice, so they are only counted. Checksums are not
//! verified: on the capturing host, offload leaves them unset.
//! Source: RFC 791, RFC 8200 (extension header order and formats), RFC 6946 (atomic fragments).

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use super::decode::{Frame, Skip};
use super::endian::{array, be16};
use super::link::IpVersion;

const PROTO_TCP: u8 = 6;

/// An IP packet carrying TCP: its addresses, where the TCP header starts, and where the IP length says
/// the packet ends (which may lie past the captured bytes).
pub(crate) struct IpPacket {
    pub src: IpAddr,
    pub dst: IpAddr,
    pub l4: usize,
    pub end: usize,
}

#[inline]
pub(crate) fn ip(f: &Frame, at: usize, version: IpVersion) -> Result<IpPacket, Skip> {
    let Some(&first) = f.bytes.get(at) else {
        return Err(f.short());
    };
    match (first >> 4, version) {
        (4, IpVersion::V4 | IpVersion::Any) => ipv4(f, at),
        (6, IpVersion::V6 | IpVersion::Any) => ipv6(f, at),
        (_, IpVersion::Any) => Err(Skip::NotIp),
        _ => Err(Skip::Malformed),
    }
}

/// Where the IP packet ends by its length field, `claimed` bytes after `at`; 0 means "see the frame".
fn packet_end(f: &Frame, at: usize, claimed: usize) -> Result<usize, Skip> {
    let on_wire = f.wire_len.saturating_sub(at);
    if claimed == 0 {
        return Ok(at + on_wire);
    }
    if claimed > on_wire {
        // More bytes than the frame had on the wire: a corrupt header (or a corrupt record length).
        return Err(Skip::Malformed);
    }
    Ok(at + claimed)
}

fn ipv4(f: &Frame, at: usize) -> Result<IpPacket, Skip> {
    let b = f.bytes;
    if b.len() < at + 20 {
        return Err(f.short());
    }
    let ihl = (b[at] & 0x0f) as usize * 4;
    if ihl < 20 {
        return Err(Skip::Malformed);
    }
    let end = packet_end(f, at, be16(b, at + 2) as usize)?;
    if end < at + ihl {
        return Err(Skip::Malformed);
    }
    if b[at + 9] != PROTO_TCP {
        return Err(Skip::NotTcp);
    }
    let frag = be16(b, at + 6);
    if frag & 0x3fff != 0 {
        // More-fragments set, or a fragment offset: part of a packet, not a whole one.
        return Err(Skip::Fragment);
    }
    if b.len() < at + ihl {
        return Err(f.short());
    }
    Ok(IpPacket {
        src: IpAddr::V4(Ipv4Addr::from(array::<4>(b, at + 12))),
        dst: IpAddr::V4(Ipv4Addr::from(array::<4>(b, at + 16))),
        l4: at + ihl,
        end,
    })
}

/// Extension headers followed before giving up: real packets carry one or two.
const MAX_EXTENSIONS: usize = 8;

fn ipv6(f: &Frame, at: usize) -> Result<IpPacket, Skip> {
    let b = f.bytes;
    if b.len() < at + 40 {
        return Err(f.short());
    }
    let payload = be16(b, at + 4) as usize;
    let end = packet_end(f, at, if payload == 0 { 0 } else { 40 + payload })?;
    if end < at + 40 {
        return Err(Skip::Malformed);
    }
    let mut next = b[at + 6];
    let mut pos = at + 40;
    for _ in 0..MAX_EXTENSIONS {
        let len = match next {
            PROTO_TCP => {
                return Ok(IpPacket {
                    src: IpAddr::V6(Ipv6Addr::from(array::<16>(b, at + 8))),
                    dst: IpAddr::V6(Ipv6Addr::from(array::<16>(b, at + 24))),
                    l4: pos,
                    end,
                });
            }
            // Hop-by-hop, routing, destination options, mobility, HIP, shim6: length in 8-byte units after
            // the first 8.
            0 | 43 | 60 | 135 | 139 | 140 => 8 + b.get(pos + 1).map_or(0, |&l| l as usize * 8),
            // Authentication header: length in 4-byte units after the first 8.
            51 => 8 + b.get(pos + 1).map_or(0, |&l| l as usize * 4),
            44 => {
                let frag = be16(b, pos + 2);
                if pos + 8 <= b.len() && frag & 0xfff9 != 0 {
                    return Err(Skip::Fragment);
                }
                8 // an atomic fragment (offset 0, no more fragments) is a whole packet: read on
            }
            _ => return Err(Skip::NotTcp),
        };
        if pos + 8 > b.len() {
            return Err(f.short());
        }
        next = b[pos];
        pos += len;
        if pos > end {
            return Err(Skip::Malformed);
        }
    }
    Err(Skip::Malformed)
}
