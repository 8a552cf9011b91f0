//! Synthetic packets and capture files, for tests and benchmarks of this stage and the ones after it:
//! TCP/IP packets with valid checksums, wrapped in the link layers `link` decodes, written as pcap or
//! pcapng with a chosen byte order, timestamp unit and snap length. Not used when reading real captures.

use std::io::{self, Write};
use std::net::{IpAddr, SocketAddr};

use super::link::{LINKTYPE_LINUX_SLL, LINKTYPE_LINUX_SLL2};

/// One TCP segment to build. `ip_options` (IPv4 only) and `tcp_options` must be multiples of 4 bytes.
#[derive(Clone, Copy, Debug)]
pub struct Segment<'a> {
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub flags: u8,
    pub payload: &'a [u8],
    pub ip_options: &'a [u8],
    pub tcp_options: &'a [u8],
}

impl<'a> Segment<'a> {
    /// A PSH+ACK data segment; both addresses must be of one IP version.
    pub fn new(src: SocketAddr, dst: SocketAddr, seq: u32, payload: &'a [u8]) -> Segment<'a> {
        Segment { src, dst, seq, ack: 1, flags: 0x18, payload, ip_options: &[], tcp_options: &[] }
    }

    /// The IPv4 or IPv6 packet, by the addresses' version.
    pub fn ip_packet(&self) -> Vec<u8> {
        let tcp = self.tcp_header();
        let tcp_len = tcp.len() + self.payload.len();
        let mut out = Vec::with_capacity(60 + tcp_len);
        let pseudo = match (self.src.ip(), self.dst.ip()) {
            (IpAddr::V4(s), IpAddr::V4(d)) => {
                let ihl = 20 + self.ip_options.len();
                out.extend_from_slice(&[0x40 | (ihl / 4) as u8, 0]);
                out.extend_from_slice(&((ihl + tcp_len) as u16).to_be_bytes());
                out.extend_from_slice(&[0, 1, 0x40, 0, 64, 6, 0, 0]); // id 1, don't fragment, ttl 64, TCP
                out.extend_from_slice(&s.octets());
                out.extend_from_slice(&d.octets());
                out.extend_from_slice(self.ip_options);
                let sum = checksum(&[&out[..ihl]], 0);
                out[10..12].copy_from_slice(&sum.to_be_bytes());
                sum_words(&s.octets()) + sum_words(&d.octets()) + 6 + tcp_len as u32
            }
            (IpAddr::V6(s), IpAddr::V6(d)) => {
                out.extend_from_slice(&[0x60, 0, 0, 0]);
                out.extend_from_slice(&(tcp_len as u16).to_be_bytes());
                out.extend_from_slice(&[6, 64]);
                out.extend_from_slice(&s.octets());
                out.extend_from_slice(&d.octets());
                sum_words(&s.octets()) + sum_words(&d.octets()) + 6 + tcp_len as u32
            }
            _ => panic!("synth::Segment with addresses of two IP versions"),
        };
        let tcp_at = out.len();
        out.extend_from_slice(&tcp);
        out.extend_from_slice(self.payload);
        let sum = checksum(&[&out[tcp_at..]], pseudo);
        out[tcp_at + 16..tcp_at + 18].copy_from_slice(&sum.to_be_bytes());
        out
    }

    fn tcp_header(&self) -> Vec<u8> {
        let len = 20 + self.tcp_options.len();
        let mut h = Vec::with_capacity(len);
        h.extend_from_slice(&self.src.port().to_be_bytes());
        h.extend_from_slice(&self.dst.port().to_be_bytes());
        h.extend_from_slice(&self.seq.to_be_bytes());
        h.extend_from_slice(&self.ack.to_be_bytes());
        h.extend_from_slice(&[((len / 4) as u8) << 4, self.flags, 0xff, 0xff, 0, 0, 0, 0]);
        h.extend_from_slice(self.tcp_options);
        h
    }
}

fn sum_words(b: &[u8]) -> u32 {
    b.chunks(2).map(|c| u16::from_be_bytes([c[0], *c.get(1).unwrap_or(&0)]) as u32).sum()
}

/// The Internet checksum (RFC 1071) of `parts` (each even-length but the last) plus a partial sum.
fn checksum(parts: &[&[u8]], initial: u32) -> u16 {
    let mut sum = initial as u64 + parts.iter().map(|p| sum_words(p) as u64).sum::<u64>();
    while sum > 0xffff {
        sum = (sum & 0xffff) + (sum >> 16);
    }
    !(sum as u16)
}

fn ethertype(ip: &[u8]) -> u16 {
    if ip.first().map(|b| b >> 4) == Some(6) {
        0x86dd
    } else {
        0x0800
    }
}

/// An Ethernet frame (zero MAC addresses, as on Linux loopback) with the given 802.1Q tags, outermost first.
pub fn ethernet(ip: &[u8], vlans: &[u16]) -> Vec<u8> {
    let mut f = vec![0u8; 12];
    for &vid in vlans {
        f.extend_from_slice(&0x8100u16.to_be_bytes());
        f.extend_from_slice(&vid.to_be_bytes());
    }
    f.extend_from_slice(&ethertype(ip).to_be_bytes());
    f.extend_from_slice(ip);
    f
}

/// Pads an Ethernet frame to the 60-byte minimum, as a NIC does on the wire.
pub fn pad_to_60(mut frame: Vec<u8>) -> Vec<u8> {
    if frame.len() < 60 {
        frame.resize(60, 0);
    }
    frame
}

/// A Linux cooked capture (v1, LINKTYPE_LINUX_SLL) frame, as an incoming packet on an Ethernet device.
pub fn sll(ip: &[u8]) -> Vec<u8> {
    let mut f = vec![0, 0, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0];
    f.extend_from_slice(&ethertype(ip).to_be_bytes());
    f.extend_from_slice(ip);
    f
}

/// A Linux cooked capture v2 (LINKTYPE_LINUX_SLL2) frame, on interface index 1.
pub fn sll2(ip: &[u8]) -> Vec<u8> {
    let mut f = ethertype(ip).to_be_bytes().to_vec();
    f.extend_from_slice(&[0, 0, 0, 0, 0, 1, 0, 1, 0, 6, 2, 0, 0, 0, 0, 1, 0, 0]);
    f.extend_from_slice(ip);
    f
}

/// A BSD loopback (LINKTYPE_NULL / LINKTYPE_LOOP) frame with the given address family and byte order.
pub fn loopback(ip: &[u8], family: u32, big_endian: bool) -> Vec<u8> {
    let mut f = if big_endian { family.to_be_bytes() } else { family.to_le_bytes() }.to_vec();
    f.extend_from_slice(ip);
    f
}

/// Wraps an IP packet for `link_type` (Ethernet without tags for types not listed).
pub fn frame(link_type: u32, ip: &[u8]) -> Vec<u8> {
    match link_type {
        LINKTYPE_LINUX_SLL => sll(ip),
        LINKTYPE_LINUX_SLL2 => sll2(ip),
        0 | 108 => loopback(ip, if ethertype(ip) == 0x0800 { 2 } else { 30 }, link_type == 108),
        12 | 14 | 101 | 228 | 229 => ip.to_vec(),
        _ => ethernet(ip, &[]),
    }
}

fn put_u16(out: &mut Vec<u8>, v: u16, big: bool) {
    out.extend_from_slice(&if big { v.to_be_bytes() } else { v.to_le_bytes() });
}

fn put_u32(out: &mut Vec<u8>, v: u32, big: bool) {
    out.extend_from_slice(&if big { v.to_be_bytes() } else { v.to_le_bytes() });
}

/// Writes a classic pcap file.
pub struct PcapWriter<W: Write> {
    out: W,
    big_endian: bool,
    nanos: bool,
    snaplen: u32,
    scratch: Vec<u8>,
}

impl<W: Write> PcapWriter<W> {
    pub fn new(mut out: W, link_type: u32, snaplen: u32, nanos: bool, big_endian: bool) -> io::Result<Self> {
        let mut h = Vec::with_capacity(24);
        put_u32(&mut h, if nanos { 0xa1b2_3c4d } else { 0xa1b2_c3d4 }, big_endian);
        put_u16(&mut h, 2, big_endian);
        put_u16(&mut h, 4, big_endian);
        put_u32(&mut h, 0, big_endian);
        put_u32(&mut h, 0, big_endian);
        put_u32(&mut h, snaplen, big_endian);
        put_u32(&mut h, link_type, big_endian);
        out.write_all(&h)?;
        Ok(PcapWriter { out, big_endian, nanos, snaplen, scratch: Vec::new() })
    }

    /// Writes a frame, cut to the snap length as a capture would.
    pub fn packet(&mut self, ts_ns: i64, frame: &[u8]) -> io::Result<()> {
        let cut = frame.len().min(self.snaplen as usize);
        self.record(ts_ns, &frame[..cut], frame.len() as u32)
    }

    /// Writes one record exactly as given.
    pub fn record(&mut self, ts_ns: i64, data: &[u8], orig_len: u32) -> io::Result<()> {
        let big = self.big_endian;
        let (secs, ns) = (ts_ns.div_euclid(1_000_000_000), ts_ns.rem_euclid(1_000_000_000));
        let frac = if self.nanos { ns } else { ns / 1000 };
        self.scratch.clear();
        put_u32(&mut self.scratch, secs as u32, big);
        put_u32(&mut self.scratch, frac as u32, big);
        put_u32(&mut self.scratch, data.len() as u32, big);
        put_u32(&mut self.scratch, orig_len, big);
        self.out.write_all(&self.scratch)?;
        self.out.write_all(data)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Writes a pcapng file: one section header at creation, more with `section`.
pub struct PcapNgWriter<W: Write> {
    out: W,
    big_endian: bool,
    /// Per interface of the current section: snap length and `if_tsresol`.
    interfaces: Vec<(u32, u8, i64)>,
}

impl<W: Write> PcapNgWriter<W> {
    pub fn new(out: W, big_endian: bool) -> io::Result<Self> {
        let mut w = PcapNgWriter { out, big_endian, interfaces: Vec::new() };
        w.section(big_endian)?;
        Ok(w)
    }

    /// Starts a new section (forgetting the interfaces), in the given byte order.
    pub fn section(&mut self, big_endian: bool) -> io::Result<()> {
        self.big_endian = big_endian;
        self.interfaces.clear();
        let mut body = Vec::new();
        put_u32(&mut body, 0x1a2b_3c4d, big_endian);
        put_u16(&mut body, 1, big_endian);
        put_u16(&mut body, 0, big_endian);
        body.extend_from_slice(&u64::MAX.to_le_bytes()); // section length unknown
        self.block(0x0a0d_0d0a, &body)
    }

    /// Declares an interface; `tsresol` as the option's byte (6 = microseconds, 0x80 | n = 2^-n seconds).
    pub fn interface(
        &mut self,
        link_type: u16,
        snaplen: u32,
        tsresol: Option<u8>,
        tsoffset_s: Option<i64>,
    ) -> io::Result<u32> {
        let big = self.big_endian;
        let mut body = Vec::new();
        put_u16(&mut body, link_type, big);
        put_u16(&mut body, 0, big);
        put_u32(&mut body, snaplen, big);
        if let Some(r) = tsresol {
            put_u16(&mut body, 9, big);
            put_u16(&mut body, 1, big);
            body.extend_from_slice(&[r, 0, 0, 0]);
        }
        if let Some(s) = tsoffset_s {
            put_u16(&mut body, 14, big);
            put_u16(&mut body, 8, big);
            body.extend_from_slice(&if big { s.to_be_bytes() } else { s.to_le_bytes() });
        }
        if tsresol.is_some() || tsoffset_s.is_some() {
            body.extend_from_slice(&[0, 0, 0, 0]); // opt_endofopt
        }
        self.block(1, &body)?;
        self.interfaces.push((snaplen, tsresol.unwrap_or(6), tsoffset_s.unwrap_or(0)));
        Ok(self.interfaces.len() as u32 - 1)
    }

    /// Writes an enhanced packet block, the frame cut to the interface's snap length.
    pub fn packet(&mut self, iface: u32, ts_ns: i64, frame: &[u8]) -> io::Result<()> {
        let big = self.big_endian;
        let (snaplen, resol, offset) = self.interfaces[iface as usize];
        let cut = if snaplen == 0 { frame.len() } else { frame.len().min(snaplen as usize) };
        let units = units(ts_ns - offset * 1_000_000_000, resol);
        let mut body = Vec::with_capacity(20 + cut + 3);
        put_u32(&mut body, iface, big);
        put_u32(&mut body, (units >> 32) as u32, big);
        put_u32(&mut body, units as u32, big);
        put_u32(&mut body, cut as u32, big);
        put_u32(&mut body, frame.len() as u32, big);
        body.extend_from_slice(&frame[..cut]);
        self.block(6, &body)
    }

    /// Writes a simple packet block (interface 0, no timestamp).
    pub fn simple_packet(&mut self, frame: &[u8]) -> io::Result<()> {
        let mut body = Vec::with_capacity(4 + frame.len() + 3);
        put_u32(&mut body, frame.len() as u32, self.big_endian);
        body.extend_from_slice(frame);
        self.block(3, &body)
    }

    /// Writes any block; the body is padded to 4 bytes.
    pub fn block(&mut self, kind: u32, body: &[u8]) -> io::Result<()> {
        let big = self.big_endian;
        let pad = (4 - body.len() % 4) % 4;
        let len = (12 + body.len() + pad) as u32;
        let mut head = Vec::with_capacity(8);
        put_u32(&mut head, kind, big);
        put_u32(&mut head, len, big);
        self.out.write_all(&head)?;
        self.out.write_all(body)?;
        self.out.write_all(&[0; 3][..pad])?;
        let mut tail = Vec::with_capacity(4);
        put_u32(&mut tail, len, big);
        self.out.write_all(&tail)
    }

    pub fn into_inner(self) -> W {
        self.out
    }
}

/// Nanoseconds to units of an `if_tsresol` (nonnegative times).
fn units(ts_ns: i64, resol: u8) -> u64 {
    let (ns, n) = (ts_ns.max(0) as u128, (resol & 0x7f) as u32);
    let u = if resol & 0x80 != 0 {
        (ns << n) / 1_000_000_000
    } else if n <= 9 {
        ns / 10u128.pow(9 - n)
    } else {
        ns * 10u128.pow(n - 9)
    };
    u as u64
}
