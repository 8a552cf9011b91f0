//! Frames to segments: every link type, both IP versions, and each reason to skip.

use super::*;

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
fn window_and_a_syns_window_scale_are_read() {
    let mut s = segment(v4(), b"");
    s.flags = 0x02;
    s.tcp_options = &[2, 4, 5, 180, 1, 3, 3, 7]; // MSS 1460, NOP, window scale 7
    let frame = synth::ethernet(&s.ip_packet(), &[]);
    let syn = decode(LINKTYPE_ETHERNET, &frame).unwrap();
    assert_eq!((syn.window, syn.window_scale), (0xffff, Some(7)));
    // The option means nothing outside a SYN; a shift over 14 counts as 14 (RFC 7323).
    s.flags = 0x10;
    assert_eq!(decode(LINKTYPE_ETHERNET, &synth::ethernet(&s.ip_packet(), &[])).unwrap().window_scale, None);
    s.flags = 0x02;
    s.tcp_options = &[3, 3, 20, 0];
    assert_eq!(decode(LINKTYPE_ETHERNET, &synth::ethernet(&s.ip_packet(), &[])).unwrap().window_scale, Some(14));
    s.tcp_options = &[1, 1, 8, 10, 0, 0, 0, 1, 0, 0, 0, 2];
    assert_eq!(decode(LINKTYPE_ETHERNET, &synth::ethernet(&s.ip_packet(), &[])).unwrap().window_scale, None);
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
