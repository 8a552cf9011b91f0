//! Realignment after a loss of replies: which reply answers which command, told by the replies' shapes.
//!
//! After reply bytes of a connection are lost, the replies of an unknown number of the commands waiting went
//! with them. Once the reply stream is read again from a frame start (found at the next quiet moment, from
//! where the frames read since the loss begin: `reframe`), the replies that follow answer the commands held in order, one each, from some unknown offset on: reply `j`
//! answers command `j + s`, the first s commands having lost theirs. Commands and replies are held here,
//! unpaired, and each offset still possible is tested on every (reply, command) pair it makes: the reply must
//! have begun after the command ended, and be of a shape the command can get (`summary::compatible`: an MGET
//! of 3 keys an array of 3, a DEL an integer, a GET a bulk or nil); and no reply that began before a command
//! not held yet can answer it. When a single offset is left, and it has paired `CONFIRM_RUN` replies of telling
//! shapes, the held replies go to their commands and pairing goes on from there; until then nothing is used.
//! When the shapes cannot tell the offsets apart (a run of GETs only), nothing is decided and the commands
//! come out with their replies unknown.
//!
//! The offsets tried are every one the loss allows: from 0 up to as many commands held as had ended when the
//! first reply began (a reply answers a command already sent), and down to minus the replies still owed to
//! commands not held (evicted from a full queue, or lost with the client's bytes).
//!
//! A loss of client bytes starts one too: the commands it took each have one reply, of a shape nobody knows,
//! before those of the commands read after it. How many there were is not known, only the bytes lost: no
//! command with a reply takes fewer than `MIN_COMMAND_BYTES` (an inline `x\n`), or `MIN_ARRAY_COMMAND_BYTES`
//! on a connection that has sent RESP arrays only, so the offsets go down to minus one per that many bytes
//! lost; of the bytes seen but skipped, only the RESP array starts count then (`LostRequests`). An offset
//! that deep is only tested once as many replies have come, so such a realignment confirms later; until then
//! nothing is used.
//!
//! A second loss of client bytes before the offset is known starts a new run of commands (`segment`): the
//! runs on either side of it pair at offsets that differ by the replies of the commands it took, none to as
//! many as its bytes could hold. Each run keeps its own offsets, tested on its own pairs, and each narrows
//! its neighbours': a run of telling shapes between two of SETs is told by its own replies, and once a later
//! run is known, the one before it lies within that loss's bound of it. A loader that loses a segment every
//! few dozen HSETs never held one run long enough for the replies of its deepest offsets to come (those tell
//! only once as many replies have come as the loss allowed commands); as runs, each is told in the end.
//! The first run leaves once nothing more can be learnt of it (`take_front`), the latest when its offset is
//! confirmed (`resolve`): then every run still held leaves, paired where its offset was confirmed.
//!
//! Counting replies tells the latest run's offset outright, where every reply since the loss was read: on a
//! lockstep connection at its batches' boundaries (the timing rule, `TIMING_RUN`), and on any connection
//! that fell quiet with every command it sent answered (`settled`: the connection closed after a quiet
//! moment, see `session`).

use std::collections::VecDeque;

use super::reframe::ReplyBound;
use super::reply::{Kind, Node};
use super::summary::{can_refuse, compatible, Class, Stored};

mod segment;
use segment::Segment;

/// Replies paired under the one offset left before they are used, of commands whose replies have telling
/// shapes (`telling`).
pub(crate) const CONFIRM_RUN: usize = 8;
/// Boundaries at which the timing bound reached the same offset before it is used: the first gives it, the
/// next ones confirm it (the replies of each batch between as many as its commands). The connection showed
/// no dirty boundary (`lockstep`) before the loss, and only boundaries closing batches no wider than
/// `MIN_CLEAN` clean ones closed then count (`Lockstep::shown_width`); a dirty one after it (the client
/// changed its ways, or the server lags a wider batch) fakes the count only if it is the lowest so far and
/// the next boundaries are dirty alike.
pub(crate) const TIMING_RUN: u32 = 3;
/// Commands or replies held at most while the offset is unknown: beyond it the oldest command and the oldest
/// reply are let go unpaired together (which keeps every offset's meaning).
pub(crate) const MAX_HELD: usize = 4096;
/// Offsets tried at most; a loss that allows more ends the realignment (the commands stay unknown).
pub(crate) const MAX_OFFSETS: usize = 8192;
/// Frames tested at most per frame and command held, when the pieces are placed (`place_pieces`): each offset
/// tried tests a piece's frames in turn until one does not fit, which a hostile capture can put last.
pub(crate) const PLACE_WORK_PER_FRAME: usize = 64;
/// Runs of commands held at most (each loss of client bytes while the offsets are unknown starts one): beyond
/// it, or beyond `MAX_OFFSETS` tried over all of them, the first run is let go unpaired.
pub(crate) const MAX_RUNS: usize = 64;
/// The fewest bytes a command the server answers can take: an inline command of one letter and its newline
/// (an empty line gets no reply).
pub(crate) const MIN_COMMAND_BYTES: u64 = 2;
/// The same for a RESP array, `*1\r\n$1\r\nx\r\n`: on a connection that has sent only RESP arrays (client
/// libraries send nothing else; inline commands are typed by hand), the lost bytes are taken to hold them
/// only. A connection that has sent an inline line is allowed the inline bound.
pub(crate) const MIN_ARRAY_COMMAND_BYTES: u64 = 11;

/// Client bytes lost or skipped since a realignment began: what commands they may have held.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct LostRequests {
    /// Bytes lost in gaps: nobody saw them.
    pub gap_bytes: u64,
    /// Bytes seen but skipped while searching for a command start, and the RESP array starts among them
    /// that the server may have answered (`resync::scan`).
    pub skipped_bytes: u64,
    pub skipped_commands: u64,
}

impl LostRequests {
    /// Replies at most owed to the commands these bytes held, besides one cut at each end (the server read
    /// those whole).
    pub fn bound(&self, inline_seen: bool) -> u64 {
        let held = if inline_seen {
            (self.gap_bytes + self.skipped_bytes) / MIN_COMMAND_BYTES
        } else {
            self.gap_bytes / MIN_ARRAY_COMMAND_BYTES + self.skipped_commands
        };
        held.saturating_add(2)
    }
}

/// A command waiting for the offset: its session id and what its reply must be like.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    pub id: u64,
    pub class: Class,
    pub argc: u32,
    pub end_ts: i64,
    /// What its reply can hold (`reframe`); None when anything.
    pub bound: Option<ReplyBound>,
}

/// A reply waiting for the offset.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Frame {
    pub top: Node,
    pub ts: i64,
    pub reply: Stored,
    /// `+QUEUED`: answers any command inside MULTI.
    pub queued: bool,
}

/// What a command held comes out with.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Fate {
    /// The reply found for it.
    Paired(Frame),
    /// Its reply is unknown (its run's offset was not told, or its reply was lost).
    Unknown,
    /// Its reply is still to come: pairing resumes with it.
    Awaits,
}

/// Commands let go by a realignment, in order, with what they come out with, and the replies it let go
/// unpaired.
#[derive(Default)]
pub(crate) struct Resolved {
    pub cmds: Vec<(Held, Fate)>,
    pub unpaired: Vec<Frame>,
}

/// What the session does with a command or reply let go.
pub(crate) enum Outcome {
    /// Nothing decided yet.
    Wait,
    /// The offset of the latest run is confirmed: the session takes everything held (`resolve`) and pairing
    /// resumes.
    Aligned,
    /// No offset is left for some run: the loss was not what the offsets model (the session gives up this
    /// realignment).
    None,
}

pub(crate) struct Realign {
    pub cmds: VecDeque<Held>,
    pub frames: VecDeque<Frame>,
    /// Bulk or nil frames found again just before the first frame held, which may be elements of an array
    /// reply cut by the loss as well as whole replies (`push_leading`).
    pub leading: Vec<Frame>,
    /// The frames found again between two losses of replies before the frames held (`push_piece`), oldest
    /// first: each piece's frames answer commands in order, at an offset of its own.
    pub pieces: Vec<Vec<Frame>>,
    /// The first command held when the pieces came: the commands they answer are among those held only while
    /// it still is (none left from the front since).
    pieces_front: Option<u64>,
    /// The runs of commands held, in order, between the losses of client bytes since it began (one at least:
    /// the latest gets the commands read from now on).
    segs: VecDeque<Segment>,
    /// Replies have come since it began: the offsets' ranges are fixed.
    started: bool,
    /// Commands held may have had their replies before the first held (lost, or come early): offsets may
    /// pair the first commands held with no reply held.
    answered_before: bool,
    /// The connection is lockstep and no reply was lost since the latest run began: the timing rule holds, at
    /// boundaries closing batches of at most this many commands (`Lockstep::shown_width`).
    timing: Option<u32>,
    /// The offset of the latest run the timing bound last reached at a boundary, and at how many boundaries
    /// it has.
    reached: Option<(i64, u32)>,
    /// The connection settled (`settled`): the latest run's offset is the count's.
    settled: bool,
}

impl Realign {
    /// After a loss of client bytes, the replies of the commands sent before it drained: every reply from now
    /// on answers a command held or one lost or owed before them (`unseen`: how many such replies at most),
    /// unless `early`: replies already came that answered no command seen (the reassembler held the commands
    /// behind a hole while their replies came), which may be those of the first commands held. `timing`: the
    /// connection is lockstep, and the reply stream framed from the start (every reply is counted): the widest
    /// batch the client was seen to wait for, `MIN_CLEAN` times.
    pub fn after_commands_lost(unseen: u64, early: bool, timing: Option<u32>) -> Realign {
        Realign::new(unseen, early, timing)
    }

    /// After a loss of replies: the commands held from now on may have lost theirs; `unseen` replies may
    /// answer commands not held, sent before them.
    pub fn after_replies_lost(unseen: u64) -> Realign {
        Realign::new(unseen, true, None)
    }

    fn new(unseen: u64, answered_before: bool, timing: Option<u32>) -> Realign {
        Realign {
            cmds: VecDeque::new(),
            frames: VecDeque::new(),
            leading: Vec::new(),
            pieces: Vec::new(),
            pieces_front: None,
            segs: VecDeque::from([Segment::new(unseen)]),
            started: false,
            answered_before,
            timing,
            reached: None,
            settled: false,
        }
    }

    /// What the replies still owed can hold, for finding frames again (`reframe`): None when a command held
    /// may get any reply. Replies owed to commands not held (lost with the client's bytes: of kinds nobody
    /// knows) are not bounded: frames the reply the loss cut leaves, when it answers such a command, come
    /// before every reply to a command held, where the offsets take them for replies to commands lost (as
    /// many as the loss allows), and the frames after them tell the offset as they would without them.
    pub fn reply_bound(&self) -> Option<ReplyBound> {
        self.cmds.iter().try_fold(ReplyBound { elements: 0, values: false }, |b, c| {
            let c = c.bound?;
            Some(ReplyBound { elements: b.elements.max(c.elements), values: b.values || c.values })
        })
    }

    /// More commands whose replies may come without them being held, before those held.
    pub fn add_unseen(&mut self, n: u64) {
        self.segs[0].gap = self.segs[0].gap.saturating_add(n);
    }

    /// Client bytes were lost after the commands held: the commands read from now on are a new run, whose
    /// replies come after those of as many as `bound` commands lost. `timing`: as for `new`, as it stands now.
    pub fn commands_lost(&mut self, bound: u64, timing: Option<u32>) -> Outcome {
        self.timing = timing;
        self.reached = None;
        let last = self.segs.len() - 1;
        // The new run's offsets: from the latest's, less as many as the loss allows (checked before they are
        // made: a loss of a gigabyte allows a hundred million).
        let range = self.segs[last].min().zip(self.segs[last].max()).map(|(lo, hi)| (lo.saturating_sub_unsigned(bound), hi));
        if range.is_some_and(|(lo, hi)| hi.saturating_sub(lo) >= MAX_OFFSETS as i64) {
            return Outcome::None;
        }
        if self.segs[last].len == 0 {
            // No command since the previous loss: one run of lost commands, as many as both allow.
            let g = &mut self.segs[last];
            g.gap = g.gap.saturating_add(bound);
            if let Some((lo, hi)) = range {
                g.range(lo, hi);
            }
        } else {
            let mut g = Segment::new(bound);
            if let Some((lo, hi)) = range {
                g.range(lo, hi);
            }
            self.segs.push_back(g);
        }
        self.decide()
    }

    /// Replies are lost again: the offsets change by an unknown amount. The runs before the latest are let go
    /// (returned: their commands come out unknown, or paired where their replies told their offset, `told`),
    /// and so are the replies held (unpaired when not theirs); the latest run's
    /// offsets are tried afresh from the next reply, allowing for every reply still owed to the commands before
    /// it.
    pub fn replies_lost(&mut self) -> Resolved {
        let last = self.segs.len() - 1;
        let start = self.start(last) as i64;
        let nf = self.frames.len() as i64;
        let owed = if self.started {
            // Under the deepest offset still possible, the replies not yet come before the run's first.
            self.segs[last].min().map_or(0, |s| (start - s - nf).max(0) as u64)
        } else {
            let held = self.segs.iter().take(last).map(|g| g.len as u64).sum::<u64>();
            self.segs.iter().map(|g| g.gap).fold(held, u64::saturating_add)
        };
        // The runs before the latest whose replies held told their offset are paired, as `resolve` would.
        let mut used = vec![false; self.frames.len()];
        let mut fates = vec![Fate::Unknown; start as usize];
        for g in 0..last {
            let told = if self.started { self.told(g) } else { None };
            let first = self.start(g);
            for i in first..first + self.segs[g].len {
                if let Some(f) = self.paired_frame(i, told, &mut used) {
                    fates[i] = Fate::Paired(f);
                }
            }
        }
        let cmds = self.cmds.drain(..start as usize).zip(fates).collect();
        let mut latest = self.segs.pop_back().unwrap_or_default();
        latest.gap = owed;
        latest.alive.clear();
        self.segs = VecDeque::from([latest]);
        self.started = false;
        self.answered_before = true;
        // How many replies were lost is unknown: the bound no longer counts them all (until the next run).
        self.timing = None;
        self.reached = None;
        let mut unpaired: Vec<Frame> = std::mem::take(&mut self.leading);
        unpaired.extend(unused(self.frames.drain(..), used));
        unpaired.extend(self.pieces.drain(..).flatten());
        Resolved { cmds, unpaired }
    }

    /// Bytes of memory held (capacities), for the session's bounds.
    pub fn held_bytes(&self) -> usize {
        let offsets: usize = self.segs.iter().map(|g| g.alive.capacity() * std::mem::size_of::<i64>()).sum();
        let pieces: usize = self.pieces.iter().map(Vec::capacity).sum();
        let frames = self.frames.capacity() + self.leading.capacity() + pieces;
        self.cmds.capacity() * std::mem::size_of::<Held>() + frames * std::mem::size_of::<Frame>() + offsets
    }

    /// Index in `cmds` of run `g`'s first command.
    fn start(&self, g: usize) -> usize {
        self.segs.iter().take(g).map(|s| s.len).sum()
    }

    /// The frame held that command `i` pairs with under offset `s`, if one is (noted in `used`).
    fn paired_frame(&self, i: usize, s: Option<i64>, used: &mut [bool]) -> Option<Frame> {
        let j = usize::try_from(i as i64 - s?).ok()?;
        let f = *self.frames.get(j)?;
        used[j] = true;
        Some(f)
    }

    fn fits(f: &Frame, c: &Held) -> bool {
        f.ts >= c.end_ts && (f.queued || compatible(c.class, c.argc, &f.top))
    }

    pub fn push_cmd(&mut self, c: Held) -> Outcome {
        self.cmds.push_back(c);
        let last = self.segs.len() - 1;
        let g = &mut self.segs[last];
        g.len += 1;
        g.shaped += usize::from(can_refuse(c.class));
        g.ended = g.ended.max(c.end_ts);
        if self.started {
            let i = self.cmds.len() as i64 - 1;
            let (cmds, frames) = (&self.cmds, &self.frames);
            let nf = frames.len() as i64;
            self.segs[last].retain(|s| {
                let j = i - s;
                !(0..nf).contains(&j) || Self::fits(&frames[j as usize], &cmds[i as usize])
            });
            self.propagate();
        }
        self.decide()
    }

    pub fn push_frame(&mut self, f: Frame) -> Outcome {
        self.frames.push_back(f);
        if !self.started && !self.start_offsets(f.ts) {
            return Outcome::None;
        }
        let j = self.frames.len() as i64 - 1;
        let mut start = 0i64;
        let (cmds, frames) = (&self.cmds, &self.frames);
        for g in self.segs.iter_mut() {
            let end = start + g.len as i64;
            if g.fits_any(f.ts) {
                // (A loader's runs of SETs: testing them would cost every offset of every run per reply.)
                start = end;
                continue;
            }
            g.retain(|s| {
                let i = j + s;
                !(start..end).contains(&i) || Self::fits(&frames[j as usize], &cmds[i as usize])
            });
            start = end;
        }
        self.propagate();
        self.decide()
    }

    /// A bulk or nil frame read just before the first frame held, when the frames were found again after a
    /// loss of replies (`reframe`): it may be a whole reply, or an element of an array reply whose header
    /// the loss took (the replies after such a loss begin with the rest of the reply it cut). It is not
    /// tested against the offsets; once the frames after it are paired (`resolve`, `take_front`), it goes
    /// to the command before the first one paired if that command is answered by one value (a GET), and
    /// so on back while they are: the array it might belong to answers an MGET or HMGET, which the walk back
    /// stops at, and the frames after that array's pair alike under either reading. Returned (unpaired) when
    /// a frame is held already.
    pub fn push_leading(&mut self, f: Frame) -> Option<Frame> {
        if !self.frames.is_empty() {
            return Some(f);
        }
        self.leading.push(f);
        None
    }

    /// The frames found again in the reply bytes read between two losses of replies, before the frames held
    /// (`reframe::first_frame_cut`: they follow one another from a position after a CRLF up to where the
    /// second loss began, the last one cut or not). Which commands they answer, the second loss hid: they
    /// are not tested against the offsets; once the latest run's offset is confirmed, they go to the
    /// commands before those its frames answer, at the one offset their shapes and times fit
    /// (`place_pieces`). Dropped (returned) beyond `MAX_HELD` frames.
    pub fn push_piece(&mut self, frames: Vec<Frame>) -> Option<Vec<Frame>> {
        let held: usize = self.pieces.iter().map(Vec::len).sum();
        if frames.is_empty() || held + frames.len() > MAX_HELD {
            return Some(frames);
        }
        if self.pieces.is_empty() {
            self.pieces_front = self.cmds.front().map(|c| c.id);
        }
        self.pieces.push(frames);
        None
    }

    /// Where the pieces' frames go (`push_piece`), with the latest run the only one and its first `hi`
    /// commands those answered before its frames held: the latest piece first, each at the one offset
    /// that pairs its every frame with a command it fits, within the commands before the next piece's,
    /// and confirmed as a run's is (`CONFIRM_RUN` telling replies). A piece not placed leaves at least its
    /// frames' count of commands between the pieces before it and the next. Within `PLACE_WORK_PER_FRAME`:
    /// beyond it, the pieces not placed yet are not. Returns (command index, piece, frame) triples.
    fn place_pieces(&self, mut hi: usize) -> Vec<(usize, usize, usize)> {
        let mut out = Vec::new();
        if self.segs.len() != 1 || self.pieces_front.is_none() || self.cmds.front().map(|c| c.id) != self.pieces_front {
            return out;
        }
        let frames: usize = self.pieces.iter().map(Vec::len).sum();
        let mut work = PLACE_WORK_PER_FRAME.saturating_mul(frames + self.cmds.len());
        for (p, piece) in self.pieces.iter().enumerate().rev() {
            let m = piece.len();
            // The offsets where every frame fits, two at most.
            let mut fitting = Vec::with_capacity(2);
            for a in 0..(hi + 1).saturating_sub(m) {
                let mut fits = true;
                for (k, f) in piece.iter().enumerate() {
                    let Some(left) = work.checked_sub(1) else { return out };
                    work = left;
                    if !Self::fits(f, &self.cmds[a + k]) {
                        fits = false;
                        break;
                    }
                }
                if fits {
                    fitting.push(a);
                    if fitting.len() == 2 {
                        break;
                    }
                }
            }
            let [a] = fitting[..] else {
                hi = hi.saturating_sub(m);
                continue;
            };
            let telling = piece.iter().enumerate().filter(|&(k, f)| Self::tells(f, &self.cmds[a + k])).count();
            if telling < CONFIRM_RUN {
                hi = hi.saturating_sub(m);
                continue;
            }
            out.extend((0..m).map(|k| (a + k, p, k)));
            hi = a;
        }
        out
    }

    /// The leading frames that go to commands of run `g` under its offset `s`: (command, leading frame)
    /// indices, walking back from the command the first frame held answers (see `push_leading`).
    fn leading_pairs(&self, g: usize, s: i64) -> Vec<(usize, usize)> {
        let (start, len) = (self.start(g) as i64, self.segs[g].len as i64);
        // The command the first frame held answers.
        let first = s;
        let mut out = Vec::new();
        if self.frames.is_empty() || !(start..start + len).contains(&first) {
            return out;
        }
        for (k, at) in (0..self.leading.len()).rev().enumerate() {
            let i = first - 1 - k as i64;
            if i < start {
                break;
            }
            let (c, f) = (&self.cmds[i as usize], &self.leading[at]);
            if c.class != Class::GetLike || !Self::fits(f, c) {
                break;
            }
            out.push((i as usize, at));
        }
        out
    }

    /// Notes in `lead` (by command index) which leading frame each command of run `g` takes under its offset
    /// `s`, if known, and in `used` which leading frames are taken.
    fn assign_leading(&self, g: usize, s: Option<i64>, lead: &mut [Option<usize>], used: &mut [bool]) {
        for (i, at) in s.map(|s| self.leading_pairs(g, s)).unwrap_or_default() {
            lead[i] = Some(at);
            used[at] = true;
        }
    }

    /// The first reply fixes the offsets' ranges: the first run's from minus the replies owed before it to
    /// as many commands held as had ended, when their replies may be gone (a reply answers a command already
    /// sent: at most those lost theirs), else to 0 (the first reply answers the first command held or one
    /// before it); each later run's from its predecessor's, less the replies its loss may have owed. False
    /// when a range is wider than `MAX_OFFSETS`.
    fn start_offsets(&mut self, ts: i64) -> bool {
        self.started = true;
        let hi = if self.answered_before { self.cmds.iter().filter(|c| c.end_ts <= ts).count() as i64 } else { 0 };
        let unseen = self.segs[0].gap;
        if unseen >= MAX_OFFSETS as u64 || hi + unseen as i64 >= MAX_OFFSETS as i64 {
            return false;
        }
        self.segs[0].range(-(unseen as i64), hi);
        for g in 1..self.segs.len() {
            let (lo, hi) = (self.segs[g - 1].min().unwrap_or(0), self.segs[g - 1].max().unwrap_or(0));
            let gap = self.segs[g].gap;
            if gap >= MAX_OFFSETS as u64 || hi - lo + gap as i64 >= MAX_OFFSETS as i64 {
                return false;
            }
            self.segs[g].range(lo - gap as i64, hi);
        }
        true
    }

    /// Narrows each run's offsets to what its neighbours' allow: the run after a loss of at most `gap` commands
    /// lies between none and `gap` replies further on.
    fn propagate(&mut self) {
        let n = self.segs.len();
        loop {
            let mut changed = false;
            for g in 1..n {
                let (Some(lo), Some(hi)) = (self.segs[g - 1].min(), self.segs[g - 1].max()) else { return };
                let gap = self.segs[g].gap.min(MAX_OFFSETS as u64) as i64;
                changed |= self.segs[g].clamp(lo - gap, hi);
            }
            for g in (0..n.saturating_sub(1)).rev() {
                let (Some(lo), Some(hi)) = (self.segs[g + 1].min(), self.segs[g + 1].max()) else { return };
                let gap = self.segs[g + 1].gap.min(MAX_OFFSETS as u64) as i64;
                changed |= self.segs[g].clamp(lo, hi + gap);
            }
            if !changed {
                return;
            }
        }
    }

    /// Every command not held yet ends at `now` or later: an offset under which a reply that began before
    /// `now` answers one of them is not possible (for the latest run: the commands lost before a later one
    /// were sent before it).
    pub fn time_passes(&mut self, now: i64) -> Outcome {
        if !self.started {
            return Outcome::Wait;
        }
        let (nc, frames) = (self.cmds.len() as i64, &self.frames);
        let nf = frames.len() as i64;
        if let Some(g) = self.segs.back_mut() {
            g.retain(|s| {
                let first = (nc - s).max(0);
                !(first < nf && frames[first as usize].ts < now)
            });
        }
        self.propagate();
        self.decide()
    }

    /// A command sent at `now` began a batch (reply bytes came since the previous one began), after
    /// `time_passes(now)`, closing a batch of `closed` commands seen: the replies begun before `now` answered
    /// at most the commands held and those lost, all of them if the client waited for them and the server
    /// for the batch's end. Notes whether that bound is the latest run's highest offset left.
    pub fn boundary(&mut self, now: i64, closed: u32) -> Outcome {
        if self.timing.is_none_or(|widest| closed > widest) || !self.started {
            return self.decide();
        }
        let after = self.frames.iter().rev().take_while(|f| f.ts >= now).count();
        let bound = self.cmds.len() as i64 - (self.frames.len() - after) as i64;
        if self.segs.back().and_then(Segment::max) == Some(bound) {
            let n = match self.reached {
                Some((r, n)) if r == bound => n + 1,
                _ => 1,
            };
            self.reached = Some((bound, n));
        }
        self.decide()
    }

    /// The connection fell quiet with every command sent answered, and every reply read as a frame (the caller
    /// checks both, `settle`): the replies held since the first are those of the commands held and of those
    /// lost or owed before them, so the latest run's offset is the count's, and the runs before it are
    /// narrowed from it.
    pub fn settled(&mut self) -> Outcome {
        if !self.started {
            return self.decide();
        }
        let exact = self.cmds.len() as i64 - self.frames.len() as i64;
        if let Some(g) = self.segs.back_mut() {
            g.clamp(exact, exact);
        }
        self.settled = true;
        self.propagate();
        self.decide()
    }

    /// The offset the timing bound gives, once reached at `TIMING_RUN` boundaries and still possible: the
    /// latest run's highest one left (a lower one left means the bound was not reached since, as it is only
    /// ever lowered).
    fn timed(&self) -> Option<i64> {
        let (s, n) = self.reached?;
        (self.timing.is_some() && n >= TIMING_RUN && self.segs.back().and_then(Segment::max) == Some(s)).then_some(s)
    }

    /// Replies paired under offset `s` so far with run `g`'s commands, and how many of them are telling
    /// (`tells`).
    fn overlap(&self, g: usize, s: i64) -> (usize, usize) {
        let start = self.start(g) as i64;
        let (lo, hi) = ((start - s).max(0), (start + self.segs[g].len as i64 - s).min(self.frames.len() as i64));
        let (mut paired, mut telling) = (0, 0);
        for j in lo..hi {
            let (f, c) = (&self.frames[j as usize], &self.cmds[(j + s) as usize]);
            paired += 1;
            telling += usize::from(Self::tells(f, c));
        }
        (paired, telling)
    }

    /// Whether reply `f` paired with command `c` tells an offset: the command allows few shapes (not a SET
    /// or any command whose replies vary) and the reply is no error (an error answers anything).
    fn tells(f: &Frame, c: &Held) -> bool {
        let error = matches!(f.top.kind, Kind::Error | Kind::BulkError);
        let tells = matches!(c.class, Class::Hmget | Class::Mget | Class::Hgetall | Class::GetLike | Class::IntLike(_));
        !f.queued && !error && tells
    }

    /// Run `g`'s offset, when its replies' shapes tell it: the one left, pairing `CONFIRM_RUN` replies of
    /// telling shapes so far.
    fn told(&self, g: usize) -> Option<i64> {
        let s = self.segs[g].single()?;
        let (paired, telling) = self.overlap(g, s);
        (paired >= CONFIRM_RUN && telling >= CONFIRM_RUN).then_some(s)
    }

    /// Run `g`'s offset, when its replies' shapes confirm it (`told`); for a run before the latest, with every
    /// command's reply held (it may leave the front: `take_front`).
    fn confirmed(&self, g: usize) -> Option<i64> {
        let s = self.told(g)?;
        let whole = g + 1 == self.segs.len() || self.overlap(g, s).0 == self.segs[g].len;
        whole.then_some(s)
    }

    fn decide(&self) -> Outcome {
        if !self.started {
            return Outcome::Wait;
        }
        if self.segs.iter().any(|g| g.alive.is_empty()) {
            return Outcome::None;
        }
        let last = self.segs.len() - 1;
        let s = self.segs[last].max().unwrap_or(0);
        // Every reply held must answer a command held or one lost: one that answers a command not read yet
        // (still on probation) waits for it.
        let answered = self.frames.len() as i64 + s <= self.cmds.len() as i64;
        if self.settled {
            return Outcome::Aligned;
        }
        if self.timed() == Some(s) && answered && self.overlap(last, s).0 > 0 {
            return Outcome::Aligned;
        }
        if self.confirmed(last).is_some() && answered {
            return Outcome::Aligned;
        }
        Outcome::Wait
    }

    /// The latest run's offset is confirmed (`Outcome::Aligned`): every command held comes out, paired under
    /// its run's offset where that was confirmed (the latest's is), unknown elsewhere; the latest run's
    /// commands whose replies have not come await them.
    pub fn resolve(mut self) -> Resolved {
        let mut out = Resolved::default();
        let last = self.segs.len() - 1;
        let latest = self.segs[last].max().unwrap_or(0);
        let mut used = vec![false; self.frames.len()];
        let mut lead: Vec<Option<usize>> = vec![None; self.cmds.len()];
        let mut lead_used = vec![false; self.leading.len()];
        let offsets: Vec<Option<i64>> = (0..self.segs.len()).map(|g| if g == last { Some(latest) } else { self.told(g) }).collect();
        for (g, &s) in offsets.iter().enumerate() {
            self.assign_leading(g, s, &mut lead, &mut lead_used);
        }
        // The pieces go before the first command the frames held or the leading ones answer.
        let first = (0..self.cmds.len()).find(|&i| lead[i].is_some());
        let first = first.unwrap_or(latest.clamp(0, self.cmds.len() as i64) as usize);
        let mut piece: Vec<Option<(usize, usize)>> = vec![None; self.cmds.len()];
        let mut piece_used: Vec<Vec<bool>> = self.pieces.iter().map(|p| vec![false; p.len()]).collect();
        for (i, p, k) in self.place_pieces(first) {
            piece[i] = Some((p, k));
            piece_used[p][k] = true;
        }
        for (g, &s) in offsets.iter().enumerate() {
            let start = self.start(g);
            for i in start..start + self.segs[g].len {
                let fate = match (self.paired_frame(i, s, &mut used), lead[i], piece[i]) {
                    (Some(f), _, _) => Fate::Paired(f),
                    (_, Some(at), _) => Fate::Paired(self.leading[at]),
                    (_, _, Some((p, k))) => Fate::Paired(self.pieces[p][k]),
                    _ if g == last && s.is_some_and(|s| i as i64 >= s) => Fate::Awaits,
                    _ => Fate::Unknown,
                };
                out.cmds.push((self.cmds[i], fate));
            }
        }
        out.unpaired = unused(self.leading.drain(..), lead_used).collect();
        out.unpaired.extend(unused(self.frames.drain(..), used));
        for (frames, used) in self.pieces.drain(..).zip(piece_used) {
            out.unpaired.extend(unused(frames, used));
        }
        out
    }

    /// The first run, when nothing more can be learnt of it while a later run is held: confirmed with every
    /// reply held, or its offsets all tested and the next run's offset the only one left. Its commands come
    /// out (paired when confirmed), with the replies before the next run's (unpaired when not theirs).
    pub fn take_front(&mut self) -> Option<Resolved> {
        if !self.started || self.segs.len() < 2 || self.segs.iter().any(|g| g.alive.is_empty()) {
            return None;
        }
        let (len, nf) = (self.segs[0].len as i64, self.frames.len() as i64);
        let own = self.confirmed(0);
        let tested = self.segs[0].min().is_some_and(|s| len - 1 - s < nf);
        let consumed = match (own, self.segs[1].single()) {
            (Some(s), _) => len - s,
            (None, Some(next)) if tested => len - next,
            _ => return None,
        }
        .clamp(0, nf) as usize;
        let mut out = Resolved::default();
        let mut lead: Vec<Option<usize>> = vec![None; len as usize];
        let mut lead_used = vec![false; self.leading.len()];
        self.assign_leading(0, own, &mut lead, &mut lead_used);
        for (i, c) in self.cmds.drain(..len as usize).enumerate() {
            let fate = match own.map(|s| i as i64 - s) {
                Some(j) if (0..consumed as i64).contains(&j) => Fate::Paired(self.frames[j as usize]),
                _ => match lead[i] {
                    Some(at) => Fate::Paired(self.leading[at]),
                    None => Fate::Unknown,
                },
            };
            out.cmds.push((c, fate));
        }
        // The leading frames were next to the first frame held only: none is once it leaves.
        out.unpaired.extend(unused(self.leading.drain(..), lead_used));
        for (j, f) in self.frames.drain(..consumed).enumerate() {
            if !own.is_some_and(|s| (0..len).contains(&(j as i64 + s))) {
                out.unpaired.push(f);
            }
        }
        self.segs.pop_front();
        let d = consumed as i64 - len;
        self.renumber(d);
        Some(out)
    }

    /// Runs held or offsets tried beyond the bounds: the caller lets the first run go (`let_go_front`).
    pub fn over_bounds(&self) -> bool {
        self.segs.len() > 1
            && (self.segs.len() > MAX_RUNS || self.segs.iter().map(|g| g.alive.len()).sum::<usize>() > MAX_OFFSETS)
    }

    /// Lets the first run's commands go unpaired (the caller emits them); the offsets count from the next one.
    pub fn let_go_front(&mut self) -> Vec<Held> {
        let len = self.segs[0].len;
        let mut out = Vec::with_capacity(len);
        for _ in 0..len {
            out.extend(self.pop_cmd());
        }
        if self.segs.len() > 1 && self.segs[0].len == 0 {
            let g = self.segs.pop_front().map_or(0, |g| g.gap);
            if !self.started {
                // The replies owed before it are owed before the next run now.
                self.add_unseen(g);
            }
        }
        out
    }

    /// Every offset moves by `d`.
    fn renumber(&mut self, d: i64) {
        for g in self.segs.iter_mut() {
            g.shift(d);
        }
        if let Some((s, _)) = self.reached.as_mut() {
            *s += d;
        }
    }

    /// Lets the oldest command go unpaired (the caller emits it): the offsets count from the next one.
    pub fn pop_cmd(&mut self) -> Option<Held> {
        let c = self.cmds.pop_front()?;
        let Some(g) = self.segs.iter().position(|g| g.len > 0) else { return Some(c) };
        self.segs[g].len -= 1;
        self.segs[g].shaped -= usize::from(can_refuse(c.class));
        if self.started {
            self.renumber(-1);
        } else {
            // Its reply may still come, as one of a command not held.
            self.segs[g].gap = self.segs[g].gap.saturating_add(1);
        }
        Some(c)
    }

    /// Lets the oldest reply go unpaired (the caller counts it).
    pub fn pop_frame(&mut self) -> Option<Frame> {
        if !self.leading.is_empty() {
            // (Not counted in the offsets.)
            return Some(self.leading.remove(0));
        }
        let f = self.frames.pop_front()?;
        self.renumber(1);
        Some(f)
    }
}

/// The frames of `frames` that `used` does not mark, in order.
fn unused(frames: impl IntoIterator<Item = Frame>, used: Vec<bool>) -> impl Iterator<Item = Frame> {
    frames.into_iter().zip(used).filter(|&(_, u)| !u).map(|(f, _)| f)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::reply::NO_KEY;

    fn frame(kind: Kind) -> Frame {
        let top = Node { kind, depth: 0, len: 1, int: 1, key: NO_KEY, code: NO_KEY };
        Frame { top, ts: 1, reply: Stored::Unknown, queued: false }
    }

    fn held(id: u64, class: Class) -> Held {
        Held { id, class, argc: 2, end_ts: 0, bound: None }
    }

    /// `gets` GETs then an INCR held, and a piece of `bulks` bulks then an integer: it fits at one offset only
    /// (the integer with the INCR), and every offset before it is tested up to the piece's last frame.
    fn placed(gets: u64, bulks: usize) -> Vec<(usize, usize, usize)> {
        let mut r = Realign::after_replies_lost(0);
        for id in 0..gets {
            let _ = r.push_cmd(held(id, Class::GetLike));
        }
        let _ = r.push_cmd(held(gets, Class::IntLike(None)));
        let piece: Vec<Frame> = (0..bulks).map(|_| frame(Kind::Bulk)).chain([frame(Kind::Integer)]).collect();
        assert!(r.push_piece(piece).is_none());
        r.place_pieces(gets as usize + 1)
    }

    #[test]
    fn a_piece_goes_where_its_every_frame_fits() {
        let out = placed(100, 10);
        assert_eq!(out.len(), 11);
        assert_eq!(out[0], (90, 0, 0));
    }

    /// A thousand frames tried at three thousand offsets, each failing at the last frame: three million tests,
    /// beyond the bound (64 per frame and command held, 320,000): the piece is not placed.
    #[test]
    fn placing_a_piece_stops_at_its_work_bound() {
        assert!(placed(4000, 1000).is_empty());
    }
}
