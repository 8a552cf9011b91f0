//! Realignment by timing after a loss of client bytes: on a connection whose client waits for every reply
//! before it sends again (lockstep), the replies that came before a batch was sent tell how many commands
//! the loss took, where reply shapes cannot (every SET is answered `+OK`). A client that keeps commands in
//! flight, or a reply lost in the window, gives no such count: nothing is paired on a guess.

use crate::resp::testgen::{cmds, Owned, Run};
use crate::resp::Direction;

/// Batches of `n` SETs, batch `b` sent at `START + 1000 b` and its replies each in a segment of its own at
/// `START + 1000 b + 500 + i` (their times tell which reply is which). `ahead`: how many batches the client
/// sends before it waits for the replies of the first (0: lockstep). `lose`: (batch, first, count) of the
/// commands whose bytes are lost. `reply_gap`: a batch one of whose replies is lost.
struct Traffic {
    batches: usize,
    n: usize,
    ahead: usize,
    lose: (usize, usize, usize),
    reply_gap: Option<usize>,
}

fn set(b: usize, i: usize) -> Vec<u8> {
    cmds(&format!("SET s{b}_{i} value{b}_{i}"))
}

const START: i64 = 10_000;

fn reply_ts(b: usize, i: usize) -> i64 {
    START + (1000 * b + 500 + i) as i64
}

fn run(t: &Traffic) -> Run {
    let mut r = Run::new();
    let send = |r: &mut Run, b: usize| {
        // A client ahead sends batch b + 1 just before the replies of batch b.
        let ts = START + (1000 * b) as i64 - 600 * t.ahead as i64;
        let (lb, first, count) = t.lose;
        if b != lb {
            r.req(ts, &(0..t.n).flat_map(|i| set(b, i)).collect::<Vec<u8>>());
            return;
        }
        r.req(ts, &(0..first).flat_map(|i| set(b, i)).collect::<Vec<u8>>());
        let lost: usize = (first..first + count).map(|i| set(b, i).len()).sum();
        r.gap(Direction::Request, ts + 1, lost as u64);
        r.req(ts + 1, &(first + count..t.n).flat_map(|i| set(b, i)).collect::<Vec<u8>>());
    };
    // (Lockstep: batch b is sent in the loop, just before its replies.)
    for b in 0..t.ahead.min(t.batches) {
        send(&mut r, b);
    }
    for b in 0..t.batches {
        if b + t.ahead < t.batches {
            send(&mut r, b + t.ahead);
        }
        for i in 0..t.n {
            if t.reply_gap == Some(b) && i == t.n / 2 {
                r.gap(Direction::Reply, reply_ts(b, i), 5);
                continue;
            }
            r.rep(reply_ts(b, i), b"+OK\r\n");
        }
    }
    r.finish();
    r
}

/// Every command is one sent, in order, and every paired one has its own reply (told by its time).
/// Returns how many were paired after the loss.
fn check(r: &Run, t: &Traffic) -> usize {
    let (lb, first, count) = t.lose;
    let sent: Vec<(usize, usize)> = (0..t.batches)
        .flat_map(|b| (0..t.n).map(move |i| (b, i)))
        .filter(|&(b, i)| !(b == lb && (first..first + count).contains(&i)))
        .collect();
    assert_eq!(r.got.len(), sent.len());
    let mut after = 0;
    for (g, &(b, i)) in r.got.iter().zip(&sent) {
        assert_eq!(g.line(), format!("SET s{b}_{i} value{b}_{i}"));
        if g.reply != Owned::Unknown {
            assert_eq!((g.reply.clone(), g.reply_ts), (Owned::Simple, Some(reply_ts(b, i))), "SET s{b}_{i}");
            after += ((b, i) > (lb, first)) as usize;
        }
    }
    after
}

/// Lockstep pipelines of SETs: before, every command after the loss stayed unknown (the shapes of `+OK`
/// fit every offset); now the count of replies before each later batch gives the offset, confirmed over
/// several batches, and they are all paired with their own replies.
#[test]
fn a_lockstep_connection_of_sets_realigns_by_timing_after_a_client_loss() {
    let t = Traffic { batches: 12, n: 20, ahead: 0, lose: (6, 7, 3), reply_gap: None };
    let r = run(&t);
    let after = check(&r, &t);
    let kept_after = (20 - 10) + 5 * 20;
    assert_eq!(after, kept_after, "paired after the loss");
    let st = r.session.stats();
    assert_eq!((st.pairing_resyncs, st.unpaired_replies), (1, 3));
}

/// The same loss in the client's first batch: no earlier batch showed that the client waits.
#[test]
fn a_loss_before_the_client_showed_it_waits_is_not_realigned_by_timing() {
    let t = Traffic { batches: 8, n: 20, ahead: 0, lose: (0, 7, 3), reply_gap: None };
    let r = run(&t);
    assert_eq!(check(&r, &t), 0);
}

/// A client that always has a batch in flight (it sends batch b + 1 before the replies of batch b came):
/// before each batch as many replies are missing as commands are in flight, every time. Taking the count
/// as complete would pair each command with a reply a batch early; the connection never showed it waits,
/// so timing is not used, and nothing after the loss is paired.
#[test]
fn a_client_that_keeps_commands_in_flight_is_not_realigned_by_timing() {
    let t = Traffic { batches: 14, n: 20, ahead: 1, lose: (7, 7, 3), reply_gap: None };
    let r = run(&t);
    assert_eq!(check(&r, &t), 0);
}

/// A reply lost after the client loss leaves the count of replies unknown: timing is not used.
#[test]
fn a_reply_lost_after_the_client_loss_stops_the_timing() {
    let t = Traffic { batches: 12, n: 20, ahead: 0, lose: (6, 7, 3), reply_gap: Some(6) };
    let r = run(&t);
    assert_eq!(check(&r, &t), 0);
}
