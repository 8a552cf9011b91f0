//! The offsets still possible for one run of commands read between two losses of client bytes.
//!
//! An offset `s` says that held reply `j` answers held command `j + s` (`Realign`). The commands of one run
//! follow each other with nothing lost between them, so one offset pairs them all; the runs on either side
//! of a loss differ by the replies of the commands it took: at least none, at most what its bytes could hold
//! (`gap`). Offsets are kept as a sorted list of those still possible: a run tested against the replies
//! held narrows to few quickly, while its neighbours' bounds are read from the ends of theirs.

/// One run of commands held, and its offsets.
#[derive(Clone, Debug, Default)]
pub(crate) struct Segment {
    /// Commands of the run held.
    pub len: usize,
    /// Replies at most owed to commands lost just before the run (for the first run: to the commands sent
    /// before it and not held, `Realign::new`'s `unseen`).
    pub gap: u64,
    /// The offsets still possible, less `base`, ascending; empty until the first reply fixes their range.
    pub alive: Vec<i64>,
    /// What `alive` is counted from: renumbering every offset (`shift`) moves it alone.
    base: i64,
    /// Commands of the run whose reply's shape can rule an offset out (`summary::can_refuse`).
    pub shaped: usize,
    /// When the latest of its commands ended: a reply begun later fits any of them in time.
    pub ended: i64,
}

impl Segment {
    pub fn new(gap: u64) -> Segment {
        Segment { len: 0, gap, alive: Vec::new(), base: 0, shaped: 0, ended: i64::MIN }
    }

    /// Whether a reply begun at `ts` fits every command of the run, whatever its shape: then no offset
    /// it pairs with one of them can be ruled out.
    pub fn fits_any(&self, ts: i64) -> bool {
        self.shaped == 0 && ts >= self.ended
    }

    pub fn range(&mut self, lo: i64, hi: i64) {
        self.base = 0;
        self.alive = (lo..=hi).collect();
    }

    pub fn min(&self) -> Option<i64> {
        self.alive.first().map(|s| s + self.base)
    }

    pub fn max(&self) -> Option<i64> {
        self.alive.last().map(|s| s + self.base)
    }

    /// The one offset left, if one is.
    pub fn single(&self) -> Option<i64> {
        match self.alive[..] {
            [s] => Some(s + self.base),
            _ => None,
        }
    }

    /// Keeps the offsets within `lo..=hi`; returns whether any went.
    pub fn clamp(&mut self, lo: i64, hi: i64) -> bool {
        let before = self.alive.len();
        let (lo, hi) = (lo - self.base, hi - self.base);
        let (a, b) = (self.alive.partition_point(|&s| s < lo), self.alive.partition_point(|&s| s <= hi));
        self.alive.truncate(b);
        self.alive.drain(..a.min(b));
        self.alive.len() != before
    }

    /// Keeps the offsets `keep` says are possible.
    pub fn retain(&mut self, mut keep: impl FnMut(i64) -> bool) {
        let base = self.base;
        self.alive.retain(|&s| keep(s + base));
    }

    /// Every offset moves by `d` (a command or reply let go from the front renumbers those after it).
    pub fn shift(&mut self, d: i64) {
        self.base += d;
    }
}

#[cfg(test)]
mod tests {
    use super::Segment;

    #[test]
    fn clamping_keeps_the_offsets_within_the_bounds() {
        let mut s = Segment::new(0);
        s.range(-5, 5);
        assert!(s.clamp(-2, 3));
        assert_eq!((s.min(), s.max(), s.alive.len()), (Some(-2), Some(3), 6));
        s.shift(2);
        assert!(!s.clamp(0, 5));
        assert!(s.clamp(1, 5));
        s.shift(-2);
        assert!(!s.clamp(-10, 10));
        assert!(s.clamp(4, 9));
        assert!(s.alive.is_empty());
    }

    #[test]
    fn one_offset_left_is_the_single_one() {
        let mut s = Segment::new(0);
        s.range(0, 3);
        s.retain(|o| o == 2);
        assert_eq!(s.single(), Some(2));
        s.shift(-2);
        assert_eq!(s.single(), Some(0));
    }
}
