//! Finding the Redis ports of a capture by what is said on them, for when no port is given: Redis may listen
//! anywhere (6380, 16379, a cluster's 7000-7005), and a parse on the wrong port finds nothing.
//!
//! One pass over the capture. A segment whose payload begins with a RESP command (an array of bulk strings
//! whose first one names a Redis command, `resp::is_command_start`) votes for its destination port: clients
//! send commands to the server. What else is said decides the doubtful cases:
//! - a replica's link to its primary carries commands both ways (the primary propagates writes to the
//!   replica's ephemeral port), so a port whose commands all come from one port that itself receives
//!   commands is the client end of such a link, unless it is the lower of the two or was seen accepting a
//!   connection (a SYN sent to it);
//! - a Redis Cluster's bus (port + 10000) speaks a binary protocol, never RESP, so it gets no vote.
//!
//! Inline commands (netcat, telnet, `redis-cli` typed lines: `GET foo\r\n`) vote too, once answered: a client
//! segment that begins with a line Redis would run (`resp::is_inline_command_start`), on a connection where
//! the client spoke first, whose next server segment begins with a RESP reply line (`resp::is_reply_line`).
//! Other line protocols share names with Redis (HTTP's `GET`) but answer otherwise (`HTTP/1.1 200`, `250`), or
//! speak first (POP3's `+OK` greeting, SMTP's `220`).
//!
//! Segments that begin with a TLS record are counted by their server's (lower) port: when no Redis is found,
//! the error can say the traffic is encrypted rather than that it holds no commands.
//!
//! Memory is a few arrays over the 65536 ports, whatever the capture holds.

use std::collections::HashMap;
use std::io::Read;
use std::net::SocketAddr;

use crate::capture::{CaptureCounters, CaptureReader};
use crate::error::TraceError;
use crate::net::{TcpFlags, TcpSegment};
use crate::resp::{is_command_start, is_inline_command_start, is_reply_line, is_tls_record};

const PORTS: usize = 1 << 16;
/// Bytes that always tell a command start (`*1234567\r\n$20\r\n`, a name of at most 20 bytes, `\r\n`).
const COMMAND_HEAD: usize = 48;
/// Flows with a possible command start pending at once; beyond it they are forgotten (memory stays bounded).
const MAX_HEADS: usize = 1 << 16;

/// What the pass found.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct PortReport {
    /// The ports Redis servers listen on, ascending.
    pub redis: Vec<u16>,
    /// Ports that look like servers (a SYN was sent to them, or the lower port of a segment) with the
    /// segments they were the lower port of, busiest first: what to name when no Redis port was found.
    pub servers: Vec<(u16, u64)>,
    /// Ports whose segments begin with TLS records, with how many did, most first.
    pub tls: Vec<(u16, u64)>,
}

struct Votes {
    /// Segments beginning with a command, by destination port.
    commands_to: Vec<u32>,
    /// SYNs (without ACK) by destination port: connections the port accepted.
    syns_to: Vec<u32>,
    /// The source port of the first command to each port (0: none yet), and whether others followed.
    first_sender: Vec<u16>,
    many_senders: Vec<bool>,
    /// Segments by the port that looks like the server's (the lower one).
    lower_port_segments: Vec<u64>,
    /// Of those, the ones beginning with a TLS record.
    tls_segments: Vec<u64>,
    /// The first bytes of a possible command cut short by its segment, by (source, destination), with the
    /// sequence number of the segment that would continue it.
    heads: HashMap<(SocketAddr, SocketAddr), (u32, Vec<u8>)>,
    /// Connections (lower address first) by the side whose payload came first.
    first_speaker: HashMap<(SocketAddr, SocketAddr), SocketAddr>,
    /// (server, client) of inline commands whose answer is the server's next segment.
    inline_asked: HashMap<(SocketAddr, SocketAddr), ()>,
}

impl Votes {
    fn new() -> Votes {
        Votes {
            commands_to: vec![0; PORTS],
            syns_to: vec![0; PORTS],
            first_sender: vec![0; PORTS],
            many_senders: vec![false; PORTS],
            lower_port_segments: vec![0; PORTS],
            tls_segments: vec![0; PORTS],
            heads: HashMap::new(),
            first_speaker: HashMap::new(),
            inline_asked: HashMap::new(),
        }
    }

    fn add(&mut self, seg: &TcpSegment<'_>) {
        let (src, dst) = (seg.src.port(), seg.dst.port());
        self.lower_port_segments[usize::from(src.min(dst))] += 1;
        if is_tls_record(seg.payload) {
            self.tls_segments[usize::from(src.min(dst))] += 1;
        }
        if seg.flags.has(TcpFlags::SYN) && !seg.flags.has(TcpFlags::ACK) {
            self.syns_to[usize::from(dst)] += 1;
        }
        if self.starts_command(seg) {
            self.vote(src, dst);
        } else if self.answered_inline(seg) {
            self.vote(dst, src);
        }
    }

    /// A command sent from port `src` to port `dst`.
    fn vote(&mut self, src: u16, dst: u16) {
        let d = usize::from(dst);
        self.commands_to[d] = self.commands_to[d].saturating_add(1);
        match self.first_sender[d] {
            0 => self.first_sender[d] = src,
            first if first != src => self.many_senders[d] = true,
            _ => {}
        }
    }

    /// Whether the segment is a server's RESP answer to an inline command; else notes whether it asks one.
    fn answered_inline(&mut self, seg: &TcpSegment<'_>) -> bool {
        if seg.payload.is_empty() {
            return false;
        }
        if self.inline_asked.remove(&(seg.src, seg.dst)).is_some() {
            return is_reply_line(seg.payload);
        }
        let conn = if seg.src < seg.dst { (seg.src, seg.dst) } else { (seg.dst, seg.src) };
        if self.first_speaker.len() >= MAX_HEADS && !self.first_speaker.contains_key(&conn) {
            self.first_speaker.clear();
        }
        let first = *self.first_speaker.entry(conn).or_insert(seg.src);
        if first == seg.src && is_inline_command_start(seg.payload) {
            if self.inline_asked.len() >= MAX_HEADS {
                self.inline_asked.clear();
            }
            self.inline_asked.insert((seg.dst, seg.src), ());
        }
        false
    }

    /// Whether the segment begins with a command, or completes one begun by the segments before it on its
    /// flow (a client writing a command a few bytes at a time, or a small MSS).
    fn starts_command(&mut self, seg: &TcpSegment<'_>) -> bool {
        let (key, data) = ((seg.src, seg.dst), seg.payload);
        if data.is_empty() {
            return false;
        }
        if let Some((next, mut head)) = self.heads.remove(&key) {
            if seg.seq == next {
                head.extend_from_slice(&data[..data.len().min(COMMAND_HEAD - head.len())]);
                return self.judge(key, head, seg.seq.wrapping_add(data.len() as u32));
            }
        }
        if data.first() != Some(&b'*') {
            return false;
        }
        if data.len() >= COMMAND_HEAD {
            return is_command_start(data);
        }
        self.judge(key, data.to_vec(), seg.seq.wrapping_add(data.len() as u32))
    }

    /// A command start, or else (while too short to tell) kept to be continued by the flow's next segment.
    fn judge(&mut self, key: (SocketAddr, SocketAddr), head: Vec<u8>, next: u32) -> bool {
        if is_command_start(&head) {
            return true;
        }
        if head.len() < COMMAND_HEAD {
            if self.heads.len() >= MAX_HEADS {
                self.heads.clear();
            }
            self.heads.insert(key, (next, head));
        }
        false
    }

    fn is_redis(&self, port: usize) -> bool {
        if self.commands_to[port] == 0 {
            return false;
        }
        let sender = self.first_sender[port];
        // One peer only, itself sent commands to: one end of a link that carries commands both ways.
        let link_end = !self.many_senders[port] && self.commands_to[usize::from(sender)] > 0;
        !link_end || self.syns_to[port] > 0 || port < usize::from(sender)
    }

    fn report(&self) -> PortReport {
        let redis = (1..PORTS).filter(|&p| self.is_redis(p)).map(|p| p as u16).collect();
        let mut servers: Vec<(u16, u64)> = (1..PORTS)
            .filter(|&p| self.syns_to[p] > 0 || self.lower_port_segments[p] > 0)
            .map(|p| (p as u16, self.lower_port_segments[p]))
            .collect();
        servers.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        let mut tls: Vec<(u16, u64)> =
            (1..PORTS).filter(|&p| self.tls_segments[p] > 0).map(|p| (p as u16, self.tls_segments[p])).collect();
        tls.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(&b.0)));
        PortReport { redis, servers, tls }
    }
}

/// Reads the whole capture once and says which ports carry Redis traffic. `path` names it in errors.
pub fn discover_ports<R: Read>(src: R, path: &str) -> Result<PortReport, TraceError> {
    let mut reader = CaptureReader::new(src).map_err(|e| TraceError::whole(path, e.to_string()))?;
    let mut decode = CaptureCounters::default();
    let mut votes = Votes::new();
    while let Some(packet) = reader.next_packet().map_err(|e| TraceError::whole(path, e.to_string()))? {
        if let Some(seg) = decode.decode(&packet) {
            votes.add(&seg);
        }
    }
    Ok(votes.report())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GET: &[u8] = b"*2\r\n$3\r\nGET\r\n$1\r\nk\r\n";

    fn seg<'a>(src: &str, dst: &str, flags: u8, payload: &'a [u8]) -> TcpSegment<'a> {
        let (src, dst): (SocketAddr, SocketAddr) = (src.parse().unwrap(), dst.parse().unwrap());
        let flags = TcpFlags(flags);
        let (window, window_scale, missing_tail) = (0, None, 0);
        TcpSegment { ts_ns: 0, src, dst, seq: 0, ack: 0, flags, window, window_scale, payload, missing_tail }
    }

    fn report(segs: &[TcpSegment<'_>]) -> PortReport {
        let mut v = Votes::new();
        segs.iter().for_each(|s| v.add(s));
        v.report()
    }

    #[test]
    fn a_cluster_is_found_on_all_its_ports_and_not_on_its_bus() {
        let mut segs = Vec::new();
        for (i, port) in [7000, 7001, 7002].iter().enumerate() {
            let (client, server) = (format!("10.0.0.1:{}", 50000 + i), format!("10.0.0.2:{port}"));
            segs.push(seg(&client, &server, TcpFlags::ACK, GET));
            segs.push(seg(&server, &client, TcpFlags::ACK, b"$1\r\nv\r\n"));
            // The bus: a SYN and its binary messages (signature "RCmb").
            let (peer, bus) = (format!("10.0.0.3:{}", 40000 + i), format!("10.0.0.2:{}", port + 10000));
            segs.push(seg(&peer, &bus, TcpFlags::SYN, b""));
            segs.push(seg(&peer, &bus, TcpFlags::ACK, b"RCmb\x00\x00\x08\x00\x01\x00"));
        }
        // A replica's link, picked up mid-stream: PING/REPLCONF one way, propagated writes the other.
        segs.push(seg("10.0.0.4:45000", "10.0.0.2:7000", TcpFlags::ACK, b"*1\r\n$4\r\nPING\r\n"));
        segs.push(seg("10.0.0.2:7000", "10.0.0.4:45000", TcpFlags::ACK, b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1\r\nv\r\n"));
        let r = report(&segs);
        assert_eq!(r.redis, vec![7000, 7001, 7002]);
        let servers: Vec<u16> = r.servers.iter().map(|s| s.0).collect();
        assert_eq!(servers, vec![7000, 7001, 7002, 17000, 17001, 17002]);
    }

    #[test]
    fn a_command_cut_into_small_segments_is_found() {
        let (client, server) = ("10.0.0.1:5000", "10.0.0.2:6380");
        let at = |seq: u32, payload| TcpSegment { seq, ..seg(client, server, TcpFlags::ACK, payload) };
        let ack = |seq: u32| TcpSegment { seq, ..seg(client, server, TcpFlags::ACK, b"") };
        let mut v = Votes::new();
        for (i, piece) in GET.chunks(5).enumerate() {
            v.add(&at(100 + 5 * i as u32, piece));
            v.add(&ack(105 + 5 * i as u32)); // a pure ACK between the pieces changes nothing
        }
        assert_eq!(v.report().redis, vec![6380]);
        // Pieces that do not follow each other make no command.
        let mut v = Votes::new();
        v.add(&at(100, &GET[..5]));
        v.add(&at(200, &GET[5..]));
        assert!(v.report().redis.is_empty());
    }

    #[test]
    fn no_redis_anywhere_names_the_server_ports() {
        let segs = [
            seg("10.0.0.1:50000", "10.0.0.2:80", TcpFlags::ACK, b"GET / HTTP/1.1\r\n\r\n"),
            seg("10.0.0.1:50001", "10.0.0.2:80", TcpFlags::ACK, b"GET / HTTP/1.1\r\n\r\n"),
            seg("10.0.0.1:50002", "10.0.0.2:5432", TcpFlags::ACK, b"\x00\x00\x00\x08"),
        ];
        assert_eq!(report(&segs), PortReport { redis: vec![], servers: vec![(80, 2), (5432, 1)], tls: vec![] });
    }

    #[test]
    fn answered_inline_commands_are_found_and_other_line_protocols_are_not() {
        let (c, r) = ("10.0.0.1:50000", "10.0.0.2:6380");
        let inline = [
            seg(c, r, TcpFlags::ACK, b"SET k v\r\n"),
            seg(r, c, TcpFlags::ACK, b"+OK\r\n"),
            seg(c, r, TcpFlags::ACK, b"get k\r\n"),
            seg(r, c, TcpFlags::ACK, b"$1\r\nv\r\n"),
        ];
        assert_eq!(report(&inline).redis, vec![6380]);
        // Unanswered, or answered by something that is no RESP: no vote.
        assert!(report(&inline[..1]).redis.is_empty());
        let (h, w) = ("10.0.0.1:50001", "10.0.0.2:80");
        let http = [
            seg(h, w, TcpFlags::ACK, b"GET / HTTP/1.1\r\nHost: w\r\n\r\n"),
            seg(w, h, TcpFlags::ACK, b"HTTP/1.1 200 OK\r\n\r\n"),
            seg(h, w, TcpFlags::ACK, b"GET index\r\n"),
            seg(w, h, TcpFlags::ACK, b"<html></html>\r\n"),
        ];
        let (m, x) = ("10.0.0.1:50002", "10.0.0.2:25");
        let smtp = [
            seg(x, m, TcpFlags::ACK, b"220 mx ESMTP\r\n"),
            seg(m, x, TcpFlags::ACK, b"EHLO client\r\n"),
            seg(x, m, TcpFlags::ACK, b"250 mx\r\n"),
            seg(m, x, TcpFlags::ACK, b"DATA\r\n"),
            seg(x, m, TcpFlags::ACK, b"354 go on\r\n"),
            seg(m, x, TcpFlags::ACK, b"QUIT\r\n"),
            seg(x, m, TcpFlags::ACK, b"221 bye\r\n"),
        ];
        // POP3 answers in RESP-like lines, but greets first; a name shared with Redis (TYPE, from FTP's
        // vocabulary) asked after its greeting does not count.
        let (p, q) = ("10.0.0.1:50003", "10.0.0.2:110");
        let pop3 = [
            seg(q, p, TcpFlags::ACK, b"+OK POP3 ready\r\n"),
            seg(p, q, TcpFlags::ACK, b"TYPE k\r\n"),
            seg(q, p, TcpFlags::ACK, b"-ERR unknown command\r\n"),
        ];
        for other in [&http[..], &smtp[..], &pop3[..]] {
            assert!(report(other).redis.is_empty());
        }
    }

    #[test]
    fn tls_is_counted_by_its_server_port() {
        let hello = b"\x16\x03\x01\x00\xc8\x01\x00\x00\xc4\x03\x03";
        let data = b"\x17\x03\x03\x00\x20 encrypted bytes";
        let segs = [
            seg("10.0.0.1:50000", "10.0.0.2:6380", TcpFlags::ACK, hello),
            seg("10.0.0.2:6380", "10.0.0.1:50000", TcpFlags::ACK, data),
            seg("10.0.0.1:50000", "10.0.0.2:6380", TcpFlags::ACK, data),
            seg("10.0.0.1:50001", "10.0.0.2:80", TcpFlags::ACK, b"GET / HTTP/1.1\r\n\r\n"),
        ];
        let r = report(&segs);
        assert!(r.redis.is_empty());
        assert_eq!(r.tls, vec![(6380, 3)]);
    }
}
