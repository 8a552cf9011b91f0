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
//! lost; of the bytes seen but skipped, only the RESP array starts count then (`LostRequests`). An offset that deep is only tested once as many replies have
//! come, so such a realignment confirms later; until then nothing is used. A second loss of client bytes cuts
//! the commands held from those read after it: they come out unknown, and a new realignment starts whose
//! offsets cover every reply still owed to them (`remaining`) besides those of the commands lost again.

use std::collections::VecDeque;

use super::reframe::ReplyBound;
use super::reply::{Kind, Node};
use super::summary::{compatible, Class, Stored};

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

/// What the session does with a command or reply let go.
pub(crate) enum Outcome {
    /// Nothing decided yet.
    Wait,
    /// Offset `s` is confirmed: reply j answers command j + s.
    Aligned(i64),
    /// No offset is left: the loss was not what the offsets model (the session gives up this realignment).
    None,
}

pub(crate) struct Realign {
    pub cmds: VecDeque<Held>,
    pub frames: VecDeque<Frame>,
    /// Replies that may answer commands not held (lost, or sent before): offsets go down to -unseen.
    unseen: u64,
    /// The offsets, lo..lo + alive.len(), and which are still possible; empty until the first reply.
    lo: i64,
    alive: Vec<bool>,
    left: usize,
    /// The connection is lockstep and no reply was lost since this realignment began: the timing rule holds,
    /// at boundaries closing batches of at most this many commands (`Lockstep::shown_width`).
    timing: Option<u32>,
    /// The offset (as an index into `alive`, which pops leave unchanged) the timing bound last reached at a
    /// boundary, and at how many boundaries it has.
    reached: Option<(usize, u32)>,
}

impl Realign {
    /// `timing`: the connection is lockstep, and the reply stream framed from the start (every reply is
    /// counted): the widest batch the client was seen to wait for, `MIN_CLEAN` times.
    pub fn new(unseen: u64, timing: Option<u32>) -> Realign {
        Realign {
            cmds: VecDeque::new(),
            frames: VecDeque::new(),
            unseen,
            lo: 0,
            alive: Vec::new(),
            left: 0,
            timing,
            reached: None,
        }
    }

    /// Replies seen so far: the offsets are fixed.
    pub fn started(&self) -> bool {
        !self.alive.is_empty()
    }

    /// What the replies still owed can hold, for finding frames again (`reframe`): None when a command held
    /// may get any reply, or replies are owed to commands not held (of kinds nobody knows).
    pub fn reply_bound(&self) -> Option<ReplyBound> {
        if self.unseen > 0 {
            return None;
        }
        self.cmds.iter().try_fold(ReplyBound { elements: 0, values: false }, |b, c| {
            let c = c.bound?;
            Some(ReplyBound { elements: b.elements.max(c.elements), values: b.values || c.values })
        })
    }

    /// More commands whose replies may come without them being held.
    pub fn add_unseen(&mut self, n: u64) {
        self.unseen = self.unseen.saturating_add(n);
    }

    /// Replies are lost again: the offset changes by an unknown amount. The replies held are dropped (the
    /// caller counts them) and the offsets are tried afresh from the next reply.
    pub fn replies_lost(&mut self) -> VecDeque<Frame> {
        if self.started() {
            // Replies seen so far answered some of those owed to commands not held: at most what the deepest
            // offset still possible leaves of them is owed now.
            self.unseen = self.unseen.min(self.owed_before(self.deepest()));
        }
        self.alive.clear();
        self.left = 0;
        // How many replies were lost is unknown: the bound no longer counts them all.
        self.timing = None;
        self.reached = None;
        std::mem::take(&mut self.frames)
    }

    /// The lowest offset still possible (`lo` when none is: the caller gives up then anyway).
    fn deepest(&self) -> i64 {
        self.lo + self.alive.iter().position(|&a| a).unwrap_or(0) as i64
    }

    /// Replies still owed, under offset `s`, to commands before those held.
    fn owed_before(&self, s: i64) -> u64 {
        (-s - self.frames.len() as i64).max(0) as u64
    }

    /// Replies at most still to come for commands before the first held, and for the held ones: what a new
    /// realignment starting after them must allow for. None when no offset is left (the loss was not what the
    /// offsets model).
    pub fn remaining(&self) -> Option<u64> {
        let nc = self.cmds.len() as i64;
        if !self.started() {
            return Some(self.unseen + nc as u64);
        }
        (0..self.alive.len())
            .filter(|&k| self.alive[k])
            .map(|k| {
                let s = self.lo + k as i64;
                let answered = (self.frames.len() as i64 + s).clamp(0, nc);
                self.owed_before(s) + (nc - answered) as u64
            })
            .max()
    }

    fn fits(f: &Frame, c: &Held) -> bool {
        f.ts >= c.end_ts && (f.queued || compatible(c.class, c.argc, &f.top))
    }

    pub fn push_cmd(&mut self, c: Held) -> Outcome {
        self.cmds.push_back(c);
        self.test();
        self.decide()
    }

    pub fn push_frame(&mut self, f: Frame) -> Outcome {
        self.frames.push_back(f);
        if !self.started() {
            // A reply answers a command already sent: at most the commands ended by now lost theirs.
            let hi = self.cmds.iter().filter(|c| c.end_ts <= f.ts).count() as i64;
            self.lo = -(self.unseen.min(MAX_OFFSETS as u64) as i64);
            let n = (hi - self.lo + 1) as usize;
            if self.unseen >= MAX_OFFSETS as u64 || n > MAX_OFFSETS {
                return Outcome::None;
            }
            self.alive = vec![true; n];
            self.left = n;
        }
        self.test();
        self.decide()
    }

    /// Tests, for each offset still possible, the pairs the newest command and the newest reply make under
    /// it: each pair is tested when the later of its two arrives.
    fn test(&mut self) {
        if !self.started() {
            return;
        }
        let (nc, nf) = (self.cmds.len() as i64, self.frames.len() as i64);
        for k in 0..self.alive.len() {
            if !self.alive[k] {
                continue;
            }
            let s = self.lo + k as i64;
            let newest = [(nf - 1, nf - 1 + s), (nc - 1 - s, nc - 1)];
            let ok = newest.iter().all(|&(j, i)| {
                !(0..nf).contains(&j) || !(0..nc).contains(&i) || Self::fits(&self.frames[j as usize], &self.cmds[i as usize])
            });
            if !ok {
                self.alive[k] = false;
                self.left -= 1;
            }
        }
    }

    /// Every command not held yet ends at `now` or later: an offset under which a reply that began before
    /// `now` answers one of them is not possible.
    pub fn time_passes(&mut self, now: i64) -> Outcome {
        if !self.started() {
            return Outcome::Wait;
        }
        let (nc, nf) = (self.cmds.len() as i64, self.frames.len() as i64);
        for k in 0..self.alive.len() {
            let s = self.lo + k as i64;
            let first = (nc - s).max(0);
            if self.alive[k] && first < nf && self.frames[first as usize].ts < now {
                self.alive[k] = false;
                self.left -= 1;
            }
        }
        self.decide()
    }

    /// A command sent at `now` began a batch (reply bytes came since the previous one began), after
    /// `time_passes(now)`, closing a batch of `closed` commands seen: the replies begun before `now` answered
    /// at most the commands held and those lost, all of them if the client waited for them and the server
    /// for the batch's end. Notes whether that bound is the highest offset left.
    pub fn boundary(&mut self, now: i64, closed: u32) -> Outcome {
        if self.timing.is_none_or(|widest| closed > widest) || !self.started() {
            return self.decide();
        }
        let after = self.frames.iter().rev().take_while(|f| f.ts >= now).count();
        let bound = self.cmds.len() as i64 - (self.frames.len() - after) as i64;
        let k = bound - self.lo;
        if self.top() == Some(k as usize) && k >= 0 {
            let k = k as usize;
            let n = match self.reached {
                Some((r, n)) if r == k => n + 1,
                _ => 1,
            };
            self.reached = Some((k, n));
        }
        self.decide()
    }

    /// The highest offset still possible, as an index into `alive`.
    fn top(&self) -> Option<usize> {
        self.alive.iter().rposition(|&a| a)
    }

    /// The offset the timing bound gives, once reached at `TIMING_RUN` boundaries and still possible: the
    /// highest one left (a lower one left means the bound was not reached since, as it is only ever lowered).
    fn timed(&self) -> Option<i64> {
        let (k, n) = self.reached?;
        (self.timing.is_some() && n >= TIMING_RUN && self.top() == Some(k)).then_some(self.lo + k as i64)
    }

    /// Replies paired under offset `s` so far.
    fn overlap(&self, s: i64) -> i64 {
        let (nc, nf) = (self.cmds.len() as i64, self.frames.len() as i64);
        (nf.min(nc - s) - 0i64.max(-s)).max(0)
    }

    /// Pairs under offset `s` whose fit says something: the command allows few shapes (not a SET or any
    /// command whose replies vary) and the reply is no error (an error answers anything).
    fn telling(&self, s: i64) -> usize {
        let first = 0i64.max(-s) as usize;
        self.frames
            .iter()
            .enumerate()
            .skip(first)
            .take_while(|&(j, _)| ((j as i64 + s) as usize) < self.cmds.len())
            .filter(|&(j, f)| {
                let c = &self.cmds[(j as i64 + s) as usize];
                let error = matches!(f.top.kind, Kind::Error | Kind::BulkError);
                !f.queued && !error && matches!(c.class, Class::Hmget | Class::Mget | Class::Hgetall | Class::GetLike | Class::IntLike(_))
            })
            .count()
    }

    fn decide(&self) -> Outcome {
        if !self.started() {
            return Outcome::Wait;
        }
        if self.left == 0 {
            return Outcome::None;
        }
        // Every reply held must answer a command held or one lost: one that answers a command not read yet
        // (still on probation) waits for it.
        let answered = |s: i64| self.frames.len() as i64 + s <= self.cmds.len() as i64;
        if let Some(s) = self.timed().filter(|&s| answered(s) && self.overlap(s) > 0) {
            return Outcome::Aligned(s);
        }
        if self.left > 1 {
            return Outcome::Wait;
        }
        let Some(k) = self.alive.iter().position(|&a| a) else { return Outcome::None };
        let s = self.lo + k as i64;
        if answered(s) && self.overlap(s) >= CONFIRM_RUN as i64 && self.telling(s) >= CONFIRM_RUN {
            Outcome::Aligned(s)
        } else {
            Outcome::Wait
        }
    }

    /// Lets the oldest command go unpaired (the caller emits it): the offsets count from the next one.
    pub fn pop_cmd(&mut self) -> Option<Held> {
        let c = self.cmds.pop_front()?;
        if self.started() {
            self.lo -= 1;
        } else {
            // Its reply may still come, as one of a command not held.
            self.unseen += 1;
        }
        Some(c)
    }

    /// Lets the oldest reply go unpaired (the caller counts it).
    pub fn pop_frame(&mut self) -> Option<Frame> {
        let f = self.frames.pop_front()?;
        self.lo += 1;
        Some(f)
    }
}
