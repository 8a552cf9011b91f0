//! When a connection's end says every command it sent was answered: a realignment may then count replies.
//!
//! A connection that ends with a FIN each way, after a quiet moment of `SETTLE_NS` or more in which neither
//! side sent a byte, has had every command it sent answered, and every byte either side sent before its FIN
//! is in the capture or reported lost (the reassembler reports the bytes missing before a FIN). Redis reads a
//! command, runs it and writes its reply in one turn of its event loop, and closes its side only after it
//! read the client's FIN, which comes after every command: a reply still owed would have been written
//! before the server's FIN, not a quiet moment earlier. So the replies held after a loss are all those of
//! the commands sent since, and their count gives the offset of the commands read after the last loss
//! (`Realign::settled`).
//!
//! What would break it, and is kept out: a command that blocks (BLPOP, XREAD BLOCK, WAIT, ...) may be left
//! unanswered when the client gives up and closes, so a connection that sent one never settles; replies
//! still being read as frames are lost (`Session::framed`); replies owed to commands sent before the loss
//! (still draining) were not all seen. What is not seen: a lost command that blocks; a server other than
//! Redis (a proxy) that drops the replies it owes a client that closed.

use super::arena::ArgsView;

/// Quiet time before a FIN-closed connection's end for it to count as settled. A reply Redis owes is written
/// within the turn that read its command: a tenth of a second is far beyond a turn, and below the idle time
/// of a client that read its last replies, then closed.
pub(crate) const SETTLE_NS: i64 = 100_000_000;

/// Whether a command may wait for others before its reply comes (a blocking pop, XREAD and XREADGROUP,
/// which block when asked, WAIT): the server may stay quiet while it owes that reply.
pub(crate) fn blocks(args: ArgsView) -> bool {
    const BLOCKING: [&[u8]; 12] = [
        b"BLPOP", b"BRPOP", b"BRPOPLPUSH", b"BLMOVE", b"BLMPOP", b"BZPOPMIN", b"BZPOPMAX", b"BZMPOP", b"XREAD",
        b"XREADGROUP", b"WAIT", b"WAITAOF",
    ];
    args.get(0).is_some_and(|name| BLOCKING.iter().any(|b| name.eq_ignore_ascii_case(b)))
}
