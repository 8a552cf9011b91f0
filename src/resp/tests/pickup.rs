//! Connections picked up mid-stream (every pooled connection of a long-running service, when a capture
//! starts): a command found by searching is held until the next command follows it at once, or the server
//! answers it. The answer counts when it is the first reply after the command, of its shape, the command sent
//! while the server was quiet and nothing following it; then no command is lost, the last one included.

use crate::resp::testgen::{array, bulk, cmds, Owned, Run};
use crate::resp::{Limits, Session};

fn picked_up() -> Run {
    Run::with(Session::mid_stream(Limits::default()))
}

fn lines(r: &Run) -> Vec<String> {
    r.got.iter().map(|g| g.line()).collect()
}

#[test]
fn three_sets_each_answered_are_all_kept() {
    let mut r = picked_up();
    for i in 1..=3 {
        r.req(10 * i, &cmds(&format!("SET k{i} v{i}"))).rep(10 * i + 5, b"+OK\r\n");
    }
    r.finish();
    assert_eq!(lines(&r), ["SET k1 v1", "SET k2 v2", "SET k3 v3"]);
    // The first reply restarts the reply parser and confirms k1; k1's reply and k2 following it end
    // probation, and k2, sent at a turn, resumes pairing.
    let replies: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    assert_eq!(replies, [Owned::Unknown, Owned::Simple, Owned::Simple]);
    let st = r.session.stats();
    assert_eq!((st.unconfirmed_commands, st.commands, st.paired, st.pairing_resyncs), (0, 3, 2, 1));
}

#[test]
fn the_only_command_of_a_capture_is_kept_when_answered() {
    let mut r = picked_up();
    r.req(10, &cmds("HMGET e a b")).rep(15, &array(&[Some(b"x"), None])).finish();
    assert_eq!(lines(&r), ["HMGET e a b"]);
    assert_eq!(r.session.stats().unconfirmed_commands, 0);
}

#[test]
fn an_unanswered_last_command_is_still_dropped() {
    let mut r = picked_up();
    r.req(10, &cmds("GET k1")).req(20, &cmds("GET k2")).finish();
    // k1 is confirmed by k2 following it; k2 by nothing.
    assert_eq!(lines(&r), ["GET k1"]);
    assert_eq!(r.session.stats().unconfirmed_commands, 1);
}

/// An error answers anything, a value's text read as an inline line too; an array of three cannot answer
/// an HMGET of two fields.
#[test]
fn a_reply_of_another_shape_or_an_error_confirms_nothing() {
    for (request, reply) in [
        (cmds("HMGET e a b"), array(&[None, None, None])),
        (cmds("GET k"), b"-ERR unknown command\r\n".to_vec()),
        (cmds("GET k"), b":1\r\n".to_vec()),
    ] {
        let mut r = picked_up();
        r.req(10, &request).rep(15, &reply).finish();
        assert!(r.got.is_empty(), "{:?} kept on {:?}", lines(&r), String::from_utf8_lossy(&reply));
        assert_eq!(r.session.stats().unconfirmed_commands, 1);
    }
}

/// The server spoke while the command was being sent: it was answering something sent before, and the
/// reply after the command may be that something's too.
#[test]
fn a_command_sent_while_the_server_spoke_is_not_confirmed_by_a_reply() {
    let c = cmds("GET k");
    let mut r = picked_up();
    r.req(10, &c[..6]).rep(11, &bulk(b"earlier")).req(12, &c[6..]).rep(15, &bulk(b"x")).finish();
    assert!(r.got.is_empty(), "{:?}", lines(&r));
}

/// Two replies while the client is quiet: one answers a command the capture did not see, and nothing says
/// which one is the held command's.
#[test]
fn a_second_reply_withdraws_the_confirmation() {
    let mut r = picked_up();
    r.req(10, &cmds("GET k")).rep(15, &bulk(b"x")).rep(16, &bulk(b"y")).finish();
    assert!(r.got.is_empty(), "{:?}", lines(&r));
}

/// A command spelled by a value, ending a segment, then a reply fitting it: the value's rest follows, so it
/// is dropped all the same (what follows the command decides first).
#[test]
fn a_command_inside_a_value_is_dropped_though_a_reply_fits_it() {
    let mut value = b"text ".to_vec();
    value.extend(cmds("GET planted"));
    let rest = b" more text";
    let mut r = picked_up();
    r.req(10, &value).rep(15, &bulk(b"x")).req(20, &[&rest[..], b"\r\n"].concat());
    r.req(30, &cmds("GET k1")).rep(35, &bulk(b"x")).finish();
    assert_eq!(lines(&r), ["GET k1"]);
}
