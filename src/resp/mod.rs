//! Redis traffic of one TCP connection in, commands paired with summaries of their replies out.
//!
//! The reassembler hands a [`Session`] the bytes of both directions as they were captured, in chunks of any
//! size, with their capture times and the gaps where bytes were lost. Two streaming parsers read them:
//! `request` turns client bytes into argument lists (RESP arrays and inline commands, credentials redacted
//! as they are read), `reply` turns server bytes into summaries (kind, lengths, HGETALL field names) while
//! skipping every value byte. `session` pairs them: Redis answers the commands of a connection in order, so
//! each reply belongs to the oldest command still waiting, with the exceptions the protocol defines
//! (MULTI/EXEC, pub/sub, RESP3 pushes, CLIENT REPLY). After a gap the pairing is unknown until a point where
//! it is certain again (`session` explains when); commands in between are reported with `Reply::Unknown`.
//!
//! The protocol is Redis's RESP2 and RESP3 as specified in the Redis documentation ("Redis serialization
//! protocol specification"); the parsers follow the server's own limits (`proto-max-bulk-len`, inline
//! commands up to 64 KiB) so that hostile bytes are refused before anything is allocated.

mod arena;
mod batch;
mod command;
mod error_code;
mod inline;
mod line;
mod lockstep;
mod plain_text;
mod redact;
mod realign;
mod reframe;
mod reply;
mod request;
mod resync;
mod session;
mod settle;
mod summary;
mod tls;

#[cfg(test)]
mod testgen;
#[cfg(test)]
mod tests;

pub use crate::net::Direction;
pub use arena::{ArgsView, FieldsView, OwnedArgs};
pub use command::{Command, Reply};
pub use error_code::{ErrorCode, MAX_CODE};
pub use redact::REDACTED;
pub use plain_text::{is_inline_command_start, is_reply_line};
pub use session::Session;
pub use tls::is_tls_record;

/// Whether `d` begins with a plausible command (a RESP array naming a command we know), as a stream picked
/// up at an unknown point is searched for one.
pub fn is_command_start(d: &[u8]) -> bool {
    resync::check(d) == resync::Check::Yes
}

/// Whether `b` can begin a reply frame (a RESP2 or RESP3 type byte).
pub fn is_reply_start(b: u8) -> bool {
    b"+-:$*_#,(!=%~>|".contains(&b)
}

/// Bounds on what one connection may make us parse or hold. Input beyond the protocol bounds is invalid
/// (counted, then resynchronized); input beyond the memory bounds is summarized less precisely, never buffered.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    /// Longest bulk string accepted (Redis's `proto-max-bulk-len`, 512 MiB by default).
    pub max_bulk_len: u64,
    /// Most elements one array, set, push or map header may announce (a map counts its pairs).
    pub max_aggregate_len: u64,
    /// Deepest nesting of aggregates.
    pub max_depth: usize,
    /// Longest simple-string, error or inline-command line (Redis's inline limit is 64 KiB).
    pub max_line_len: usize,
    /// Arguments longer than this are not stored: they come out elided (`ArgsView::is_elided`) and are
    /// counted in `elided_args`.
    pub max_arg_bytes: u32,
    /// Bytes of arguments (plus 8 per argument) stored for one command; a longer command is not emitted.
    pub max_command_bytes: u32,
    /// Commands waiting for their reply; beyond it the oldest is emitted with `Reply::Unknown`.
    pub max_pending_commands: usize,
    /// Argument bytes (plus 8 per argument) held for waiting commands; beyond it the oldest is emitted with
    /// `Reply::Unknown`.
    pub max_pending_bytes: usize,
    /// The same, shared by every connection of a capture holding commands: each gets an equal share of it
    /// (no more than `max_pending_bytes`, no less than `MIN_PENDING_SHARE`), so that a capture of many
    /// connections whose replies never come (one direction only) holds a bounded whole, not 4 MiB each.
    pub max_pending_bytes_total: usize,
    /// Elements described per reply (an array's elements, or an EXEC's replies and their elements); a larger
    /// reply is summarized as `Reply::Other`.
    pub max_reply_elements: usize,
    /// Bytes of HGETALL field names kept per reply; a reply with more is summarized as `Reply::Other`.
    pub max_field_bytes: usize,
}

/// The least share of `max_pending_bytes_total` a connection gets, however many share it (a connection
/// always keeps its newest command, however large).
pub const MIN_PENDING_SHARE: usize = 4 << 10;

impl Limits {
    /// One connection's share of the pending budget when `holders` connections hold commands.
    pub fn pending_share(&self, holders: usize) -> usize {
        (self.max_pending_bytes_total / holders.max(1)).clamp(MIN_PENDING_SHARE, self.max_pending_bytes)
    }
}

impl Default for Limits {
    fn default() -> Limits {
        Limits {
            max_bulk_len: 512 << 20,
            max_aggregate_len: 1 << 24,
            max_depth: 64,
            max_line_len: 64 << 10,
            max_arg_bytes: 1 << 20,
            max_command_bytes: 16 << 20,
            max_pending_commands: 100_000,
            max_pending_bytes: 4 << 20,
            max_pending_bytes_total: 16 << 20,
            max_reply_elements: 1 << 18,
            max_field_bytes: 4 << 20,
        }
    }
}

/// Counts over one connection (add them up across connections). Every byte or frame that did not end up in
/// a paired command is in one of these.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RespStats {
    /// Commands emitted.
    pub commands: u64,
    /// Commands emitted with the reply the server sent them.
    pub paired: u64,
    /// Commands emitted with `Reply::Unknown`: their reply was lost, unpairable or never seen.
    pub unknown_replies: u64,
    /// Commands emitted with `Reply::NoReply` (CLIENT REPLY OFF/SKIP, transactions discarded or aborted).
    pub no_reply: u64,
    /// Commands cut by a gap or by invalid bytes: the server got them whole, we did not; not emitted.
    pub damaged_commands: u64,
    /// Commands longer than `max_command_bytes`: their reply is consumed, the command not emitted.
    pub oversized_commands: u64,
    /// Arguments not stored for being longer than `max_arg_bytes`.
    pub elided_args: u64,
    /// Arguments replaced by [`REDACTED`] (passwords, user names of AUTH, HELLO, ...).
    pub redacted_args: u64,
    /// Inline (telnet-style) commands among `commands`.
    pub inline_commands: u64,
    /// Reply frames that answered no known command (after a gap, or with nothing waiting).
    pub unpaired_replies: u64,
    /// Out-of-band frames: RESP3 pushes, pub/sub messages and extra confirmations, MONITOR output.
    pub pushes: u64,
    /// Replies summarized as `Other` because they exceeded `max_reply_elements` or `max_field_bytes`.
    pub oversized_replies: u64,
    /// Gaps reported by the reassembler, and the bytes they lost, per direction.
    pub request_gaps: u64,
    pub reply_gaps: u64,
    pub request_gap_bytes: u64,
    pub reply_gap_bytes: u64,
    /// Bytes that were not RESP (or not a frame we could place), per direction.
    pub invalid_requests: u64,
    pub invalid_replies: u64,
    /// Bytes skipped while looking for the next command start or frame boundary.
    pub request_skipped_bytes: u64,
    pub reply_skipped_bytes: u64,
    /// Times the request stream was picked up again at a plausible command start.
    pub request_resyncs: u64,
    /// Times the reply stream was picked up again at a frame boundary.
    pub reply_resyncs: u64,
    /// Times pairing became certain again after a loss.
    pub pairing_resyncs: u64,
    /// Replies paired after a loss by realignment: held until their shapes, over a run of them, fitted the
    /// commands held at one offset and at no other (`realign`).
    pub realigned_replies: u64,
    /// Replies that could not belong to the command they would pair with (too early, or of the wrong shape):
    /// evidence of a loss nobody reported; pairing stops until it is certain again.
    pub contradictions: u64,
    /// Commands emitted with `Reply::Unknown` because the pending queue was full.
    pub queue_overflows: u64,
    /// Arguments that lost bytes to a request-side gap falling inside them: the command is kept, the
    /// argument comes out elided (its loss stays confined to it, pairing goes on).
    pub args_lost_in_gaps: u64,
    /// Commands read after a resync that nothing confirmed (a value's bytes can spell a command): dropped,
    /// their bytes counted in `request_skipped_bytes`.
    pub unconfirmed_commands: u64,
    /// Inline lines Redis refuses (unbalanced quotes, no command it knows: garbage, or another protocol):
    /// not commands; each keeps its place among the replies (Redis answers it with an error).
    pub refused_inline_lines: u64,
    /// Their bytes.
    pub unparsable_bytes: u64,
    /// The connection is TLS (its client began with a TLS record): nothing in it can be read.
    pub encrypted_connections: u64,
}
