//! pcap and pcapng files to packets: formats, byte orders, units, cut tails and corrupt records.

use super::*;

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
    assert!(err(b"\x1f\x8b\x08\x00\x00\x00\x00\x00").message.contains("gzip"));
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
