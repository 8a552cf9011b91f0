//! Reader and decoder together, on frames and files built by hand with `synth`.

use std::net::SocketAddr;

use super::link::*;
use super::synth::{self, PcapNgWriter, PcapWriter, Segment};
use super::*;
use crate::net::TcpSegment;

const TS: i64 = 1_700_000_000_123_456_789;
const HMGET: &[u8] = b"*3\r\n$5\r\nHMGET\r\n$4\r\nst_1\r\n$10\r\n2496559762\r\n";

fn v4() -> (SocketAddr, SocketAddr) {
    ("10.1.2.3:51234".parse().unwrap(), "10.1.2.4:6379".parse().unwrap())
}

fn v6() -> (SocketAddr, SocketAddr) {
    ("[fd00::1]:51234".parse().unwrap(), "[fd00::2]:6379".parse().unwrap())
}

fn segment(addrs: (SocketAddr, SocketAddr), payload: &[u8]) -> Segment<'_> {
    Segment::new(addrs.0, addrs.1, 1000, payload)
}

fn check(seg: &TcpSegment, addrs: (SocketAddr, SocketAddr), payload: &[u8]) {
    assert_eq!((seg.src, seg.dst), addrs);
    assert_eq!((seg.seq, seg.ack), (1000, 1));
    assert!(seg.flags.has(crate::net::TcpFlags::PSH) && seg.flags.has(crate::net::TcpFlags::ACK));
    assert_eq!(seg.payload, payload);
    assert_eq!(seg.missing_tail, 0);
}

fn decode(link: u32, frame: &[u8]) -> Result<TcpSegment<'_>, Skip> {
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

#[test]
fn every_link_type_and_both_ip_versions() {
    for addrs in [v4(), v6()] {
        let ip = segment(addrs, HMGET).ip_packet();
        let six = addrs.0.is_ipv6();
        let raw_type = if six { LINKTYPE_IPV6 } else { LINKTYPE_IPV4 };
        let frames: Vec<(u32, Vec<u8>)> = vec![
            (LINKTYPE_ETHERNET, synth::ethernet(&ip, &[])),
            (LINKTYPE_ETHERNET, synth::ethernet(&ip, &[100])),
            (LINKTYPE_LINUX_SLL, synth::sll(&ip)),
            (LINKTYPE_LINUX_SLL2, synth::sll2(&ip)),
            (LINKTYPE_RAW, ip.clone()),
            (LINKTYPE_RAW_12, ip.clone()),
            (LINKTYPE_RAW_14, ip.clone()),
            (raw_type, ip.clone()),
            (LINKTYPE_NULL, synth::loopback(&ip, if six { 24 } else { 2 }, false)),
            (LINKTYPE_NULL, synth::loopback(&ip, if six { 28 } else { 2 }, true)),
            (LINKTYPE_NULL, synth::loopback(&ip, if six { 30 } else { 2 }, false)),
            (LINKTYPE_LOOP, synth::loopback(&ip, if six { 30 } else { 2 }, true)),
        ];
        for (link, frame) in &frames {
            let seg = decode(*link, frame).unwrap_or_else(|s| panic!("link {link} ipv6 {six}: {s:?}"));
            check(&seg, addrs, HMGET);
            assert_eq!(seg.ts_ns, TS);
            all_prefixes(*link, frame);
        }
    }
}

#[test]
fn stacked_vlan_tags_are_followed() {
    let ip = segment(v4(), HMGET).ip_packet();
    let mut qinq = synth::ethernet(&ip, &[10, 20]);
    qinq[12..14].copy_from_slice(&0x88a8u16.to_be_bytes()); // 802.1ad outer tag
    check(&decode(LINKTYPE_ETHERNET, &qinq).unwrap(), v4(), HMGET);
    let six = synth::ethernet(&segment(v6(), HMGET).ip_packet(), &[1, 2, 3]);
    check(&decode(LINKTYPE_ETHERNET, &six).unwrap(), v6(), HMGET);
    // A VLAN-tagged SLL frame (rare, but the EtherType path is shared).
    let mut sll = synth::sll(&synth::ethernet(&ip, &[7])[14..]); // TCI, inner EtherType, IP
    sll[14..16].copy_from_slice(&0x8100u16.to_be_bytes());
    check(&decode(LINKTYPE_LINUX_SLL, &sll).unwrap(), v4(), HMGET);
}

#[test]
fn ethernet_padding_is_not_payload() {
    let frame = synth::pad_to_60(synth::ethernet(&segment(v4(), b"+OK").ip_packet(), &[]));
    assert_eq!(frame.len(), 60);
    check(&decode(LINKTYPE_ETHERNET, &frame).unwrap(), v4(), b"+OK");
    let mut ack = segment(v4(), b"");
    ack.flags = 0x10;
    let frame = synth::pad_to_60(synth::ethernet(&ack.ip_packet(), &[]));
    assert_eq!(decode(LINKTYPE_ETHERNET, &frame).unwrap().payload, b"");
}

#[test]
fn ip_and_tcp_options_are_skipped() {
    let mut s = segment(v4(), HMGET);
    s.ip_options = &[1, 1, 1, 0, 7, 7, 4, 0]; // NOPs, end, and a record-route start
    s.tcp_options = &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2]; // NOP NOP timestamps
    let frame = synth::ethernet(&s.ip_packet(), &[]);
    check(&decode(LINKTYPE_ETHERNET, &frame).unwrap(), v4(), HMGET);
}

#[test]
fn snap_length_cuts_are_missing_tail_or_truncated_headers() {
    let frame = synth::ethernet(&segment(v4(), HMGET).ip_packet(), &[]);
    let headers = 14 + 20 + 20;
    let seg = decode_tcp(LINKTYPE_ETHERNET, TS, &frame[..headers + 5], frame.len() as u32).unwrap();
    assert_eq!(seg.payload, &HMGET[..5]);
    assert_eq!(seg.missing_tail as usize, HMGET.len() - 5);
    let seg = decode_tcp(LINKTYPE_ETHERNET, TS, &frame[..headers], frame.len() as u32).unwrap();
    assert_eq!((seg.payload.len(), seg.missing_tail as usize), (0, HMGET.len()));
    for cut in [0, 10, 14, 30, headers - 1] {
        let r = decode_tcp(LINKTYPE_ETHERNET, TS, &frame[..cut], frame.len() as u32);
        assert_eq!(r.unwrap_err(), Skip::Truncated, "cut at {cut}");
    }
    // The same short frames claiming to be whole are malformed, not cut.
    assert_eq!(decode(LINKTYPE_ETHERNET, &frame[..30]).unwrap_err(), Skip::Malformed);
    assert_eq!(decode(LINKTYPE_ETHERNET, &frame[..headers + 5]).unwrap_err(), Skip::Malformed);
}

#[test]
fn tso_zero_ip_length_uses_the_frame() {
    let big = vec![b'x'; 3000];
    let mut ip = segment(v4(), &big).ip_packet();
    ip[2..4].copy_from_slice(&[0, 0]);
    check(&decode(LINKTYPE_LINUX_SLL2, &synth::sll2(&ip)).unwrap(), v4(), &big);
    let mut ip = segment(v6(), &big).ip_packet();
    ip[4..6].copy_from_slice(&[0, 0]);
    check(&decode(LINKTYPE_RAW, &ip).unwrap(), v6(), &big);
}

#[test]
fn skip_reasons() {
    let ip = segment(v4(), HMGET).ip_packet();
    let eth = |ip: &[u8]| synth::ethernet(ip, &[]);
    let mut udp = ip.clone();
    udp[9] = 17;
    assert_eq!(decode(LINKTYPE_ETHERNET, &eth(&udp)).unwrap_err(), Skip::NotTcp);
    let mut arp = eth(&ip);
    arp[12..14].copy_from_slice(&0x0806u16.to_be_bytes());
    assert_eq!(decode(LINKTYPE_ETHERNET, &arp).unwrap_err(), Skip::NotIp);
    let mut llc = eth(&ip);
    llc[12..14].copy_from_slice(&100u16.to_be_bytes()); // an 802.3 length, not an EtherType
    assert_eq!(decode(LINKTYPE_ETHERNET, &llc).unwrap_err(), Skip::NotIp);
    for (flags_offset, what) in [([0x20, 0], "more fragments"), ([0, 0x10], "offset"), ([0x40, 0x01], "DF+offset")] {
        let mut frag = ip.clone();
        frag[6..8].copy_from_slice(&flags_offset);
        assert_eq!(decode(LINKTYPE_RAW, &frag).unwrap_err(), Skip::Fragment, "{what}");
    }
    assert_eq!(decode(147, &ip).unwrap_err(), Skip::UnsupportedLink(147));
    assert_eq!(decode(LINKTYPE_RAW, b"\x20garbage").unwrap_err(), Skip::NotIp);
    assert_eq!(decode(LINKTYPE_NULL, &synth::loopback(&ip, 17, false)).unwrap_err(), Skip::NotIp);
    assert_eq!(decode(LINKTYPE_ETHERNET, b"").unwrap_err(), Skip::Malformed);
    assert_eq!(decode_tcp(LINKTYPE_ETHERNET, TS, b"", 60).unwrap_err(), Skip::Truncated);
}

#[test]
fn malformed_headers() {
    let ip = segment(v4(), b"+OK\r\n").ip_packet();
    type Spoil = fn(&mut Vec<u8>);
    let cases: [(&str, Spoil); 6] = [
        ("ihl below 5", |p| p[0] = 0x44),
        ("total length past the frame", |p| p[2..4].copy_from_slice(&2000u16.to_be_bytes())),
        ("total length inside the header", |p| p[2..4].copy_from_slice(&12u16.to_be_bytes())),
        ("total length inside the tcp header", |p| p[2..4].copy_from_slice(&30u16.to_be_bytes())),
        ("tcp data offset below 5", |p| p[32] = 0x40),
        ("tcp data offset past the packet", |p| p[32] = 0xf0),
    ];
    for (what, spoil) in cases {
        let mut p = ip.clone();
        spoil(&mut p);
        assert_eq!(decode(LINKTYPE_RAW, &p).unwrap_err(), Skip::Malformed, "{what}");
    }
    // The EtherType says IPv4, the header says 6.
    let six = segment(v6(), HMGET).ip_packet();
    let mut frame = synth::ethernet(&six, &[]);
    frame[12..14].copy_from_slice(&0x0800u16.to_be_bytes());
    assert_eq!(decode(LINKTYPE_ETHERNET, &frame).unwrap_err(), Skip::Malformed);
}

/// An IPv6 packet with extension headers `(type, 8-byte units after the first 8)` inserted before TCP.
fn ipv6_with(exts: &[(u8, u8)], frag: Option<u16>) -> Vec<u8> {
    let plain = segment(v6(), HMGET).ip_packet();
    let mut chain: Vec<u8> = exts.iter().map(|e| e.0).collect();
    if frag.is_some() {
        chain.push(44);
    }
    let mut out = plain[..40].to_vec();
    out[6] = chain.first().copied().unwrap_or(6);
    for (i, &(_, units)) in exts.iter().enumerate() {
        let next = chain.get(i + 1).copied().unwrap_or(6);
        out.extend_from_slice(&[next, units]);
        out.resize(out.len() + 6 + units as usize * 8, 1);
    }
    if let Some(off) = frag {
        out.extend_from_slice(&[6, 0]);
        out.extend_from_slice(&off.to_be_bytes());
        out.extend_from_slice(&[0, 0, 0, 1]);
    }
    out.extend_from_slice(&plain[40..]);
    let payload_len = (out.len() - 40) as u16;
    out[4..6].copy_from_slice(&payload_len.to_be_bytes());
    out
}

#[test]
fn ipv6_extension_headers() {
    let p = ipv6_with(&[(0, 0), (43, 2), (60, 1)], None);
    check(&decode(LINKTYPE_RAW, &p).unwrap(), v6(), HMGET);
    all_prefixes(LINKTYPE_RAW, &p);
    let atomic = ipv6_with(&[(60, 0)], Some(0));
    check(&decode(LINKTYPE_RAW, &atomic).unwrap(), v6(), HMGET);
    assert_eq!(decode(LINKTYPE_RAW, &ipv6_with(&[], Some(1))).unwrap_err(), Skip::Fragment);
    assert_eq!(decode(LINKTYPE_RAW, &ipv6_with(&[(0, 0)], Some(0x10))).unwrap_err(), Skip::Fragment);
    let mut udp = ipv6_with(&[(0, 0)], None);
    udp[40] = 17;
    assert_eq!(decode(LINKTYPE_RAW, &udp).unwrap_err(), Skip::NotTcp);
    let mut none = segment(v6(), b"").ip_packet();
    none[6] = 59;
    assert_eq!(decode(LINKTYPE_RAW, &none).unwrap_err(), Skip::NotTcp);
    let mut long = ipv6_with(&[(60, 0)], None);
    long[41] = 200; // an extension header longer than the packet
    assert_eq!(decode(LINKTYPE_RAW, &long).unwrap_err(), Skip::Malformed);
    let endless = ipv6_with(&[(60, 0); 9], None);
    assert_eq!(decode(LINKTYPE_RAW, &endless).unwrap_err(), Skip::Malformed);
}

// ---- files ----

/// A packet as owned values: time, link type, bytes, original length.
type Owned = (i64, u32, Vec<u8>, u32);

fn read_all(bytes: &[u8]) -> (Vec<Owned>, Option<u64>) {
    let mut r = CaptureReader::new(bytes).unwrap();
    let mut out = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        out.push((p.ts_ns, p.link_type, p.data.to_vec(), p.orig_len));
    }
    assert_eq!(r.next_packet().unwrap().map(|p| p.ts_ns), None, "the end is sticky");
    (out, r.truncated_tail())
}

fn pcap_file(nanos: bool, big: bool, snaplen: u32, frames: &[Vec<u8>]) -> Vec<u8> {
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, snaplen, nanos, big).unwrap();
    for (i, f) in frames.iter().enumerate() {
        w.packet(TS + i as i64 * 1_000_001, f).unwrap();
    }
    w.into_inner()
}

fn some_frames() -> Vec<Vec<u8>> {
    (0..5u8)
        .map(|i| {
            let payload = vec![b'a' + i; 10 + i as usize * 300];
            synth::ethernet(&Segment::new(v4().0, v4().1, i as u32, &payload).ip_packet(), &[])
        })
        .collect()
}

#[test]
fn pcap_in_both_byte_orders_and_units() {
    let frames = some_frames();
    for (nanos, big) in [(false, false), (false, true), (true, false), (true, true)] {
        let file = pcap_file(nanos, big, 65535, &frames);
        assert!(is_capture(&file));
        let (packets, tail) = read_all(&file);
        assert_eq!(tail, None);
        assert_eq!(packets.len(), frames.len());
        for (i, (ts, link, data, orig)) in packets.iter().enumerate() {
            let want = TS + i as i64 * 1_000_001;
            assert_eq!(*ts, if nanos { want } else { want - want % 1000 }, "nanos {nanos} big {big}");
            assert_eq!((*link, data, *orig as usize), (LINKTYPE_ETHERNET, &frames[i], frames[i].len()));
        }
    }
}

#[test]
fn small_buffers_and_one_byte_reads_give_the_same_packets() {
    struct Trickle<'a>(&'a [u8]);
    impl std::io::Read for Trickle<'_> {
        fn read(&mut self, out: &mut [u8]) -> std::io::Result<usize> {
            let n = out.len().min(self.0.len()).min(1);
            out[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }
    let frames = some_frames();
    let pcap = pcap_file(false, false, 65535, &frames);
    let ng = two_interface_pcapng();
    for file in [&pcap, &ng] {
        let (want, _) = read_all(file);
        let mut r = CaptureReader::with_buffer(Trickle(file), 64).unwrap();
        let mut got = Vec::new();
        while let Some(p) = r.next_packet().unwrap() {
            got.push((p.ts_ns, p.link_type, p.data.to_vec(), p.orig_len));
        }
        assert_eq!(got, want);
        assert_eq!(r.offset(), file.len() as u64);
    }
}

#[test]
fn snapped_records_keep_their_original_length() {
    let frames = some_frames();
    let (packets, _) = read_all(&pcap_file(false, false, 100, &frames));
    let (_, _, data, orig) = &packets[4];
    assert_eq!((data.len(), *orig as usize), (100, frames[4].len()));
    let seg = decode_tcp(LINKTYPE_ETHERNET, 0, data, *orig).unwrap();
    assert_eq!(seg.payload.len() + seg.missing_tail as usize, 10 + 4 * 300);
}

#[test]
fn a_cut_last_record_is_a_truncated_tail_not_an_error() {
    let frames = some_frames();
    let file = pcap_file(false, false, 65535, &frames);
    let last = file.len() - frames[4].len() - 16;
    for cut in last + 1..file.len() {
        let (packets, tail) = read_all(&file[..cut]);
        assert_eq!(packets.len(), 4, "cut at {cut}");
        assert_eq!(tail, Some(last as u64), "cut at {cut}");
    }
    let (packets, tail) = read_all(&file[..last]);
    assert_eq!((packets.len(), tail), (4, None), "a cut between records is a clean end");
    let (packets, tail) = read_all(&file[..24]);
    assert_eq!((packets.len(), tail), (0, None), "a header alone is an empty capture");
}

fn err(bytes: &[u8]) -> CaptureError {
    let mut r = match CaptureReader::new(bytes) {
        Ok(r) => r,
        Err(e) => return e,
    };
    loop {
        match r.next_packet() {
            Ok(Some(_)) => {}
            Ok(None) => panic!("no error in {} bytes", bytes.len()),
            Err(e) => return e,
        }
    }
}

#[test]
fn garbage_empty_and_short_headers_are_errors_at_offset_0() {
    let text = err(b"HMGET st_1 2496559762\n");
    assert_eq!(text.offset, 0);
    assert!(text.to_string().starts_with("offset 0: not a packet capture"), "{text}");
    assert!(!is_capture(b"HMGET st_1 2496559762\n"));
    assert!(err(b"").message.contains("empty"));
    assert!(err(b"\x01").message.contains("not a packet capture"));
    let pcap = pcap_file(false, false, 65535, &[]);
    assert!(err(&pcap[..10]).message.contains("cut short"));
    let ng = two_interface_pcapng();
    assert!(err(&ng[..20]).message.contains("cut short"));
    let mut wrong_magic = ng.clone();
    wrong_magic[8] = 0;
    assert!(!is_capture(&wrong_magic));
    assert_eq!(err(&wrong_magic).offset, 0);
}

#[test]
fn zero_length_and_absurd_length_records() {
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 65535, false, false).unwrap();
    w.record(TS, b"", 0).unwrap();
    w.record(TS, b"", 60).unwrap();
    let frames = some_frames();
    w.packet(TS, &frames[0]).unwrap();
    let file = w.into_inner();
    let mut r = CaptureReader::new(&file[..]).unwrap();
    let mut counters = CaptureCounters::default();
    while let Some(p) = r.next_packet().unwrap() {
        counters.decode(&p);
    }
    assert_eq!((counters.packets, counters.segments, counters.malformed, counters.truncated), (3, 1, 1, 1));
    for absurd in [u32::MAX, 300 << 10, 64 << 20] {
        let mut bad = file.clone();
        let second = 24 + 16;
        bad[second + 8..second + 12].copy_from_slice(&absurd.to_le_bytes());
        let e = err(&bad);
        assert_eq!(e.offset, second as u64, "{e}");
        assert!(e.message.contains("snap length"), "{e}");
    }
    // A record a little over the declared snap length, within tcpdump's maximum, is accepted.
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_ETHERNET, 64, false, false).unwrap();
    w.record(TS, &frames[4], frames[4].len() as u32).unwrap();
    assert_eq!(read_all(&w.into_inner()).0.len(), 1);
}

#[test]
fn kuznetzov_pcap_records_have_longer_headers() {
    let frames = some_frames();
    let mut file = pcap_file(false, false, 65535, &frames[..1]);
    file[..4].copy_from_slice(&0xa1b2_cd34u32.to_le_bytes());
    file.splice(24 + 16..24 + 16, [0u8; 8]);
    let (packets, tail) = read_all(&file);
    assert_eq!((packets.len(), tail), (1, None));
    assert_eq!(packets[0].2, frames[0]);
}

// ---- pcapng ----

const V4_SEG_TS: i64 = 1_700_000_000_000_000_000;

/// Ethernet on interface 0 (microseconds), SLL2 on interface 1 (nanoseconds), raw IPv6 on interface 2
/// (2^-20 s with a 100 s offset), an unknown block, a simple packet, then a big-endian second section.
fn two_interface_pcapng() -> Vec<u8> {
    let ip4 = segment(v4(), HMGET).ip_packet();
    let ip6 = segment(v6(), b"+OK\r\n").ip_packet();
    let mut w = PcapNgWriter::new(Vec::new(), false).unwrap();
    w.interface(LINKTYPE_ETHERNET as u16, 262144, None, None).unwrap();
    w.interface(LINKTYPE_LINUX_SLL2 as u16, 0, Some(9), None).unwrap();
    w.interface(LINKTYPE_RAW as u16, 0, Some(0x80 | 20), Some(100)).unwrap();
    w.packet(0, V4_SEG_TS + 1_234_567, &synth::ethernet(&ip4, &[])).unwrap();
    w.block(4, &[1, 0, 8, 0, 10, 1, 2, 3, b'r', b'e', b'd', b'i', b's', 0, 0, 0, 0, 0, 0, 0]).unwrap();
    w.packet(1, V4_SEG_TS + 2_345_678, &synth::sll2(&ip4)).unwrap();
    w.packet(2, V4_SEG_TS + 500_000_000, &ip6).unwrap();
    w.simple_packet(&synth::ethernet(&ip4, &[5])).unwrap();
    w.section(true).unwrap();
    w.interface(LINKTYPE_LINUX_SLL as u16, 65535, Some(3), None).unwrap();
    w.packet(0, V4_SEG_TS + 7_000_000, &synth::sll(&ip6)).unwrap();
    w.into_inner()
}

#[test]
fn pcapng_interfaces_resolutions_and_sections() {
    let file = two_interface_pcapng();
    assert!(is_capture(&file));
    let mut r = CaptureReader::new(&file[..]).unwrap();
    assert_eq!(r.format(), CaptureFormat::PcapNg);
    let mut got = Vec::new();
    while let Some(p) = r.next_packet().unwrap() {
        let seg = decode_tcp(p.link_type, p.ts_ns, p.data, p.orig_len).unwrap();
        got.push((p.ts_ns, p.link_type, seg.dst.port(), seg.payload.to_vec()));
    }
    assert_eq!(r.truncated_tail(), None);
    assert_eq!(r.offset(), file.len() as u64);
    let want: Vec<(i64, u32, u16, Vec<u8>)> = vec![
        (V4_SEG_TS + 1_234_000, LINKTYPE_ETHERNET, 6379, HMGET.to_vec()),
        (V4_SEG_TS + 2_345_678, LINKTYPE_LINUX_SLL2, 6379, HMGET.to_vec()),
        (V4_SEG_TS + 500_000_000, LINKTYPE_RAW, 6379, b"+OK\r\n".to_vec()),
        // The simple packet has no clock: it keeps the time of the packet before it.
        (V4_SEG_TS + 500_000_000, LINKTYPE_ETHERNET, 6379, HMGET.to_vec()),
        (V4_SEG_TS + 7_000_000, LINKTYPE_LINUX_SLL, 6379, b"+OK\r\n".to_vec()),
    ];
    assert_eq!(got, want);
}

#[test]
fn pcapng_timestamp_scales() {
    use super::pcapng::TsScale;
    let s = |r| TsScale::from_tsresol(r).unwrap();
    assert_eq!(s(6).to_ns(1_700_000_000_123_456), 1_700_000_000_123_456_000);
    assert_eq!(s(9).to_ns(42), 42);
    assert_eq!(s(0).to_ns(3), 3_000_000_000);
    assert_eq!(s(12).to_ns(5_000), 5);
    assert_eq!(s(0x80 | 10).to_ns(1024 * 3 + 512), 3_500_000_000);
    assert_eq!(s(0x80).to_ns(2), 2_000_000_000);
    assert_eq!(s(0).to_ns(u64::MAX), i64::MAX, "saturates");
    assert_eq!(TsScale::from_tsresol(20), None);
}

#[test]
fn pcapng_corruption_is_an_error_at_the_block() {
    let file = two_interface_pcapng();
    let shb_len = 28;
    let first_idb = shb_len;
    // Blocks: SHB 28, IDB 20, IDB 32, IDB 44, then the first EPB.
    let epb = shb_len + 20 + 32 + 44;
    let cases: [(&str, usize, u32, usize, &str); 5] = [
        ("length not a multiple of 4", first_idb + 4, 22, first_idb, "multiple of 4"),
        ("trailing length", first_idb + 16, 24, first_idb, "trailing length"),
        ("undeclared interface", epb + 8, 7, epb, "interface 7"),
        ("absurd captured length", epb + 20, 100 << 20, epb, "snap length"),
        ("captured past the block", epb + 20, 4000, epb, "past the end"),
    ];
    for (what, at, value, offset, says) in cases {
        let mut bad = file.clone();
        bad[at..at + 4].copy_from_slice(&value.to_le_bytes());
        let e = err(&bad);
        assert_eq!(e.offset, offset as u64, "{what}: {e}");
        assert!(e.message.contains(says), "{what}: {e}");
    }
    let mut huge = file.clone();
    huge[epb + 4..epb + 8].copy_from_slice(&(512u32 << 20).to_le_bytes());
    assert!(err(&huge).message.contains("exceeds"), "a block length beyond any record is refused unread");
}

#[test]
fn pcapng_cut_anywhere_ends_cleanly() {
    let file = two_interface_pcapng();
    let (all, _) = read_all(&file);
    let mut ends = Vec::new();
    for cut in 28..file.len() {
        let (packets, tail) = read_all(&file[..cut]);
        assert!(packets.len() <= all.len() && all.starts_with(&packets), "cut at {cut}");
        if tail.is_none() {
            ends.push(cut);
        }
    }
    // Only cuts that fall between blocks end without a truncated tail: 12 blocks, 11 boundaries from 28 on.
    assert_eq!(ends.len(), 11, "{ends:?}");
}

#[test]
fn counters_count_each_reason() {
    let ip = segment(v4(), HMGET).ip_packet();
    let mut udp = ip.clone();
    udp[9] = 17;
    let mut frag = ip.clone();
    frag[6] = 0x20;
    let mut w = PcapWriter::new(Vec::new(), LINKTYPE_RAW, 65535, true, false).unwrap();
    for p in [&ip, &udp, &frag, &ip[..30].to_vec(), &b"\x10".to_vec()] {
        w.packet(TS, p).unwrap();
    }
    w.record(TS, &ip[..45], ip.len() as u32).unwrap();
    let file = w.into_inner();
    let mut r = CaptureReader::new(&file[..file.len() - 3]).unwrap();
    let mut c = CaptureCounters::default();
    while let Some(p) = r.next_packet().unwrap() {
        c.decode(&p);
    }
    c.truncated_tail = r.truncated_tail();
    assert_eq!(c.packets, 5);
    assert_eq!((c.segments, c.not_tcp, c.fragments, c.malformed, c.not_ip), (1, 1, 1, 1, 1));
    assert_eq!(c.skipped(), 4);
    assert_eq!(c.bytes as usize, ip.len() * 3 + 30 + 1);
    assert!(c.truncated_tail.is_some());
    let mut w = PcapWriter::new(Vec::new(), 147, 65535, true, false).unwrap();
    w.packet(TS, &ip).unwrap();
    let file = w.into_inner();
    let mut r = CaptureReader::new(&file[..]).unwrap();
    let mut c = CaptureCounters::default();
    while let Some(p) = r.next_packet().unwrap() {
        assert!(c.decode(&p).is_none());
    }
    assert_eq!((c.unsupported_link, c.unsupported_link_type), (1, Some(147)));
    let mut r = CaptureReader::new(&file[..]).unwrap();
    let p = r.next_packet().unwrap().unwrap();
    let mut c = CaptureCounters::default();
    let cut = Packet { data: &p.data[..p.data.len() - 10], link_type: LINKTYPE_RAW, ..p };
    assert_eq!(c.decode(&cut).unwrap().missing_tail, 10);
    assert_eq!((c.segments, c.missing_bytes), (1, 10));
}
