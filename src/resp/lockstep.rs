//! Whether a connection's client waits for every reply before it sends again (lockstep), as its history
//! while pairing was certain tells.
//!
//! A *boundary* is a command whose first byte came after reply bytes that came after the previous command
//! began: the client sent again once the server had spoken. At a clean boundary every command sent before
//! had been answered (the batch rule of `batch`); at a dirty one some were still owed, which a client that
//! keeps commands in flight shows (an async client, a pool sharing the connection), and also a pipeline so
//! long the server answered its first part before its last was sent. Only a connection with `MIN_CLEAN`
//! clean boundaries and no dirty one is lockstep: after a loss of client bytes, the replies counted before
//! its next batches tell how many commands the loss took (`realign`'s timing rule). One dirty boundary is
//! enough to refuse for good: a count taken at a dirty boundary is short by the commands in flight, and a
//! client that showed it sends before its replies came may do so at every boundary after the loss alike
//! (an async client does at each one). For the same reason a quiet moment is no turn on such a connection
//! (see `session`): the server may fall quiet with commands still owed. The price: a loader of large
//! values whose long pipelines the server answers in part while they are sent (one dirty boundary per
//! hundred clean ones in the test capture) is no longer realigned by timing after its first dirty boundary,
//! nor paired again at a quiet moment.
//!
//! A clean boundary also shows how long a batch the server let the client finish before it answered. A
//! count of replies after a loss is taken only at a boundary closing a batch no wider than `MIN_CLEAN` clean
//! ones closed (`shown_width`, see `realign`). A connection's set-up is a few clean batches of one command
//! each, which say nothing of a long pipeline: in a real capture a loader's set-up and its first pipeline
//! made it lockstep, a loss cut its second pipeline before the server answered any of it, and the server
//! then answered each piece of that pipeline while the next was sent, eight replies behind at every
//! boundary: the count gave the same offset three times over, and the loader's HSETs were paired eight
//! replies off. The same count at every boundary fits a lockstep client as well as one the server lags by a
//! constant number of commands; only the client's history can tell them apart, and what it shows holds for
//! batches no wider than it showed.
//!
//! `MIN_CLEAN` = 4: redis-py's connection set-up alone gives two or three (CLIENT SETINFO, a first command),
//! a request-response client one per command, a pipeline one per batch or more (the server catching up
//! while a long batch is sent). Fewer would let a client whose few first exchanges happened to be answered
//! in full pass; more would leave out a loader whose first loss comes in its first batches.

/// Clean boundaries needed, none dirty, for a connection to be taken as lockstep.
pub(crate) const MIN_CLEAN: u32 = 4;

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Lockstep {
    /// Reply bytes seen when the latest command's first byte came.
    last_mark: u64,
    clean: u32,
    dirty: u32,
    /// The commands of the `MIN_CLEAN` widest batches clean boundaries closed, widest first.
    widest: [u32; MIN_CLEAN as usize],
}

impl Lockstep {
    /// A command whose first byte came when `mark` reply bytes had been seen: whether it is a boundary.
    pub fn boundary(&mut self, mark: u64) -> bool {
        let b = mark > self.last_mark;
        self.last_mark = self.last_mark.max(mark);
        b
    }

    /// A boundary seen while pairing was certain: `clean` when nothing was owed at it; `closed`: the commands
    /// of the batch it closes.
    pub fn observe(&mut self, clean: bool, closed: u32) {
        if clean {
            self.clean = self.clean.saturating_add(1);
            let last = self.widest.len() - 1;
            if closed > self.widest[last] {
                self.widest[last] = closed;
                self.widest.sort_unstable_by(|a, b| b.cmp(a));
            }
        } else {
            self.dirty = self.dirty.saturating_add(1);
        }
    }

    pub fn qualified(&self) -> bool {
        self.dirty == 0 && self.clean >= MIN_CLEAN
    }

    /// The widest batch, in commands, that `MIN_CLEAN` clean boundaries closed (0 before there were as many):
    /// the client was seen to wait, and the server to let it finish, with batches that long.
    pub fn shown_width(&self) -> u32 {
        self.widest[self.widest.len() - 1]
    }

    /// A boundary was seen with commands still owed a reply: the client sends before its replies come, so
    /// a moment the server is quiet does not say every command sent before it was answered.
    pub fn seen_dirty(&self) -> bool {
        self.dirty > 0
    }

    /// The client was seen to send one command at a time, waiting for its reply (every batch a clean
    /// boundary closed held one). Only such a client's quiet moment may end a realignment under way (a
    /// turn, see `session`): one that pipelines may pause inside a pipeline its server lags, which a loss
    /// of replies can make look like a turn before any dirty boundary was seen (a real capture: a loader
    /// whose set-up and first pipeline were answered whole lost a reply in its second, which its server
    /// answered in pieces while it was sent; 22 of its SETs were paired a few replies off).
    pub fn request_response(&self) -> bool {
        self.dirty == 0 && self.widest[0] <= 1
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_dirty_boundary_refuses_for_good() {
        let mut l = Lockstep::default();
        for _ in 0..MIN_CLEAN {
            assert!(!l.qualified());
            l.observe(true, 1);
        }
        assert!(l.qualified());
        l.observe(false, 1);
        for _ in 0..100 {
            l.observe(true, 1);
        }
        assert!(!l.qualified());
    }

    #[test]
    fn the_width_shown_is_what_min_clean_clean_boundaries_closed() {
        let mut l = Lockstep::default();
        for closed in [1, 1, 200] {
            l.observe(true, closed);
        }
        l.observe(false, 500);
        assert_eq!(l.shown_width(), 0, "three clean boundaries");
        l.observe(true, 1);
        assert_eq!(l.shown_width(), 1, "set-up's single commands and one pipeline");
        for closed in [150, 180, 160] {
            l.observe(true, closed);
        }
        assert_eq!(l.shown_width(), 150);
    }

    #[test]
    fn a_boundary_needs_reply_bytes_since_the_previous_command() {
        let mut l = Lockstep::default();
        assert!(!l.boundary(0));
        assert!(l.boundary(5));
        assert!(!l.boundary(5));
    }
}
