//! `CaptureReader`: packets out of a pcap or pcapng stream, one at a time, as zero-copy slices of a
//! fixed-size buffer (see `buffer`). The file header decides the format; a record cut off by the end of
//! the input (tcpdump killed mid-write, a file cut with `head -c`) ends the stream quietly and is reported
//! by `truncated_tail`, while a record that cannot be right is a `CaptureError` at its offset.

use std::io::Read;

use super::buffer::Buffer;
use super::endian::array;
use super::error::CaptureError;
use super::pcap::{self, PcapHeader, FILE_HEADER_LEN};
use super::pcapng::{self, PcapNg};

/// Read size, and the memory a reader holds unless one record is larger.
pub const DEFAULT_BUFFER: usize = 1 << 20;

/// One captured packet: the link-layer frame as captured, which may be shorter than it was on the wire.
#[derive(Clone, Copy, Debug)]
pub struct Packet<'a> {
    /// Capture time, ns since the epoch.
    pub ts_ns: i64,
    /// LINKTYPE_ value of the interface it was captured on.
    pub link_type: u32,
    /// The captured bytes, a slice of the reader's buffer.
    pub data: &'a [u8],
    /// Length of the frame on the wire.
    pub orig_len: u32,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CaptureFormat {
    Pcap,
    PcapNg,
}

/// Where a packet lies in the buffer, before it is borrowed as a `Packet`.
pub(crate) struct Span {
    pub pos: usize,
    pub len: usize,
    pub ts_ns: i64,
    pub link_type: u32,
    pub orig_len: u32,
}

pub(crate) enum Next {
    Packet(Span),
    /// A section header (pcapng): not a packet, read on.
    Section,
    End,
    /// The input ends inside the record starting at this offset.
    Truncated(u64),
}

enum Format {
    Pcap(PcapHeader),
    PcapNg(PcapNg),
}

pub struct CaptureReader<R: Read> {
    buf: Buffer<R>,
    format: Format,
    truncated_tail: Option<u64>,
    done: bool,
}

/// True when `head` (the first bytes of a file) starts with a pcap or pcapng magic number.
pub fn is_capture(head: &[u8]) -> bool {
    (head.len() >= 4 && pcap::magic(array(head, 0)).is_some()) || pcapng::looks_like(head)
}

impl<R: Read> CaptureReader<R> {
    /// Reads and checks the file header (pcap) or first section header (pcapng).
    pub fn new(src: R) -> Result<Self, CaptureError> {
        Self::with_buffer(src, DEFAULT_BUFFER)
    }

    /// As `new`, with a buffer of `bytes` (it still grows to hold a larger record).
    pub fn with_buffer(src: R, bytes: usize) -> Result<Self, CaptureError> {
        let mut buf = Buffer::new(src, bytes);
        let io = |e: std::io::Error| CaptureError::at(0, format!("read failed: {e}"));
        let complete = buf.fill(FILE_HEADER_LEN).map_err(io)?;
        let head = buf.unread();
        if head.is_empty() {
            return Err(CaptureError::at(0, "empty file: not a packet capture"));
        }
        let format = if head.len() >= 4 && pcap::magic(array(head, 0)).is_some() {
            if !complete {
                return Err(CaptureError::at(0, "pcap file header is cut short"));
            }
            let header = PcapHeader::parse(head).map_err(|m| CaptureError::at(0, m))?;
            buf.consume(FILE_HEADER_LEN);
            Format::Pcap(header)
        } else if pcapng::looks_like(head) {
            Format::PcapNg(PcapNg::open(&mut buf)?)
        } else {
            return Err(CaptureError::at(0, not_a_capture(head)));
        };
        Ok(CaptureReader { buf, format, truncated_tail: None, done: false })
    }

    /// The next packet, or None at the end of the input (or at a cut-off last record, see
    /// `truncated_tail`).
    #[inline]
    pub fn next_packet(&mut self) -> Result<Option<Packet<'_>>, CaptureError> {
        let span = loop {
            if self.done {
                return Ok(None);
            }
            let next = match &mut self.format {
                Format::Pcap(header) => next_record(header, &mut self.buf)?,
                Format::PcapNg(ng) => ng.next(&mut self.buf)?,
            };
            match next {
                Next::Packet(span) => break span,
                Next::Section => {}
                Next::End => self.done = true,
                Next::Truncated(at) => {
                    self.truncated_tail = Some(at);
                    self.done = true;
                }
            }
        };
        let data = self.buf.data().get(span.pos..span.pos + span.len).unwrap_or_default();
        Ok(Some(Packet { ts_ns: span.ts_ns, link_type: span.link_type, data, orig_len: span.orig_len }))
    }

    /// Bytes consumed so far, for progress reporting.
    pub fn offset(&self) -> u64 {
        self.buf.offset()
    }

    /// Offset of a last record cut short by the end of the input, once the reader has reached it.
    pub fn truncated_tail(&self) -> Option<u64> {
        self.truncated_tail
    }

    pub fn format(&self) -> CaptureFormat {
        match self.format {
            Format::Pcap(_) => CaptureFormat::Pcap,
            Format::PcapNg(_) => CaptureFormat::PcapNg,
        }
    }
}

fn not_a_capture(head: &[u8]) -> String {
    if head.starts_with(&[0x1f, 0x8b]) {
        return "gzip-compressed data: decompress the capture first".to_string();
    }
    let shown = &head[..head.len().min(4)];
    format!("not a packet capture: starts with {shown:02x?}, not a pcap or pcapng magic number")
}

/// Reads one classic pcap record.
#[inline]
fn next_record<R: Read>(header: &PcapHeader, buf: &mut Buffer<R>) -> Result<Next, CaptureError> {
    let at = buf.offset();
    let io = |e: std::io::Error| CaptureError::at(at, format!("read failed: {e}"));
    let hlen = header.record_header_len;
    if !buf.fill(hlen).map_err(io)? {
        return Ok(if buf.unread().is_empty() { Next::End } else { Next::Truncated(at) });
    }
    let rec = header.record(buf.unread());
    if rec.incl_len > header.max_incl_len() {
        return Err(CaptureError::at(
            at,
            format!(
                "record of {} captured bytes with a snap length of {} (corrupt file?)",
                rec.incl_len, header.snaplen
            ),
        ));
    }
    let total = hlen + rec.incl_len as usize;
    if !buf.fill(total).map_err(io)? {
        return Ok(Next::Truncated(at));
    }
    let pos = buf.position() + hlen;
    buf.consume(total);
    Ok(Next::Packet(Span {
        pos,
        len: rec.incl_len as usize,
        ts_ns: rec.ts_ns,
        link_type: header.link_type,
        orig_len: rec.orig_len,
    }))
}
