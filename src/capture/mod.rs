//! Packet captures in, TCP segments out: the first stage of parsing Redis traffic from tcpdump files.
//!
//! `CaptureReader` streams packets out of a pcap or pcapng file through a fixed buffer, whatever the file's
//! size; `decode_tcp` takes each link-layer frame down to a `crate::net::TcpSegment` or says why it cannot
//! (`Skip`); `CaptureCounters` does both and counts what was skipped. A file that is not a capture, or a
//! corrupt record, is a `CaptureError` at a byte offset; a last record cut short ends the stream and is
//! reported by `CaptureReader::truncated_tail`.
//!
//! ```no_run
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! use cachescope::capture::{CaptureCounters, CaptureReader};
//! let mut reader = CaptureReader::new(std::fs::File::open("redis.pcap")?)?;
//! let mut counters = CaptureCounters::default();
//! while let Some(packet) = reader.next_packet()? {
//!     if let Some(segment) = counters.decode(&packet) {
//!         // hand `segment` to reassembly
//!     }
//! }
//! counters.truncated_tail = reader.truncated_tail();
//! # Ok(()) }
//! ```

mod buffer;
mod counters;
mod decode;
mod endian;
mod error;
mod ip;
mod limits;
pub mod link;
mod pcap;
mod pcapng;
mod read_ahead;
mod reader;
pub mod synth;

pub use counters::CaptureCounters;
pub use decode::{decode_tcp, Skip};
pub use error::CaptureError;
pub use limits::{MAX_RECORD, MAX_SNAPLEN};
pub use read_ahead::ReadAhead;
pub use reader::{is_capture, CaptureFormat, CaptureReader, Packet, DEFAULT_BUFFER};

#[cfg(test)]
mod tests;
