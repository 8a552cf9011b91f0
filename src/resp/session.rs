//! One connection: commands read from the client's bytes wait in a queue until the server's bytes answer
//! them, and leave in the order they were sent.
//!
//! Pairing. Redis answers a connection's commands in order, so each reply goes to the oldest command still
//! waiting for one (`cursor`). The exceptions: commands that get no reply (CLIENT REPLY OFF/SKIP); commands
//! queued by MULTI, which get `+QUEUED` and their real reply as an element of EXEC's array (or none, when
//! the transaction is discarded or aborted); RESP3 pushes and pub/sub messages, which answer nothing; and
//! SUBSCRIBE-like commands, whose first confirmation is their reply and the others are pushes.
//!
//! Losses. Losses are reported, never invented. A reply-side gap (or invalid reply bytes) loses the replies of
//! an unknown number of waiting commands: all of them get `Reply::Unknown`, and replies are unpaired from then
//! on; unless the lost bytes all lie inside a value whose length its header gave (a snap length cutting a long
//! reply), which the reply parser skips anyway. Likewise on the request side: bytes lost inside one argument
//! whose length its header gave lose that argument only (the command comes out with it elided) and pairing
//! goes on. Any other request-side loss (a gap elsewhere, invalid bytes) loses an unknown number of commands,
//! each with a reply of its own that comes after those of the commands already waiting: these are still
//! paired (`Draining`); no later moment tells how many replies the lost commands had (a client that
//! pipelines across a quiet moment would be paired one reply off at a turn, an HGETALL given another
//! command's values as field names), so the later commands are held for a realignment (`realign`) whose
//! offsets allow for as many as the lost bytes could hold; on a connection whose client waits for its
//! replies before it sends again (`lockstep`), the replies counted before its next batches can tell the
//! offset, and on any connection that closes after a quiet moment, the replies counted by then (`settle`).
//!
//! After a reply-side loss, a contradiction, or a capture that began mid-connection, pairing resumes at a
//! *turn*: a command C sent while the server was quiet (no reply byte while C was sent, the last one before
//! C's first byte), after the server had answered something since the previous command ended, with the reply
//! parser at a frame boundary, with the request stream trusted again (no command read since a resync still
//! on probation, see `request`), and with every command seen since the loss plausibly answered (as many
//! replies started after each had ended as there are such commands; a pub/sub confirmation answers a
//! (UN)SUBSCRIBE). Then all the client had sent has been answered, if the client waits for its replies
//! before it sends more (request-response, or pipelines of batches as redis-py sends them): C's reply is the
//! next frame. When the reply stream itself lost its frame boundaries, a first turn restarts the reply parser
//! (a new reply begins after a quiet turn) and a second one resumes pairing; the frames read between the loss
//! and the first turn are found again there, in the reply bytes kept meanwhile (`reframe`), for the
//! realignment of the commands held (which may resume pairing at once); so are those read between two reply
//! losses before it (a *piece*, `Realign::push_piece`), and a connection's close (a FIN each way) is such a
//! moment too. A client that pipelines without
//! ever waiting offers no turn and its commands stay `Unknown`; nor does one that showed it keeps commands
//! in flight (a dirty boundary, `lockstep`: its server may fall quiet with replies still owed, as one
//! lagging a long pipeline does), whose quiet moments only restart the reply parser; and a realignment under
//! way ends at a turn only for a client seen to send one command at a time (`Lockstep::request_response`: a
//! pipelining client's server may lag a pipeline before any dirty boundary showed). Two checks catch what
//! slips through: a reply that starts before its command ended, or whose shape cannot answer it
//! (`summary::compatible`), stops pairing (`contradictions`); the replies of the commands then waiting are
//! taken to be still on their way, so a turn needs them first.
//!
//! A command found by searching (after a loss, or at a mid-stream start) is held on probation by the request
//! parser until the next command follows it at once; the server's answer confirms it too, which keeps the
//! last command before a loss or the capture's end. A reply frame answers the held command when it is the
//! first frame that finds nothing owed after the command ended, the client quiet since and the server quiet
//! while the command was sent (a turn); it confirms the command when it is of its shape and no error
//! (`summary::confirms`), and a second such frame withdraws that. When the reply stream lost its frame
//! boundaries, the first reply bytes after such a held command restart the reply parser, as a turn would.
//! A command both answered and followed by the next one ends probation (both streams agree where it ended),
//! so a request-response connection picked up mid-stream pairs from its second command.
//!
//! What stays uncertain: at a mid-stream start, a command sent just before the capture began has a reply the
//! count above does not know of; a client that pipelines across that very moment can be paired one reply
//! off. The shape check catches that for HMGET/MGET (an array of the wrong length) and HGETALL, not for two
//! GETs.

use std::collections::VecDeque;

use super::arena::ArgsView;
use super::batch::Batches;
use super::lockstep::Lockstep;
use super::command::Command;
use super::realign::{self, Fate, Held, Outcome, Realign, Resolved};
use super::reframe::{self, reply_bound, Unframed};
use super::reply::{Kind, Plan, ReplyParser, Step};
use super::request::{ArgStore, Event, Parsed, RequestParser};
use super::summary::{
    classify, compatible, confirms, error_code, mode_unknown, pubsub_kind, subtree_end, summarize, Class, ClientReply, PubSub, ReplyStore, Stored,
};
use super::settle;
use super::tls::is_tls_record;
use super::{Direction, Limits, RespStats};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Wait {
    /// For its reply.
    Reply,
    /// Answered `+QUEUED`: for EXEC's reply.
    Exec,
    /// Seen after a loss: for the replies' shapes to tell which reply is its (`realign`).
    Align,
    Done,
}

#[derive(Clone, Copy, Debug)]
struct Pending {
    cmd: Parsed,
    class: Class,
    wait: Wait,
    reply: Stored,
    reply_ts: Option<i64>,
    /// The batch it was sent in (`batch`).
    batch: u64,
    /// Commands get consecutive ids as they enter the queue: the position of a held one is its id less the
    /// front's.
    id: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Pairing {
    Synced,
    /// After a request-side gap: this many replies still belong to commands sent before it.
    Draining(u64),
    Unsynced,
}

/// How the connection replies, as far as its commands and replies have told.
#[derive(Clone, Copy, Debug)]
struct Modes {
    client_reply: ClientReply,
    proto: u8,
    subscribed: bool,
    /// A SUBSCRIBE-like command was sent (its confirmation may not have been seen).
    maybe_subscribed: bool,
    monitor: bool,
}

/// End times of the commands sent since a loss, each waiting for a reply that started after it ended.
struct Owed {
    ends: VecDeque<i64>,
    cap: usize,
    /// Entries dropped for room, and the latest of their end times.
    dropped: u64,
    dropped_end: i64,
    /// A bare UNSUBSCRIBE or PUNSUBSCRIBE is owed one confirmation per subscription, a number not known:
    /// nothing is settled until a confirmation says no subscription is left.
    uncounted: bool,
}

impl Owed {
    fn push(&mut self, end: i64) {
        if self.ends.len() >= self.cap {
            if let Some(e) = self.ends.pop_front() {
                self.dropped += 1;
                self.dropped_end = self.dropped_end.max(e);
            }
        }
        self.ends.push_back(end);
    }
    /// A reply frame started at `ts`: it may answer the oldest owed command that had ended by then.
    fn answer(&mut self, ts: i64) {
        if self.dropped > 0 {
            if self.dropped_end <= ts {
                self.dropped -= 1;
            }
        } else if self.ends.front().is_some_and(|&e| e <= ts) {
            self.ends.pop_front();
        }
    }
    fn settled(&self) -> bool {
        self.dropped == 0 && self.ends.is_empty() && !self.uncounted
    }
    fn clear(&mut self) {
        self.uncounted = false;
        self.ends.clear();
        self.dropped = 0;
        self.dropped_end = i64::MIN;
    }
}

pub struct Session {
    limits: Limits,
    stats: RespStats,
    req: RequestParser,
    rep: ReplyParser,
    args: ArgStore,
    replies: ReplyStore,
    /// Replies in `replies` not yet emitted.
    store_users: usize,
    events: Vec<Event>,
    queue: VecDeque<Pending>,
    /// Index of the first command waiting for its reply (`queue.len()` when none is).
    cursor: usize,
    /// Commands in `queue` waiting for their reply (`Wait::Reply`), kept as they change: counting them per
    /// command made a deep pipeline quadratic (every command scanned all those before it).
    waiting: usize,
    pairing: Pairing,
    /// The reply parser's frame boundaries are the stream's (false after a reply-side loss).
    framed: bool,
    /// Reply bytes kept while `framed` is false, for a realignment to find frames in (`reframe`).
    unframed: Unframed,
    /// The reply bytes kept between two losses of replies while the frame boundaries were lost, oldest first
    /// (each ends where a loss began): their frames are found again at the next quiet moment too
    /// (`Realign::push_piece`).
    pieces: Vec<Unframed>,
    /// Frames still to read, found again by `reframe`, that may be the elements a cut array reply left:
    /// held aside by the realignment (`Realign::push_leading`).
    leading: usize,
    modes: Modes,
    owed: Owed,
    reply_bytes: u64,
    last_reply_ts: Option<i64>,
    /// End of the latest command, or time of the latest request-side gap.
    prev_end: i64,
    /// Replies still to come for commands evicted from a full queue while waiting.
    skip: u64,
    /// A queued command was evicted: EXEC's array no longer lines up with the queue.
    tx_broken: bool,
    /// Client bytes of unknown extent were lost (a gap, invalid bytes): see `commands_lost`.
    request_lost: bool,
    /// Client bytes have been seen (the first ones tell whether the connection is TLS).
    seen_request: bool,
    /// The connection is TLS: its bytes are not read.
    encrypted: bool,
    batches: Batches,
    /// Whether the client waits for its replies before it sends again, as seen while pairing was certain:
    /// a realignment after a loss of client bytes may then count replies (`realign`'s timing rule).
    lockstep: Lockstep,
    /// `finish_some` has ended the streams: what is left in the queue only waits to be passed on.
    finishing: bool,
    /// Commands and replies held after a loss until their shapes tell how they pair (`realign`).
    realign: Option<Box<Realign>>,
    /// The connection has sent a command that changes how the server replies (CLIENT REPLY, MULTI, pub/sub,
    /// ...): one lost with the client's bytes would break the one-reply-per-command a realignment rests on,
    /// so none is tried on it.
    no_realign: bool,
    /// Client bytes lost or skipped since the last realignment began (they may have held commands).
    lost_requests: realign::LostRequests,
    /// A reply answered no command while pairing was certain, and no command has been read since: the
    /// client bytes it answers may be in a hole the reassembler has not reported yet (`commands_lost`).
    orphaned: bool,
    /// The client has sent an inline line: lost bytes may have held inline commands (`realign::lost_bound`).
    inline_seen: bool,
    /// When a byte of either direction (or a gap) was last seen.
    last_seen_ts: i64,
    /// The client has sent a command that may block (`settle::blocks`): the connection never settles.
    blocking_seen: bool,
    /// The connection ended with a FIN each way after a quiet moment (`settle`).
    settled: bool,
    /// The connection ended with a FIN each way: its reply stream ends at a frame boundary, but for a
    /// server that closed with replies owed (`finish_some`).
    closed: bool,
    next_id: u64,
}

impl Session {
    /// A session for a connection seen from its first byte.
    pub fn new(limits: Limits) -> Session {
        Session::with_start(limits, false)
    }

    /// A session for a connection picked up mid-stream: both directions start at unknown points.
    pub fn mid_stream(limits: Limits) -> Session {
        Session::with_start(limits, true)
    }

    fn with_start(limits: Limits, mid: bool) -> Session {
        Session {
            limits,
            stats: RespStats::default(),
            req: RequestParser::new(limits, mid),
            rep: ReplyParser::new(limits),
            args: ArgStore::new(),
            replies: ReplyStore::new(),
            store_users: 0,
            events: Vec::new(),
            queue: VecDeque::new(),
            cursor: 0,
            waiting: 0,
            pairing: if mid { Pairing::Unsynced } else { Pairing::Synced },
            framed: !mid,
            unframed: Unframed::default(),
            pieces: Vec::new(),
            leading: 0,
            modes: Modes {
                client_reply: ClientReply::On,
                proto: 2,
                subscribed: false,
                maybe_subscribed: false,
                monitor: false,
            },
            owed: Owed {
                ends: VecDeque::new(),
                cap: limits.max_pending_commands,
                dropped: 0,
                dropped_end: i64::MIN,
                uncounted: false,
            },
            reply_bytes: 0,
            last_reply_ts: None,
            prev_end: i64::MIN,
            skip: 0,
            tx_broken: false,
            request_lost: false,
            seen_request: false,
            encrypted: false,
            batches: Batches::default(),
            lockstep: Lockstep::default(),
            finishing: false,
            realign: None,
            no_realign: false,
            lost_requests: realign::LostRequests::default(),
            inline_seen: false,
            last_seen_ts: i64::MIN,
            blocking_seen: false,
            settled: false,
            closed: false,
            orphaned: false,
            next_id: 0,
        }
    }

    pub fn stats(&self) -> &RespStats {
        &self.stats
    }

    /// Bytes of memory the session holds (capacities), for checking the bounds.
    pub fn memory_bytes(&self) -> usize {
        self.req.held_bytes()
            + self.rep.held_bytes()
            + self.args.bytes.held()
            + self.args.spans.held() * 8
            + self.replies.lens.held() * 8
            + self.replies.bytes.held()
            + self.replies.spans.held() * 8
            + self.queue.capacity() * std::mem::size_of::<Pending>()
            + self.owed.ends.capacity() * 8
            + self.unframed.held_bytes()
            + self.pieces.iter().map(Unframed::held_bytes).sum::<usize>()
            + self.realign.as_ref().map_or(0, |r| r.held_bytes())
    }

    /// Bytes of one direction, captured at `ts_ns`. Commands whose reply became known are passed to `out`.
    pub fn on_data(&mut self, dir: Direction, ts_ns: i64, data: &[u8], out: &mut impl FnMut(&Command)) {
        if dir == Direction::Request && !self.seen_request && !data.is_empty() {
            self.seen_request = true;
            if is_tls_record(data) {
                self.encrypted = true;
                self.stats.encrypted_connections = 1;
            }
        }
        if self.encrypted {
            return;
        }
        self.last_seen_ts = self.last_seen_ts.max(ts_ns);
        match dir {
            Direction::Request => self.on_request(ts_ns, data, out),
            Direction::Reply => self.on_reply(ts_ns, data, out),
        }
        self.copy_counts();
    }

    /// `missing` bytes of one direction were lost before the data that follows (`ts_ns`: when that was seen).
    pub fn on_gap(&mut self, dir: Direction, ts_ns: i64, missing: u64, out: &mut impl FnMut(&Command)) {
        if self.encrypted {
            return;
        }
        self.last_seen_ts = self.last_seen_ts.max(ts_ns);
        match dir {
            Direction::Request => {
                self.stats.request_gaps += 1;
                self.stats.request_gap_bytes += missing;
                let mut events = std::mem::take(&mut self.events);
                events.clear();
                // Replies that answered no command while pairing was certain, the client silent since: they
                // answer commands behind this hole (a command the events below complete reads as the client
                // speaking again).
                let orphaned = self.orphaned;
                let confined = self.req.gap(missing, ts_ns, &mut self.args, &mut events);
                self.on_events(&events, ts_ns, out);
                self.events = events;
                if !confined {
                    self.prev_end = self.prev_end.max(ts_ns);
                    self.lost_requests.gap_bytes += missing;
                }
                if !confined || orphaned {
                    // Even a hole inside a value: the reassembler held the commands behind it while their
                    // replies came, which stopped pairing; they are realigned as after a loss of commands.
                    self.orphaned |= orphaned;
                    self.commands_lost(out);
                }
            }
            Direction::Reply => {
                self.stats.reply_gaps += 1;
                self.stats.reply_gap_bytes += missing;
                // Bytes lost inside a value (a snap length cutting a long reply) leave the frame's shape
                // known: the reply is summarized as if they had been seen.
                match self.framed.then(|| self.rep.skip_value(missing)).flatten() {
                    Some(frame_done) => {
                        self.reply_bytes += missing;
                        self.last_reply_ts = Some(ts_ns);
                        if frame_done {
                            self.on_frame(out);
                        }
                    }
                    None => {
                        // A GET's value ending inside the loss: its reply is whole as far as the summary goes
                        // (the header gave its length), and the loss takes the frames after it.
                        if let Some(after) = self.framed.then(|| self.rep.end_cut_bulk(missing)).flatten() {
                            self.reply_bytes += missing - after;
                            self.last_reply_ts = Some(ts_ns);
                            self.on_frame(out);
                        }
                        self.keep_piece();
                        self.lose_frames();
                        self.replies_lost(out);
                    }
                }
            }
        }
        self.copy_counts();
    }

    /// The connection ended at `ts_ns` with a FIN each way, every byte before them seen or reported lost
    /// (`finish` follows): it settled if it was quiet for `settle::SETTLE_NS` before.
    pub fn ended(&mut self, ts_ns: i64) {
        self.closed = true;
        self.settled = ts_ns.saturating_sub(self.last_seen_ts) >= settle::SETTLE_NS;
    }

    /// The connection closed or the capture ended: every command still waiting is emitted, its reply unknown.
    pub fn finish(&mut self, out: &mut impl FnMut(&Command)) {
        while !self.finish_some(usize::MAX, usize::MAX, i64::MAX, out) {}
    }

    /// As `finish`, a part at a time: emits the commands still waiting, oldest first, until their arguments
    /// reach `max_args` or their bytes `max_bytes` (one command at least), or the next one was sent after
    /// `until_ts`; returns whether none is left. The parser takes a closed connection's commands so, between batches of rows: a
    /// connection that pipelined dense MGETs without replies holds a million keys, which made into rows at
    /// once took five times their memory, and as many again for every such connection open at the end.
    pub fn finish_some(&mut self, max_args: usize, max_bytes: usize, until_ts: i64, out: &mut impl FnMut(&Command)) -> bool {
        if !self.finishing {
            self.finishing = true;
            let mut events = std::mem::take(&mut self.events);
            events.clear();
            // The stream ended: nothing after it for a turn to wait on (`on_events` only moves `prev_end` up).
            let ts = self.prev_end;
            self.req.finish(&mut self.args, &mut events);
            self.on_events(&events, ts, out);
            self.events = events;
            // A connection closed with a FIN each way ended at a frame boundary: the client closed after the
            // replies it waited for (with replies unread it resets), and the server writes whole replies. The
            // frames read since the reply stream lost its boundaries are found again there, as at a turn. A
            // server that closed while it still owed a reply (output buffer limits, CLIENT KILL) ends inside
            // one: no true boundary reaches the end, and what a value there spells is at most a few frames,
            // which confirm no offset. (The frames it drops, a count would miss: none is taken then.)
            let reframed = self.closed && !self.framed && self.realign.is_some();
            if reframed {
                // (Not a resync: the stream ended.)
                self.reframe(None, out);
            }
            if let Some(r) = self.realign.as_mut() {
                // No command comes any more: no reply held answers one not seen.
                let outcome = r.time_passes(i64::MAX);
                self.realign_outcome(outcome, out);
            }
            // Every command was answered, every reply read, none owed to commands sent before the loss.
            let counted = !reframed && self.framed && !self.blocking_seen && self.waiting == 0 && self.skip == 0;
            if let Some(r) = self.realign.as_mut().filter(|_| self.settled && counted) {
                let outcome = r.settled();
                self.realign_outcome(outcome, out);
            }
            // (A realignment holds at most `realign::MAX_HELD` commands: those it lets go are emitted at once.)
            self.give_up_realign(out);
            self.mark_unknown();
        }
        self.emit_some(max_args, max_bytes, until_ts, out);
        self.copy_counts();
        self.queue.is_empty()
    }

    fn copy_counts(&mut self) {
        let c = &self.req.counts;
        let s = &mut self.stats;
        s.invalid_requests = c.invalid;
        s.request_skipped_bytes = c.skipped;
        s.request_resyncs = c.resyncs;
        s.damaged_commands = c.damaged;
        s.elided_args = c.elided;
        s.redacted_args = c.redacted;
        s.args_lost_in_gaps = c.gap_args;
        s.unconfirmed_commands = c.unconfirmed;
        s.refused_inline_lines = c.refused_lines;
        s.unparsable_bytes = c.refused_bytes;
    }

    // ---- requests ----

    fn on_request(&mut self, ts: i64, data: &[u8], out: &mut impl FnMut(&Command)) {
        let mut events = std::mem::take(&mut self.events);
        events.clear();
        let (skipped, skipped_commands) = (self.req.counts.skipped, self.req.counts.skipped_commands);
        self.req.advance(data, ts, self.reply_bytes, &mut self.args, &mut events);
        if self.req.counts.skipped > skipped {
            // Skipped bytes may have held commands: a turn needs a reply after them. They follow a loss (a
            // gap, invalid bytes, a dropped command) and come before the commands read after it, but maybe
            // after commands a realignment holds: it starts afresh (`cut_realign`).
            self.prev_end = self.prev_end.max(ts);
            self.lost_requests.skipped_bytes += self.req.counts.skipped - skipped;
            self.lost_requests.skipped_commands += self.req.counts.skipped_commands - skipped_commands;
            if self.realign.is_some() {
                self.cut_realign(out);
            }
        }
        self.on_events(&events, ts, out);
        self.events = events;
    }

    fn on_events(&mut self, events: &[Event], ts: i64, out: &mut impl FnMut(&Command)) {
        for &event in events {
            match event {
                Event::Command(cmd) => self.on_command(cmd, out),
                Event::Lost => {
                    self.prev_end = self.prev_end.max(ts);
                    self.commands_lost(out);
                }
                Event::Dropped => {
                    // Like bytes skipped at a mid-stream start: a turn needs a reply after them, and a
                    // dropped CLIENT REPLY must not leave its mode behind. If it was a command, its reply
                    // comes among those of the commands held: a realignment under way starts afresh.
                    self.prev_end = self.prev_end.max(ts);
                    self.modes.client_reply = ClientReply::On;
                    if self.realign.is_some() {
                        self.cut_realign(out);
                    }
                }
            }
        }
    }

    /// Commands may have been lost on the request side: their replies will follow those of the commands
    /// already waiting, which can still be paired. How many were lost is unknown, and each has a reply of its
    /// own that would be taken for the reply of a later command: no turn is certain any more (a client that
    /// pipelines across a quiet moment would be paired one reply off). The commands read after the loss are
    /// held for a realignment instead, whose offsets allow for every reply the lost bytes could have asked
    /// for (`realign`); pairing resumes when the replies' shapes fit one offset only.
    fn commands_lost(&mut self, out: &mut impl FnMut(&Command)) {
        self.request_lost = true;
        // A lost CLIENT REPLY would leave the mode wrong: assume the default, so that commands are never
        // said to have no reply on a guess (a command expecting a reply at worst stays Unknown).
        self.modes.client_reply = ClientReply::On;
        // Pairing was certain but for replies that answered no command with the client silent since: they
        // answer commands lost in this very loss, which the realignment's offsets allow for.
        let orphaned = self.pairing == Pairing::Unsynced && std::mem::take(&mut self.orphaned);
        let certain = self.pairing != Pairing::Unsynced || orphaned;
        if self.pairing == Pairing::Synced {
            self.pairing = Pairing::Draining(self.skip + self.waiting as u64);
        }
        if self.realign.is_some() {
            self.cut_realign(out);
        } else if certain && !self.no_realign {
            // The replies still owed to the commands sent before the loss are paired first (`Draining`); the
            // realignment sees the replies after them.
            let unseen = std::mem::take(&mut self.lost_requests).bound(self.inline_seen);
            self.realign = Some(Box::new(Realign::after_commands_lost(unseen, orphaned, self.timing_holds())));
        }
        self.drain_check(out);
    }

    /// Client bytes were lost (or skipped) after the commands the realignment under way holds: the commands
    /// read from here on are a run of their own, whose replies come after those of the commands lost
    /// (`realign`'s runs).
    fn cut_realign(&mut self, out: &mut impl FnMut(&Command)) {
        let bound = std::mem::take(&mut self.lost_requests).bound(self.inline_seen);
        let timing = self.timing_holds();
        let Some(r) = self.realign.as_mut() else { return };
        let outcome = r.commands_lost(bound, timing);
        self.realign_outcome(outcome, out);
    }

    /// Whether a realignment starting now may count replies: the client waits for its replies, and every
    /// reply from now on is read as a frame (none skipped while the reply stream's boundaries are lost); at
    /// boundaries closing batches no wider than the client was seen to wait for (`Lockstep::shown_width`).
    fn timing_holds(&self) -> Option<u32> {
        (self.lockstep.qualified() && self.framed).then(|| self.lockstep.shown_width())
    }

    /// Replies were lost (a gap or invalid bytes on the reply side). The commands waiting lose theirs, or
    /// not: when pairing was certain they are held for a realignment, whose offsets say which of them the
    /// replies after the loss answer; a realignment under way drops the replies it held, lets its runs before
    /// the latest go unknown and tries the latest's offsets afresh.
    fn replies_lost(&mut self, out: &mut impl FnMut(&Command)) {
        if let Some(r) = self.realign.as_mut() {
            let let_go = r.replies_lost();
            // Commands still waiting for replies before the held ones (a request-side loss draining): their
            // replies may come, or not.
            r.add_unseen(self.waiting as u64 + self.skip);
            self.apply(let_go);
        } else if self.pairing == Pairing::Synced && !self.no_realign {
            self.lost_requests = realign::LostRequests::default();
            // (How many replies the loss took is unknown: no count of them tells the offset.)
            let mut r = Realign::after_replies_lost(self.skip);
            let held: Vec<Held> =
                self.queue.iter().filter(|p| p.wait == Wait::Reply).map(|p| self.held(p.id, p.class, &p.cmd)).collect();
            for p in self.queue.iter_mut().filter(|p| p.wait == Wait::Reply) {
                p.wait = Wait::Align;
            }
            for h in held {
                // Outcomes come with replies only: none yet.
                let _ = r.push_cmd(h);
            }
            self.waiting = 0;
            self.realign = Some(Box::new(r));
        }
        self.lose_pairing(out);
        if self.realign.is_some() && !self.framed {
            // The replies read until frames are found again may answer the commands held.
            self.unframed.start(self.reply_bytes);
        }
    }

    /// A command as a realignment holds it. One cut short of its arguments (`truncated`: an MGET of more keys,
    /// an HSET of more pairs than were kept) says nothing of its reply's shape.
    fn held(&self, id: u64, class: Class, cmd: &Parsed) -> Held {
        if cmd.truncated {
            return Held { id, class: Class::Other, argc: cmd.argc, end_ts: cmd.end_ts, bound: None };
        }
        let bound = reply_bound(class, cmd.argc, self.args_of(cmd).get(0));
        Held { id, class, argc: cmd.argc, end_ts: cmd.end_ts, bound }
    }

    /// Ends the realignment under way: its commands come out with their replies unknown, its replies unpaired.
    fn give_up_realign(&mut self, out: &mut impl FnMut(&Command)) {
        self.unframed.stop();
        let Some(r) = self.realign.take() else { return };
        for c in &r.cmds {
            let i = self.index_of(c.id);
            self.queue[i].wait = Wait::Done;
        }
        self.pieces.clear();
        for &f in r.frames.iter().chain(&r.leading).chain(r.pieces.iter().flatten()) {
            self.let_go_reply(f);
        }
        self.emit_ready(out);
    }

    /// Where in the queue the command of id `id` is (it must be there).
    fn index_of(&self, id: u64) -> usize {
        (id - self.queue.front().map_or(id, |p| p.id)) as usize
    }

    /// A reply kept in the store is no longer used.
    fn release_reply(&mut self, reply: Stored) {
        if reply.uses_store() {
            self.store_users -= 1;
            if self.store_users == 0 {
                self.replies.release_all();
            }
        }
    }

    /// What a realignment's outcome asks: pair at the offsets found, give up, or (waiting) let go what it has
    /// learnt all it can of and keep the rest within its bounds.
    fn realign_outcome(&mut self, outcome: Outcome, out: &mut impl FnMut(&Command)) {
        match outcome {
            Outcome::Aligned => self.realigned(out),
            Outcome::None => self.give_up_realign(out),
            Outcome::Wait => {
                let Some(r) = self.realign.as_mut() else { return };
                let mut done = Resolved::default();
                while let Some(front) = r.take_front() {
                    done.cmds.extend(front.cmds);
                    done.unpaired.extend(front.unpaired);
                }
                let mut let_go = Vec::new();
                while r.over_bounds() {
                    let_go.extend(r.let_go_front());
                }
                while r.cmds.len() > realign::MAX_HELD {
                    let_go.extend(r.pop_cmd());
                }
                while r.frames.len() > realign::MAX_HELD {
                    done.unpaired.extend(r.pop_frame());
                }
                done.cmds.extend(let_go.into_iter().map(|c| (c, Fate::Unknown)));
                self.apply(done);
                self.emit_ready(out);
            }
        }
    }

    /// Commands a realignment let go take what it found for them; the replies it let go unpaired are counted.
    fn apply(&mut self, resolved: Resolved) {
        for (c, fate) in resolved.cmds {
            let at = self.index_of(c.id);
            match fate {
                Fate::Paired(f) => {
                    // HGETALL's field names and EXEC's elements were not kept (what a reply keeps depends on
                    // its command, unknown while it was held); a command queued by MULTI has its reply in
                    // EXEC's.
                    let kept = !f.queued && !matches!(c.class, Class::Hgetall | Class::Exec);
                    let reply = if kept { f.reply } else { Stored::Unknown };
                    if !kept {
                        self.release_reply(f.reply);
                    }
                    let p = &mut self.queue[at];
                    p.wait = Wait::Done;
                    p.reply = reply;
                    p.reply_ts = Some(f.ts);
                    self.stats.realigned_replies += 1;
                }
                Fate::Unknown => self.queue[at].wait = Wait::Done,
                Fate::Awaits => {
                    self.queue[at].wait = Wait::Reply;
                    self.waiting += 1;
                }
            }
        }
        for f in resolved.unpaired {
            self.let_go_reply(f);
        }
    }

    /// A reply a realignment held goes unpaired: counted, and its summary no longer kept.
    fn let_go_reply(&mut self, f: realign::Frame) {
        self.stats.unpaired_replies += 1;
        self.release_reply(f.reply);
    }

    /// The latest run's offset is confirmed: every command held takes its run's pairing (`Realign::resolve`),
    /// and pairing is certain again from there.
    fn realigned(&mut self, out: &mut impl FnMut(&Command)) {
        let Some(r) = self.realign.take() else { return };
        self.unframed.stop();
        self.pieces.clear();
        self.apply(r.resolve());
        self.pairing = Pairing::Synced;
        self.request_lost = false;
        self.lost_requests = realign::LostRequests::default();
        self.owed.clear();
        self.stats.pairing_resyncs += 1;
        self.cursor = 0;
        self.fix_cursor();
        self.emit_ready(out);
    }

    fn args_of(&self, cmd: &Parsed) -> ArgsView<'_> {
        ArgsView {
            bytes: self.args.bytes.slice(cmd.bytes_start, cmd.bytes_len as usize),
            spans: self.args.spans.slice(cmd.spans_start, cmd.argc as usize),
        }
    }

    fn on_command(&mut self, cmd: Parsed, out: &mut impl FnMut(&Command)) {
        self.inline_seen |= cmd.inline || cmd.refused;
        self.orphaned = false;
        let paired = self.pairing == Pairing::Synced;
        let boundary = self.lockstep.boundary(cmd.mark);
        let (previous, closed) = (self.batches.current(), self.batches.commands());
        let batch = self.batches.assign(cmd.mark, paired && self.awaiting_replies() > 0, paired);
        if paired && boundary {
            // Clean when it began a batch: every command before it answered.
            self.lockstep.observe(batch != previous, closed);
        }
        let id = self.next_id;
        self.next_id += 1;
        if cmd.elided > 0 && mode_unknown(self.args_of(&cmd)) {
            // Whether the server replies to it (and to what follows) is unknown: a loss of the pairing.
            let p = Pending { cmd, class: Class::Other, wait: Wait::Done, reply: Stored::Unknown, reply_ts: None, batch, id };
            self.prev_end = self.prev_end.max(cmd.end_ts);
            self.queue.push_back(p);
            self.commands_lost(out);
            self.fix_cursor();
            self.emit_ready(out);
            return;
        }
        if let Some(r) = self.realign.as_mut() {
            // This command and every later one ended at its start or later: no reply before it answers them.
            let outcome = r.time_passes(cmd.ts);
            self.realign_outcome(outcome, out);
        }
        if let Some(r) = self.realign.as_mut().filter(|_| boundary) {
            let outcome = r.boundary(cmd.ts, closed);
            self.realign_outcome(outcome, out);
        }
        let class = classify(self.args_of(&cmd));
        self.blocking_seen |= settle::blocks(self.args_of(&cmd));
        if !realigns(class) {
            self.no_realign = true;
            self.give_up_realign(out);
        }
        let expects = self.expects_reply(class);
        let mut p = Pending { cmd, class, wait: Wait::Reply, reply: Stored::Unknown, reply_ts: None, batch, id };
        if !expects {
            p.wait = Wait::Done;
            p.reply = Stored::NoReply;
        } else if self.pairing != Pairing::Synced {
            // A turn needs a trusted request stream: not after a loss of unknown extent, not while commands
            // read after a resync are still on probation (one dropped later may have been real).
            let trusted = !self.request_lost && !self.req.on_probation();
            let turn = self.pairing == Pairing::Unsynced && self.quiet(&cmd);
            // At a turn with the reply stream's frame boundaries lost, the reply parser restarts (a new
            // reply begins after a quiet turn); pairing resumes at the next turn. Where pairing cannot
            // resume at a turn, the replies' frames are still found again there for the realignment.
            let reframed = turn && !self.framed && (trusted || self.realign.is_some());
            if reframed {
                self.stats.reply_resyncs += 1;
                self.reframe(Some(cmd.ts), out);
                if trusted {
                    self.owed.clear();
                }
            }
            if self.pairing == Pairing::Synced {
                // The frames found again confirmed the realignment: this command waits for its reply.
            } else if turn && trusted && !reframed && self.rep.at_boundary() && self.owed.settled()
                && !self.lockstep.seen_dirty()
                && self.realign.as_ref().is_none_or(|_| closed <= 1 && self.lockstep.request_response())
            {
                self.give_up_realign(out);
                self.pairing = Pairing::Synced;
                self.stats.pairing_resyncs += 1;
                self.owed.clear();
            } else {
                p.wait = Wait::Done;
                if self.realign.is_some() {
                    p.wait = Wait::Align;
                }
                if !cmd.replied {
                    // (Its reply was read while it was held: nothing is owed.)
                    self.owe(class, cmd.argc, cmd.end_ts);
                }
            }
        }
        self.prev_end = self.prev_end.max(cmd.end_ts);
        self.waiting += (p.wait == Wait::Reply) as usize;
        self.queue.push_back(p);
        self.fix_cursor();
        if p.wait == Wait::Align {
            let held = self.held(id, class, &cmd);
            if let Some(r) = self.realign.as_mut() {
                let outcome = r.push_cmd(held);
                self.realign_outcome(outcome, out);
            }
        }
        self.bound_queue(out);
        self.emit_ready(out);
    }

    /// A command seen while pairing is lost is owed its replies: one, or for (UN)SUBSCRIBE-like commands
    /// one confirmation per channel named (pub/sub confirmations are out-of-band frames, see `on_frame`).
    fn owe(&mut self, class: Class, argc: u32, end: i64) {
        let n = match class {
            Class::Subscribe(_) | Class::Unsubscribe(_) if argc > 1 => argc - 1,
            Class::Unsubscribe(_) => {
                self.owed.uncounted = true;
                0
            }
            _ => 1,
        };
        for _ in 0..n {
            self.owed.push(end);
        }
    }

    /// Whether the server will reply to a command of `class`, following CLIENT REPLY; notes request-side
    /// mode changes.
    fn expects_reply(&mut self, class: Class) -> bool {
        let m = &mut self.modes;
        let expects = match (m.client_reply, class) {
            (_, Class::ClientReply(ClientReply::On)) => true,
            (_, Class::ClientReply(_)) => false,
            (ClientReply::On, _) => true,
            _ => false,
        };
        m.client_reply = match (m.client_reply, class) {
            (_, Class::ClientReply(ClientReply::On)) | (_, Class::Reset) => ClientReply::On,
            (_, Class::ClientReply(ClientReply::Off)) => ClientReply::Off,
            (ClientReply::On, Class::ClientReply(ClientReply::Skip)) => ClientReply::Skip,
            (ClientReply::Skip, _) => ClientReply::On,
            (mode, _) => mode,
        };
        match class {
            Class::Subscribe(_) => m.maybe_subscribed = true,
            Class::Reset => m.maybe_subscribed = false,
            _ => {}
        }
        expects
    }

    /// Whether `cmd` was sent at a turn (see the module comment): the server quiet while it was sent, after
    /// it spoke since the previous command ended. Pairing can resume there when the reply parser is at a
    /// frame boundary and every command seen since the loss was plausibly answered.
    fn quiet(&self, cmd: &Parsed) -> bool {
        cmd.mark == self.reply_bytes && self.last_reply_ts.is_some_and(|t| t < cmd.ts && t >= self.prev_end)
    }

    /// The reply stream is at a frame boundary again (a turn): the reply parser restarts here, and the
    /// frames read since the frame boundaries were lost are found again in the bytes kept meanwhile
    /// (`reframe`), for the realignment under way; they are read as they would have been as they came.
    /// `now`: when the command that made the turn was sent (no frame before it answers it or a later one).
    fn reframe(&mut self, now: Option<i64>, out: &mut impl FnMut(&Command)) {
        let kept = self.unframed.take();
        let pieces = std::mem::take(&mut self.pieces);
        self.rep.reset();
        self.framed = true;
        let Some(bound) = self.realign.as_ref().and_then(|r| r.reply_bound()) else { return };
        // Each piece's frames are found as the latest's are, up to where the loss after it began.
        for piece in &pieces {
            let Some(found) = reframe::first_frame_cut(&piece.bytes, self.limits, bound) else { continue };
            let Some(frames) = self.piece_frames(piece, found.start) else { continue };
            self.stats.reply_skipped_bytes -= (piece.bytes.len() - found.start) as u64;
            let Some(r) = self.realign.as_mut() else { continue };
            for f in r.push_piece(frames).into_iter().flatten() {
                self.let_go_reply(f);
            }
        }
        let Some(found) = reframe::first_frame(&kept.bytes, self.limits, bound) else { return };
        let start = found.maybe;
        self.stats.reply_skipped_bytes -= (kept.bytes.len() - start) as u64;
        // The frames dropped before the first one taken go to the realignment aside (`on_frame`).
        self.leading = found.maybe_frames;
        for (k, &(at, ts)) in kept.chunks.iter().enumerate() {
            let end = kept.chunks.get(k + 1).map_or(kept.bytes.len(), |c| c.0);
            if end <= start {
                continue;
            }
            let (_, frames, valid) = self.frames_in(ts, &kept.bytes[at.max(start)..end], usize::MAX, out);
            if frames > 0 && end > found.start {
                self.batches.frame_completed(kept.base + end as u64);
            }
            if !valid {
                // (The frames were read whole once already: not expected.)
                self.leading = 0;
                self.stats.invalid_replies += 1;
                self.lose_frames();
                self.replies_lost(out);
                return;
            }
        }
        // (Every leading frame lies before the first frame taken: all were read.)
        debug_assert_eq!(self.leading, 0);
        self.leading = 0;
        if let (Some(now), Some(r)) = (now, self.realign.as_mut()) {
            let outcome = r.time_passes(now);
            self.realign_outcome(outcome, out);
        }
    }

    /// Whether a reply arriving now at `ts`, while the reply stream's frame boundaries are lost, begins at a
    /// frame that may answer the command the request parser holds on probation: the server has been quiet
    /// since that command began and speaks after it ended, while the client has sent nothing after it, and
    /// every command seen since pairing was lost has been answered (none is waiting before it).
    fn held_turn(&self, ts: i64) -> bool {
        self.pairing == Pairing::Unsynced
            && self.owed.settled()
            && self.req.held_quiet().is_some_and(|h| h.mark == self.reply_bytes && ts >= h.end_ts)
    }

    /// A reply frame (starting at `ts`) while pairing is lost, before it counts for the commands owed one.
    /// When it came after the command held on probation ended, with the client quiet since and no command
    /// seen before it still owed a reply, it is that command's reply, if that is a command: once confirmed,
    /// it owes none (else a turn would wait forever for a reply already read). It also confirms the command
    /// when the command was sent at a turn (`Parsed::turn`: the server quiet while it was sent, so it was
    /// not answering the bytes around it) and the reply is of its shape (`confirms`). A second such frame
    /// withdraws the confirmation: one of the two answers a command not seen, so the first need not have
    /// been the held command's.
    fn answer_held(&mut self, ts: i64, top: &super::reply::Node) {
        let Some(h) = self.req.held_quiet() else { return };
        if ts < h.end_ts || !self.owed.settled() {
            return;
        }
        if h.replied {
            self.req.held_replied(false);
            return;
        }
        let whole = !h.truncated && !h.refused && h.elided == 0;
        let answered = h.turn && whole && confirms(classify(self.args_of(&h)), h.argc, top);
        self.req.held_replied(answered);
    }

    /// Emits the oldest commands while the queue is over its bounds.
    fn bound_queue(&mut self, out: &mut impl FnMut(&Command)) {
        loop {
            let over_count = self.queue.len() > self.limits.max_pending_commands;
            let over_bytes = self.queue.len() > 1 && self.pending_bytes() > self.limits.max_pending_bytes;
            if !(over_count || over_bytes) {
                return;
            }
            let Some(front) = self.queue.front_mut() else { return };
            match front.wait {
                Wait::Reply => {
                    self.skip += 1;
                    self.waiting -= 1;
                }
                Wait::Exec => self.tx_broken = true,
                Wait::Align => {
                    if let Some(r) = self.realign.as_mut() {
                        r.pop_cmd();
                    }
                }
                Wait::Done => {}
            }
            if front.wait != Wait::Done {
                front.wait = Wait::Done;
                front.reply = Stored::Unknown;
                self.stats.queue_overflows += 1;
            }
            self.fix_cursor();
            self.emit_ready(out);
        }
    }

    // ---- replies ----

    fn on_reply(&mut self, ts: i64, data: &[u8], out: &mut impl FnMut(&Command)) {
        self.reply_frames(ts, data, usize::MAX, out);
    }

    /// Reply bytes, taken up to the end of the `max_frames`-th frame they complete; returns how many were
    /// taken. For streams without a clock (`parse::streams`), which must not feed replies ahead of the
    /// commands they answer.
    pub fn on_reply_frames(
        &mut self,
        ts_ns: i64,
        data: &[u8],
        max_frames: usize,
        out: &mut impl FnMut(&Command),
    ) -> usize {
        if self.encrypted {
            return data.len();
        }
        let taken = self.reply_frames(ts_ns, data, max_frames, out);
        self.copy_counts();
        taken
    }

    /// Panics if the counts kept as the queue changes differ from a count over it (tests only: the count
    /// is what the kept ones avoid).
    #[cfg(test)]
    pub fn check_counts(&self) {
        let waiting = self.queue.iter().filter(|p| p.wait == Wait::Reply).count();
        assert_eq!(self.waiting, waiting, "commands waiting for their reply");
        assert!(self.queue.iter().take(self.cursor).all(|p| p.wait != Wait::Reply), "a command before the cursor waits");
    }

    /// The send time of the oldest command this session has not passed on yet (waiting for its reply, or
    /// still being read): no row it passes on later can be older. None when it holds none.
    pub fn oldest_pending_ts(&self) -> Option<i64> {
        // The queue is in send order: its front is its oldest.
        let queued = self.queue.front().map(|p| p.cmd.ts);
        [queued, self.req.started_at()].into_iter().flatten().min()
    }

    /// Holds commands (waiting for replies, or for those before them to leave): it has a share of the
    /// capture's pending budget (`Limits::max_pending_bytes_total`).
    pub fn holds_commands(&self) -> bool {
        !self.queue.is_empty()
    }

    /// Bytes of the commands held, as the pending budget counts them: each argument counts 8 bytes besides
    /// its own (its span is held too, and it becomes a row: an MGET's short keys made the rows many times the
    /// bytes counted).
    pub fn pending_bytes(&self) -> usize {
        let (Some(f), Some(b)) = (self.queue.front(), self.queue.back()) else { return 0 };
        let bytes = b.cmd.bytes_start + b.cmd.bytes_len as u64 - f.cmd.bytes_start;
        let args = b.cmd.spans_start + b.cmd.argc as u64 - f.cmd.spans_start;
        (bytes + 8 * args) as usize
    }

    /// This connection's share of the pending budget from now on (commands beyond it leave, oldest first,
    /// their replies unknown, when the next command comes).
    pub fn share_pending_bytes(&mut self, bytes: usize) {
        self.limits.max_pending_bytes = bytes;
    }

    /// Replies the server still owes the commands seen, as far as pairing knows them (none while it is lost).
    pub fn awaiting_replies(&self) -> usize {
        if self.pairing == Pairing::Unsynced {
            return 0;
        }
        self.waiting + self.skip as usize
    }

    fn reply_frames(&mut self, ts: i64, data: &[u8], max_frames: usize, out: &mut impl FnMut(&Command)) -> usize {
        if data.is_empty() || max_frames == 0 {
            return 0;
        }
        if self.req.held_quiet().is_some_and(|h| h.mark == self.reply_bytes) {
            self.req.held_at_turn();
        }
        if !self.framed && self.held_turn(ts) {
            // The server speaks after a command it may answer, quiet since that command began: a reply
            // begins here (as at a turn), which may confirm it (`answer_held`).
            self.stats.reply_resyncs += 1;
            self.reframe(None, out);
        }
        self.last_reply_ts = Some(ts);
        if !self.framed {
            // (The pieces kept before count towards the same share.)
            self.unframed.push(ts, data, self.limits.max_pending_bytes.saturating_sub(self.pieces_bytes()));
            self.reply_bytes += data.len() as u64;
            self.stats.reply_skipped_bytes += data.len() as u64;
            return data.len();
        }
        let (pos, frames, valid) = self.frames_in(ts, data, max_frames, out);
        if !valid {
            self.stats.invalid_replies += 1;
            self.stats.reply_skipped_bytes += (data.len() - pos) as u64;
            self.reply_bytes += data.len() as u64;
            self.lose_frames();
            self.replies_lost(out);
            return data.len();
        }
        // Counted once parsed: nothing on the request side reads it meanwhile.
        self.reply_bytes += pos as u64;
        if frames > 0 {
            self.batches.frame_completed(self.reply_bytes);
        }
        pos
    }

    /// Reads frames from `data` (from a frame boundary, or inside the frame begun), `max_frames` at most;
    /// returns the bytes taken, the frames completed, and false when the bytes are not RESP (taken up to
    /// where that was seen).
    fn frames_in(&mut self, ts: i64, data: &[u8], max_frames: usize, out: &mut impl FnMut(&Command)) -> (usize, usize, bool) {
        let (mut pos, mut frames) = (0, 0);
        while pos < data.len() && frames < max_frames {
            if self.rep.at_boundary() {
                let plan = self.plan();
                self.rep.begin(plan);
            }
            let (n, step) = self.rep.advance(&data[pos..], ts);
            pos += n;
            match step {
                Step::Frame => {
                    frames += 1;
                    self.on_frame(out);
                }
                Step::More => {}
                Step::Invalid => return (pos, frames, false),
            }
        }
        (pos, frames, true)
    }

    /// What to keep of the next frame, given the command it will answer.
    fn plan(&self) -> Plan {
        let mut plan = Plan { depth: 1, keys_at: 0 };
        if self.pairing == Pairing::Unsynced || self.skip > 0 {
            return plan;
        }
        match self.queue.get(self.cursor).map(|p| p.class) {
            Some(Class::Hgetall) => plan.keys_at = 1,
            Some(Class::Exec) => {
                plan.depth = 2;
                let queued = self.queue.iter().take(self.cursor).filter(|p| p.wait == Wait::Exec);
                if queued.clone().any(|p| p.class == Class::Hgetall) {
                    plan.keys_at = 2;
                }
            }
            _ => {}
        }
        plan
    }

    /// A loss of replies while the frame boundaries were lost after an earlier one: the bytes kept since
    /// are a piece of their own, whose frames are found again at the next quiet moment. The pieces and the
    /// bytes kept after them share the connection's pending budget; a piece taking more than half of it is
    /// let go (the bytes after the loss are more use: they lead to the quiet moment).
    fn keep_piece(&mut self) {
        if self.framed || self.realign.is_none() || self.unframed.bytes.is_empty() {
            return;
        }
        let piece = self.unframed.take();
        if self.pieces_bytes() + piece.bytes.len() <= self.limits.max_pending_bytes / 2 {
            self.pieces.push(piece);
        }
    }

    /// Reply bytes the pieces keep.
    fn pieces_bytes(&self) -> usize {
        self.pieces.iter().map(|p| p.bytes.len()).sum()
    }

    /// The frames of a piece (`keep_piece`) from `start`, summarized as held replies are; None when one is
    /// not a reply (a push: it answers nothing) or the bytes do not read as frames.
    fn piece_frames(&mut self, piece: &Unframed, start: usize) -> Option<Vec<realign::Frame>> {
        let mut frames = Vec::new();
        let mut parser = ReplyParser::new(self.limits);
        let mut whole = true;
        'chunks: for (k, &(at, ts)) in piece.chunks.iter().enumerate() {
            let end = piece.chunks.get(k + 1).map_or(piece.bytes.len(), |c| c.0);
            let mut pos = at.max(start);
            while pos < end {
                if parser.at_boundary() {
                    parser.begin(Plan { depth: 1, keys_at: 0 });
                }
                let (n, step) = parser.advance(&piece.bytes[pos..end], ts);
                pos += n;
                match (step, parser.frame.nodes.first()) {
                    (Step::Frame, Some(&top)) if top.kind != Kind::Push => {
                        let reply = held_summary(&parser.frame, &mut self.replies, &mut self.store_users);
                        frames.push(realign::Frame { top, ts: parser.frame.start_ts, reply, queued: is_queued(&parser.frame) });
                    }
                    (Step::More, _) => {}
                    _ => {
                        whole = false;
                        break 'chunks;
                    }
                }
            }
        }
        if !whole {
            for f in frames {
                self.release_reply(f.reply);
            }
            return None;
        }
        Some(frames)
    }

    fn lose_frames(&mut self) {
        self.framed = false;
        self.rep.reset();
        // Bytes kept before the loss do not run on into those after it.
        self.unframed.stop();
    }

    /// Pairing is lost: every command waiting gets `Unknown`; replies are unpaired until a turn.
    fn lose_pairing(&mut self, out: &mut impl FnMut(&Command)) {
        self.mark_unknown();
        self.emit_ready(out);
    }

    /// Every command waiting gets `Unknown` (emitted by the caller); replies are unpaired until a turn.
    fn mark_unknown(&mut self) {
        for p in self.queue.iter_mut() {
            // (Commands held for a realignment stay held.)
            if !matches!(p.wait, Wait::Done | Wait::Align) {
                p.wait = Wait::Done;
                p.reply = Stored::Unknown;
            }
        }
        self.cursor = self.queue.len();
        self.waiting = 0;
        self.pairing = Pairing::Unsynced;
        self.skip = 0;
        self.tx_broken = false;
        self.owed.clear();
    }

    /// A reply that cannot be the one the pairing expects: pairing is lost, and since the replies of the
    /// commands waiting are probably still to come (nothing reported them lost), a turn needs them first.
    fn contradiction(&mut self, out: &mut impl FnMut(&Command)) {
        self.stats.contradictions += 1;
        self.stats.unpaired_replies += 1;
        let waiting: Vec<i64> =
            self.queue.iter().skip(self.cursor).filter(|p| p.wait == Wait::Reply).map(|p| p.cmd.end_ts).collect();
        let after = std::mem::take(&mut self.owed.ends);
        // What the realignment counted on (the replies drained first) is wrong too.
        self.give_up_realign(out);
        self.lose_pairing(out);
        for end in waiting.into_iter().chain(after) {
            self.owed.push(end);
        }
        self.owed.answer(self.rep.frame.start_ts);
    }

    fn on_frame(&mut self, out: &mut impl FnMut(&Command)) {
        let Some(&top) = self.rep.frame.nodes.first() else {
            self.stats.unpaired_replies += 1;
            return;
        };
        let ts = self.rep.frame.start_ts;
        let queued = is_queued(&self.rep.frame);
        if self.leading > 0 {
            // Not counted as an answer (`owed`): what it is, the realignment tells later.
            self.leading -= 1;
            self.hold_leading(ts, top, queued);
            return;
        }
        let pairing = self.pairing != Pairing::Unsynced && self.skip == 0;
        let cursor_class = self.queue.get(self.cursor).map(|p| p.class);
        if let Some(oob) = self.out_of_band(&top, cursor_class) {
            let confirms = match (oob, cursor_class) {
                (Some(PubSub::Subscribed(a)), Some(Class::Subscribe(b))) => a == b,
                (Some(PubSub::Unsubscribed(a)), Some(Class::Unsubscribe(b))) => a == b,
                _ => false,
            };
            self.note_pubsub(oob);
            if !(confirms && pairing) {
                self.stats.pushes += 1;
                if self.pairing == Pairing::Unsynced && matches!(oob, Some(PubSub::Subscribed(_) | PubSub::Unsubscribed(_))) {
                    // A confirmation answers a (UN)SUBSCRIBE seen while pairing was lost.
                    self.owed.answer(ts);
                }
                return;
            }
        }
        if self.pairing == Pairing::Unsynced {
            self.answer_held(ts, &top);
            self.owed.answer(ts);
            if self.realign.is_some() {
                self.hold_reply(ts, top, queued, out);
            } else {
                self.stats.unpaired_replies += 1;
            }
            return;
        }
        if self.skip > 0 {
            self.skip -= 1;
            self.stats.unpaired_replies += 1;
            self.replied(out);
            return;
        }
        let Some(&p) = self.queue.get(self.cursor) else {
            // A reply with no command waiting: something was lost that nobody reported, yet. When it is the
            // client's bytes, the reassembler reports the hole with the next bytes after it, which the
            // replies to the commands lost in it can come before.
            self.orphaned = self.pairing == Pairing::Synced;
            self.contradiction(out);
            return;
        };
        let fits = queued || shape_fits(&p.cmd, p.class, &top);
        if ts < p.cmd.end_ts || !fits {
            self.contradiction(out);
            return;
        }
        let i = self.cursor;
        if self.rep.frame.overflow {
            self.stats.oversized_replies += 1;
        }
        if queued && !matches!(p.class, Class::Exec | Class::Discard | Class::Multi) {
            self.queue[i].wait = Wait::Exec;
            self.waiting -= 1;
        } else {
            let reply = if p.class == Class::Exec {
                self.pair_exec(ts)
            } else {
                summarize(&self.rep.frame, 0, p.class, &mut self.replies)
            };
            self.after_reply(p.class, reply);
            self.set_done(i, reply, ts);
        }
        self.replied(out);
    }

    /// A reply after a loss, held for the realignment (its summary kept as for any command but HGETALL's and
    /// EXEC's, which are not used).
    fn hold_reply(&mut self, ts: i64, top: super::reply::Node, queued: bool, out: &mut impl FnMut(&Command)) {
        let reply = held_summary(&self.rep.frame, &mut self.replies, &mut self.store_users);
        let Some(r) = self.realign.as_mut() else { return };
        let outcome = r.push_frame(realign::Frame { top, ts, reply, queued });
        self.realign_outcome(outcome, out);
    }

    /// A frame `reframe` found just before the first it takes for a reply, that may be an element of a cut
    /// array reply: held aside by the realignment, which pairs it once the frames after it tell how
    /// (`Realign::push_leading`).
    fn hold_leading(&mut self, ts: i64, top: super::reply::Node, queued: bool) {
        let Some(r) = self.realign.as_mut() else {
            self.stats.unpaired_replies += 1;
            return;
        };
        let reply = held_summary(&self.rep.frame, &mut self.replies, &mut self.store_users);
        if let Some(f) = r.push_leading(realign::Frame { top, ts, reply, queued }) {
            self.let_go_reply(f);
        }
    }

    /// A reply went to the command at the cursor (or an evicted one): move on.
    fn replied(&mut self, out: &mut impl FnMut(&Command)) {
        self.fix_cursor();
        if let Pairing::Draining(n) = &mut self.pairing {
            *n = n.saturating_sub(1);
        }
        self.drain_check(out);
        self.emit_ready(out);
    }

    fn drain_check(&mut self, out: &mut impl FnMut(&Command)) {
        if self.pairing == Pairing::Draining(0) {
            self.lose_pairing(out);
        }
    }

    fn set_done(&mut self, i: usize, reply: Stored, ts: i64) {
        let p = &mut self.queue[i];
        self.waiting -= (p.wait == Wait::Reply) as usize;
        p.wait = Wait::Done;
        p.reply = reply;
        p.reply_ts = Some(ts);
        if reply.uses_store() {
            self.store_users += 1;
        }
    }

    /// Is the frame an out-of-band one (push, pub/sub message or confirmation, MONITOR output)? The inner
    /// option names its pub/sub kind.
    fn out_of_band(&self, top: &super::reply::Node, cursor: Option<Class>) -> Option<Option<PubSub>> {
        let tag = self.rep.frame.tag();
        match top.kind {
            Kind::Push => Some(tag.and_then(pubsub_kind)),
            Kind::Array if self.modes.proto == 2 => {
                let pubsub = self.modes.subscribed
                    || self.modes.maybe_subscribed
                    || matches!(cursor, Some(Class::Subscribe(_) | Class::Unsubscribe(_)));
                if pubsub {
                    tag.and_then(pubsub_kind).map(Some)
                } else {
                    None
                }
            }
            Kind::Simple if self.modes.monitor && tag.is_none() => Some(None),
            _ => None,
        }
    }

    fn note_pubsub(&mut self, kind: Option<PubSub>) {
        match kind {
            Some(PubSub::Subscribed(_)) => self.modes.subscribed = true,
            Some(PubSub::Unsubscribed(_)) => {
                // The third element is the number of subscriptions left.
                let nodes = &self.rep.frame.nodes;
                let left = nodes.iter().filter(|n| n.depth == 1).nth(2);
                if left.is_some_and(|n| n.kind == Kind::Integer && n.int == 0) {
                    self.modes.subscribed = false;
                    self.modes.maybe_subscribed = false;
                    self.owed.uncounted = false;
                }
            }
            _ => {}
        }
    }

    /// Mode changes a reply confirms.
    fn after_reply(&mut self, class: Class, reply: Stored) {
        let ok = !matches!(reply, Stored::Error(_));
        match class {
            Class::Discard if ok => self.end_transaction(Stored::NoReply),
            Class::Reset if ok => {
                self.end_transaction(Stored::NoReply);
                self.modes.proto = 2;
                self.modes.subscribed = false;
                self.modes.monitor = false;
            }
            Class::Hello(v) if ok && v != 0 => self.modes.proto = v,
            Class::Monitor if reply == Stored::Simple => self.modes.monitor = true,
            _ => {}
        }
    }

    /// The queued commands of the open transaction all get `reply`.
    fn end_transaction(&mut self, reply: Stored) {
        for p in self.queue.iter_mut().take(self.cursor) {
            if p.wait == Wait::Exec {
                p.wait = Wait::Done;
                p.reply = reply;
            }
        }
        self.tx_broken = false;
    }

    /// EXEC's reply: its elements go to the queued commands, in order. Returns EXEC's own summary.
    fn pair_exec(&mut self, ts: i64) -> Stored {
        let frame = &self.rep.frame;
        let top = frame.nodes[0];
        let queued: Vec<usize> = (0..self.cursor).filter(|&i| self.queue[i].wait == Wait::Exec).collect();
        match top.kind {
            Kind::Nil | Kind::Null => {
                self.end_transaction(Stored::NoReply);
                return Stored::Nil;
            }
            Kind::Error | Kind::BulkError => {
                let code = error_code(frame, &top);
                self.end_transaction(Stored::NoReply);
                return Stored::Error(code);
            }
            _ => {}
        }
        let lines_up = top.kind == Kind::Array && !self.tx_broken && top.len as usize == queued.len();
        let mut root = 1;
        let mut replies = Vec::with_capacity(queued.len());
        if lines_up && !frame.overflow {
            for &i in &queued {
                if root >= frame.nodes.len() {
                    break;
                }
                let (class, cmd) = (self.queue[i].class, self.queue[i].cmd);
                let fits = shape_fits(&cmd, class, &frame.nodes[root]);
                replies.push(fits.then(|| summarize(frame, root, class, &mut self.replies)));
                root = subtree_end(&frame.nodes, root);
            }
        }
        if replies.len() != queued.len() || replies.iter().any(|r| r.is_none()) {
            if lines_up && !frame.overflow {
                self.stats.contradictions += 1;
            }
            self.end_transaction(Stored::Unknown);
            return Stored::Other;
        }
        for (&i, r) in queued.iter().zip(replies) {
            self.set_done(i, r.unwrap_or(Stored::Unknown), ts);
        }
        self.tx_broken = false;
        Stored::Other
    }

    // ---- emission ----

    /// Advances the cursor to the first command still waiting for its reply.
    fn fix_cursor(&mut self) {
        while self.cursor < self.queue.len() && self.queue[self.cursor].wait != Wait::Reply {
            self.cursor += 1;
        }
    }

    /// Emits the commands at the front of the queue whose reply is settled.
    fn emit_ready(&mut self, out: &mut impl FnMut(&Command)) {
        self.emit_some(usize::MAX, usize::MAX, i64::MAX, out);
    }

    /// `emit_ready`, until the arguments emitted reach `max_args` or their bytes `max_bytes` (one command at
    /// least), or the next command was sent after `until_ts`.
    fn emit_some(&mut self, max_args: usize, max_bytes: usize, until_ts: i64, out: &mut impl FnMut(&Command)) {
        let (mut args, mut bytes) = (0usize, 0usize);
        while self.queue.front().is_some_and(|p| {
            p.wait == Wait::Done && (args == 0 || (args < max_args && bytes < max_bytes && p.cmd.ts <= until_ts))
        }) {
            let Some(p) = self.queue.pop_front() else { break };
            args += p.cmd.argc.max(1) as usize;
            bytes += p.cmd.bytes_len as usize;
            self.cursor = self.cursor.saturating_sub(1);
            self.emit(&p, out);
            self.args.bytes.release(p.cmd.bytes_start + p.cmd.bytes_len as u64);
            self.args.spans.release(p.cmd.spans_start + p.cmd.argc as u64);
            if p.reply.uses_store() {
                self.store_users -= 1;
                if self.store_users == 0 {
                    self.replies.release_all();
                }
            }
        }
    }

    fn emit(&mut self, p: &Pending, out: &mut impl FnMut(&Command)) {
        if p.cmd.truncated {
            self.stats.oversized_commands += 1;
            return;
        }
        if p.cmd.refused {
            return;
        }
        let s = &mut self.stats;
        s.commands += 1;
        s.inline_commands += p.cmd.inline as u64;
        match p.reply {
            Stored::Unknown => s.unknown_replies += 1,
            Stored::NoReply => s.no_reply += 1,
            _ => s.paired += 1,
        }
        let known = !matches!(p.reply, Stored::Unknown | Stored::NoReply);
        let command = Command {
            ts_ns: p.cmd.ts,
            args: self.args_of(&p.cmd),
            elided_args: p.cmd.elided,
            reply: self.replies.public(p.reply),
            reply_ts_ns: if known { p.reply_ts } else { None },
            inline: p.cmd.inline,
            batch: p.batch,
        };
        out(&command);
    }
}

/// Whether a reply whose top node is `top` can answer `cmd` of `class`: always when the command was cut short
/// of its arguments (`truncated`: what it kept says nothing of its reply's shape; a realignment holds it so,
/// see `Session::held`).
fn shape_fits(cmd: &Parsed, class: Class, top: &super::reply::Node) -> bool {
    cmd.truncated || compatible(class, cmd.argc, top)
}

/// The summary of a reply held for a realignment, before its command is known (kept as for any command but
/// HGETALL's and EXEC's, which are not used); `users` counts the summaries the reply store keeps.
fn held_summary(frame: &super::reply::Frame, replies: &mut ReplyStore, users: &mut usize) -> Stored {
    let reply = summarize(frame, 0, Class::Other, replies);
    if reply.uses_store() {
        *users += 1;
    }
    reply
}

fn is_queued(frame: &super::reply::Frame) -> bool {
    frame.nodes.first().is_some_and(|n| n.kind == Kind::Simple) && frame.tag() == Some(b"QUEUED")
}

/// Whether a connection that sends commands of `class` can be realigned after a loss: their replies go one
/// per command, of a shape the class tells, and they leave the replies of later commands so (unlike CLIENT
/// REPLY, transactions, pub/sub, HELLO, MONITOR and RESET, any of which a loss could hide).
fn realigns(class: Class) -> bool {
    !matches!(
        class,
        Class::Subscribe(_)
            | Class::Unsubscribe(_)
            | Class::Hello(_)
            | Class::Monitor
            | Class::Reset
            | Class::ClientReply(_)
            | Class::Multi
            | Class::Exec
            | Class::Discard
    )
}
