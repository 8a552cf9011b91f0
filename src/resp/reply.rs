//! The reply side: a streaming RESP2/RESP3 parser that summarizes frames instead of materializing them.
//!
//! Bytes go through once, whatever the chunking: the parser is a state machine (header line, bulk payload,
//! its CRLF) with an explicit stack of open aggregates, so a 500 MB bulk cut into 10,000 chunks costs 10,000
//! small steps and no buffering, and a frame is never reparsed. Value bytes are skipped, not copied; what is
//! kept per frame is a list of `Node`s (kind, length or integer) down to the depth the session asks for, the
//! bulk strings at even positions of one depth when the session asks for HGETALL's field names, and a short
//! `tag` (a status like `QUEUED`, or the first string of an aggregate like `message`) for the session's own
//! decisions. Attributes (`|`) are parsed and dropped: they describe the reply that follows and are not it.
//!
//! Bounds are checked on each header before anything is allocated: bulk length, aggregate length, nesting
//! depth, line length (see `Limits`). RESP3 streamed strings and aggregates (`$?`, `*?`) are not sent by
//! Redis and are treated as invalid.

use super::arena::Span;
use super::error_code::CodeText;
use super::line::{fast_int_line, parse_int, LineReader};
use super::Limits;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Kind {
    Simple,
    Error,
    Integer,
    Bulk,
    BulkError,
    Verbatim,
    /// `$-1` or `*-1` (RESP2).
    Nil,
    /// `_` (RESP3).
    Null,
    Bool,
    Double,
    BigNumber,
    Array,
    Set,
    Push,
    Map,
}

pub(crate) const NO_KEY: u32 = u32::MAX;
pub(crate) const TAG: usize = 16;

/// One element of a frame, in document order.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Node {
    pub kind: Kind,
    /// 0 for the frame itself, 1 for its elements, ...
    pub depth: u8,
    /// Bytes of a string (of a simple string's line), elements of an aggregate (pairs of a map).
    pub len: u32,
    /// The value of an integer.
    pub int: i64,
    /// Index into `Frame::key_spans` when the string's bytes were captured.
    pub key: u32,
    /// Index into `Frame::codes` for an error (`NO_KEY` otherwise).
    pub code: u32,
}

/// What the session wants kept of the next frame.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct Plan {
    /// Record nodes down to this depth (1: a reply's elements; 2: also the elements of EXEC's replies).
    pub depth: u8,
    /// Capture the bulk strings at even positions of this depth (HGETALL's field names); 0 for none.
    pub keys_at: u8,
}

/// The summary of the frame being parsed, complete when `advance` returns `Step::Frame`.
#[derive(Debug, Default)]
pub(crate) struct Frame {
    pub nodes: Vec<Node>,
    pub keys: Vec<u8>,
    pub key_spans: Vec<Span>,
    /// The beginnings of the recorded errors' texts, which give their codes.
    pub codes: Vec<CodeText>,
    /// A top-level simple string, or the first element of a top-level aggregate when it is a string of at
    /// most `TAG` bytes; `tag_len` is `None` otherwise.
    pub tag: [u8; TAG],
    pub tag_len: Option<u8>,
    /// Capture time of the chunk holding the frame's first byte.
    pub start_ts: i64,
    /// More nodes or key bytes than the limits allow: the summary is incomplete.
    pub overflow: bool,
}

impl Frame {
    pub fn tag(&self) -> Option<&[u8]> {
        self.tag_len.map(|n| &self.tag[..n as usize])
    }
}

/// Type bytes whose line is a number: lengths, counts, integers.
#[inline]
fn is_numeric(t: u8) -> bool {
    matches!(t, b':' | b'$' | b'!' | b'=' | b'*' | b'~' | b'>' | b'%' | b'|')
}

#[derive(Clone, Copy, Debug)]
enum Capture {
    None,
    Key,
    Tag,
    /// A bulk error's text, into the last of `Frame::codes`.
    Code,
}

#[derive(Clone, Copy, Debug)]
enum State {
    /// At the type byte of an element.
    Header,
    /// Inside a header line cut by a chunk boundary (its type byte).
    Line(u8),
    /// Inside a bulk payload: bytes left before its CRLF.
    Payload { left: u64, capture: Capture },
    /// Bytes of the CRLF after a payload already seen.
    Crlf(u8),
}

#[derive(Clone, Copy, Debug)]
struct Level {
    remaining: u64,
    /// Elements completed so far.
    index: u64,
    attribute: bool,
}

pub(crate) enum Step {
    /// A frame ended after this many bytes; its summary is in `frame`.
    Frame,
    /// Every byte was taken; the frame (if any) continues in the next chunk.
    More,
    /// The bytes are not RESP.
    Invalid,
}

pub(crate) struct ReplyParser {
    limits: Limits,
    state: State,
    lines: LineReader,
    stack: Vec<Level>,
    /// Attribute levels in `stack`: nothing inside them is recorded.
    attributes: usize,
    plan: Plan,
    /// A frame's first byte has been taken.
    started: bool,
    done: bool,
    pub frame: Frame,
}

impl ReplyParser {
    pub fn new(limits: Limits) -> ReplyParser {
        ReplyParser {
            limits,
            state: State::Header,
            lines: LineReader::default(),
            stack: Vec::new(),
            attributes: 0,
            plan: Plan::default(),
            started: false,
            done: false,
            frame: Frame::default(),
        }
    }

    /// No frame is in progress.
    pub fn at_boundary(&self) -> bool {
        !self.started
    }

    /// Forgets any frame in progress: the next byte is taken as the start of a frame.
    pub fn reset(&mut self) {
        self.state = State::Header;
        self.lines.clear();
        self.stack.clear();
        self.attributes = 0;
        self.started = false;
        self.done = false;
    }

    /// `n` bytes of the stream were lost. When they all lie in the rest of a bulk value the frame keeps (its
    /// length came in the header, and its bytes are skipped anyway), and in the CRLF after it, nothing the
    /// summary needs was lost: they are skipped and the frame goes on. Answers whether the frame is now
    /// complete, or None when the loss reaches bytes that matter (the parser is then unchanged).
    pub fn skip_value(&mut self, n: u64) -> Option<bool> {
        let left = match self.state {
            State::Payload { left, capture: Capture::None } => left,
            State::Crlf(seen) => {
                if n > u64::from(2 - seen) {
                    return None;
                }
                return Some(self.skip_crlf(seen as u64 + n));
            }
            _ => return None,
        };
        if n <= left {
            let rest = State::Payload { left: left - n, capture: Capture::None };
            self.state = if n == left { State::Crlf(0) } else { rest };
            return Some(false);
        }
        if n > left + 2 {
            return None;
        }
        Some(self.skip_crlf(n - left))
    }

    /// `n` bytes of the stream were lost from inside a top-level bulk string's value (or its CRLF) on, past
    /// its end: all the summary keeps of such a frame is its length, given by its header, so the frame ends
    /// with the value's bytes; the loss goes on into the frames after it, whose boundaries it took (the
    /// caller loses those). Answers how many of the lost bytes came after the frame, or None when the frame
    /// in progress is not such a bulk or the loss ends within it (the parser is then unchanged).
    pub fn end_cut_bulk(&mut self, n: u64) -> Option<u64> {
        if !self.stack.is_empty() || self.attributes > 0 {
            return None;
        }
        let rest = match self.state {
            State::Payload { left, capture: Capture::None } => left + 2,
            State::Crlf(seen) => u64::from(2 - seen),
            _ => return None,
        };
        if n <= rest {
            return None;
        }
        let done = self.skip_crlf(2);
        debug_assert!(done, "a top-level bulk ends the frame");
        Some(n - rest)
    }

    /// The first `seen` bytes of the CRLF after a payload are accounted for; answers whether a frame ended.
    fn skip_crlf(&mut self, seen: u64) -> bool {
        if seen < 2 {
            self.state = State::Crlf(seen as u8);
            return false;
        }
        self.state = State::Header;
        self.element_done();
        let done = self.done;
        if done {
            self.done = false;
            self.started = false;
        }
        done
    }

    /// Sets what to keep of the next frame; call at a boundary.
    pub fn begin(&mut self, plan: Plan) {
        debug_assert!(!self.started);
        self.plan = plan;
        let f = &mut self.frame;
        f.nodes.clear();
        f.keys.clear();
        f.key_spans.clear();
        f.codes.clear();
        f.tag_len = None;
        f.overflow = false;
    }

    /// Memory held, for the bounded-memory tests.
    pub fn held_bytes(&self) -> usize {
        self.frame.nodes.capacity() * std::mem::size_of::<Node>()
            + self.frame.keys.capacity()
            + self.frame.key_spans.capacity() * 8
            + self.frame.codes.capacity() * std::mem::size_of::<CodeText>()
            + self.stack.capacity() * std::mem::size_of::<Level>()
    }

    /// Parses from `data[0]` until a frame ends or the data does; returns the bytes taken and why it stopped.
    pub fn advance(&mut self, data: &[u8], ts: i64) -> (usize, Step) {
        let mut pos = 0;
        while pos < data.len() {
            if !self.started {
                self.started = true;
                self.frame.start_ts = ts;
            }
            let state = self.state;
            let ok = match state {
                State::Header if self.fast_bulks(data, &mut pos) => true,
                State::Header => {
                    let t = data[pos];
                    pos += 1;
                    match fast_int_line(&data[pos..]) {
                        Some((n, used)) if is_numeric(t) => {
                            pos += used;
                            self.on_number(t, Some(n))
                        }
                        _ => {
                            self.state = State::Line(t);
                            self.line(t, data, &mut pos)
                        }
                    }
                }
                State::Line(t) => self.line(t, data, &mut pos),
                State::Payload { left, capture } => self.payload(data, &mut pos, left, capture),
                State::Crlf(seen) => {
                    let want = b"\r\n"[seen as usize];
                    if data[pos] != want {
                        false
                    } else {
                        pos += 1;
                        if seen == 0 {
                            self.state = State::Crlf(1);
                        } else {
                            self.state = State::Header;
                            self.element_done();
                        }
                        true
                    }
                }
            };
            if !ok {
                return (pos, Step::Invalid);
            }
            if self.done {
                self.done = false;
                self.started = false;
                return (pos, Step::Frame);
            }
        }
        (pos, Step::More)
    }

    /// The hot path: bulk strings and nils wholly in `data`, inside an aggregate, read in one loop (an
    /// HMGET's reply). False when it took none; anything unusual is left to the general path.
    #[inline]
    fn fast_bulks(&mut self, data: &[u8], pos: &mut usize) -> bool {
        let mut took = false;
        while *pos < data.len() && data[*pos] == b'$' && !self.done {
            if self.attributes > 0 || self.stack.is_empty() || self.plan.keys_at as usize == self.stack.len() {
                break;
            }
            if self.first_of_top() {
                break;
            }
            let Some((n, used)) = fast_int_line(&data[*pos + 1..]) else { break };
            let start = *pos + 1 + used;
            if n == -1 {
                *pos = start;
                self.scalar(Kind::Nil, 0, 0);
            } else {
                // Bounded before it is added: a hostile length must not overflow the offset.
                if n < 0 || n as u64 > self.limits.max_bulk_len {
                    break;
                }
                let end = start + n as usize;
                if end + 2 > data.len() || &data[end..end + 2] != b"\r\n" {
                    break;
                }
                *pos = end + 2;
                self.scalar(Kind::Bulk, n as usize, 0);
            }
            took = true;
        }
        took
    }

    /// Longest header line for a type byte.
    fn max_line(&self, t: u8) -> usize {
        match t {
            b'+' | b'-' | b',' | b'(' => self.limits.max_line_len,
            _ => 20,
        }
    }

    fn line(&mut self, t: u8, data: &[u8], pos: &mut usize) -> bool {
        match self.lines.read(data, pos, self.max_line(t)) {
            Ok(Some(line)) => {
                self.state = State::Header;
                self.on_header(t, line.bytes(data), line.len())
            }
            Ok(None) => true,
            Err(()) => false,
        }
    }

    fn payload(&mut self, data: &[u8], pos: &mut usize, left: u64, capture: Capture) -> bool {
        let avail = (data.len() - *pos) as u64;
        if avail >= left + 2 {
            let end = *pos + left as usize;
            self.capture(capture, &data[*pos..end]);
            if &data[end..end + 2] != b"\r\n" {
                return false;
            }
            *pos = end + 2;
            self.state = State::Header;
            self.element_done();
            return true;
        }
        let n = left.min(avail) as usize;
        self.capture(capture, &data[*pos..*pos + n]);
        *pos += n;
        self.state = if n as u64 == left { State::Crlf(0) } else { State::Payload { left: left - n as u64, capture } };
        true
    }

    fn capture(&mut self, capture: Capture, bytes: &[u8]) {
        match capture {
            Capture::None => {}
            Capture::Key => self.frame.keys.extend_from_slice(bytes),
            Capture::Tag => {
                let f = &mut self.frame;
                let have = f.tag_len.unwrap_or(0) as usize;
                f.tag[have..have + bytes.len()].copy_from_slice(bytes);
                f.tag_len = Some((have + bytes.len()) as u8);
            }
            Capture::Code => {
                if let Some(text) = self.frame.codes.last_mut() {
                    text.extend(bytes);
                }
            }
        }
    }

    /// Acts on a complete header line (`line` is its first `KEEP` bytes, `len` its full length).
    fn on_header(&mut self, t: u8, line: &[u8], len: usize) -> bool {
        match t {
            b'+' => {
                if len <= TAG && (self.stack.is_empty() || self.first_of_top()) {
                    self.set_tag(line);
                }
                self.scalar(Kind::Simple, len, 0)
            }
            b'-' => {
                let code = self.code_slot(len);
                if let Some(text) = self.frame.codes.get_mut(code as usize) {
                    text.extend(line);
                }
                self.record(Kind::Error, len as u64, 0, NO_KEY);
                self.set_code(code);
                self.element_done();
                true
            }
            b'_' => len == 0 && self.scalar(Kind::Null, 0, 0),
            b'#' => (line == b"t" || line == b"f") && self.scalar(Kind::Bool, 0, 0),
            b',' => len > 0 && self.scalar(Kind::Double, 0, 0),
            b'(' => len > 0 && self.scalar(Kind::BigNumber, 0, 0),
            t if is_numeric(t) => self.on_number(t, parse_int(line)),
            _ => false,
        }
    }

    /// Acts on a header whose line is a number.
    #[inline]
    fn on_number(&mut self, t: u8, n: Option<i64>) -> bool {
        match t {
            b':' => n.is_some_and(|v| self.scalar(Kind::Integer, 0, v)),
            b'$' | b'!' | b'=' => self.string(t, n),
            _ => self.aggregate(t, n),
        }
    }

    fn set_tag(&mut self, line: &[u8]) {
        self.frame.tag[..line.len()].copy_from_slice(line);
        self.frame.tag_len = Some(line.len() as u8);
    }

    /// The element about to be read is the first of a top-level aggregate.
    fn first_of_top(&self) -> bool {
        self.attributes == 0 && self.stack.len() == 1 && self.stack[0].index == 0
    }

    fn scalar(&mut self, kind: Kind, len: usize, int: i64) -> bool {
        self.record(kind, len as u64, int, NO_KEY);
        self.element_done();
        true
    }

    fn string(&mut self, t: u8, n: Option<i64>) -> bool {
        let Some(n) = n else { return false };
        if n == -1 && t == b'$' {
            return self.scalar(Kind::Nil, 0, 0);
        }
        if n < 0 || n as u64 > self.limits.max_bulk_len || (t == b'=' && n < 4) {
            return false;
        }
        let kind = match t {
            b'$' => Kind::Bulk,
            b'!' => Kind::BulkError,
            _ => Kind::Verbatim,
        };
        let mut capture = Capture::None;
        let mut key = NO_KEY;
        if kind == Kind::BulkError {
            let code = self.code_slot(n as usize);
            if code != NO_KEY {
                capture = Capture::Code;
            }
            self.record(kind, n as u64, 0, key);
            self.set_code(code);
            self.state = State::Payload { left: n as u64, capture };
            return true;
        }
        if self.attributes == 0 {
            let depth = self.stack.len() as u8;
            let index = self.stack.last().map_or(0, |l| l.index);
            if kind == Kind::Bulk && self.plan.keys_at > 0 && depth == self.plan.keys_at && index.is_multiple_of(2) {
                if self.frame.keys.len() as u64 + n as u64 <= self.limits.max_field_bytes as u64 {
                    key = self.frame.key_spans.len() as u32;
                    self.frame.key_spans.push(Span { start: self.frame.keys.len() as u32, len: n as u32 });
                    capture = Capture::Key;
                } else {
                    self.frame.overflow = true;
                }
            } else if self.first_of_top() && n as usize <= TAG {
                self.frame.tag_len = Some(0);
                capture = Capture::Tag;
            }
        }
        self.record(kind, n as u64, 0, key);
        self.state = State::Payload { left: n as u64, capture };
        true
    }

    fn aggregate(&mut self, t: u8, n: Option<i64>) -> bool {
        let Some(n) = n else { return false };
        if n == -1 && t == b'*' {
            return self.scalar(Kind::Nil, 0, 0);
        }
        if n < 0 || n as u64 > self.limits.max_aggregate_len || self.stack.len() >= self.limits.max_depth {
            return false;
        }
        let pairs = t == b'%' || t == b'|';
        let children = if pairs { 2 * n as u64 } else { n as u64 };
        if t == b'|' {
            if children > 0 {
                self.stack.push(Level { remaining: children, index: 0, attribute: true });
                self.attributes += 1;
            }
            return true;
        }
        let kind = match t {
            b'*' => Kind::Array,
            b'~' => Kind::Set,
            b'>' => Kind::Push,
            _ => Kind::Map,
        };
        self.record(kind, n as u64, 0, NO_KEY);
        if children == 0 {
            self.element_done();
        } else {
            self.stack.push(Level { remaining: children, index: 0, attribute: false });
        }
        true
    }

    fn record(&mut self, kind: Kind, len: u64, int: i64, key: u32) {
        let depth = self.stack.len();
        if self.attributes > 0 || depth > self.plan.depth as usize {
            return;
        }
        if self.frame.nodes.len() >= self.limits.max_reply_elements {
            self.frame.overflow = true;
            return;
        }
        let len = len.min(u32::MAX as u64) as u32;
        self.frame.nodes.push(Node { kind, depth: depth as u8, len, int, key, code: NO_KEY });
    }

    /// Room for the code of an error of `len` bytes about to be recorded: its index in `Frame::codes`, or
    /// `NO_KEY` when the error will not be recorded (so codes never outnumber nodes).
    fn code_slot(&mut self, len: usize) -> u32 {
        let recorded = self.attributes == 0
            && self.stack.len() <= self.plan.depth as usize
            && self.frame.nodes.len() < self.limits.max_reply_elements;
        if !recorded {
            return NO_KEY;
        }
        self.frame.codes.push(CodeText::new(len));
        (self.frame.codes.len() - 1) as u32
    }

    /// The node just recorded is the error whose code is at `code`.
    fn set_code(&mut self, code: u32) {
        if code != NO_KEY {
            if let Some(node) = self.frame.nodes.last_mut() {
                node.code = code;
            }
        }
    }

    /// An element (scalar, string or closed aggregate) is complete: close the aggregates it completes.
    fn element_done(&mut self) {
        loop {
            let Some(top) = self.stack.last_mut() else {
                self.done = true;
                return;
            };
            top.remaining -= 1;
            top.index += 1;
            if top.remaining > 0 {
                return;
            }
            let closed = self.stack.pop().unwrap_or(Level { remaining: 0, index: 0, attribute: false });
            if closed.attribute {
                // An attribute is not an element of its parent: the element it describes follows.
                self.attributes -= 1;
                return;
            }
        }
    }
}
