//! The request side: a streaming parser of client commands, RESP arrays of bulk strings
//! (`*3\r\n$5\r\nHMGET\r\n...`) and inline commands (`HMGET a b c\r\n`, as telnet and redis-cli's inline
//! mode send), into argument lists stored in the connection's `ArgStore`.
//!
//! Like the reply parser it is a state machine that takes every byte once, however the stream is chunked:
//! argument payloads are copied straight from the chunk into the store, so nothing is buffered but a cut
//! header line (and an inline line, which Redis also caps at 64 KiB). Credentials are recognized before
//! their bytes are read (`redact`) and are never copied. Over-long arguments are skipped by length.
//!
//! A gap that falls inside an argument whose length came in its header loses that argument only: the rest of
//! its bytes are skipped by length, and the command comes out with the argument elided. Invalid bytes and
//! other gaps switch the parser to resynchronization: it skips to the next plausible command start (`resync`),
//! keeping at most a few dozen bytes across chunks to judge a candidate cut in two. The bytes after a loss may
//! be inside a value, whose text can spell any command: commands read from then on are on probation, each held
//! until the next command start follows it at once; one followed by anything else was read out of a value
//! (a value's last byte is followed by its CRLF, never by a command): it is dropped and counted
//! (`unconfirmed`). When nothing follows it (the stream ends, or its next bytes are lost), the server's
//! answer confirms it instead (`Parsed::answered`, judged by the session). After `TRUSTED_AFTER`
//! confirmations in a row, or one command both answered and followed by the next, the stream is trusted
//! again.
//!
//! Inline lines are split as Redis splits them (`inline`); a line Redis refuses (unbalanced quotes, no
//! command it knows) is no command but keeps its place among the replies, since Redis answers it.

use std::mem;

use super::arena::{Fifo, Span, ELIDED};
use super::inline::split_inline;
use super::line::{fast_int_line, parse_int, LineReader};
use super::redact::{Redactor, REDACTED};
use super::realign::MIN_ARRAY_COMMAND_BYTES;
use super::resync::{scan, Scan, MAX_CANDIDATE};
use super::Limits;
use crate::trace::commands::lookup;

/// The arguments of the commands a connection holds: bytes, and spans into them.
pub(crate) struct ArgStore {
    pub bytes: Fifo<u8>,
    pub spans: Fifo<Span>,
}

impl ArgStore {
    pub fn new() -> ArgStore {
        ArgStore { bytes: Fifo::new(), spans: Fifo::new() }
    }
}

/// A complete command; its arguments are `argc` spans from `spans_start`, relative to `bytes_start`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Parsed {
    pub ts: i64,
    /// Capture time of the chunk holding the command's last byte.
    pub end_ts: i64,
    pub bytes_start: u64,
    pub bytes_len: u32,
    pub spans_start: u64,
    pub argc: u32,
    pub elided: u32,
    /// Longer than `max_command_bytes`: not all arguments were stored.
    pub truncated: bool,
    pub inline: bool,
    /// An inline line Redis refuses (unbalanced quotes, or no command it knows): not a command, but the
    /// server answers it with an error, so it keeps its place among the replies. No arguments.
    pub refused: bool,
    /// The caller's mark (the reply bytes seen) when the command's first byte arrived.
    pub mark: u64,
    /// Read on probation, and the server sent nothing from its first byte until it was complete (its first
    /// reply bytes since then came after it): it was sent at a quiet moment, as at a turn.
    pub turn: bool,
    /// Read on probation, and a reply came after it while nothing followed it and no command seen before it
    /// waited for one: its reply, if it is a command (`Session`'s `answer_held`).
    pub replied: bool,
    /// And that reply was of its shape, the command sent at a turn: the server answered it.
    pub answered: bool,
}

/// What the parser found, in stream order.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Event {
    Command(Parsed),
    /// Invalid bytes: what follows them until the next command start is lost.
    Lost,
    /// A command read on probation was dropped, unconfirmed: if it was a real one, it has a reply.
    Dropped,
}

/// Counts the session adds to its stats.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct RequestCounts {
    pub invalid: u64,
    pub skipped: u64,
    pub resyncs: u64,
    pub damaged: u64,
    pub elided: u64,
    pub redacted: u64,
    /// Arguments whose bytes were partly lost in a gap that fell inside them (the command is kept).
    pub gap_args: u64,
    /// Commands found after a resync and dropped because nothing confirmed they were not value bytes.
    pub unconfirmed: u64,
    /// Inline lines Redis refuses, and their bytes.
    pub refused_lines: u64,
    pub refused_bytes: u64,
    /// Among the bytes skipped, starts of RESP arrays the server may have answered as commands (an unknown
    /// name, or inside a dropped command): what a loss of client bytes may have hidden (`Session`).
    pub skipped_commands: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum State {
    /// Between commands.
    Idle,
    /// In the `*<argc>` line.
    Count,
    /// At the `$` of an argument.
    ArgHeader,
    /// In the `$<len>` line.
    ArgLine,
    Payload {
        left: u64,
        store: bool,
    },
    Crlf(u8),
    Inline,
    /// Looking for a plausible command start.
    Resync,
}

pub(crate) struct RequestParser {
    limits: Limits,
    state: State,
    lines: LineReader,
    cmd: Parsed,
    /// Arguments announced by the array header, and read so far.
    want: u32,
    got: u32,
    stored: u64,
    redactor: Redactor,
    inline: Vec<u8>,
    /// An inline line's arguments, and where each ends.
    unquoted: Vec<u8>,
    ends: Vec<usize>,
    /// Bytes of an undecided resync candidate cut by the end of a chunk, and that chunk's time.
    carry: Vec<u8>,
    carry_ts: i64,
    /// And the caller's mark then: a command's mark is taken when its first byte came.
    carry_mark: u64,
    /// After a resync, commands are on probation: the bytes may still be inside a value, whose text can
    /// spell any command. A command read on probation is held until something confirms it (see `resync`).
    probation: bool,
    held: Option<Parsed>,
    /// Commands confirmed in a row since probation began; at `TRUSTED_AFTER`, probation ends.
    confirmed: u32,
    pub counts: RequestCounts,
}

impl RequestParser {
    /// A parser at a command boundary, or (`resyncing`) at an unknown point of the stream.
    pub fn new(limits: Limits, resyncing: bool) -> RequestParser {
        RequestParser {
            limits,
            state: if resyncing { State::Resync } else { State::Idle },
            lines: LineReader::default(),
            cmd: Parsed {
                ts: 0,
                end_ts: 0,
                bytes_start: 0,
                bytes_len: 0,
                spans_start: 0,
                argc: 0,
                elided: 0,
                truncated: false,
                inline: false,
                refused: false,
                mark: 0,
                turn: false,
                replied: false,
                answered: false,
            },
            want: 0,
            got: 0,
            stored: 0,
            redactor: Redactor::default(),
            inline: Vec::new(),
            unquoted: Vec::new(),
            ends: Vec::new(),
            carry: Vec::new(),
            carry_ts: 0,
            carry_mark: 0,
            probation: resyncing,
            held: None,
            confirmed: 0,
            counts: RequestCounts::default(),
        }
    }

    /// Commands read now are on probation (see `resync`): the stream is not trusted yet.
    pub fn on_probation(&self) -> bool {
        self.probation
    }

    /// Inside a command.
    pub fn mid_command(&self) -> bool {
        !matches!(self.state, State::Idle | State::Resync)
    }

    /// When the oldest command not yet complete began: one being read, one held on probation, or a resync
    /// candidate cut by the end of a chunk. The row order needs it: such a command may still become a row.
    pub fn started_at(&self) -> Option<i64> {
        let reading = self.mid_command().then_some(self.cmd.ts);
        let held = self.held.map(|c| c.ts);
        let carried = (!self.carry.is_empty()).then_some(self.carry_ts);
        [reading, held, carried].into_iter().flatten().min()
    }

    pub fn held_bytes(&self) -> usize {
        self.inline.capacity() + self.unquoted.capacity() + self.carry.capacity() + self.ends.capacity() * 8
    }

    /// The command held on probation, when no client byte after it has been seen yet (a byte after it would
    /// have confirmed it, dropped it, or begun a candidate kept in `carry`).
    pub fn held_quiet(&self) -> Option<Parsed> {
        self.held.filter(|_| self.carry.is_empty())
    }

    /// The server's first bytes since the held command began arrive now, after it was complete.
    pub fn held_at_turn(&mut self) {
        if let Some(h) = &mut self.held {
            h.turn = true;
        }
    }

    /// A reply came for the held command (see `Parsed::replied`); `answered`: it confirms the command.
    pub fn held_replied(&mut self, answered: bool) {
        if let Some(h) = &mut self.held {
            h.replied = true;
            h.answered = answered;
        }
    }

    /// Parses a chunk; complete commands are appended to `out`.
    pub fn advance(&mut self, mut data: &[u8], ts: i64, mark: u64, store: &mut ArgStore, out: &mut Vec<Event>) {
        while !data.is_empty() {
            if self.state == State::Resync {
                match self.resync(data, ts, mark, store, out) {
                    Some(i) => data = &data[i..],
                    None => return,
                }
                continue;
            }
            let n = self.run(data, ts, mark, store, out);
            data = &data[n..];
        }
    }

    /// `missing` bytes were lost. When they all lie in the rest of the argument being read (its length came
    /// in its header) and its CRLF, the command's framing is intact: only that argument is lost (it comes
    /// out elided) and parsing goes on. Otherwise the command in progress is damaged, and the next one must
    /// be searched for. Returns whether the loss was confined to one argument.
    pub fn gap(&mut self, missing: u64, ts: i64, store: &mut ArgStore, out: &mut Vec<Event>) -> bool {
        if self.held.is_none() && self.lose_arg_bytes(missing, ts, store, out) {
            return true;
        }
        self.settle_held(store, out);
        self.abandon(store);
        self.state = State::Resync;
        self.start_probation();
        self.carry.clear();
        false
    }

    /// The stream ended: a command in progress is damaged, one held on probation is kept if the server
    /// answered it, else dropped (nothing confirmed it).
    pub fn finish(&mut self, store: &mut ArgStore, out: &mut Vec<Event>) {
        self.settle_held(store, out);
        self.abandon(store);
        self.state = State::Idle;
    }

    /// Nothing more will follow the held command (the stream ended, or its next bytes were lost): its reply
    /// is then all that can confirm it.
    fn settle_held(&mut self, store: &mut ArgStore, out: &mut Vec<Event>) {
        match self.held {
            Some(h) if h.answered => {
                self.held = None;
                out.push(Event::Command(h));
            }
            _ => self.drop_held(store, out),
        }
    }

    fn drop_held(&mut self, store: &mut ArgStore, out: &mut Vec<Event>) {
        if let Some(h) = self.held.take() {
            out.push(Event::Dropped);
            self.counts.unconfirmed += 1;
            self.counts.skipped += h.bytes_len as u64;
            // Read out of a value, or a command: its bytes may hold as many as the fewest bytes allow.
            self.counts.skipped_commands += 1 + h.bytes_len as u64 / MIN_ARRAY_COMMAND_BYTES;
            store.bytes.truncate(h.bytes_start);
            store.spans.truncate(h.spans_start);
        }
    }

    /// The gap part of `gap`: loses `missing` bytes inside the current argument's payload and CRLF.
    fn lose_arg_bytes(&mut self, missing: u64, ts: i64, store: &mut ArgStore, out: &mut Vec<Event>) -> bool {
        let (left, seen) = match self.state {
            State::Payload { left, .. } => (left, 0),
            State::Crlf(seen) => (0, seen as u64),
            _ => return false,
        };
        let rest = left + 2 - seen;
        if missing > rest {
            return false;
        }
        if left > 0 {
            // Value bytes are gone (a loss in the CRLF alone leaves the argument whole).
            if matches!(self.state, State::Payload { store: true, .. }) {
                self.elide_current(store);
            }
            self.counts.gap_args += 1;
        }
        let rest = rest - missing;
        self.state = match rest {
            0 => {
                self.arg_done(ts, store, out);
                return true;
            }
            1 => State::Crlf(1),
            2 => State::Crlf(0),
            _ => State::Payload { left: rest - 2, store: false },
        };
        true
    }

    /// The argument being read (and stored) lost bytes: it becomes elided, its bytes unknown.
    fn elide_current(&mut self, store: &mut ArgStore) {
        let last = store.spans.end() - 1;
        let span = store.spans.slice(last, 1)[0];
        store.bytes.truncate(self.cmd.bytes_start + span.start as u64);
        store.spans.truncate(last);
        store.spans.push(Span { start: ELIDED, len: 0 });
        self.cmd.elided += 1;
    }

    fn abandon(&mut self, store: &mut ArgStore) {
        if self.mid_command() {
            self.counts.damaged += 1;
            self.drop_command(store);
        }
        self.lines.clear();
    }

    fn drop_command(&mut self, store: &mut ArgStore) {
        store.bytes.truncate(self.cmd.bytes_start);
        store.spans.truncate(self.cmd.spans_start);
        self.inline.fill(0);
        self.inline.clear();
    }

    fn invalid(&mut self, store: &mut ArgStore, out: &mut Vec<Event>) {
        self.counts.invalid += 1;
        out.push(Event::Lost);
        self.start_probation();
        if self.mid_command() {
            self.drop_command(store);
        }
        self.lines.clear();
        self.state = State::Resync;
    }

    /// Parses until the data ends (returns its length) or turns out invalid (returns where; now resyncing).
    fn run(&mut self, data: &[u8], ts: i64, mark: u64, store: &mut ArgStore, out: &mut Vec<Event>) -> usize {
        let mut pos = 0;
        while pos < data.len() {
            let state = self.state;
            let ok = match state {
                State::Idle => {
                    self.begin(ts, mark, store);
                    if data[pos] == b'*' {
                        pos += 1;
                        self.state = State::Count;
                    } else {
                        self.cmd.inline = true;
                        self.state = State::Inline;
                    }
                    true
                }
                State::Count if !self.lines.is_active() && fast_int_line(&data[pos..]).is_some() => {
                    let (n, used) = fast_int_line(&data[pos..]).unwrap_or((0, 0));
                    pos += used;
                    self.on_count(Some(n))
                }
                State::ArgHeader if self.fast_args(data, &mut pos, ts, store, out) => true,
                State::Count => match self.lines.read(data, &mut pos, 20) {
                    Ok(Some(line)) => self.on_count(parse_int(line.bytes(data))),
                    Ok(None) => true,
                    Err(()) => false,
                },
                State::ArgHeader => {
                    pos += 1;
                    self.state = State::ArgLine;
                    data[pos - 1] == b'$'
                }
                State::ArgLine => match self.lines.read(data, &mut pos, 20) {
                    Ok(Some(line)) => self.on_arg_len(parse_int(line.bytes(data)), store),
                    Ok(None) => true,
                    Err(()) => false,
                },
                State::Payload { left, store: keep } => self.payload(data, &mut pos, left, keep, ts, store, out),
                State::Crlf(seen) => {
                    pos += 1;
                    if data[pos - 1] != b"\r\n"[seen as usize] {
                        false
                    } else {
                        if seen == 0 {
                            self.state = State::Crlf(1);
                        } else {
                            self.arg_done(ts, store, out);
                        }
                        true
                    }
                }
                State::Inline => self.inline(data, &mut pos, ts, store, out),
                State::Resync => return pos,
            };
            if !ok {
                self.invalid(store, out);
                return pos;
            }
        }
        data.len()
    }

    /// The hot path: reads the arguments wholly in `data` in one loop; false when it could take none (the
    /// general path then takes the next step, and reports any error).
    fn fast_args(&mut self, data: &[u8], pos: &mut usize, ts: i64, store: &mut ArgStore, out: &mut Vec<Event>) -> bool {
        let mut took = false;
        while self.state == State::ArgHeader && data.get(*pos) == Some(&b'$') {
            let Some((n, used)) = fast_int_line(&data[*pos + 1..]) else { break };
            let start = *pos + 1 + used;
            if n < 0 || n as u64 > self.limits.max_bulk_len || start + n as usize + 2 > data.len() {
                break;
            }
            let end = start + n as usize;
            if &data[end..end + 2] != b"\r\n" {
                break;
            }
            if self.open_arg(n as u64, store) {
                store.bytes.extend_from(data, start, n as usize);
            }
            *pos = end + 2;
            self.arg_done(ts, store, out);
            took = true;
        }
        took
    }

    fn begin(&mut self, ts: i64, mark: u64, store: &ArgStore) {
        self.cmd = Parsed {
            ts,
            end_ts: ts,
            bytes_start: store.bytes.end(),
            bytes_len: 0,
            spans_start: store.spans.end(),
            argc: 0,
            elided: 0,
            truncated: false,
            inline: false,
            refused: false,
            mark,
            turn: false,
            replied: false,
            answered: false,
        };
        self.want = 0;
        self.got = 0;
        self.stored = 0;
        self.redactor = Redactor::default();
    }

    fn on_count(&mut self, n: Option<i64>) -> bool {
        match n {
            // Redis ignores empty and null arrays on the request side.
            Some(n) if n <= 0 => {
                self.state = State::Idle;
                true
            }
            Some(n) if n as u64 <= self.limits.max_aggregate_len => {
                self.want = n as u32;
                self.state = State::ArgHeader;
                true
            }
            _ => false,
        }
    }

    fn on_arg_len(&mut self, n: Option<i64>, store: &mut ArgStore) -> bool {
        let Some(n) = n.filter(|&n| n >= 0 && n as u64 <= self.limits.max_bulk_len) else {
            return false;
        };
        let n = n as u64;
        let keep = self.open_arg(n, store);
        self.state = State::Payload { left: n, store: keep };
        true
    }

    /// Decides what becomes of the next argument (`len` bytes): stored, redacted, elided or (the command
    /// being too long) dropped; true when its bytes are to be copied.
    #[inline(always)]
    fn open_arg(&mut self, len: u64, store: &mut ArgStore) -> bool {
        if self.cmd.truncated {
            return false;
        }
        let start = (store.bytes.end() - self.cmd.bytes_start) as u32;
        if self.redactor.redact(self.got) {
            self.counts.redacted += 1;
            store.bytes.extend(REDACTED);
            store.spans.push(Span { start, len: REDACTED.len() as u32 });
            self.stored += 8 + REDACTED.len() as u64;
            return false;
        }
        if self.stored + 8 + len.min(self.limits.max_arg_bytes as u64 + 1) > self.limits.max_command_bytes as u64 {
            self.cmd.truncated = true;
            return false;
        }
        self.stored += 8;
        if len > self.limits.max_arg_bytes as u64 {
            self.counts.elided += 1;
            self.cmd.elided += 1;
            store.spans.push(Span { start: ELIDED, len: 0 });
            return false;
        }
        self.stored += len;
        store.spans.push(Span { start, len: len as u32 });
        true
    }

    #[allow(clippy::too_many_arguments)]
    fn payload(
        &mut self,
        data: &[u8],
        pos: &mut usize,
        left: u64,
        keep: bool,
        ts: i64,
        store: &mut ArgStore,
        out: &mut Vec<Event>,
    ) -> bool {
        let avail = (data.len() - *pos) as u64;
        if avail >= left + 2 {
            let end = *pos + left as usize;
            if keep {
                store.bytes.extend(&data[*pos..end]);
            }
            if &data[end..end + 2] != b"\r\n" {
                *pos = end;
                return false;
            }
            *pos = end + 2;
            self.arg_done(ts, store, out);
            return true;
        }
        let n = left.min(avail) as usize;
        if keep {
            store.bytes.extend(&data[*pos..*pos + n]);
        }
        *pos += n;
        self.state =
            if n as u64 == left { State::Crlf(0) } else { State::Payload { left: left - n as u64, store: keep } };
        true
    }

    #[inline(always)]
    fn arg_done(&mut self, ts: i64, store: &mut ArgStore, out: &mut Vec<Event>) {
        let held = store.spans.end() - self.cmd.spans_start;
        if self.redactor.watching(self.got) && held > self.got as u64 {
            let span = store.spans.slice(store.spans.end() - 1, 1)[0];
            let arg = match span.start {
                ELIDED => &[][..],
                start => store.bytes.slice(self.cmd.bytes_start + start as u64, span.len as usize),
            };
            self.redactor.observe(self.got, arg);
        }
        self.got += 1;
        if self.got == self.want {
            self.complete(ts, store, out);
        } else {
            self.state = State::ArgHeader;
        }
    }

    fn complete(&mut self, ts: i64, store: &ArgStore, out: &mut Vec<Event>) {
        self.cmd.end_ts = ts;
        self.cmd.argc = (store.spans.end() - self.cmd.spans_start) as u32;
        self.cmd.bytes_len = (store.bytes.end() - self.cmd.bytes_start) as u32;
        if self.probation {
            // Confirmed by what follows it (`resync`) or by the server answering (`confirm_by_reply`).
            self.held = Some(self.cmd);
            self.state = State::Resync;
            return;
        }
        out.push(Event::Command(self.cmd));
        self.state = State::Idle;
    }

    fn inline(&mut self, data: &[u8], pos: &mut usize, ts: i64, store: &mut ArgStore, out: &mut Vec<Event>) -> bool {
        let rest = &data[*pos..];
        let max = self.limits.max_line_len;
        let Some(nl) = rest.iter().position(|&b| b == b'\n') else {
            self.inline.extend_from_slice(rest);
            *pos = data.len();
            return self.inline.len() <= max;
        };
        *pos += nl + 1;
        let mut line = mem::take(&mut self.inline);
        line.extend_from_slice(&rest[..nl]);
        let ok = line.len() <= max && self.inline_line(&line, ts, store, out);
        line.fill(0);
        line.clear();
        self.inline = line;
        ok
    }

    fn inline_line(&mut self, raw: &[u8], ts: i64, store: &mut ArgStore, out: &mut Vec<Event>) -> bool {
        let line = raw.strip_suffix(b"\r").unwrap_or(raw);
        let mut args = mem::take(&mut self.unquoted);
        let mut ends = mem::take(&mut self.ends);
        let split = split_inline(line, &mut args, &mut ends);
        let name = match (&split, ends.first()) {
            (Ok(()), Some(&end)) => Some(&args[..end]),
            _ => None,
        };
        if name.is_some_and(cross_protocol) {
            args.fill(0);
            (self.unquoted, self.ends) = (args, ends);
            return false;
        }
        let known = name.is_some_and(|n| n.len() <= 32 && lookup(&n.to_ascii_uppercase()).is_some());
        if split.is_ok() && ends.is_empty() {
            // Redis skips empty lines: no command, no reply.
            self.state = State::Idle;
        } else if !known {
            self.counts.refused_lines += 1;
            self.counts.refused_bytes += raw.len() as u64 + 1;
            self.cmd.refused = true;
            self.complete(ts, store, out);
        } else {
            let mut start = 0;
            for &end in &ends {
                let arg = &args[start..end];
                if self.open_arg(arg.len() as u64, store) {
                    store.bytes.extend(arg);
                    self.redactor.observe(self.got, arg);
                }
                self.got += 1;
                start = end;
            }
            self.complete(ts, store, out);
        }
        args.fill(0);
        (self.unquoted, self.ends) = (args, ends);
        true
    }

    /// Looks for the next command start; returns where in `data` parsing goes on, None if all was taken.
    ///
    /// A command held on probation is confirmed when the next command start follows it at once; anything
    /// else after it (bytes no command starts with) says it was read out of a value: it is dropped.
    fn resync(&mut self, data: &[u8], ts: i64, mark: u64, store: &mut ArgStore, out: &mut Vec<Event>) -> Option<usize> {
        if !self.carry.is_empty() {
            let c = self.carry.len();
            let k = data.len().min(MAX_CANDIDATE);
            let mut joined = [0u8; 2 * MAX_CANDIDATE];
            joined[..c].copy_from_slice(&self.carry);
            joined[c..c + k].copy_from_slice(&data[..k]);
            match scan(&joined[..c + k], c, &mut self.counts.skipped_commands) {
                Scan::Found(i) => {
                    self.found(i, store, out);
                    self.state = State::Idle;
                    let carry = mem::take(&mut self.carry);
                    let n = self.run(&carry[i..], self.carry_ts, self.carry_mark, store, out);
                    // Invalid inside the carry: its rest is skipped, the search goes on in `data`.
                    self.counts.skipped += (c - i - n) as u64;
                    self.carry = carry;
                    self.carry.clear();
                    return Some(0);
                }
                Scan::Undecided(i) => {
                    if i > 0 {
                        self.judge_held(false, store, out);
                    }
                    self.counts.skipped += i as u64;
                    self.carry.drain(..i);
                    self.carry.extend_from_slice(data);
                    return None;
                }
                Scan::Nothing => {
                    self.judge_held(false, store, out);
                    self.counts.skipped += c as u64;
                    self.carry.clear();
                }
            }
        }
        match scan(data, data.len(), &mut self.counts.skipped_commands) {
            Scan::Found(i) => {
                self.found(i, store, out);
                self.state = State::Idle;
                Some(i)
            }
            Scan::Undecided(i) => {
                if i > 0 {
                    self.judge_held(false, store, out);
                }
                self.counts.skipped += i as u64;
                self.carry.extend_from_slice(&data[i..]);
                self.carry_ts = ts;
                self.carry_mark = mark;
                None
            }
            Scan::Nothing => {
                self.judge_held(false, store, out);
                self.counts.skipped += data.len() as u64;
                None
            }
        }
    }

    /// A command starts `i` bytes on: a resync, or (at once after a held command) a confirmation.
    fn found(&mut self, i: usize, store: &mut ArgStore, out: &mut Vec<Event>) {
        if !(i == 0 && self.held.is_some()) {
            self.counts.resyncs += 1;
        }
        self.judge_held(i == 0, store, out);
        self.counts.skipped += i as u64;
    }

    /// A command start follows the held command at once (`next`) or not: confirmed, or dropped (even when
    /// answered: the bytes after it say it was read out of a value). Each command read on probation needs
    /// its own confirmation, until `TRUSTED_AFTER` of them in a row, or one both answered by the server and
    /// followed by the next command, end probation: both streams then agree on where a command ended.
    fn judge_held(&mut self, next: bool, store: &mut ArgStore, out: &mut Vec<Event>) {
        if next {
            if let Some(h) = self.held.take() {
                out.push(Event::Command(h));
                self.confirmed = if h.answered { TRUSTED_AFTER } else { self.confirmed + 1 };
                // The command starting now is parsed as any other: the stream is trusted from here on.
                self.probation = self.confirmed < TRUSTED_AFTER;
            }
        } else {
            self.drop_held(store, out);
            self.confirmed = 0;
        }
    }

    fn start_probation(&mut self) {
        self.probation = true;
        self.confirmed = 0;
    }
}

/// Commands confirmed in a row (each followed at once by the next command's start) after which the stream is
/// trusted again. A value's text would have to spell that many commands back to back, the last followed by
/// yet another command start; each confirmation depends on the bytes alone, never on how they were chunked.
const TRUSTED_AFTER: u32 = 4;

/// `POST` and `Host:` as a command name are an HTTP request sent to a Redis port (a browser or proxy tricked
/// into it): Redis takes them for an attack and closes the connection (its `securityWarningCommand`). The
/// bytes are not Redis traffic; they are invalid here.
fn cross_protocol(name: &[u8]) -> bool {
    name.eq_ignore_ascii_case(b"POST") || name.eq_ignore_ascii_case(b"Host:")
}
