//! From a parsed frame to what is kept of a reply, and the checks that a reply can belong to a command.
//!
//! Commands are classified once, when they are read, by what the session needs to know of them: how to
//! summarize their reply (HGETALL's field names), whether they change how the connection replies
//! (MULTI/EXEC, pub/sub, HELLO, CLIENT REPLY, MONITOR, RESET), and which reply shapes they allow. The shape
//! check is the session's alarm for a loss nobody reported: an HMGET of 20 fields answered by an array of 3
//! cannot be its reply, whatever the pairing says.

use super::arena::{ArgsView, Fifo, Span};
use super::command::Reply;
use super::error_code::ErrorCode;
use super::reply::{Frame, Kind, Node, NO_KEY};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Channels {
    Plain,
    Pattern,
    Shard,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ClientReply {
    On,
    Off,
    Skip,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Class {
    /// HMGET: an array of one element per field.
    Hmget,
    /// MGET: an array of one element per key.
    Mget,
    Hgetall,
    /// A bulk string or nil (GET, HGET, GETDEL, GETEX, GETSET).
    GetLike,
    /// An integer (INCR, DEL, EXISTS, HSET, HDEL, EXPIRE, ...), at most the bound when the command counts
    /// what it was given (DEL of 3 keys answers 0 to 3, HSET of 4 field-value pairs 0 to 4 new fields) or
    /// answers 0 or 1 (EXPIRE, HEXISTS): after a loss, the bound tells apart the replies of a run of them.
    IntLike(Option<u32>),
    Multi,
    Exec,
    Discard,
    /// HELLO and the protocol version it asks for (0 when it asks for none).
    Hello(u8),
    Reset,
    Monitor,
    Subscribe(Channels),
    Unsubscribe(Channels),
    ClientReply(ClientReply),
    Other,
}

/// Classifies a command by its arguments.
pub(crate) fn classify(args: ArgsView) -> Class {
    let Some(name) = args.get(0) else { return Class::Other };
    let mut buf = [0u8; 16];
    if name.len() > buf.len() {
        return Class::Other;
    }
    let upper = &mut buf[..name.len()];
    upper.copy_from_slice(name);
    upper.make_ascii_uppercase();
    let arg_is = |i: usize, word: &[u8]| args.get(i).is_some_and(|a| a.eq_ignore_ascii_case(word));
    let argc = args.len() as u32;
    match &*upper {
        b"HMGET" => Class::Hmget,
        b"MGET" => Class::Mget,
        b"HGETALL" => Class::Hgetall,
        b"GET" | b"HGET" | b"GETDEL" | b"GETEX" | b"GETSET" => Class::GetLike,
        b"DEL" | b"UNLINK" | b"EXISTS" | b"TOUCH" => Class::IntLike(Some(argc.saturating_sub(1))),
        b"HDEL" | b"SADD" | b"SREM" => Class::IntLike(Some(argc.saturating_sub(2))),
        b"HSET" => Class::IntLike(Some(argc.saturating_sub(2) / 2)),
        b"HSETNX" | b"HEXISTS" | b"EXPIRE" | b"PEXPIRE" | b"EXPIREAT" | b"PEXPIREAT" | b"PERSIST" => Class::IntLike(Some(1)),
        b"INCR" | b"DECR" | b"INCRBY" | b"DECRBY" | b"HLEN" | b"HINCRBY" | b"HSTRLEN" | b"TTL" | b"PTTL" | b"STRLEN"
        | b"LPUSH" | b"RPUSH" | b"LLEN" | b"SCARD" | b"ZCARD" | b"PUBLISH" | b"DBSIZE" => Class::IntLike(None),
        b"MULTI" => Class::Multi,
        b"EXEC" => Class::Exec,
        b"DISCARD" => Class::Discard,
        b"HELLO" => Class::Hello(match args.get(1) {
            Some(b"2") => 2,
            Some(b"3") => 3,
            _ => 0,
        }),
        b"RESET" => Class::Reset,
        b"MONITOR" => Class::Monitor,
        b"SUBSCRIBE" => Class::Subscribe(Channels::Plain),
        b"PSUBSCRIBE" => Class::Subscribe(Channels::Pattern),
        b"SSUBSCRIBE" => Class::Subscribe(Channels::Shard),
        b"UNSUBSCRIBE" => Class::Unsubscribe(Channels::Plain),
        b"PUNSUBSCRIBE" => Class::Unsubscribe(Channels::Pattern),
        b"SUNSUBSCRIBE" => Class::Unsubscribe(Channels::Shard),
        b"CLIENT" if arg_is(1, b"REPLY") && args.len() == 3 => {
            if arg_is(2, b"ON") {
                Class::ClientReply(ClientReply::On)
            } else if arg_is(2, b"OFF") {
                Class::ClientReply(ClientReply::Off)
            } else if arg_is(2, b"SKIP") {
                Class::ClientReply(ClientReply::Skip)
            } else {
                Class::Other
            }
        }
        _ => Class::Other,
    }
}

/// A command whose name was not kept (cut by a gap: it could be MULTI, EXEC, CLIENT, anything), or that may
/// change how the connection replies (CLIENT REPLY, HELLO) with an argument saying how not kept: its class
/// cannot be told, nor how the server answers what follows.
pub(crate) fn mode_unknown(args: ArgsView) -> bool {
    let name_is = |w: &[u8]| args.get(0).is_some_and(|a| a.eq_ignore_ascii_case(w));
    args.is_elided(0) || ((name_is(b"CLIENT") || name_is(b"HELLO")) && (1..args.len()).any(|i| args.is_elided(i)))
}

/// A pub/sub frame, named by its first element.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum PubSub {
    Subscribed(Channels),
    Unsubscribed(Channels),
    Message,
}

pub(crate) fn pubsub_kind(tag: &[u8]) -> Option<PubSub> {
    Some(match tag {
        b"subscribe" => PubSub::Subscribed(Channels::Plain),
        b"psubscribe" => PubSub::Subscribed(Channels::Pattern),
        b"ssubscribe" => PubSub::Subscribed(Channels::Shard),
        b"unsubscribe" => PubSub::Unsubscribed(Channels::Plain),
        b"punsubscribe" => PubSub::Unsubscribed(Channels::Pattern),
        b"sunsubscribe" => PubSub::Unsubscribed(Channels::Shard),
        b"message" | b"pmessage" | b"smessage" => PubSub::Message,
        _ => return None,
    })
}

/// Whether a reply whose top node is `top` can answer a command of `class` with `argc` arguments.
pub(crate) fn compatible(class: Class, argc: u32, top: &Node) -> bool {
    use Kind::*;
    if matches!(top.kind, Error | BulkError) {
        return true;
    }
    match class {
        Class::Hmget => matches!(top.kind, Array | Set) && top.len as u64 + 2 == argc as u64,
        Class::Mget => matches!(top.kind, Array | Set) && top.len as u64 + 1 == argc as u64,
        Class::Hgetall => top.kind == Map || (top.kind == Array && top.len.is_multiple_of(2)),
        Class::GetLike => matches!(top.kind, Bulk | Verbatim | Nil | Null),
        Class::IntLike(at_most) => top.kind == Integer && at_most.is_none_or(|n| top.int <= n as i64),
        Class::Multi | Class::Discard => top.kind == Simple,
        Class::Exec => matches!(top.kind, Array | Nil | Null),
        _ => true,
    }
}

/// Whether `compatible` can refuse a reply for a command of `class` (it takes any reply for the rest: a SET's,
/// an unclassified command's).
pub(crate) fn can_refuse(class: Class) -> bool {
    matches!(
        class,
        Class::Hmget | Class::Mget | Class::Hgetall | Class::GetLike | Class::IntLike(_) | Class::Multi | Class::Discard | Class::Exec
    )
}

/// Whether a reply whose top node is `top` is evidence that a command of `class` was sent: it could answer
/// it (`compatible`) and is no error, since Redis answers bytes that are no command (a value's text read as
/// an inline line) with an error too.
pub(crate) fn confirms(class: Class, argc: u32, top: &Node) -> bool {
    !matches!(top.kind, Kind::Error | Kind::BulkError) && compatible(class, argc, top)
}

/// A reply as kept until its command is emitted; aggregates point into a `ReplyStore`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Stored {
    Unknown,
    NoReply,
    Nil,
    Bulk(u32),
    Integer(i64),
    Simple,
    Error(ErrorCode),
    Other,
    Array { lens: u64, n: u32 },
    Map { lens: u64, n: u32, bytes: u64, bytes_len: u32, spans: u64 },
}

impl Stored {
    /// Holds positions in the `ReplyStore`.
    pub fn uses_store(&self) -> bool {
        matches!(self, Stored::Array { .. } | Stored::Map { .. })
    }
}

/// Element lengths and field names of the replies not yet emitted.
pub(crate) struct ReplyStore {
    pub lens: Fifo<Option<u32>>,
    pub bytes: Fifo<u8>,
    pub spans: Fifo<Span>,
}

impl ReplyStore {
    pub fn new() -> ReplyStore {
        ReplyStore { lens: Fifo::new(), bytes: Fifo::new(), spans: Fifo::new() }
    }

    /// Forgets everything: no emitted-to-be reply points here any more.
    pub fn release_all(&mut self) {
        self.lens.release(self.lens.end());
        self.bytes.release(self.bytes.end());
        self.spans.release(self.spans.end());
    }

    pub fn public(&self, s: Stored) -> Reply<'_> {
        match s {
            Stored::Unknown => Reply::Unknown,
            Stored::NoReply => Reply::NoReply,
            Stored::Nil => Reply::Nil,
            Stored::Bulk(len) => Reply::Bulk { len },
            Stored::Integer(v) => Reply::Integer(v),
            Stored::Simple => Reply::Simple,
            Stored::Error(code) => Reply::Error(code),
            Stored::Other => Reply::Other,
            Stored::Array { lens, n } => Reply::Array(self.lens.slice(lens, n as usize)),
            Stored::Map { lens, n, bytes, bytes_len, spans } => Reply::Map {
                fields: ArgsView {
                    bytes: self.bytes.slice(bytes, bytes_len as usize),
                    spans: self.spans.slice(spans, n as usize),
                },
                value_lens: self.lens.slice(lens, n as usize),
            },
        }
    }
}

/// Index just past the subtree of `frame.nodes[root]`.
pub(crate) fn subtree_end(nodes: &[Node], root: usize) -> usize {
    let depth = nodes[root].depth;
    if depth == 0 {
        return nodes.len();
    }
    nodes[root + 1..].iter().position(|n| n.depth <= depth).map_or(nodes.len(), |i| root + 1 + i)
}

/// Summarizes the reply rooted at `frame.nodes[root]` for a command of `class`.
pub(crate) fn summarize(frame: &Frame, root: usize, class: Class, store: &mut ReplyStore) -> Stored {
    let node = frame.nodes[root];
    match node.kind {
        Kind::Simple => Stored::Simple,
        Kind::Error | Kind::BulkError => Stored::Error(error_code(frame, &node)),
        Kind::Integer => Stored::Integer(node.int),
        Kind::Bulk => Stored::Bulk(node.len),
        Kind::Verbatim => Stored::Bulk(node.len.saturating_sub(4)),
        Kind::Nil | Kind::Null => Stored::Nil,
        Kind::Bool | Kind::Double | Kind::BigNumber => Stored::Other,
        Kind::Array | Kind::Set | Kind::Push | Kind::Map => {
            let children = &frame.nodes[root + 1..subtree_end(&frame.nodes, root)];
            let count = if node.kind == Kind::Map { 2 * node.len as usize } else { node.len as usize };
            // Nested aggregates leave deeper nodes among the children: such replies are not described.
            if frame.overflow || children.len() != count {
                return Stored::Other;
            }
            if class == Class::Hgetall && (node.kind == Kind::Map || node.kind == Kind::Array) {
                return fields(frame, children, store);
            }
            if node.kind == Kind::Map {
                return Stored::Other;
            }
            lengths(children, store)
        }
    }
}

/// The code of the error `node` of `frame`.
pub(crate) fn error_code(frame: &Frame, node: &Node) -> ErrorCode {
    frame.codes.get(node.code as usize).map_or(ErrorCode::UNNAMED, |text| text.code())
}

fn string_len(n: &Node) -> Option<Option<u32>> {
    match n.kind {
        Kind::Bulk | Kind::Simple => Some(Some(n.len)),
        Kind::Verbatim => Some(Some(n.len.saturating_sub(4))),
        Kind::Nil | Kind::Null => Some(None),
        _ => None,
    }
}

fn lengths(children: &[Node], store: &mut ReplyStore) -> Stored {
    let lens = store.lens.end();
    for c in children {
        match string_len(c) {
            Some(len) => store.lens.push(len),
            None => {
                store.lens.truncate(lens);
                return Stored::Other;
            }
        }
    }
    Stored::Array { lens, n: children.len() as u32 }
}

/// HGETALL: field names (captured keys at even positions) and the lengths of the values after them.
fn fields(frame: &Frame, children: &[Node], store: &mut ReplyStore) -> Stored {
    let valid = children.len().is_multiple_of(2)
        && children.chunks(2).all(|p| p[0].key != NO_KEY && string_len(&p[1]).is_some());
    if !valid {
        return Stored::Other;
    }
    let (lens, bytes, spans) = (store.lens.end(), store.bytes.end(), store.spans.end());
    let mut at = 0u32;
    for pair in children.chunks(2) {
        let key = frame.key_spans[pair[0].key as usize];
        let name = &frame.keys[key.start as usize..(key.start + key.len) as usize];
        store.bytes.extend(name);
        store.spans.push(Span { start: at, len: key.len });
        at += key.len;
        store.lens.push(string_len(&pair[1]).flatten());
    }
    Stored::Map { lens, n: (children.len() / 2) as u32, bytes, bytes_len: at, spans }
}
