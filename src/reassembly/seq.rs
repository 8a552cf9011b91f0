//! TCP sequence numbers: 32-bit serial numbers (RFC 1982) that wrap, compared by the sign of their wrapped
//! difference, and unwrapped into 64-bit stream offsets.
//!
//! Suricata compares with `SEQ_LT(a, b) ((int32_t)((a) - (b)) < 0)`; smoltcp's `SeqNumber` makes the same
//! comparison its `PartialOrd`, and only partial: the order is not transitive over the whole 2^32 space, so
//! sequence numbers cannot key a sorted map. Each stream therefore turns them into offsets from its first
//! byte as soon as a segment arrives, resolving the wrap against the stream's current position (a segment is
//! taken to lie within 2^31 bytes of it, as TCP's window guarantees), and works with plain u64 offsets after.

/// `a` comes before `b` in sequence space.
#[inline]
pub fn seq_lt(a: u32, b: u32) -> bool {
    (a.wrapping_sub(b) as i32) < 0
}

/// Signed distance from `b` to `a`, in (-2^31, 2^31].
#[inline]
pub fn seq_diff(a: u32, b: u32) -> i64 {
    i64::from(a.wrapping_sub(b) as i32)
}

/// The stream offset of `seq`, given one known point of the stream: offset `anchor` has sequence number
/// `anchor_seq`. The answer is the offset nearest the anchor; negative when `seq` lies before the stream began.
#[inline]
pub fn unwrap(seq: u32, anchor: u64, anchor_seq: u32) -> i64 {
    (anchor as i64).wrapping_add(seq_diff(seq, anchor_seq))
}

/// The sequence number of stream offset `offset` when offset 0 has sequence number `base`.
#[inline]
pub fn seq_at(base: u32, offset: u64) -> u32 {
    base.wrapping_add(offset as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn comparison_wraps() {
        assert!(seq_lt(1, 2));
        assert!(!seq_lt(2, 1));
        assert!(seq_lt(u32::MAX - 5, 3));
        assert!(!seq_lt(3, u32::MAX - 5));
        assert!(!seq_lt(7, 7));
    }

    #[test]
    fn unwrap_crosses_2_pow_32_both_ways() {
        let base = u32::MAX - 9;
        // 10 bytes in, the sequence number has wrapped to 0.
        assert_eq!(unwrap(0, 0, base), 10);
        assert_eq!(seq_at(base, 10), 0);
        // Near offset 2^32 + 100 (the stream has wrapped once), anchor-relative unwrapping keeps going up.
        let anchor = (1u64 << 32) + 100;
        let anchor_seq = seq_at(base, anchor);
        assert_eq!(unwrap(anchor_seq.wrapping_add(50), anchor, anchor_seq), anchor as i64 + 50);
        assert_eq!(unwrap(anchor_seq.wrapping_sub(50), anchor, anchor_seq), anchor as i64 - 50);
        // Before the first byte: negative.
        assert_eq!(unwrap(base.wrapping_sub(3), 0, base), -3);
    }
}
