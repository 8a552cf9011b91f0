//! What a session emits: one command, its arguments, and a summary of its reply that holds no value bytes.

use super::arena::{ArgsView, FieldsView};
use super::error_code::ErrorCode;

/// One command of a connection, emitted in the order the client sent it, once its reply is known or
/// declared unknown. The views borrow the session's storage: copy what you keep.
#[derive(Clone, Copy, Debug)]
pub struct Command<'a> {
    /// Capture time of the chunk that held the command's first byte, ns since the epoch.
    pub ts_ns: i64,
    /// The arguments; `args.get(0)` is the command name as sent (any case). Credentials read
    /// [`super::REDACTED`]; arguments longer than `Limits::max_arg_bytes` are empty (see `elided_args`).
    pub args: ArgsView<'a>,
    /// How many arguments came out empty because they were too long to store.
    pub elided_args: u32,
    pub reply: Reply<'a>,
    /// Capture time of the chunk that held the reply's first byte; `None` unless the reply is known.
    /// latency_ns = reply_ts_ns - ts_ns.
    pub reply_ts_ns: Option<i64>,
    /// The command was inline (`PING\r\n`, as telnet sends), not a RESP array.
    pub inline: bool,
    /// The batch the client sent it in: its ordinal among the connection's round trips, from 0 (see `batch`).
    pub batch: u64,
}

/// A summary of a reply: its kind and sizes, never its values (field names of HGETALL aside, which are keys).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reply<'a> {
    /// The reply was lost (a gap, a capture that started or ended in between) or could not be paired with
    /// certainty. Never a guess.
    Unknown,
    /// The server sends no reply to this command by design: CLIENT REPLY OFF/SKIP in force, or a command
    /// queued in a transaction that was discarded or aborted (EXEC answered nil or EXECABORT).
    NoReply,
    /// A nil bulk string or array (RESP2) or a null (RESP3).
    Nil,
    /// A bulk (or verbatim) string of `len` bytes.
    Bulk {
        len: u32,
    },
    /// An array or set whose elements are all strings or nils: each element's length, or `None` for nil
    /// (HMGET, MGET). Arrays holding anything else (numbers, nested arrays) are `Other`.
    Array(&'a [Option<u32>]),
    /// The reply of HGETALL: field names and each value's length (from a RESP3 map or a RESP2 flat array).
    Map {
        fields: FieldsView<'a>,
        value_lens: &'a [Option<u32>],
    },
    Integer(i64),
    /// A simple string (`+OK`, `+PONG`); its text is not kept.
    Simple,
    /// An error, simple or bulk: its code (the first word); the rest of its text is not kept.
    Error(ErrorCode),
    /// Anything else (doubles, booleans, big numbers, maps other than HGETALL's, nested arrays, EXEC's own
    /// array whose elements went to the queued commands, replies too large to describe).
    Other,
}

impl PartialEq for ArgsView<'_> {
    fn eq(&self, other: &Self) -> bool {
        self.len() == other.len() && self.iter().zip(other.iter()).all(|(a, b)| a == b)
    }
}
impl Eq for ArgsView<'_> {}
