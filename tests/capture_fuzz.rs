//! Robustness of the capture reader and decoder on broken input: every prefix of a valid capture reads
//! cleanly (a cut tail is reported, never an error), and thousands of deterministic random mutations of
//! real captures neither panic nor read out of bounds nor loop: the reader either ends or stops at a
//! `CaptureError` whose offset lies inside the file.

use std::path::Path;

use cachescope::capture::{decode_tcp, is_capture, CaptureReader};

const FILES: [&str; 6] = [
    "eth_vlan_ipv4.pcap",
    "sll2_ipv4.pcap",
    "ipv6.pcapng",
    "two_interfaces.pcapng",
    "tcpdump_lo.pcap",
    "tcpdump_any.pcap",
];

fn load(name: &str) -> Vec<u8> {
    std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures").join(name)).unwrap()
}

/// How a read ended: cleanly (with the offset of a cut tail, if any), or at an error's offset.
type End = Result<Option<u64>, u64>;

/// Reads everything: the packets' (time, frame) and how the stream ended.
fn read(bytes: &[u8], buffer: usize) -> (Vec<(i64, Vec<u8>)>, End) {
    let mut reader = match CaptureReader::with_buffer(bytes, buffer) {
        Ok(r) => r,
        Err(e) => return (Vec::new(), Err(e.offset)),
    };
    let mut packets = Vec::new();
    loop {
        match reader.next_packet() {
            Ok(Some(p)) => {
                assert!(p.data.len() <= bytes.len(), "a packet larger than the file");
                if let Ok(seg) = decode_tcp(p.link_type, p.ts_ns, p.data, p.orig_len) {
                    let inside = p.data.as_ptr_range();
                    let payload = seg.payload.as_ptr_range();
                    assert!(payload.start >= inside.start && payload.end <= inside.end, "payload outside the frame");
                    assert!(seg.missing_tail as usize <= (p.orig_len as usize).max(p.data.len()));
                }
                packets.push((p.ts_ns, p.data.to_vec()));
                assert!(packets.len() <= bytes.len() / 12 + 1, "more packets than the bytes can hold");
            }
            Ok(None) => {
                assert!(reader.offset() <= bytes.len() as u64);
                return (packets, Ok(reader.truncated_tail()));
            }
            Err(e) => {
                assert!(e.offset < bytes.len() as u64, "error offset {} past the end", e.offset);
                assert!(e.to_string().starts_with(&format!("offset {}: ", e.offset)));
                return (packets, Err(e.offset));
            }
        }
    }
}

#[test]
fn every_prefix_of_a_real_capture_reads_without_error() {
    for name in FILES {
        let file = load(name);
        let (all, end) = read(&file, 1 << 20);
        assert_eq!(end, Ok(None), "{name}");
        let header = if name.ends_with(".pcap") { 24 } else { 28 };
        for cut in 0..file.len() {
            let (packets, end) = read(&file[..cut], 64);
            if cut < header {
                assert_eq!(end, Err(0), "{name} cut at {cut}: the header is incomplete");
                continue;
            }
            assert!(end.is_ok(), "{name} cut at {cut}: {end:?}");
            assert!(all.starts_with(&packets), "{name} cut at {cut}");
            if let Ok(Some(tail)) = end {
                assert!(tail < cut as u64);
            }
        }
    }
}

/// xorshift64*: a fixed seed makes every run mutate the same way.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_f491_4f6c_dd1d)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n.max(1) as u64) as usize
    }
}

fn mutate(rng: &mut Rng, file: &mut Vec<u8>) {
    for _ in 0..1 + rng.below(6) {
        let at = rng.below(file.len());
        match rng.below(7) {
            0 => file[at] ^= 1 << rng.below(8),
            1 => file[at] = rng.next() as u8,
            2 => {
                // A length-like field: small, huge, or zero.
                let v = [0u32, 1, 0xffff_ffff, 0x7fff_fff0, 60, 4096][rng.below(6)];
                let end = (at + 4).min(file.len());
                file[at..end].copy_from_slice(&v.to_le_bytes()[..end - at]);
            }
            3 => file.truncate(at),
            4 => {
                file.insert(at, rng.next() as u8);
            }
            5 => {
                file.remove(at);
            }
            _ => {
                let end = (at + rng.below(64)).min(file.len());
                file.drain(at..end);
            }
        }
        if file.is_empty() {
            return;
        }
    }
}

#[test]
fn random_mutations_never_panic_or_run_away() {
    let mut rng = Rng(0x9e37_79b9_7f4a_7c15);
    let (mut errors, mut clean, mut cut) = (0, 0, 0);
    for name in FILES {
        let original = load(name);
        for round in 0..2000 {
            let mut file = original.clone();
            mutate(&mut rng, &mut file);
            let buffer = if round % 2 == 0 { 64 + rng.below(256) } else { 8192 };
            let _ = is_capture(&file);
            match read(&file, buffer).1 {
                Err(_) => errors += 1,
                Ok(None) => clean += 1,
                Ok(Some(_)) => cut += 1,
            }
        }
    }
    // The mutations reach every way a read can end, so the assertions above were exercised on each.
    eprintln!("errors {errors}, clean ends {clean}, cut tails {cut}");
    assert!(errors > 500 && clean > 500 && cut > 500, "errors {errors}, clean ends {clean}, cut tails {cut}");
}

#[test]
fn random_frames_decode_without_panic() {
    let mut rng = Rng(42);
    let mut frame = vec![0u8; 256];
    for round in 0..200_000u32 {
        let len = rng.below(frame.len() + 1);
        for b in frame.iter_mut().take(len) {
            *b = rng.next() as u8;
        }
        // Plausible headers often enough to get past the first checks.
        if len > 20 && round % 2 == 0 {
            frame[0] = [0x45, 0x46, 0x60][rng.below(3)];
            frame[9] = 6;
            frame[6] = 6;
        }
        let link = [0, 1, 12, 14, 101, 108, 113, 228, 229, 276, 147][rng.below(11)];
        let orig = if round % 3 == 0 { rng.next() as u32 } else { len as u32 };
        let _ = decode_tcp(link, 0, &frame[..len], orig);
    }
}
