//! Gaps, mid-stream starts, invalid bytes, contradictions and full queues: losses are reported, never
//! invented, and pairing comes back at the next turn.

use crate::resp::testgen::{array, bulk, cmd, cmds, Owned, Run};
use crate::resp::{Direction, Limits, Session};

fn s(line: &str) -> String {
    line.to_string()
}

/// Request-response exchanges `GET k{i}` -> a bulk of `i` bytes, at times 10*i (+5 for the reply).
fn exchange(r: &mut Run, i: usize) {
    r.req(10 * i as i64, &cmds(&format!("GET k{i}")));
    r.rep(10 * i as i64 + 5, &bulk(&vec![b'x'; i]));
}

fn check_honest(r: &Run) {
    for g in r.got.iter().filter(|g| g.line().starts_with("GET k")) {
        let i: usize = g.line()[5..].parse().unwrap();
        assert!(
            g.reply == Owned::Unknown || g.reply == Owned::Bulk(i as u32),
            "{} paired with {:?}",
            g.line(),
            g.reply
        );
    }
}

#[test]
fn reply_gap_makes_waiting_commands_unknown_then_resyncs() {
    let mut r = Run::new();
    exchange(&mut r, 1);
    r.req(20, &cmds("GET k2"));
    r.rep(25, &bulk(b"xx")[..3]);
    r.gap(Direction::Reply, 26, 100);
    r.rep(26, b"garbage\r\n");
    for i in 3..7 {
        exchange(&mut r, i);
    }
    r.finish();
    check_honest(&r);
    let replies: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    // k2's reply is lost; k3 is a turn that restarts the reply parser; k4 a turn where pairing resumes.
    let u = Owned::Unknown;
    assert_eq!(replies, [Owned::Bulk(1), u.clone(), u, Owned::Bulk(4), Owned::Bulk(5), Owned::Bulk(6)]);
    let st = r.session.stats();
    assert_eq!((st.reply_gaps, st.reply_gap_bytes, st.reply_resyncs, st.pairing_resyncs), (1, 100, 1, 1));
    assert_eq!((st.unknown_replies, st.unpaired_replies), (2, 1));
}

/// A loss of the client's bytes of unknown extent may have taken whole commands, each with a reply of its
/// own: the replies of the commands sent before it are still paired, and no later one is, ever, on that
/// connection (a turn would be a guess).
#[test]
fn request_gap_drains_what_was_sent_before_it() {
    let mut r = Run::new();
    r.req(10, &[cmds("GET k1"), cmds("GET k2")].concat());
    let lost = cmds("GET k3");
    r.req(10, &lost[..5]);
    r.gap(Direction::Request, 11, 20);
    r.req(11, &cmds("GET k4"));
    // Replies to k1, k2 (paired), k3 (whose command was cut), k4.
    r.rep(15, &[bulk(b"x"), bulk(b"xx"), bulk(b"xxx"), bulk(b"xxxx")].concat());
    for i in 5..8 {
        exchange(&mut r, i);
    }
    r.finish();
    check_honest(&r);
    assert_eq!(
        r.pairs()[..3],
        [(s("GET k1"), Owned::Bulk(1)), (s("GET k2"), Owned::Bulk(2)), (s("GET k4"), Owned::Unknown)]
    );
    // The last command is read on probation after the loss: no command follows it, but its reply, sent
    // at a turn, confirms it.
    let u = Owned::Unknown;
    assert_eq!(r.pairs()[3..], [(s("GET k5"), u.clone()), (s("GET k6"), u.clone()), (s("GET k7"), u)]);
    let st = r.session.stats();
    assert_eq!((st.request_gaps, st.damaged_commands, st.pairing_resyncs, st.unpaired_replies), (1, 1, 0, 5));
    assert_eq!(st.unconfirmed_commands, 0);
}

/// The defect this guards against: after a lost request segment, a client that pipelines across a quiet
/// moment (it sends B before A's reply came, after a quiet turn) was paired one reply off, and an HGETALL
/// took an HMGET's reply values as its field names.
#[test]
fn after_a_request_loss_a_pipelining_client_is_never_paired_one_off() {
    let mut r = Run::new();
    exchange(&mut r, 0);
    // L is lost whole; then A (HGETALL) is sent, the server answers L, is quiet, B is sent, A's reply comes.
    r.gap(Direction::Request, 19, cmds("HMGET e v1 v2").len() as u64);
    r.req(20, &cmds("HGETALL h"));
    r.rep(21, &array(&[Some(b"value-one"), Some(b"value-two")]));
    r.req(30, &cmds("HGETALL h2"));
    r.rep(31, &array(&[Some(b"f"), Some(b"1")]));
    r.rep(32, &array(&[Some(b"g"), Some(b"2")]));
    for i in 4..8 {
        exchange(&mut r, i);
    }
    r.finish();
    let replies: Vec<Owned> = r.got[1..].iter().map(|g| g.reply.clone()).collect();
    assert!(replies.iter().all(|x| *x == Owned::Unknown), "{replies:?}");
    let st = r.session.stats();
    assert_eq!((st.pairing_resyncs, st.unknown_replies), (0, 6));
}

/// A gap that falls inside an argument whose length came in its header loses that argument's bytes only:
/// the command is emitted with the argument elided, and pairing stays certain.
#[test]
fn a_request_gap_inside_a_value_loses_that_value_only() {
    let value = vec![b'v'; 3000];
    let hset = cmd(&[b"HSET", b"h", b"f", &value]);
    let at = hset.len() - 1000;
    let mut r = Run::new();
    r.req(10, &hset[..at]);
    r.gap(Direction::Request, 11, 500);
    r.req(11, &hset[at + 500..]);
    r.req(11, &cmds("GET k"));
    r.rep(15, &[b":1\r\n".to_vec(), bulk(b"xyz")].concat());
    // A loss that swallows the rest of the value and its CRLF ends the command as well.
    let get = cmd(&[b"GET", &value]);
    r.req(20, &get[..get.len() - 700]);
    r.gap(Direction::Request, 21, 700);
    r.rep(25, b"$-1\r\n");
    r.finish();
    assert_eq!(r.got.len(), 3);
    assert_eq!((r.got[0].line(), r.got[0].reply.clone()), (s("HSET h f "), Owned::Integer(1)));
    assert_eq!(r.got[0].elided_at, [false, false, false, true]);
    assert_eq!(r.got[1].reply, Owned::Bulk(3));
    assert_eq!((r.got[2].elided_at.clone(), r.got[2].reply.clone()), (vec![false, true], Owned::Nil));
    let st = r.session.stats();
    assert_eq!((st.args_lost_in_gaps, st.damaged_commands, st.request_resyncs, st.unknown_replies), (2, 0, 0, 0));
}

/// Bytes lost where the stream cannot say what they were (here: a header) leave the parser searching for
/// the next command; a value's text can spell one (`*3 $5 HMGET ...`). Such a command is held until the
/// next command start follows it at once, or it ends the client's bytes and the server answers it; the one
/// read out of the value is followed by more value bytes, and is dropped.
#[test]
fn commands_spelled_by_a_value_after_a_gap_are_not_invented() {
    let mut value = b"prefix ".to_vec();
    value.extend(cmds("HMGET invented_key invented_field"));
    value.extend(b"more value text ".repeat(20));
    value.extend(cmds("GET invented_too"));
    value.extend(b"tail");
    let hset = cmd(&[b"HSET", b"h", b"f", &value]);
    let mut r = Run::new();
    exchange(&mut r, 0);
    // The gap takes the value's header: its length is unknown.
    let header_at = hset.len() - value.len() - 8;
    r.req(10, &hset[..header_at]);
    r.gap(Direction::Request, 11, 10);
    r.req(11, &hset[header_at + 10..]);
    r.req(12, &cmds("GET k1"));
    r.rep(15, &[b":1\r\n".to_vec(), bulk(b"x")].concat());
    exchange(&mut r, 2);
    exchange(&mut r, 3);
    r.finish();
    let lines: Vec<String> = r.got.iter().map(|g| g.line()).collect();
    assert!(lines.iter().all(|l| !l.contains("invented")), "{lines:?}");
    // k1 is confirmed by k2 following it, k2 by k3; k3, the last, by its reply.
    assert_eq!(lines, ["GET k0", "GET k1", "GET k2", "GET k3"]);
    let st = r.session.stats();
    assert_eq!((st.damaged_commands, st.unconfirmed_commands), (1, 2));

}

#[test]
fn mid_stream_start() {
    let mut r = Run::with(Session::mid_stream(Limits::default()));
    // The capture begins inside a command and inside a reply.
    r.req(10, &cmds("GET k1")[6..]);
    r.rep(12, &bulk(b"x")[2..]);
    for i in 2..10 {
        exchange(&mut r, i);
    }
    r.finish();
    check_honest(&r);
    let replies: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    // k1 is never seen whole; k2 is read on probation: its reply (a turn restarts the reply parser there)
    // and k3 following it confirm it and end probation; k3 is a turn where pairing resumes.
    let mut want = vec![Owned::Unknown; 1];
    want.extend((3..10).map(Owned::Bulk));
    assert_eq!(replies, want);
    let st = r.session.stats();
    assert!(st.request_skipped_bytes > 0 && st.reply_skipped_bytes > 0);
    assert_eq!(st.request_resyncs, 1);
}

#[test]
fn invalid_request_bytes_resync_at_the_next_command() {
    let mut r = Run::new();
    let mut bytes = b"*2\r\n$3\r\nGET\r\n%oops\r\n".to_vec();
    let next = cmds("GET k2");
    bytes.extend(&next[..7]);
    r.req(10, &bytes);
    r.req(10, &next[7..]);
    r.rep(15, &[b"-ERR Protocol error\r\n".to_vec(), bulk(b"xx")].concat());
    for i in 3..6 {
        exchange(&mut r, i);
    }
    // (The commands after the loss are held for a realignment until the end.)
    r.finish();
    check_honest(&r);
    assert_eq!(r.got[0].line(), "GET k2");
    let st = r.session.stats();
    assert_eq!((st.invalid_requests, st.request_resyncs), (1, 1));
    // Redis closes a connection on a protocol error; bytes it took for one could have held commands:
    // pairing does not come back.
    assert_eq!(r.got.last().unwrap().reply, Owned::Unknown);
}

#[test]
fn a_reply_too_early_or_of_the_wrong_shape_stops_pairing() {
    let mut r = Run::new();
    // An HMGET of two fields cannot be answered by an array of three.
    r.req(10, &cmds("HMGET e a b")).rep(11, &array(&[None, None, None]));
    r.req(20, &cmds("GET k")).rep(21, &bulk(b"v"));
    r.req(30, &cmds("GET k")).rep(31, &bulk(b"v"));
    assert_eq!(r.got[0].reply, Owned::Unknown);
    // The next turn resumes pairing.
    assert_eq!((r.got[1].reply.clone(), r.got[2].reply.clone()), (Owned::Bulk(1), Owned::Bulk(1)));
    assert_eq!(r.session.stats().contradictions, 1);

    // A reply that starts before its command ended: it answers something else, so the command's reply is
    // still owed, and each later exchange could be one reply behind its command: no turn is certain.
    let mut r = Run::new();
    r.req(60, &cmds("GET k")).rep(55, &bulk(b"v"));
    for t in [70, 75, 80] {
        r.req(t, &cmds("GET k")).rep(t + 1, &bulk(b"v"));
    }
    assert!(r.got.iter().all(|g| g.reply == Owned::Unknown));
    assert_eq!(r.session.stats().contradictions, 1);
    // Once as many replies came as were owed, the next turn resumes pairing.
    r.req(90, &[cmds("GET k"), cmds("GET k")].concat()).rep(91, &[bulk(b"v"), bulk(b"v"), bulk(b"v")].concat());
    r.req(95, &cmds("GET k")).rep(96, &bulk(b"v"));
    assert_eq!(r.got.last().unwrap().reply, Owned::Bulk(1));

    // A reply while only part of a command has been sent.
    let mut r = Run::new();
    let c = cmds("GET late");
    r.req(90, &c[..4]).rep(95, &bulk(b"v")).req(100, &c[4..]);
    assert_eq!(r.session.stats().contradictions, 1);
    assert_eq!(r.got[0].reply, Owned::Unknown);
}

#[test]
fn full_queue_emits_the_oldest_as_unknown_and_skips_their_replies() {
    let limits = Limits { max_pending_commands: 4, ..Limits::default() };
    let mut r = Run::with(Session::new(limits));
    let reqs: Vec<u8> = (1..=10).flat_map(|i| cmds(&format!("GET k{i}"))).collect();
    r.req(10, &reqs);
    assert_eq!(r.got.len(), 6);
    let reps: Vec<u8> = (1..=10).flat_map(|i| bulk(&vec![b'x'; i])).collect();
    r.rep(20, &reps);
    check_honest(&r);
    let replies: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    assert_eq!(replies[..6], vec![Owned::Unknown; 6][..]);
    assert_eq!(replies[6..], [Owned::Bulk(7), Owned::Bulk(8), Owned::Bulk(9), Owned::Bulk(10)]);
    assert_eq!(r.session.stats().queue_overflows, 6);
}

#[test]
fn a_reply_with_nothing_waiting_stops_pairing() {
    let mut r = Run::new();
    r.rep(1, b"-ERR max number of clients reached\r\n");
    for i in 1..4 {
        exchange(&mut r, i);
    }
    check_honest(&r);
    assert_eq!(r.got[2].reply, Owned::Bulk(3));
    assert_eq!(r.session.stats().contradictions, 1);
}

#[test]
fn no_turn_while_a_command_is_unanswered() {
    let mut r = Run::new();
    // Pairing is lost on a reply of the wrong shape with k1 and k2 waiting; k1 is answered; k3 is sent
    // while the server is quiet, but k2 is unanswered: k3's reply is not the next one, k3 is no turn.
    r.req(10, &[cmds("HMGET e a b"), cmds("GET k1"), cmds("GET k2")].concat());
    r.rep(11, &array(&[None])).rep(12, &bulk(b"x"));
    r.req(20, &cmds("GET k3"));
    r.rep(21, &[bulk(b"xx"), bulk(b"xxx")].concat());
    // Seen since the loss: k1, k2, k3, all answered by now.
    exchange(&mut r, 4);
    check_honest(&r);
    let replies: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    assert_eq!(replies, [Owned::Unknown, Owned::Unknown, Owned::Unknown, Owned::Unknown, Owned::Bulk(4)]);
    // After a request-side gap nothing is a turn (`after_a_request_loss_...`).
    let mut r = Run::new();
    exchange(&mut r, 0);
    r.gap(Direction::Request, 19, 10);
    r.req(20, &[cmds("GET k1"), cmds("GET k2")].concat()).rep(21, &bulk(b"x"));
    r.req(30, &cmds("GET k3")).rep(31, &[bulk(b"xx"), bulk(b"xxx")].concat());
    exchange(&mut r, 4);
    r.finish();
    check_honest(&r);
    assert!(r.got[1..].iter().all(|g| g.reply == Owned::Unknown));
}

#[test]
fn bytes_lost_inside_a_value_keep_the_reply_and_its_length() {
    let mut r = Run::new();
    r.req(10, &cmds("HMGET h a b c"));
    // A snap length cuts each reply segment: inside the first value, then the second value's last byte
    // and its CRLF (which completes the frame).
    let value = vec![b'v'; 300];
    let reply = array(&[Some(&value), Some(b"xy"), None]);
    let second = reply.len() - b"$2\r\nxy\r\n$-1\r\n".len();
    r.rep(15, &reply[..20]);
    r.gap(Direction::Reply, 15, 200);
    r.rep(16, &reply[220..second + 5]);
    r.gap(Direction::Reply, 16, 3);
    r.rep(17, &reply[second + 8..]);
    r.req(20, &cmds("GET k"));
    r.rep(25, &reply[..4]);
    r.gap(Direction::Reply, 26, 4);
    r.finish();
    let pairs = r.pairs();
    assert_eq!(pairs[0], (s("HMGET h a b c"), Owned::Array(vec![Some(300), Some(2), None])));
    // A loss that reaches a header is not a value's: the reply is unknown.
    assert_eq!(pairs[1], (s("GET k"), Owned::Unknown));
    let st = r.session.stats();
    assert_eq!((st.reply_gaps, st.reply_gap_bytes, st.paired, st.unknown_replies), (3, 207, 1, 1));
}

#[test]
fn a_values_end_inside_a_loss_keeps_its_reply_and_loses_those_after() {
    let mut r = Run::new();
    r.req(10, &[cmds("GET a"), cmds("GET b"), cmds("GET c")].concat());
    let value = vec![b'v'; 300];
    let replies = [bulk(&value), bulk(b"xy"), bulk(b"xyz")].concat();
    // The loss takes the rest of the first value, its CRLF and the second reply's header.
    r.rep(15, &replies[..20]);
    r.gap(Direction::Reply, 16, 300 - 14 + 2 + 4);
    r.rep(16, &replies[20 + 300 - 14 + 2 + 4..]);
    r.finish();
    let pairs = r.pairs();
    assert_eq!(pairs[0], (s("GET a"), Owned::Bulk(300)));
    assert_eq!(pairs[1..], [(s("GET b"), Owned::Unknown), (s("GET c"), Owned::Unknown)]);
    let st = r.session.stats();
    assert_eq!((st.reply_gaps, st.paired, st.unknown_replies), (1, 1, 2));
}

#[test]
fn an_http_request_on_the_redis_port_is_invalid_after_its_request_line() {
    let mut r = Run::new();
    // Redis runs `GET / HTTP/1.1` (an arity error: the rows stage drops it) and closes the connection at
    // `Host:`; so does the parser: the rest is skipped, and the HTTP response is no RESP either.
    let request = b"GET / HTTP/1.1\r\nHost: cache:6379\r\nAccept: */*\r\n\r\n";
    r.req(10, request);
    r.rep(15, b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok");
    r.finish();
    assert_eq!(r.pairs(), vec![(s("GET / HTTP/1.1"), Owned::Unknown)]);
    let st = r.session.stats();
    assert_eq!((st.invalid_requests, st.invalid_replies, st.inline_commands), (1, 1, 1));
    assert_eq!(st.request_skipped_bytes, (request.len() - b"GET / HTTP/1.1\r\nHost: cache:6379\r\n".len()) as u64);
}

/// Command `i` of a pipeline whose replies tell their commands apart: an MGET of 1 to 6 keys (an array of
/// that many bulks of `i` bytes), an INCR (the integer `i`), a GET (a bulk of `i` bytes), in no periodic order
/// (shapes repeating with a period fit every offset a period apart). Returns its bytes, its reply's and the
/// reply expected.
pub(super) fn telling(i: usize) -> (Vec<u8>, Vec<u8>, Owned) {
    let v = vec![b'x'; i];
    match (i * i / 7) % 3 {
        0 => {
            let n = 1 + (i * i / 5 + i / 3) % 6;
            let keys: Vec<String> = (0..n).map(|k| format!("m{i}_{k}")).collect();
            let line = format!("MGET {}", keys.join(" "));
            let items: Vec<Option<&[u8]>> = (0..n).map(|_| Some(&v[..])).collect();
            (cmds(&line), array(&items), Owned::Array(vec![Some(i as u32); n]))
        }
        1 => (cmds(&format!("INCR c{i}")), format!(":{i}\r\n").into_bytes(), Owned::Integer(i as i64)),
        _ => (cmds(&format!("GET k{i}")), bulk(&v), Owned::Bulk(i as u32)),
    }
}

/// After a loss of client bytes that took whole commands, the commands read after it are held with the
/// replies that follow those owed to the commands before it, until the replies' shapes fit them at one
/// offset only (the lost commands' replies, of shapes nobody knows, coming first): then every one is paired
/// with its own reply, and pairing goes on. Before, none after the loss was.
#[test]
fn after_a_request_loss_pairing_resumes_once_the_shapes_fit_one_offset() {
    let ops: Vec<_> = (0..200).map(telling).collect();
    let mut r = Run::new();
    let before: Vec<u8> = ops[..5].iter().flat_map(|o| o.0.clone()).collect();
    let lost: usize = ops[5..9].iter().map(|o| o.0.len()).sum();
    let after: Vec<u8> = ops[9..].iter().flat_map(|o| o.0.clone()).collect();
    r.req(10, &before);
    r.gap(Direction::Request, 11, lost as u64);
    r.req(11, &after);
    r.rep(20, &ops.iter().flat_map(|o| o.1.clone()).collect::<Vec<u8>>());
    r.finish();
    let want: Vec<Owned> = ops[..5].iter().chain(&ops[9..]).map(|o| o.2.clone()).collect();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    assert_eq!(got, want);
    // Confirmed 10 replies in (the first reply answers a command held or one lost: the offsets go from minus
    // what the lost bytes could hold to 0), pairing going on from there; the 4 lost commands' replies unpaired.
    let st = r.session.stats();
    assert_eq!((st.realigned_replies, st.pairing_resyncs, st.unpaired_replies), (10, 1, 4));
}

/// HSET `i` of a loader filling fresh hashes: 1 to 9 field-value pairs, in no periodic order, answered with
/// its count of new fields (all of them).
pub(super) fn loader_hset(i: usize) -> (Vec<u8>, Vec<u8>, Owned) {
    let pairs = 1 + (i * i / 3 + i / 2) % 9;
    let fields: Vec<String> = (0..pairs).map(|f| format!("f{f} v{i}_{f}")).collect();
    (cmds(&format!("HSET h{i} {}", fields.join(" "))), format!(":{pairs}\r\n").into_bytes(), Owned::Integer(pairs as i64))
}

/// `ops` (a command's bytes, its reply's, the reply expected) sent as one pipeline through `session` with the
/// bytes of commands 5 to 8 lost, and answered in one piece: the replies got, and the commands kept.
fn commands_5_to_8_lost(session: Session, ops: &[(Vec<u8>, Vec<u8>, Owned)]) -> (Run, Vec<&(Vec<u8>, Vec<u8>, Owned)>) {
    let bytes = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.0.clone()).collect() };
    let mut r = Run::with(session);
    r.req(10, &bytes(0, 5));
    r.gap(Direction::Request, 11, bytes(5, 9).len() as u64);
    r.req(11, &bytes(9, ops.len()));
    r.rep(20, &ops.iter().flat_map(|o| o.1.clone()).collect::<Vec<u8>>());
    r.finish();
    (r, ops[..5].iter().chain(&ops[9..]).collect())
}

/// A loader's HSETs after a loss of client bytes: every reply is an integer, which fits any HSET, but an HSET
/// of n pairs adds at most n fields, so an offset pairing one with a larger count is not possible. Before
/// that bound, every offset fit and the HSETs after the loss came out unknown; now each has its own count.
#[test]
fn after_a_request_loss_hsets_realign_by_their_counts_of_fields() {
    let ops: Vec<_> = (0..200).map(loader_hset).collect();
    let (r, kept) = commands_5_to_8_lost(Session::new(Limits::default()), &ops);
    let want: Vec<Owned> = kept.into_iter().map(|o| o.2.clone()).collect();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    assert_eq!(got, want);
}

/// The same with every HSET of 9 pairs too long to keep whole (`max_command_bytes`: its last pairs dropped, the
/// command counted in `oversized_commands` and given no row): what pairs it kept say nothing of its count,
/// which must not rule out the offset that pairs it with its `:9`.
#[test]
fn an_hset_cut_short_of_its_pairs_does_not_bound_its_reply() {
    let ops: Vec<_> = (0..200).map(loader_hset).collect();
    let whole = |o: &&(Vec<u8>, Vec<u8>, Owned)| o.2 != Owned::Integer(9);
    let (r, kept) = commands_5_to_8_lost(Session::new(Limits { max_command_bytes: 217, ..Limits::default() }), &ops);
    assert_eq!(r.session.stats().oversized_commands, kept.iter().filter(|o| !whole(o)).count() as u64);
    let want: Vec<Owned> = kept.into_iter().filter(whole).map(|o| o.2.clone()).collect();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    assert_eq!(got, want);
}

/// The same pipeline with a second loss of client bytes before the first realignment could confirm: the
/// commands between the losses are a run of their own, told by their replies' shapes as those after the
/// second are, the offsets of the two runs differing by the replies of the commands the second loss took.
/// Before, the second loss cut the first realignment and the commands between the losses came out unknown.
#[test]
fn a_second_request_loss_before_the_realignment_confirmed_keeps_both_runs() {
    let ops: Vec<_> = (0..300).map(telling).collect();
    let bytes = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.0.clone()).collect() };
    let mut r = Run::new();
    r.req(10, &bytes(0, 5));
    r.gap(Direction::Request, 11, bytes(5, 9).len() as u64);
    r.req(11, &bytes(9, 20));
    r.gap(Direction::Request, 12, bytes(20, 22).len() as u64);
    r.req(12, &bytes(22, 300));
    r.rep(20, &ops.iter().flat_map(|o| o.1.clone()).collect::<Vec<u8>>());
    r.finish();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    let want: Vec<Owned> = ops[..5].iter().chain(&ops[9..20]).chain(&ops[22..]).map(|o| o.2.clone()).collect();
    assert_eq!(got, want);
}

/// The reassembler reports a hole in the client's bytes with the next bytes after it: the replies to the
/// commands lost in it can come first, answering no command seen. Once the hole is reported, the commands
/// read after it are realigned as after any loss of client bytes (before, the replies that came first
/// stopped pairing for good).
#[test]
fn replies_to_lost_commands_before_the_hole_is_reported_do_not_stop_pairing() {
    let ops: Vec<_> = (0..200).map(telling).collect();
    let bytes = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.0.clone()).collect() };
    let replies = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.1.clone()).collect() };
    let mut r = Run::new();
    r.req(10, &bytes(0, 5));
    r.rep(12, &replies(0, 9));
    r.gap(Direction::Request, 13, bytes(5, 9).len() as u64);
    r.req(13, &bytes(9, 200));
    r.rep(20, &replies(9, 200));
    r.finish();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    let want: Vec<Owned> = ops[..5].iter().chain(&ops[9..]).map(|o| o.2.clone()).collect();
    assert_eq!(got, want);
    let st = r.session.stats();
    assert_eq!((st.contradictions, st.unpaired_replies, st.realigned_replies), (1, 4, 191));
}

/// A loss that takes the start of a long value leaves its rest to be skipped while the next command is
/// searched for: those bytes hold no command but the RESP array starts among them, so they widen the
/// offsets by none here, and pairing resumes as soon as after a loss of whole commands (before, each 11
/// skipped bytes counted as a command that may have been lost, 270 of them, more than the replies after).
#[test]
fn the_rest_of_a_value_skipped_after_a_loss_does_not_delay_the_realignment() {
    let ops: Vec<_> = (0..200).map(telling).collect();
    let bytes = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.0.clone()).collect() };
    let set = cmd(&[b"SET", b"big", &vec![b'v'; 3000]]);
    let mut r = Run::new();
    r.req(10, &bytes(0, 5));
    let cut = 100;
    r.gap(Direction::Request, 11, (bytes(5, 9).len() + cut) as u64);
    r.req(11, &[&set[cut..], &bytes(9, 200)[..]].concat());
    let replies: Vec<u8> =
        ops[..9].iter().flat_map(|o| o.1.clone()).chain(b"+OK\r\n".iter().copied()).chain(ops[9..].iter().flat_map(|o| o.1.clone())).collect();
    r.rep(20, &replies);
    r.finish();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    let want: Vec<Owned> = ops[..5].iter().chain(&ops[9..]).map(|o| o.2.clone()).collect();
    assert_eq!(got, want);
    // Confirmed 20 replies in, as the bytes lost allow (each 11 bytes skipped counted as a command, not until
    // every reply had come).
    assert_eq!(r.session.stats().realigned_replies, 20);
}

/// A hole inside a long value is reported by the reassembler only with the bytes after it, which it held
/// meanwhile: the replies to the command around the hole and to the next ones came first, answering no
/// command seen, which stopped pairing. Before, pairing never came back on such a connection (the hole lost
/// no command, so no realignment began); now the commands read after the hole are realigned as after a loss
/// of commands, the replies that came first taken as answering some of them.
#[test]
fn replies_before_a_hole_inside_a_value_is_reported_do_not_stop_pairing() {
    let ops: Vec<_> = (0..200).map(telling).collect();
    let bytes = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.0.clone()).collect() };
    let replies = |a: usize, b: usize| -> Vec<u8> { ops[a..b].iter().flat_map(|o| o.1.clone()).collect() };
    let set = cmd(&[b"SET", b"big", &vec![b'v'; 3000]]);
    let (cut, hole) = (1000, 500);
    let mut r = Run::new();
    r.req(10, &[bytes(0, 5), set[..cut].to_vec()].concat());
    r.rep(12, &[replies(0, 5), b"+OK\r\n".to_vec(), replies(5, 9)].concat());
    r.gap(Direction::Request, 11, hole as u64);
    r.req(11, &[&set[cut + hole..], &bytes(5, 9)[..]].concat());
    r.req(13, &bytes(9, 200));
    r.rep(20, &replies(9, 200));
    r.finish();
    let got: Vec<Owned> = r.got.iter().map(|g| g.reply.clone()).collect();
    let want: Vec<Owned> = ops[..5]
        .iter()
        .map(|o| o.2.clone())
        .chain((4..9).map(|_| Owned::Unknown))
        .chain(ops[9..].iter().map(|o| o.2.clone()))
        .collect();
    assert_eq!(got, want);
    assert_eq!(r.got[5].line(), "SET big ");
}
