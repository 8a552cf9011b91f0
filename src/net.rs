//! The types that pass between the stages of capture parsing: a decoded TCP segment (from `capture`, the
//! pcap reader and link/IP/TCP decoder) goes to `reassembly`, which hands ordered bytes to `resp`.

use std::net::SocketAddr;

/// TCP header flags, as on the wire.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TcpFlags(pub u8);

impl TcpFlags {
    pub const FIN: u8 = 0x01;
    pub const SYN: u8 = 0x02;
    pub const RST: u8 = 0x04;
    pub const PSH: u8 = 0x08;
    pub const ACK: u8 = 0x10;

    pub fn has(self, flag: u8) -> bool {
        self.0 & flag != 0
    }
}

/// One TCP segment as captured. `payload` is what the capture holds; `missing_tail` counts payload bytes that
/// the IP header says were sent but the snap length cut off (the reassembler treats them as a gap).
#[derive(Clone, Copy, Debug)]
pub struct TcpSegment<'a> {
    pub ts_ns: i64,
    pub src: SocketAddr,
    pub dst: SocketAddr,
    pub seq: u32,
    pub ack: u32,
    pub flags: TcpFlags,
    /// The receive window the sender advertises, as in the header (unscaled).
    pub window: u16,
    /// A SYN's window scale option (RFC 7323), when it carries one; None on every other segment.
    pub window_scale: Option<u8>,
    pub payload: &'a [u8],
    pub missing_tail: u32,
}

/// Which way bytes flow on a connection to Redis.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Direction {
    /// Client to server: commands.
    Request,
    /// Server to client: replies.
    Reply,
}
