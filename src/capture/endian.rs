//! Reading the integers of capture file headers, whose byte order the file's magic number decides.
//! Callers check lengths first; these take fixed-size arrays so no read can go out of bounds.

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Endian {
    Little,
    Big,
}

impl Endian {
    #[inline]
    pub fn u16(self, b: [u8; 2]) -> u16 {
        match self {
            Endian::Little => u16::from_le_bytes(b),
            Endian::Big => u16::from_be_bytes(b),
        }
    }

    #[inline]
    pub fn u32(self, b: [u8; 4]) -> u32 {
        match self {
            Endian::Little => u32::from_le_bytes(b),
            Endian::Big => u32::from_be_bytes(b),
        }
    }

    #[inline]
    pub fn u64(self, b: [u8; 8]) -> u64 {
        match self {
            Endian::Little => u64::from_le_bytes(b),
            Endian::Big => u64::from_be_bytes(b),
        }
    }
}

/// The `N` bytes at `at`, or zeros past the end (callers have checked the length; this keeps a mistake
/// from becoming a panic).
#[inline]
pub(crate) fn array<const N: usize>(b: &[u8], at: usize) -> [u8; N] {
    match b.get(at..at.wrapping_add(N)) {
        Some(s) => s.try_into().unwrap_or([0; N]),
        None => [0; N],
    }
}

/// A network-order (big-endian) u16 at `at`; zero past the end, as `array`.
#[inline]
pub(crate) fn be16(b: &[u8], at: usize) -> u16 {
    u16::from_be_bytes(array(b, at))
}

#[inline]
pub(crate) fn be32(b: &[u8], at: usize) -> u32 {
    u32::from_be_bytes(array(b, at))
}
