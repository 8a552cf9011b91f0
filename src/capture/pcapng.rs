//! pcapng files (what Wireshark and dumpcap write, and tcpdump with `--pcapng`): a sequence of blocks, each
//! `type, total length, body, total length`. A section header block (SHB) starts each section and sets its
//! byte order; interface description blocks (IDB) declare the section's interfaces, each with its own link
//! type, snap length and timestamp unit (`if_tsresol`, a power of 10 or of 2; microseconds by default) and
//! offset (`if_tsoffset`, seconds); enhanced (EPB), simple (SPB) and obsolete (OPB) packet blocks carry the
//! packets. Every other block type (name resolution, statistics, secrets, custom) is skipped unread.
//! Source: draft-ietf-opsawg-pcapng, and Wireshark's `wiretap/pcapng.c` for what real files do.

use std::io::Read;

use super::buffer::Buffer;
use super::endian::{array, Endian};
use super::error::CaptureError;
use super::limits::{max_captured, MAX_INTERFACES, MAX_OPTIONS, MAX_RECORD};
use super::reader::{Next, Span};

pub(crate) const SHB: u32 = 0x0a0d_0d0a;
const IDB: u32 = 1;
const OPB: u32 = 2;
const SPB: u32 = 3;
const EPB: u32 = 6;
const BYTE_ORDER_MAGIC: u32 = 0x1a2b_3c4d;

const OPT_END: u16 = 0;
const OPT_TSRESOL: u16 = 9;
const OPT_TSOFFSET: u16 = 14;

/// How an interface's timestamp units convert to nanoseconds.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum TsScale {
    NsPerUnit(u64),
    UnitsPerNs(u64),
    /// Units of 2^-n seconds.
    Pow2(u32),
}

impl TsScale {
    pub fn from_tsresol(v: u8) -> Option<TsScale> {
        let n = (v & 0x7f) as u32;
        if v & 0x80 != 0 {
            return Some(TsScale::Pow2(n));
        }
        match n {
            0..=9 => Some(TsScale::NsPerUnit(10u64.pow(9 - n))),
            10..=19 => Some(TsScale::UnitsPerNs(10u64.pow(n - 9))),
            _ => None,
        }
    }

    #[inline]
    pub fn to_ns(self, units: u64) -> i64 {
        let ns = match self {
            TsScale::NsPerUnit(m) => units as u128 * m as u128,
            TsScale::UnitsPerNs(d) => (units / d) as u128,
            TsScale::Pow2(n) => (units as u128 * 1_000_000_000) >> n,
        };
        ns.min(i64::MAX as u128) as i64
    }
}

#[derive(Clone, Copy, Debug)]
pub(crate) struct Interface {
    pub link_type: u32,
    pub snaplen: u32,
    pub scale: TsScale,
    pub offset_ns: i64,
}

/// The state of the section being read.
pub(crate) struct PcapNg {
    endian: Endian,
    interfaces: Vec<Interface>,
    /// Simple packet blocks carry no timestamp; they get the last one seen, so time never runs backwards.
    last_ts_ns: i64,
}

fn pad4(n: usize) -> usize {
    (n + 3) & !3
}

impl PcapNg {
    /// Reads the section header block that must open the file.
    pub fn open<R: Read>(buf: &mut Buffer<R>) -> Result<PcapNg, CaptureError> {
        let mut ng = PcapNg { endian: Endian::Little, interfaces: Vec::new(), last_ts_ns: 0 };
        match ng.next(buf)? {
            Next::Packet(_) | Next::End => Err(CaptureError::at(0, "pcapng file without a section header")),
            Next::Truncated(_) => Err(CaptureError::at(0, "pcapng section header block is cut short")),
            Next::Section => Ok(ng),
        }
    }

    /// Reads blocks up to the next packet, section header, end of input or cut-off block.
    pub fn next<R: Read>(&mut self, buf: &mut Buffer<R>) -> Result<Next, CaptureError> {
        let io = |e: std::io::Error, at: u64| CaptureError::at(at, format!("read failed: {e}"));
        loop {
            let at = buf.offset();
            if !buf.fill(8).map_err(|e| io(e, at))? {
                return Ok(if buf.unread().is_empty() { Next::End } else { Next::Truncated(at) });
            }
            let kind = self.endian.u32(array(buf.unread(), 0));
            if kind == SHB {
                if !buf.fill(12).map_err(|e| io(e, at))? {
                    return Ok(Next::Truncated(at));
                }
                self.endian = section_endian(array(buf.unread(), 8)).ok_or_else(|| {
                    CaptureError::at(at, "section header block without the byte-order magic 0x1a2b3c4d")
                })?;
            }
            let len = self.endian.u32(array(buf.unread(), 4));
            let Some(max) = self.max_block_len(kind, buf).map_err(|m| CaptureError::at(at, m))? else {
                return Ok(Next::Truncated(at));
            };
            check_block_len(kind, len, max).map_err(|m| CaptureError::at(at, m))?;
            if !matches!(kind, SHB | IDB | EPB | SPB | OPB) {
                if !buf.skip(len as u64).map_err(|e| io(e, at))? {
                    return Ok(Next::Truncated(at));
                }
                continue;
            }
            if !buf.fill(len as usize).map_err(|e| io(e, at))? {
                return Ok(Next::Truncated(at));
            }
            let block = &buf.unread()[..len as usize];
            if self.endian.u32(array(block, block.len() - 4)) != len {
                return Err(CaptureError::at(at, "block's trailing length differs from its leading length"));
            }
            let result = match kind {
                SHB => self.section(block).map(|()| Next::Section),
                IDB => self.interface(block).map(|()| Next::Section),
                _ => self.packet(kind, block).map(|mut span| {
                    span.pos += buf.position();
                    Next::Packet(span)
                }),
            };
            let next = result.map_err(|m| CaptureError::at(at, m))?;
            buf.consume(len as usize);
            match next {
                Next::Section if kind == IDB => continue,
                next => return Ok(next),
            }
        }
    }

    /// The largest total length a block of this type may have, checked before the block is buffered. For
    /// packet blocks it follows from the captured length in the block's fixed header, so this may read that
    /// header; None when the input ends inside it.
    fn max_block_len<R: Read>(&self, kind: u32, buf: &mut Buffer<R>) -> Result<Option<u32>, String> {
        let header = match kind {
            EPB | OPB => 28,
            SPB => 12,
            SHB | IDB => return Ok(Some(MAX_OPTIONS)),
            _ => return Ok(Some(MAX_RECORD)),
        };
        if self.endian.u32(array(buf.unread(), 4)) < header + 4 {
            return Ok(Some(MAX_RECORD)); // too short for its own header: `check_block_len` says so
        }
        if !buf.fill(header as usize).map_err(|e| format!("read failed: {e}"))? {
            return Ok(None);
        }
        let head = buf.unread();
        let iface = match kind {
            EPB => self.endian.u32(array(head, 8)),
            OPB => self.endian.u16(array(head, 8)) as u32,
            _ => 0,
        };
        let snaplen = self.iface(iface)?.snaplen;
        let limit = max_captured(snaplen);
        if kind == SPB {
            return Ok(Some(16 + limit + 3));
        }
        let caplen = self.endian.u32(array(head, 20));
        if caplen > limit {
            return Err(format!("captured length {caplen} exceeds the snap length {snaplen} by far (corrupt file?)"));
        }
        Ok(Some(32 + caplen + 3 + MAX_OPTIONS))
    }

    fn iface(&self, id: u32) -> Result<&Interface, String> {
        self.interfaces.get(id as usize).ok_or_else(|| {
            format!("packet on interface {id}, but the section declares {} interface(s)", self.interfaces.len())
        })
    }

    fn section(&mut self, block: &[u8]) -> Result<(), String> {
        if block.len() < 28 {
            return Err(format!("section header block of {} bytes is too short", block.len()));
        }
        let major = self.endian.u16(array(block, 12));
        if major != 1 {
            return Err(format!("pcapng version {major} is not supported (only 1.x exists)"));
        }
        self.interfaces.clear();
        Ok(())
    }

    fn interface(&mut self, block: &[u8]) -> Result<(), String> {
        if self.interfaces.len() >= MAX_INTERFACES {
            return Err(format!("more than {MAX_INTERFACES} interfaces in one section"));
        }
        let e = self.endian;
        let mut iface = Interface {
            link_type: e.u16(array(block, 8)) as u32,
            snaplen: e.u32(array(block, 12)),
            scale: TsScale::NsPerUnit(1000),
            offset_ns: 0,
        };
        let end = block.len() - 4;
        let mut at = 16;
        while at + 4 <= end {
            let (code, len) = (e.u16(array(block, at)), e.u16(array(block, at + 2)) as usize);
            at += 4;
            if code == OPT_END {
                break;
            }
            let value =
                block.get(at..at + len).filter(|_| at + len <= end).ok_or("interface option runs past its block")?;
            match (code, value.len()) {
                (OPT_TSRESOL, 1) => {
                    iface.scale = TsScale::from_tsresol(value[0])
                        .ok_or_else(|| format!("if_tsresol 10^-{} is finer than a u64 counter can hold", value[0]))?;
                }
                (OPT_TSOFFSET, 8) => {
                    iface.offset_ns = (e.u64(array(value, 0)) as i64).saturating_mul(1_000_000_000);
                }
                _ => {}
            }
            at += pad4(len);
        }
        self.interfaces.push(iface);
        Ok(())
    }

    /// Locates the packet inside a packet block; `Span::pos` is relative to the block's start.
    fn packet(&mut self, kind: u32, block: &[u8]) -> Result<Span, String> {
        let e = self.endian;
        let body_end = block.len() - 4;
        let (iface, ts_ns, data_at, caplen, orig_len) = match kind {
            SPB => {
                let iface = self.iface(0)?;
                let orig_len = e.u32(array(block, 8));
                let mut caplen = (orig_len as usize).min(body_end - 12);
                if iface.snaplen != 0 {
                    caplen = caplen.min(iface.snaplen as usize);
                }
                (iface, self.last_ts_ns, 12, caplen, orig_len)
            }
            _ => {
                let id = if kind == EPB { e.u32(array(block, 8)) } else { e.u16(array(block, 8)) as u32 };
                let iface = self.iface(id)?;
                let units = (e.u32(array(block, 12)) as u64) << 32 | e.u32(array(block, 16)) as u64;
                let ts_ns = iface.scale.to_ns(units).saturating_add(iface.offset_ns);
                let caplen = e.u32(array(block, 20)) as usize;
                if 28 + caplen > body_end {
                    return Err(format!("captured length {caplen} runs past the end of its block"));
                }
                (iface, ts_ns, 28, caplen, e.u32(array(block, 24)))
            }
        };
        let link_type = iface.link_type;
        self.last_ts_ns = ts_ns;
        Ok(Span { pos: data_at, len: caplen, ts_ns, link_type, orig_len })
    }
}

/// The byte order whose reading of the SHB's magic field is 0x1a2b3c4d.
fn section_endian(magic: [u8; 4]) -> Option<Endian> {
    [Endian::Little, Endian::Big].into_iter().find(|e| e.u32(magic) == BYTE_ORDER_MAGIC)
}

fn check_block_len(kind: u32, len: u32, max: u32) -> Result<(), String> {
    let min = match kind {
        SHB => 28,
        IDB => 20,
        EPB | OPB => 32,
        SPB => 16,
        _ => 12,
    };
    if len < min {
        return Err(format!("block of type {kind:#x} with total length {len} (at least {min})"));
    }
    if !len.is_multiple_of(4) {
        return Err(format!("block total length {len} is not a multiple of 4"));
    }
    if len > max {
        return Err(format!("block total length {len} of type {kind:#x} exceeds {max} (corrupt file?)"));
    }
    Ok(())
}

/// True when `head` starts like a pcapng file (a section header block, byte-order magic if present).
pub(crate) fn looks_like(head: &[u8]) -> bool {
    head.len() >= 4 && head[..4] == SHB.to_le_bytes() && (head.len() < 12 || section_endian(array(head, 8)).is_some())
}
