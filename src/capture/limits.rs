//! Bounds on lengths read from a file, checked before anything is buffered: a corrupt length field must
//! become an error at its offset, not a huge allocation or a silent skip over the rest of the file.

/// tcpdump's largest snap length (libpcap's MAXIMUM_SNAPLEN); captured lengths up to this are always fine,
/// whatever snap length a header declares (some writers declare 65535 and write more, or declare 0).
pub const MAX_SNAPLEN: u32 = 256 << 10;

/// No record or block is ever larger than this, whatever a header declares.
pub const MAX_RECORD: u32 = 256 << 20;

/// Room for the options of a pcapng block (comments, names, statistics): generous, but bounded.
pub const MAX_OPTIONS: u32 = 1 << 20;

/// Interfaces one pcapng section may declare; keeps a file of nothing but IDBs from growing memory.
pub const MAX_INTERFACES: usize = 1 << 16;

/// The largest captured length accepted under a declared snap length.
pub fn max_captured(snaplen: u32) -> u32 {
    snaplen.clamp(MAX_SNAPLEN, MAX_RECORD)
}
