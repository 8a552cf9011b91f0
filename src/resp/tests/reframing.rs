//! Replies found again after a loss of reply bytes, before the next quiet moment: the reply bytes read
//! after the loss are kept, and at the quiet moment the frames among them (`reframe`) go to the
//! realignment, which pairs them once their shapes fit the commands held at one offset. Before, every reply
//! up to the next quiet moment was lost with the loss: on a pipelining connection, the rest of the pipeline.

use super::losses::telling;
use crate::resp::testgen::{array, bulk, cmd, cmds, Owned, Run};
use crate::resp::Direction;

/// A pipeline of 60 commands (`telling`, but for commands 19 to 21: a GET of a 200-byte value, `cut`, an INCR
/// answered `:21`), whose reply bytes lose those from the middle of reply 19's value to `into` bytes into
/// reply 20; then, at a quiet moment, a pipeline of 15 more. Returns the replies got and those expected (19's
/// is whole: its header gave the length of the value the loss ended; 20's is unknown).
fn run(cut: (Vec<u8>, Vec<u8>, Owned), into: usize) -> (Vec<Owned>, Vec<Owned>) {
    run_with(cut, into, vec![(cmds("INCR c21"), b":21\r\n".to_vec(), Owned::Integer(21))])
}

/// As `run`, with the commands from 21 on `after`.
fn run_with(cut: (Vec<u8>, Vec<u8>, Owned), into: usize, after: Vec<(Vec<u8>, Vec<u8>, Owned)>) -> (Vec<Owned>, Vec<Owned>) {
    let mut ops: Vec<_> = (0..75).map(telling).collect();
    ops[19] = (cmds("GET k19"), bulk(&[b'y'; 200]), Owned::Bulk(200));
    ops[20] = cut;
    for (k, op) in after.into_iter().enumerate() {
        ops[21 + k] = op;
    }
    let bytes = |a: usize, b: usize, i: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| [&o.0, &o.1][i].clone()).collect() };
    let mut r = Run::new();
    r.req(10, &bytes(0, 60, 0));
    let replies = bytes(0, 60, 1);
    let (from, to) = (bytes(0, 19, 1).len() + 100, bytes(0, 20, 1).len() + into);
    let half = (to + replies.len()) / 2;
    r.rep(20, &replies[..from]);
    r.gap(Direction::Reply, 21, (to - from) as u64);
    r.rep(21, &replies[to..half]);
    r.rep(22, &replies[half..]);
    r.req(30, &bytes(60, 75, 0));
    r.rep(40, &bytes(60, 75, 1));
    r.finish();
    let got = r.got.iter().map(|g| g.reply.clone()).collect();
    let want = ops.iter().enumerate().map(|(i, o)| if i == 20 { Owned::Unknown } else { o.2.clone() }).collect();
    (got, want)
}

/// The value's text holds CRLFs and what reads as replies (`:1`, `-ERR`), which no chain of frames to the
/// quiet moment passes through; the replies from the INCR after it on are paired.
#[test]
fn replies_after_a_reply_loss_are_paired_before_the_next_quiet_moment() {
    let value = b"abc\r\n:1\r\n-ERR not a reply\r\n$3\r\nxyz\r\n*2\r\nend of the value";
    let (got, want) = run((cmds("GET k20"), bulk(value), Owned::Bulk(value.len() as u32)), 6);
    assert_eq!(got, want);
}

/// An MGET's reply cut by the loss leaves elements that read as bulk frames of their own: they are not taken
/// for replies (the MGETs held ask for 6 elements at most), and the replies from the INCR after it on are
/// paired. Taken for replies, they fit no offset (the MGET they would answer wants an array), so the
/// realignment gave up and nothing after the loss was paired.
#[test]
fn the_elements_left_of_an_mget_reply_cut_by_the_loss_are_not_replies() {
    let v: Vec<u8> = vec![b'z'; 30];
    let items: Vec<Option<&[u8]>> = vec![Some(&v), None, Some(&v), Some(&v), Some(&v)];
    let mget = (cmds("MGET a b c d e"), array(&items), Owned::Array(vec![Some(30), None, Some(30), Some(30), Some(30)]));
    // Into the value of the third element: the fourth and fifth are left whole.
    let (got, want) = run(mget, 4 + 7 + 30 + 2 + 5 + 5 + 10);
    assert_eq!(got, want);
}

/// A value whose text ends in a line that reads as an error (`\r\n-ERR ...`, the CRLF after the value
/// ending it) gives a frame just before the first reply after the loss; an error fits any command, so the
/// shapes cannot refuse it. Line frames leading the frames found are not used when a command held gets
/// values in its reply: taken, this one was paired with the GET whose value spelled it.
#[test]
fn a_line_a_value_spells_after_a_reply_loss_is_not_taken_for_a_reply() {
    let value = b"some text\r\n-ERR spelled by the value";
    let (got, want) = run((cmds("GET k20"), bulk(value), Owned::Bulk(value.len() as u32)), 6);
    assert_eq!(got, want);
}

/// Replies of GETs just after the loss read as bulk or nil frames, as the elements an MGET's reply cut by the
/// loss would (an MGET of 6 keys is held), so they are not tested against the offsets; once the INCR's reply
/// after them tells the offset, they go to the GETs before it (each answered by one value: the array they
/// might belong to would answer an MGET). Before, both GETs came out unknown.
#[test]
fn the_replies_of_gets_just_after_a_reply_loss_are_paired_once_the_offset_is_known() {
    let value = b"a value of plain text";
    let after = vec![
        (cmds("GET k21"), bulk(&[b'v'; 21]), Owned::Bulk(21)),
        (cmds("GET k22"), b"$-1\r\n".to_vec(), Owned::Nil),
        (cmds("INCR c23"), b":23\r\n".to_vec(), Owned::Integer(23)),
    ];
    let (got, want) = run_with((cmds("GET k20"), bulk(value), Owned::Bulk(value.len() as u32)), 6, after);
    assert_eq!(got, want);
}

/// An MGET's reply cut by the loss leaves two elements, then a GET's reply: all three read as bulk frames
/// before the INCR's. Walking back from the INCR, the GET takes the frame before it, and the walk stops at
/// the MGET: the two elements are not taken for replies.
#[test]
fn a_get_after_the_elements_an_mget_reply_left_is_paired_and_the_elements_are_not() {
    let v: Vec<u8> = vec![b'z'; 30];
    let items: Vec<Option<&[u8]>> = vec![Some(&v), None, Some(&v), Some(&v), Some(&v)];
    let mget = (cmds("MGET a b c d e"), array(&items), Owned::Array(vec![Some(30), None, Some(30), Some(30), Some(30)]));
    let after = vec![
        (cmds("GET k21"), bulk(&[b'v'; 21]), Owned::Bulk(21)),
        (cmds("INCR c22"), b":22\r\n".to_vec(), Owned::Integer(22)),
    ];
    let (got, want) = run_with(mget, 4 + 7 + 30 + 2 + 5 + 5 + 10, after);
    assert_eq!(got, want);
}

/// Two losses of replies before the quiet moment, the second cutting an MGET's reply: the frames between
/// them (from the first whole one after the first loss to the one the second cut) are found again at the
/// quiet moment too, and once the frames after the second loss tell their offset, the frames between go to
/// the commands before, at the one offset that fits them all. Before, every reply between the two losses
/// was lost with the second.
#[test]
fn the_replies_between_two_losses_before_a_quiet_moment_are_paired() {
    let ops: Vec<_> = (0..75).map(telling).collect();
    let bytes = |a: usize, b: usize, i: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| [&o.0, &o.1][i].clone()).collect() };
    let at = |i: usize| bytes(0, i, 1).len();
    let mut r = Run::new();
    r.req(10, &bytes(0, 60, 0));
    let replies = bytes(0, 60, 1);
    // From 3 bytes into reply 10 (a GET's header) to 3 bytes into reply 11, then from 3 bytes into reply 40
    // (an MGET's) to 3 bytes into reply 42 (another's, whose elements then read as bulk frames).
    let (a1, b1, a2, b2) = (at(10) + 3, at(11) + 3, at(40) + 3, at(42) + 3);
    r.rep(20, &replies[..a1]);
    r.gap(Direction::Reply, 21, (b1 - a1) as u64);
    r.rep(21, &replies[b1..a2]);
    r.gap(Direction::Reply, 22, (b2 - a2) as u64);
    r.rep(22, &replies[b2..]);
    r.req(30, &bytes(60, 75, 0));
    r.rep(40, &bytes(60, 75, 1));
    r.finish();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    // (Reply 12, a bulk leading the frames between, may be an element of an MGET's reply the first loss cut:
    // not used.)
    let lost = [10, 11, 12, 40, 41, 42];
    let want: Vec<Owned> = ops.iter().enumerate().map(|(i, o)| if lost.contains(&i) { Owned::Unknown } else { o.2.clone() }).collect();
    assert_eq!(got, want);
}

/// A reply loss in the last pipeline of a connection: no command comes after it for a quiet moment, but the
/// connection's end (a FIN each way, soon after) is a frame boundary too: the frames after the loss are
/// found again there and paired. Before, the rest of the pipeline came out unknown.
#[test]
fn the_replies_after_a_loss_in_the_last_pipeline_are_found_again_at_the_close() {
    let ops: Vec<_> = (0..60).map(telling).collect();
    let bytes = |i: usize| -> Vec<u8> { ops.iter().flat_map(|o| [&o.0, &o.1][i].clone()).collect() };
    let at = |n: usize| ops[..n].iter().map(|o| o.1.len()).sum::<usize>();
    let mut r = Run::new();
    r.req(10, &bytes(0));
    let replies = bytes(1);
    // From 3 bytes into reply 20 (an MGET's header) to 3 bytes into reply 21.
    let (from, to) = (at(20) + 3, at(21) + 3);
    r.rep(20, &replies[..from]);
    r.gap(Direction::Reply, 21, (to - from) as u64);
    r.rep(21, &replies[to..]);
    r.ended(30);
    r.finish();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    let want: Vec<Owned> = ops.iter().enumerate().map(|(i, o)| if i == 20 || i == 21 { Owned::Unknown } else { o.2.clone() }).collect();
    assert_eq!(got, want);
}

type Op = (Vec<u8>, Vec<u8>, Owned);

/// 250 commands (`telling`, but for the SET of a long value at 5, and `ops6` at 6 when Some), in a pipeline of
/// 100 whose client bytes lose commands `lost` (5 and perhaps 6), its reply bytes those from `from` to `to`
/// (offsets in the replies); then, at a quiet moment, a pipeline of 150 more. Returns the run and the commands.
fn after_lost_bytes(ops6: Option<Op>, lost: std::ops::Range<usize>, cut: impl Fn(&dyn Fn(usize) -> usize) -> (usize, usize)) -> (Run, Vec<Op>) {
    let mut ops: Vec<Op> = (0..250).map(telling).collect();
    ops[5] = (cmd(&[b"SET", b"big", &[b'v'; 1400]]), b"+OK\r\n".to_vec(), Owned::Simple);
    if let Some(op) = ops6 {
        ops[6] = op;
    }
    let bytes = |a: usize, b: usize, i: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| [&o.0, &o.1][i].clone()).collect() };
    let (from, to) = cut(&|n| bytes(0, n, 1).len());
    let mut r = Run::new();
    r.req(10, &bytes(0, lost.start, 0));
    r.gap(Direction::Request, 10, bytes(lost.start, lost.end, 0).len() as u64);
    r.req(10, &bytes(lost.end, 100, 0));
    let replies = bytes(0, 100, 1);
    r.rep(20, &replies[..from]);
    r.gap(Direction::Reply, 21, (to - from) as u64);
    r.rep(21, &replies[to..]);
    r.req(30, &bytes(100, 250, 0));
    r.rep(40, &bytes(100, 250, 1));
    r.finish();
    (r, ops)
}

/// A loss of client bytes that could have held over a hundred commands (a SET of a long value), then a loss of
/// replies before as many replies came: replies may still be owed to commands lost, of kinds nobody knows.
/// The frames after the reply loss are found again at the quiet moment all the same: what the cut reply
/// leaves comes before every reply to a command held, where the offsets take it for replies to commands lost,
/// and the frames after it tell the offset. Before, with replies owed to commands not held, none were found,
/// and the rest of the pipeline came out unknown.
#[test]
fn frames_are_found_again_after_a_reply_loss_while_replies_may_be_owed_to_commands_lost() {
    // From 3 bytes into reply 20 (a GET's header) to 3 bytes into reply 21 (an MGET's).
    let (r, ops) = after_lost_bytes(None, 5..6, |at| (at(20) + 3, at(21) + 3));
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    // Command 5 was lost; the replies of 6 to 19 were held when the reply loss dropped them; 20 and 21's cut.
    let kept = ops.iter().enumerate().filter(|&(i, _)| i != 5);
    let want: Vec<Owned> = kept.map(|(i, o)| if (6..22).contains(&i) { Owned::Unknown } else { o.2.clone() }).collect();
    assert_eq!(got, want);
}

/// As above, the reply loss cutting the reply of a command lost with the client's bytes, a GET whose value
/// ends in text that reads as frames (`:3`, then a bulk the value's CRLF ends): they lead the frames found
/// again, and no command held takes them (the first held is an INCR, which `:3` would fit): the offsets take
/// them for replies to commands lost, and every command held is paired with its own reply.
#[test]
fn what_the_cut_reply_of_a_command_lost_spells_is_taken_by_no_command_held() {
    let value = b"text\r\n:3\r\n$2\r\nzz";
    let spelled = (cmds("GET spelled"), bulk(value), Owned::Bulk(value.len() as u32));
    // From 3 bytes into reply 5 to the `:3` in reply 6's value.
    let (r, ops) = after_lost_bytes(Some(spelled), 5..7, |at| (at(5) + 3, at(6) + 4 + 6));
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    let want: Vec<Owned> = ops.iter().enumerate().filter(|&(i, _)| i != 5 && i != 6).map(|(_, o)| o.2.clone()).collect();
    assert_eq!(got, want);
    // The two frames the value spells were read, and left unpaired.
    assert_eq!(r.session.stats().unpaired_replies, 2);
}
