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
}

impl Lockstep {
    /// A command whose first byte came when `mark` reply bytes had been seen: whether it is a boundary.
    pub fn boundary(&mut self, mark: u64) -> bool {
        let b = mark > self.last_mark;
        self.last_mark = self.last_mark.max(mark);
        b
    }

    /// A boundary seen while pairing was certain: `clean` when nothing was owed at it.
    pub fn observe(&mut self, clean: bool) {
        if clean {
            self.clean = self.clean.saturating_add(1);
        } else {
            self.dirty = self.dirty.saturating_add(1);
        }
    }

    pub fn qualified(&self) -> bool {
        self.dirty == 0 && self.clean >= MIN_CLEAN
    }

    /// A boundary was seen with commands still owed a reply: the client sends before its replies come, so
    /// a moment the server is quiet does not say every command sent before it was answered.
    pub fn seen_dirty(&self) -> bool {
        self.dirty > 0
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
            l.observe(true);
        }
        assert!(l.qualified());
        l.observe(false);
        for _ in 0..100 {
            l.observe(true);
        }
        assert!(!l.qualified());
    }

    #[test]
    fn a_boundary_needs_reply_bytes_since_the_previous_command() {
        let mut l = Lockstep::default();
        assert!(!l.boundary(0));
        assert!(l.boundary(5));
        assert!(!l.boundary(5));
    }
}
