//! A loader that loses client bytes every few dozen commands: the runs of commands between the losses are
//! realigned each on its own (`realign`'s runs), and the connection's quiet end counts the replies of the
//! last (`settle`).
//!
//! The traffic: one pipeline of 50 SETs (every reply `+OK`) then 120 HSETs (each answered with its count of
//! new fields), its replies after it; five losses of client bytes: within the SETs, twice, then within the
//! HSETs every thirty commands. Before runs, each loss cut the realignment under way and every command after
//! the first loss came out unknown.

use super::losses::loader_hset;
use crate::resp::settle::SETTLE_NS;
use crate::resp::testgen::{cmd, cmds, Owned, Run};
use crate::resp::{Direction, Limits, Session};

type Op = (Vec<u8>, Vec<u8>, Owned);

fn ops() -> Vec<Op> {
    let set = |i: usize| (cmds(&format!("SET k{i} v{i}")), b"+OK\r\n".to_vec(), Owned::Simple);
    let mut ops: Vec<Op> = (0..50).map(set).chain((50..170).map(loader_hset)).collect();
    // The last loss takes a long value: its bytes could have held more commands than the last run has.
    ops[141] = (cmd(&[b"HSET", b"big", b"f", &[b'v'; 2000]]), b":1\r\n".to_vec(), Owned::Integer(1));
    ops
}

/// The commands whose bytes are lost, as ranges.
const LOST: [(usize, usize); 5] = [(20, 22), (40, 41), (80, 82), (110, 111), (140, 142)];
const REPLIES_AT: i64 = 20;

/// Sends `ops` at 10 with `LOST` lost and `first` before them all (a command answered at 1), the replies at
/// `REPLIES_AT`; the connection ends at `end` when Some. Returns the replies got and the commands kept.
fn run(ops: &[Op], first: Option<&Op>, end: Option<i64>) -> (Vec<Owned>, Vec<Owned>) {
    let mut r = Run::with(Session::new(Limits::default()));
    if let Some(f) = first {
        r.req(0, &f.0);
        r.rep(1, &f.1);
    }
    let mut at = 0;
    let mut kept = Vec::new();
    for &(a, b) in &LOST {
        r.req(10, &ops[at..a].iter().flat_map(|o| o.0.clone()).collect::<Vec<u8>>());
        kept.extend(ops[at..a].iter().map(|o| o.2.clone()));
        r.gap(Direction::Request, 10, ops[a..b].iter().map(|o| o.0.len() as u64).sum());
        at = b;
    }
    r.req(10, &ops[at..].iter().flat_map(|o| o.0.clone()).collect::<Vec<u8>>());
    kept.extend(ops[at..].iter().map(|o| o.2.clone()));
    r.rep(REPLIES_AT, &ops.iter().flat_map(|o| o.1.clone()).collect::<Vec<u8>>());
    if let Some(ts) = end {
        r.ended(ts);
    }
    r.finish();
    let got: Vec<Owned> = r.got.iter().skip(first.is_some() as usize).map(|g| g.reply.clone()).collect();
    (got, kept)
}

/// What each kept command of `ops` should come out with: unknown in the run of SETs between the first two
/// losses (no shape tells its offset, nor does a count: the client did not wait), and, unless `last_known`,
/// in the run after the last loss; its reply elsewhere.
fn want(ops: &[Op], last_known: bool) -> Vec<Owned> {
    let lost = |i: usize| LOST.iter().any(|&(a, b)| (a..b).contains(&i));
    let unknown = |i: usize| (LOST[0].1..LOST[1].0).contains(&i) || (!last_known && i >= LOST[4].1);
    let kept = ops.iter().enumerate().filter(|&(i, _)| !lost(i));
    kept.map(|(i, o)| if unknown(i) { Owned::Unknown } else { o.2.clone() }).collect()
}

/// The runs of HSETs between losses are told by their own counts, each within its neighbours' reach; the last
/// run's deepest offsets pair its commands with replies that never come, so without a count it stays unknown.
#[test]
fn the_runs_between_losses_are_realigned_each_on_its_own() {
    let ops = ops();
    let (got, kept) = run(&ops, None, None);
    assert_eq!(got.len(), kept.len());
    assert_eq!(got, want(&ops, false));
}

/// Ended with a FIN each way after a quiet moment, every command sent had been answered: the replies count the
/// last run's offset, and it is paired too.
#[test]
fn a_quiet_end_counts_the_replies_of_the_last_run() {
    let ops = ops();
    let (got, _) = run(&ops, None, Some(REPLIES_AT + SETTLE_NS));
    assert_eq!(got, want(&ops, true));
}

/// Ended right after the last reply: the server may still have owed replies, and nothing is counted.
#[test]
fn an_end_without_a_quiet_moment_counts_nothing() {
    let ops = ops();
    let (got, _) = run(&ops, None, Some(REPLIES_AT + SETTLE_NS - 1));
    assert_eq!(got, want(&ops, false));
}

/// A connection that sent a blocking command may end with its reply never sent: it never settles.
#[test]
fn a_connection_that_blocked_never_settles() {
    let ops = ops();
    let blpop: Op = (cmd(&[b"BLPOP", b"queue", b"1"]), b"*-1\r\n".to_vec(), Owned::Nil);
    let (got, _) = run(&ops, Some(&blpop), Some(REPLIES_AT + SETTLE_NS));
    assert_eq!(got, want(&ops, false));
}


/// A second loss of a gigabyte, while the offsets of the first are still being tried, allows a hundred million
/// lost commands: the realignment gives up rather than hold an offset for each.
#[test]
fn a_huge_second_loss_ends_the_realignment_without_holding_its_offsets() {
    let ops = ops();
    let mut r = Run::with(Session::new(Limits::default()));
    r.req(10, &ops[..20].iter().flat_map(|o| o.0.clone()).collect::<Vec<u8>>());
    r.gap(Direction::Request, 10, ops[20].0.len() as u64);
    r.req(10, &ops[21..60].iter().flat_map(|o| o.0.clone()).collect::<Vec<u8>>());
    r.rep(REPLIES_AT, &ops[..30].iter().flat_map(|o| o.1.clone()).collect::<Vec<u8>>());
    r.gap(Direction::Request, REPLIES_AT + 1, 1 << 30);
    assert!(r.session.memory_bytes() < 1 << 20, "{} bytes held", r.session.memory_bytes());
    r.finish();
    assert_eq!(r.got.len(), 59);
}

/// A loss of replies while the runs are held lets the runs before the latest go. A run of HSETs between two
/// losses of client bytes whose offset its replies told (one left, over 8 telling replies), but which could
/// not leave before it (the run of SETs at the front, which no reply tells, holds every run after it), is
/// paired with the replies it had rather than let go unknown, as it would have been had the latest run's
/// offset been confirmed.
#[test]
fn runs_their_replies_told_are_paired_when_a_reply_loss_lets_them_go() {
    let ops = ops();
    // A loss more among the SETs: two runs of SETs lead, the first can leave only once the second's offset is
    // known, and none tells it.
    let losses = [(10, 12), LOST[0], LOST[1], LOST[2], LOST[3], LOST[4]];
    let mut r = Run::with(Session::new(Limits::default()));
    let mut at = 0;
    for &(a, b) in &losses {
        r.req(10, &ops[at..a].iter().flat_map(|o| o.0.clone()).collect::<Vec<u8>>());
        r.gap(Direction::Request, 10, ops[a..b].iter().map(|o| o.0.len() as u64).sum());
        at = b;
    }
    r.req(10, &ops[at..].iter().flat_map(|o| o.0.clone()).collect::<Vec<u8>>());
    // The replies, less those from 2 bytes into reply 160 to 2 bytes into reply 161.
    let replies: Vec<u8> = ops.iter().flat_map(|o| o.1.clone()).collect();
    let upto = |n: usize| ops[..n].iter().map(|o| o.1.len()).sum::<usize>();
    let (from, to) = (upto(160) + 2, upto(161) + 2);
    r.rep(REPLIES_AT, &replies[..from]);
    r.gap(Direction::Reply, REPLIES_AT, (to - from) as u64);
    r.rep(REPLIES_AT, &replies[to..]);
    r.finish();
    let lost = |i: usize| losses.iter().any(|&(a, b)| (a..b).contains(&i));
    let got: Vec<(usize, Owned)> = (0..ops.len()).filter(|&i| !lost(i)).zip(r.got.iter().map(|g| g.reply.clone())).collect();
    for (i, g) in &got {
        assert!(*g == Owned::Unknown || *g == ops[*i].2, "command {i} paired with {g:?}");
    }
    let paired = |a: usize, b: usize| got.iter().filter(|(i, g)| (a..b).contains(i) && *g != Owned::Unknown).count();
    // The run from the SETs into the HSETs and the runs of HSETs between losses, each told by its replies.
    assert_eq!((paired(41, 80), paired(82, 110), paired(111, 140)), (39, 28, 29));
}
