//! The bytes one direction holds beyond a hole: pieces keyed by stream offset in a BTreeMap (an insert is
//! O(log n), never a shift of a long list), with the invariants the stream relies on kept here.
//!
//! - Pieces never overlap: a new segment is stored only where no piece has data (`uncovered`), so the bytes
//!   that arrived first win, as they do for delivered bytes.
//! - A piece may carry a cut-off tail (`missing`: bytes the snap length removed right after its data), or be
//!   only that (no data): bytes known to exist that the capture will never have.
//! - `breaks` counts pieces not contiguous with the piece before them. The stream keeps the first piece beyond
//!   its next expected byte, so the holes are one front hole plus the breaks, known without a scan.
//! - `mem` is the bytes held plus `PIECE_OVERHEAD` a piece: what the flow and memcap limits are checked on.

use std::collections::BTreeMap;

use super::PIECE_OVERHEAD;

/// A held segment, or the part of one that no other piece covers.
pub(super) struct Piece {
    pub ts_ns: i64,
    pub data: Box<[u8]>,
    /// Bytes right after `data` that the capture cut off.
    pub missing: u64,
}

impl Piece {
    fn cost(&self) -> u64 {
        self.data.len() as u64 + PIECE_OVERHEAD
    }

    fn end(&self, start: u64) -> u64 {
        start + self.data.len() as u64
    }
}

/// What a new segment's bytes turned out to share with the held pieces.
pub(super) struct Coverage {
    /// The ranges no piece covers, in order.
    pub parts: Vec<(u64, u64)>,
    /// Some bytes are held already.
    pub overlap: bool,
    /// Some of those differ from the held copy.
    pub conflict: bool,
}

#[derive(Default)]
pub(super) struct Held {
    pieces: BTreeMap<u64, Piece>,
    breaks: u32,
    mem: u64,
}

impl Held {
    pub fn is_empty(&self) -> bool {
        self.pieces.is_empty()
    }

    pub fn mem(&self) -> u64 {
        self.mem
    }

    /// Holes, given that the first piece lies beyond the stream's next expected byte.
    pub fn holes(&self) -> u32 {
        if self.pieces.is_empty() {
            0
        } else {
            self.breaks + 1
        }
    }

    /// Offset and timestamp of the first piece.
    pub fn first(&self) -> Option<(u64, i64)> {
        self.pieces.first_key_value().map(|(&start, piece)| (start, piece.ts_ns))
    }

    /// Compares `data` (at offset `start`) with the pieces it overlaps.
    pub fn coverage(&self, start: u64, data: &[u8]) -> Coverage {
        let end = start + data.len() as u64;
        let mut cov = Coverage { parts: Vec::new(), overlap: false, conflict: false };
        let mut at = start;
        let before = self.pieces.range(..start).next_back();
        for (&p_start, piece) in before.into_iter().chain(self.pieces.range(start..end)) {
            let p_end = piece.end(p_start);
            if p_end <= at {
                continue;
            }
            if p_start > at {
                cov.parts.push((at, p_start));
            }
            let (lo, hi) = (p_start.max(at), p_end.min(end));
            cov.overlap = true;
            let held = &piece.data[(lo - p_start) as usize..(hi - p_start) as usize];
            cov.conflict |= held != &data[(lo - start) as usize..(hi - start) as usize];
            at = hi;
        }
        if at < end {
            cov.parts.push((at, end));
        }
        cov
    }

    /// Adds a piece whose data overlaps no other. A data-less piece (a lost tail) at the same offset is merged.
    pub fn insert(&mut self, start: u64, mut piece: Piece) {
        if let Some(old) = self.remove(start) {
            piece.missing = piece.missing.max(old.missing.saturating_sub(piece.data.len() as u64));
        }
        let end = piece.end(start);
        let (before_end, after_start) = self.neighbours(start);
        let joined = matches!((before_end, after_start), (Some(b), Some(a)) if b < a);
        self.breaks = self.breaks + u32::from(before_end.is_some_and(|b| b < start))
            + u32::from(after_start.is_some_and(|a| end < a))
            - u32::from(joined);
        self.mem += piece.cost();
        self.pieces.insert(start, piece);
    }

    /// Records that the `n` bytes from offset `at` were cut off by the capture: as the cut-off tail of the
    /// piece whose data reaches `at`, or else as a piece of its own with no data.
    pub fn mark_lost(&mut self, at: u64, n: u64, ts_ns: i64) {
        if let Some((&p_start, piece)) = self.pieces.range_mut(..=at).next_back() {
            let p_end = piece.end(p_start);
            if p_end >= at {
                piece.missing = piece.missing.max((at + n).saturating_sub(p_end));
                return;
            }
        }
        self.insert(at, Piece { ts_ns, data: Box::default(), missing: n });
    }

    pub fn pop_first(&mut self) -> Option<(u64, Piece)> {
        let start = *self.pieces.first_key_value()?.0;
        self.remove(start).map(|piece| (start, piece))
    }

    /// Drops everything and frees the map.
    pub fn clear(&mut self) {
        *self = Held::default();
    }

    fn remove(&mut self, start: u64) -> Option<Piece> {
        let piece = self.pieces.remove(&start)?;
        let end = piece.end(start);
        let (before_end, after_start) = self.neighbours(start);
        let joined = matches!((before_end, after_start), (Some(b), Some(a)) if b < a);
        self.breaks = self.breaks + u32::from(joined)
            - u32::from(before_end.is_some_and(|b| b < start))
            - u32::from(after_start.is_some_and(|a| end < a));
        self.mem -= piece.cost();
        Some(piece)
    }

    /// End of the piece before `start` and start of the piece after it (`start` itself not in the map).
    fn neighbours(&self, start: u64) -> (Option<u64>, Option<u64>) {
        let before_end = self.pieces.range(..start).next_back().map(|(&s, p)| p.end(s));
        let after_start = self.pieces.range(start..).next().map(|(&s, _)| s);
        (before_end, after_start)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn piece(data: &[u8]) -> Piece {
        Piece { ts_ns: 0, data: data.into(), missing: 0 }
    }

    /// Holes counted the slow way: pieces not contiguous with the one before, plus the front hole.
    fn scan_holes(h: &Held) -> u32 {
        let mut holes = 0;
        let mut prev_end = None;
        for (&s, p) in &h.pieces {
            if prev_end.is_none_or(|e| e < s) {
                holes += 1;
            }
            prev_end = Some(p.end(s));
        }
        holes
    }

    #[test]
    fn hole_count_follows_inserts_and_removals_in_any_order() {
        let mut h = Held::default();
        for &s in &[50u64, 10, 30, 20, 40, 12, 60, 0, 25] {
            let cov = h.coverage(s, &[7; 5]);
            for (a, b) in cov.parts {
                h.insert(a, piece(&vec![7; (b - a) as usize]));
                assert_eq!(h.holes(), scan_holes(&h));
            }
        }
        while h.pop_first().is_some() {
            assert_eq!(h.holes(), scan_holes(&h));
        }
        assert_eq!((h.holes(), h.mem()), (0, 0));
    }

    #[test]
    fn coverage_finds_the_uncovered_parts_and_conflicts() {
        let mut h = Held::default();
        h.insert(10, piece(b"abc"));
        h.insert(20, piece(b"xyz"));
        // Offsets 8..25: the held "abc" at 10 and "xyz" at 20 agree.
        let cov = h.coverage(8, b"..abc.......xyz..");
        assert_eq!(cov.parts, vec![(8, 10), (13, 20), (23, 25)]);
        assert!(cov.overlap && !cov.conflict);
        assert!(!h.coverage(13, b"1234567").overlap);
        assert!(h.coverage(11, b"bX").conflict);
    }

    #[test]
    fn a_lost_tail_joins_the_piece_that_reaches_it() {
        let mut h = Held::default();
        h.insert(10, piece(b"abc"));
        h.mark_lost(13, 5, 0);
        h.mark_lost(30, 2, 0);
        let (_, first) = h.pop_first().unwrap();
        assert_eq!(first.missing, 5);
        let (at, lost) = h.pop_first().unwrap();
        assert_eq!((at, lost.data.len(), lost.missing), (30, 0, 2));
    }
}
