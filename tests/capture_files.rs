//! Capture files crafted with scapy, and two real tcpdump captures of a real redis-server on loopback
//! (`tests/data/captures/make.py`): every packet decodes to exactly what the `.expected` file next to each
//! capture lists (what scapy built, or scapy's parse of what tcpdump wrote).

use std::fmt::Write;
use std::path::{Path, PathBuf};

use cachescope::capture::{CaptureCounters, CaptureFormat, CaptureReader};
use cachescope::net::TcpSegment;

fn data(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/captures").join(name)
}

fn line(seg: &TcpSegment) -> String {
    let mut hex = String::new();
    for b in seg.payload {
        write!(hex, "{b:02x}").unwrap();
    }
    if hex.is_empty() {
        hex.push('-');
    }
    format!(
        "tcp {} {} {} {} {} {} {} {}",
        seg.ts_ns, seg.src, seg.dst, seg.seq, seg.ack, seg.flags.0, seg.missing_tail, hex
    )
}

/// Decodes a capture into the `.expected` line format, with the counters and link types seen.
fn decode_file(name: &str) -> (Vec<String>, CaptureCounters, Vec<u32>, CaptureFormat) {
    let file = std::fs::File::open(data(name)).unwrap();
    let mut reader = CaptureReader::new(file).unwrap();
    let mut counters = CaptureCounters::default();
    let (mut lines, mut links) = (Vec::new(), Vec::new());
    while let Some(packet) = reader.next_packet().unwrap() {
        if !links.contains(&packet.link_type) {
            links.push(packet.link_type);
        }
        let before = counters;
        match counters.decode(&packet) {
            Some(seg) => lines.push(line(&seg)),
            None => {
                let reason = match () {
                    _ if counters.not_ip > before.not_ip => "NotIp",
                    _ if counters.not_tcp > before.not_tcp => "NotTcp",
                    _ if counters.fragments > before.fragments => "Fragment",
                    _ if counters.truncated > before.truncated => "Truncated",
                    _ if counters.malformed > before.malformed => "Malformed",
                    _ => "UnsupportedLink",
                };
                lines.push(format!("skip {reason}"));
            }
        }
    }
    assert_eq!(reader.truncated_tail(), None, "{name}");
    assert_eq!(reader.offset(), std::fs::metadata(data(name)).unwrap().len(), "{name}: read to the end");
    (lines, counters, links, reader.format())
}

fn expected(stem: &str) -> Vec<String> {
    std::fs::read_to_string(data(&format!("{stem}.expected"))).unwrap().lines().map(str::to_string).collect()
}

fn check(name: &str, stem: &str) -> (Vec<String>, CaptureCounters, Vec<u32>, CaptureFormat) {
    let got = decode_file(name);
    let want = expected(stem);
    assert!(want.len() >= 12, "{stem}.expected lists {} packets", want.len());
    for (i, (g, w)) in got.0.iter().zip(&want).enumerate() {
        assert_eq!(g, w, "{name}: packet {}", i + 1);
    }
    assert_eq!(got.0.len(), want.len(), "{name}: packet count");
    // Every capture carries the HMGET of st_12345.
    let hmget = hex(b"*3\r\n$5\r\nHMGET\r\n$8\r\nst_12345\r\n$10\r\n2496559762\r\n");
    assert!(got.0.iter().any(|l| l.ends_with(&hmget)), "{name}: no HMGET");
    got
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|b| format!("{b:02x}")).collect()
}

fn to_redis(lines: &[String]) -> usize {
    lines.iter().filter(|l| l.split(' ').nth(3).is_some_and(|dst| dst.ends_with(":6379"))).count()
}

#[test]
fn ethernet_vlan_ipv4_pcap() {
    let (lines, c, links, format) = check("eth_vlan_ipv4.pcap", "eth_vlan_ipv4");
    assert_eq!(to_redis(&lines), 8, "client segments of the session");
    assert_eq!((format, links), (CaptureFormat::Pcap, vec![1]));
    assert_eq!((c.packets, c.segments, c.not_ip, c.not_tcp), (14, 12, 1, 1));
}

#[test]
fn linux_cooked_v2_big_endian_nanosecond_pcap() {
    let (lines, c, links, format) = check("sll2_ipv4.pcap", "sll2_ipv4");
    assert_eq!((format, links), (CaptureFormat::Pcap, vec![276]));
    assert_eq!((c.packets, c.segments), (12, 12));
    assert!(lines[1].starts_with("tcp 1700000000000000789 "), "nanoseconds kept: {}", lines[1]);
}

#[test]
fn ipv6_pcapng_from_scapys_writer() {
    let (_, c, links, format) = check("ipv6.pcapng", "ipv6");
    assert_eq!((format, links), (CaptureFormat::PcapNg, vec![1]));
    assert_eq!((c.segments, c.fragments), (12, 1));
}

#[test]
fn pcapng_with_two_interfaces() {
    let (lines, c, links, _) = check("two_interfaces.pcapng", "two_interfaces");
    assert_eq!(links, vec![1, 276]);
    assert_eq!((c.packets, c.segments), (24, 24));
    // The 96-byte snap length of the cooked interface cuts its long reply (172 bytes) and two commands.
    let missing: u64 =
        expected("two_interfaces").iter().map(|l| l.split(' ').nth(7).unwrap().parse::<u64>().unwrap()).sum();
    assert_eq!(c.missing_bytes, missing);
    assert!(lines.iter().any(|l| l.contains(" 24 76 2a310d0a24313030")), "the long reply lacks 172 - 96 bytes");
    assert!(lines[3].starts_with("tcp 1700000000010000123 "), "nanosecond interface: {}", lines[3]);
}

#[test]
fn real_tcpdump_on_loopback() {
    let (lines, c, links, format) = check("tcpdump_lo.pcap", "tcpdump_lo");
    assert_eq!((format, links), (CaptureFormat::Pcap, vec![1]));
    assert_eq!(c.segments, c.packets);
    assert_eq!(lines.len(), 16, "handshake, HSET, two HMGETs, replies, ACKs, close");
}

#[test]
fn real_tcpdump_on_any_in_nanoseconds() {
    let (_, c, links, format) = check("tcpdump_any.pcap", "tcpdump_any");
    assert_eq!((format, links), (CaptureFormat::Pcap, vec![276]));
    assert_eq!(c.segments, c.packets);
}
