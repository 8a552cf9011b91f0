//! Which commands of a connection were sent together: the batches (round trips) of its client.
//!
//! A service's request reaches Redis as a batch: the commands a client sends before it waits for their
//! replies (a pipeline, or one command when it does not pipeline). A client that waits sends its next batch
//! only once every reply of the previous one has arrived. So a command starts a new batch when, as its first
//! byte was captured, the server had answered every command sent before it; a command sent while a reply was
//! still owed belongs to the batch being sent.
//!
//! "Answered" is read from the reply stream's progress (`mark`: the reply bytes seen when the command's first
//! byte came): no earlier command still waits for its reply, and the chunk that completed the last reply
//! frame came before the command's first byte. What stays uncertain: a pipeline written in several sends
//! whose earlier part the server answered in full before the next send arrived looks like two batches (the
//! capture cannot tell a client that waited from one that did not); a client that never waits (CLIENT REPLY
//! OFF) sends one batch. Where pairing is lost (after a capture loss, or mid-stream) the replies owed are
//! unknown, and a command starts a new batch when reply bytes arrived since the previous command began.

#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct Batches {
    /// The batch of the latest command (its ordinal on the connection, from 0).
    current: u64,
    /// Commands seen so far in the latest batch.
    commands: u32,
    /// A command has been seen.
    started: bool,
    /// Reply bytes seen when the latest command's first byte came.
    last_mark: u64,
    /// Reply bytes seen at the end of the latest chunk that completed a reply frame.
    answered_end: u64,
}

impl Batches {
    /// The reply stream has reached `reply_bytes` with a frame completed in the chunk that ended there.
    pub fn frame_completed(&mut self, reply_bytes: u64) {
        self.answered_end = reply_bytes;
    }

    /// The batch of the latest command.
    pub fn current(&self) -> u64 {
        self.current
    }

    /// Commands seen so far in the latest batch: before a command that starts a new one is assigned, how
    /// many the batch it closes held.
    pub fn commands(&self) -> u32 {
        self.commands
    }

    /// The batch of a command whose first byte came when `mark` reply bytes had been seen. `owed`: whether a
    /// command sent before it still waits for its reply; `paired`: whether the session knows which replies are
    /// owed (it does not after a loss).
    pub fn assign(&mut self, mark: u64, owed: bool, paired: bool) -> u64 {
        let new = if paired { !owed && mark >= self.answered_end } else { mark > self.last_mark };
        if self.started && new {
            self.current += 1;
            self.commands = 0;
        }
        self.commands = self.commands.saturating_add(1);
        self.started = true;
        self.last_mark = mark;
        self.current
    }
}

#[cfg(test)]
mod tests {
    use super::Batches;

    #[test]
    fn a_command_sent_after_every_reply_starts_a_batch() {
        let mut b = Batches::default();
        assert_eq!(b.assign(0, false, true), 0);
        assert_eq!(b.assign(0, true, true), 0, "sent while the first waited: the same pipeline");
        b.frame_completed(10);
        assert_eq!(b.assign(10, false, true), 1, "after both replies");
    }

    #[test]
    fn the_commands_of_the_latest_batch_are_counted() {
        let mut b = Batches::default();
        b.assign(0, false, true);
        b.assign(0, true, true);
        assert_eq!(b.commands(), 2);
        b.frame_completed(10);
        b.assign(10, false, true);
        assert_eq!(b.commands(), 1, "a new batch");
    }

    #[test]
    fn a_reply_completed_after_the_first_byte_keeps_the_batch() {
        let mut b = Batches::default();
        b.assign(0, false, true);
        // The command's first byte came at mark 4; the previous reply completed later, at 10, before the
        // command was read in full (so nothing is owed any more when it is assigned).
        b.frame_completed(10);
        assert_eq!(b.assign(4, false, true), 0);
    }

    #[test]
    fn without_pairing_reply_bytes_between_commands_start_a_batch() {
        let mut b = Batches::default();
        assert_eq!(b.assign(5, false, false), 0);
        assert_eq!(b.assign(5, false, false), 0);
        assert_eq!(b.assign(9, false, false), 1);
    }
}
