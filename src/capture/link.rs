//! Link layers: where the IP packet starts in a captured frame, for the link types a Redis capture comes in.
//! Ethernet (what `tcpdump -i eth0` and `-i lo` write on Linux) with any stack of 802.1Q/802.1ad VLAN tags;
//! Linux cooked capture v1 and v2 (`tcpdump -i any`); raw IP; and the BSD/macOS loopback headers, whose
//! 4-byte address family is in the capturing host's byte order, with a different AF_INET6 on each BSD.
//! Source: the LINKTYPE_ list at tcpdump.org/linktypes.html and the per-link-type pages it links to.

use super::decode::{Frame, Skip};
use super::endian::be16;

pub const LINKTYPE_NULL: u32 = 0;
pub const LINKTYPE_ETHERNET: u32 = 1;
/// DLT_RAW as some systems wrote it into files before LINKTYPE_RAW existed (12 most places, 14 on OpenBSD).
pub const LINKTYPE_RAW_12: u32 = 12;
pub const LINKTYPE_RAW_14: u32 = 14;
pub const LINKTYPE_RAW: u32 = 101;
pub const LINKTYPE_LOOP: u32 = 108;
pub const LINKTYPE_LINUX_SLL: u32 = 113;
pub const LINKTYPE_IPV4: u32 = 228;
pub const LINKTYPE_IPV6: u32 = 229;
pub const LINKTYPE_LINUX_SLL2: u32 = 276;

const ETHERTYPE_IPV4: u16 = 0x0800;
const ETHERTYPE_IPV6: u16 = 0x86dd;

/// Which IP version the link layer announced; `Any` when it does not say (raw IP).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum IpVersion {
    V4,
    V6,
    Any,
}

/// The offset of the IP header in the frame and the version the link layer announced.
#[inline]
pub(crate) fn network_layer(link_type: u32, f: &Frame) -> Result<(usize, IpVersion), Skip> {
    match link_type {
        LINKTYPE_ETHERNET => ethertype(f, 14, 12),
        LINKTYPE_LINUX_SLL => ethertype(f, 16, 14),
        LINKTYPE_LINUX_SLL2 => ethertype(f, 20, 0),
        LINKTYPE_RAW | LINKTYPE_RAW_12 | LINKTYPE_RAW_14 => Ok((0, IpVersion::Any)),
        LINKTYPE_IPV4 => Ok((0, IpVersion::V4)),
        LINKTYPE_IPV6 => Ok((0, IpVersion::V6)),
        LINKTYPE_NULL | LINKTYPE_LOOP => loopback(f),
        other => Err(Skip::UnsupportedLink(other)),
    }
}

/// Follows the EtherType at `type_at` of a header ending at `header_end`, through VLAN tags.
#[inline]
fn ethertype(f: &Frame, header_end: usize, type_at: usize) -> Result<(usize, IpVersion), Skip> {
    if f.bytes.len() < header_end {
        return Err(f.short());
    }
    let mut kind = be16(f.bytes, type_at);
    let mut at = header_end;
    loop {
        match kind {
            ETHERTYPE_IPV4 => return Ok((at, IpVersion::V4)),
            ETHERTYPE_IPV6 => return Ok((at, IpVersion::V6)),
            // 802.1Q, 802.1ad, and the pre-standard QinQ types: 2 bytes of tag, then the inner EtherType.
            0x8100 | 0x88a8 | 0x9100 | 0x9200 | 0x9300 => {
                if f.bytes.len() < at + 4 {
                    return Err(f.short());
                }
                kind = be16(f.bytes, at + 2);
                at += 4;
            }
            _ => return Err(Skip::NotIp),
        }
    }
}

/// BSD loopback: a 4-byte address family, in host byte order for NULL (and in practice sometimes for LOOP,
/// which should be network order). Families fit in 16 bits, so a value with empty low bytes is swapped.
fn loopback(f: &Frame) -> Result<(usize, IpVersion), Skip> {
    let Some(b) = f.bytes.get(..4) else {
        return Err(f.short());
    };
    let mut family = u32::from_le_bytes([b[0], b[1], b[2], b[3]]);
    if family & 0xffff == 0 {
        family = family.swap_bytes();
    }
    match family {
        2 => Ok((4, IpVersion::V4)),
        // AF_INET6: Linux 10, Windows 23, NetBSD/OpenBSD 24, FreeBSD/DragonFly 28, macOS 30.
        10 | 23 | 24 | 28 | 30 => Ok((4, IpVersion::V6)),
        _ => Err(Skip::NotIp),
    }
}
