//! Reply frames found again in the bytes read while the reply stream's frame boundaries were lost.
//!
//! After a loss of reply bytes the parser no longer knows where frames begin, and until now it skipped
//! every reply byte up to the next quiet moment (a command sent while the server was quiet, after the server
//! spoke: a frame boundary, as `session` takes a turn to be). The replies in between were lost with the
//! loss itself: on a pipelining connection, the rest of the pipeline the loss fell in. They are kept here
//! instead (bounded: beyond the connection's pending budget they are let go), and at the quiet moment the
//! frames among them are found again.
//!
//! Every frame ends with a CRLF, so a frame begins at the first byte kept or after a CRLF. From each such
//! position the parser reads one frame; a position *reaches* the quiet moment when whole frames follow
//! one another from it to the last byte kept exactly. Every true frame boundary reaches it (the stream is at
//! a frame boundary there), so the chain of frames from the earliest position that reaches it holds every
//! frame that began after the loss, from the first true boundary on. What comes before that boundary is the
//! tail of the reply the loss cut, whose bytes can read as frames of their own: the elements an MGET's or
//! HMGET's reply has left (bulk or nil frames), or frames a value's text spells after a CRLF. So the chain
//! drops its leading bulk or nil frames, up to as many as the longest such command held asks for (the
//! elements the cut reply can have left), and, when a command held gets values in its reply, its leading
//! line frames (`+`, `-`): an error fits any command, so no shape would catch a spelled one. The bulk or nil
//! frames dropped just before the first frame taken are not lost: the realignment holds them aside and,
//! once the frames after them are paired, gives them to the GETs before (`Realign::push_leading`). A command whose
//! reply may hold anything (an LRANGE, a command not classified) gives no bound: nothing is found again.
//! What a value could still spell after that (an integer, an array of the right length) must fit the
//! command the cut reply answered, which asked for a value; the realignment (`realign`) tests every frame
//! kept against the commands held before it uses any.
//!
//! The bytes read between two losses (a *piece*) end where the second began, mostly inside a frame: there
//! a position also reaches the end when the end cuts its frame (`first_frame_cut`). A position inside a
//! value can then read as a frame that runs over the true frames to the end (a bulk of a length its text
//! spells), so the chain taken is the one with the most whole frames, not the earliest.

use std::collections::HashMap;

use super::reply::{Kind, Plan, ReplyParser, Step};
use super::summary::Class;
use super::Limits;

/// Bytes the parser may read, per byte kept, while it looks for the frames: a value's bytes can make a
/// position read as a long aggregate, and hostile ones at many positions (the search then gives up).
const WORK_PER_BYTE: usize = 16;

/// What the reply to a command held can hold, as far as the frames found again care.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct ReplyBound {
    /// Top-level elements its reply can have that read as frames of their own (an MGET's bulks).
    pub elements: u32,
    /// Its reply can carry a value (whose text can spell frames).
    pub values: bool,
}

/// The bound for a command of `class` with `argc` arguments, its name `name`; None when its reply may hold
/// any frames.
pub(crate) fn reply_bound(class: Class, argc: u32, name: Option<&[u8]>) -> Option<ReplyBound> {
    let scalar = |values| Some(ReplyBound { elements: 0, values });
    match class {
        Class::Mget => Some(ReplyBound { elements: argc.saturating_sub(1), values: true }),
        Class::Hmget => Some(ReplyBound { elements: argc.saturating_sub(2), values: true }),
        Class::GetLike => scalar(true),
        Class::IntLike(_) => scalar(false),
        // `+OK` (a SET without options, which could ask for the old value).
        Class::Other if plain_set(argc, name?) => scalar(false),
        _ => None,
    }
}

fn plain_set(argc: u32, name: &[u8]) -> bool {
    let is = |w: &[u8]| name.eq_ignore_ascii_case(w);
    (is(b"SET") && argc == 3) || ((is(b"SETEX") || is(b"PSETEX")) && argc == 4) || (is(b"MSET") && argc % 2 == 1)
}

/// Reply bytes kept while the frame boundaries are lost, with the capture time of each chunk.
#[derive(Debug, Default)]
pub(crate) struct Unframed {
    pub bytes: Vec<u8>,
    /// (offset in `bytes`, capture time) where each chunk begins.
    pub chunks: Vec<(usize, i64)>,
    /// Reply bytes of the stream before the first byte kept.
    pub base: u64,
    on: bool,
}

impl Unframed {
    /// Keeps the bytes from here (the stream has read `base` reply bytes): they follow one another with no
    /// loss between them.
    pub fn start(&mut self, base: u64) {
        self.stop();
        self.on = true;
        self.base = base;
    }

    /// Lets every byte kept go, and keeps none until the next `start`.
    pub fn stop(&mut self) {
        self.on = false;
        self.bytes = Vec::new();
        self.chunks = Vec::new();
    }

    /// Keeps a chunk, unless the bytes kept would pass `max` (then none is kept any more).
    pub fn push(&mut self, ts: i64, data: &[u8], max: usize) {
        if !self.on {
            return;
        }
        if self.bytes.len() + data.len() > max {
            self.stop();
            return;
        }
        self.chunks.push((self.bytes.len(), ts));
        self.bytes.extend_from_slice(data);
    }

    /// Takes what was kept (and keeps no more).
    pub fn take(&mut self) -> Unframed {
        let taken = std::mem::take(self);
        self.stop();
        taken
    }

    pub fn held_bytes(&self) -> usize {
        self.bytes.capacity() + self.chunks.capacity() * 16
    }
}

/// Where the frames found again begin in `bytes`, and the frames dropped just before them that may be replies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Found {
    /// The first frame taken for a reply (see the module comment).
    pub start: usize,
    /// Where the bulk or nil frames dropped just before `start` begin (`start` when there are none), and how
    /// many there are: the elements a cut array may have left, or whole replies. Which, the offset found
    /// from the frames after them tells (`Realign::push_leading`).
    pub maybe: usize,
    pub maybe_frames: usize,
}

/// Where the frames found again begin in `bytes` (see the module comment), the commands held bounded by
/// `bound` (the most elements and whether any gets values). None when no position reaches the end, or when
/// none is left after the leading frames are dropped.
pub(crate) fn first_frame(bytes: &[u8], limits: Limits, bound: ReplyBound) -> Option<Found> {
    leading_dropped(&chain(bytes, limits, false)?, bound)
}

/// As `first_frame`, in bytes that end where a loss began, inside a frame or at its end: the frames are
/// those of the chain with the most whole frames from a position after a CRLF to the end, its last frame
/// cut or not (see the module comment). None also when the chain has no whole frame.
pub(crate) fn first_frame_cut(bytes: &[u8], limits: Limits, bound: ReplyBound) -> Option<Found> {
    leading_dropped(&chain(bytes, limits, true)?, bound)
}

/// Where the frames of `chain` are taken from, its leading frames dropped as the module comment says.
fn leading_dropped(chain: &[(usize, Kind)], bound: ReplyBound) -> Option<Found> {
    let mut elements = 0;
    let start = chain.iter().position(|&(_, kind)| match kind {
        Kind::Bulk | Kind::Nil | Kind::Null if elements < bound.elements => {
            elements += 1;
            false
        }
        Kind::Simple | Kind::Error | Kind::BulkError => !bound.values,
        _ => true,
    })?;
    // (A line frame dropped stays dropped: a value's text spells one easily.)
    let maybe_frames = chain[..start].iter().rev().take_while(|&&(_, kind)| matches!(kind, Kind::Bulk | Kind::Nil | Kind::Null)).count();
    Some(Found { start: chain[start].0, maybe: chain[start - maybe_frames].0, maybe_frames })
}

/// The frames (where each begins, and its top node's kind) from the earliest position from which whole
/// frames follow one another to the end of `bytes` exactly; when `cut`, also to a last frame the end cuts,
/// and from the position whose chain has the most whole frames (the earliest of those): a position inside
/// a value can read as a frame the end cuts (a bulk of a length the value's text spells) without passing
/// through the frames after it, and the true frames outnumber what a value spells.
fn chain(bytes: &[u8], limits: Limits, cut: bool) -> Option<Vec<(usize, Kind)>> {
    let n = bytes.len();
    let mut parser = ReplyParser::new(limits);
    let plan = Plan { depth: 1, keys_at: 0 };
    // Positions that reach the end: the next frame's start, this frame's kind (None when the end cuts it),
    // and the whole frames from it.
    let mut reach: HashMap<usize, (usize, Option<Kind>, usize)> = HashMap::new();
    let mut best: Option<(usize, usize)> = None;
    let mut work = WORK_PER_BYTE.saturating_mul(n);
    for p in (0..n).rev() {
        let after_crlf = p == 0 || (bytes[p - 1] == b'\n' && (p == 1 || bytes[p - 2] == b'\r'));
        if !after_crlf {
            continue;
        }
        parser.reset();
        parser.begin(plan);
        let (used, step) = parser.advance(&bytes[p..], 0);
        work = work.checked_sub(used)?;
        let q = p + used;
        let whole = match (step, parser.frame.nodes.first()) {
            (Step::Frame, Some(top)) if q == n => Some((Some(top.kind), 1)),
            (Step::Frame, Some(top)) => reach.get(&q).map(|r| (Some(top.kind), r.2 + 1)),
            (Step::More, _) if cut => Some((None, 0)),
            _ => None,
        };
        let Some((kind, frames)) = whole else { continue };
        reach.insert(p, (q, kind, frames));
        if frames > 0 && (!cut || best.is_none_or(|(_, most)| frames >= most)) {
            best = Some((p, frames));
        }
    }
    let mut at = best?.0;
    let mut out = Vec::new();
    while let Some(&(next, Some(kind), _)) = reach.get(&at) {
        out.push((at, kind));
        at = next;
    }
    Some(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const ANY: ReplyBound = ReplyBound { elements: 0, values: false };

    #[test]
    fn frames_are_found_from_the_first_boundary_after_the_cut() {
        // The tail of a bulk, then `:5`, a bulk, a nil.
        let bytes = b"lue\r\n:5\r\n$3\r\nabc\r\n$-1\r\n";
        assert_eq!(first_frame(bytes, Limits::default(), ANY).map(|f| f.start), Some(5));
    }

    #[test]
    fn nothing_is_found_unless_the_frames_reach_the_end() {
        assert_eq!(first_frame(b"lue\r\n:5\r\n$3\r\nab", Limits::default(), ANY), None);
    }

    #[test]
    fn bytes_a_loss_cut_end_in_the_frame_it_cut() {
        // The tail of a bulk, `:5`, a bulk, then a bulk cut: the whole frames from `:5` on.
        let bytes = b"lue\r\n:5\r\n$3\r\nabc\r\n$10\r\nabc";
        assert_eq!(first_frame(bytes, Limits::default(), ANY), None);
        assert_eq!(first_frame_cut(bytes, Limits::default(), ANY).map(|f| f.start), Some(5));
        // A value's text that reads as a long bulk (`$40`) reaches the end from early on, passing over the
        // true frames, which the end cuts: the chain with the most whole frames is taken.
        let bytes = b"x\r\n:9\r\n$40\r\n:1\r\n:2\r\n:3\r\n$5\r\nab";
        assert_eq!(first_frame_cut(bytes, Limits::default(), ANY).map(|f| f.start), Some(12));
    }

    #[test]
    fn an_mgets_remaining_elements_are_not_taken_for_replies() {
        // Two elements of a cut MGET reply, then an integer: with an MGET of 3 keys held, the two bulks may
        // be its elements.
        let bytes = b"$1\r\na\r\n$1\r\nb\r\n:7\r\n$1\r\nc\r\n";
        let mget = ReplyBound { elements: 3, values: true };
        let found = first_frame(bytes, Limits::default(), mget);
        assert_eq!(found, Some(Found { start: 14, maybe: 0, maybe_frames: 2 }));
        assert_eq!(first_frame(bytes, Limits::default(), ANY), Some(Found { start: 0, maybe: 0, maybe_frames: 0 }));
    }

    #[test]
    fn a_line_a_value_may_spell_is_not_taken_for_a_reply() {
        // A value's text ending in `\r\n-oops` reads as an error frame before the next real reply.
        let bytes = b"text\r\n-oops\r\n$1\r\nc\r\n";
        let get = ReplyBound { elements: 0, values: true };
        assert_eq!(first_frame(bytes, Limits::default(), get), Some(Found { start: 13, maybe: 13, maybe_frames: 0 }));
    }
}
