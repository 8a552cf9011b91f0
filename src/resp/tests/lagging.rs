//! A server that lags its client's pipeline: the replies to a loader's SETs come while later SETs are still
//! being sent, so the server falls quiet between replies with commands still owed one. Such a quiet moment
//! says nothing about what was answered: after a loss of reply bytes, pairing must not resume there (it
//! paired each SET with the `+OK` of the SET three before it, in time and in shape).

use crate::resp::testgen::{cmds, Run};
use crate::resp::Direction;

/// SET number `i` is sent at `10 * i`, its `+OK` comes at `10 * i + LAG`: while the next three are sent.
const LAG: i64 = 35;
const SETS: usize = 200;

/// The loader's traffic with the reply of SET `lost` lost (a gap in its place). Returns each SET's index with
/// the time of the reply it was paired with, if any.
fn lagging_loader(lost: usize) -> Vec<(usize, Option<i64>)> {
    let mut events: Vec<(i64, Direction, usize)> = (0..SETS)
        .flat_map(|i| [(10 * i as i64, Direction::Request, i), (10 * i as i64 + LAG, Direction::Reply, i)])
        .collect();
    events.sort_by_key(|e| e.0);
    let mut r = Run::new();
    for (ts, dir, i) in events {
        match dir {
            Direction::Request => r.req(ts, &cmds(&format!("SET l{i} v{i}"))),
            Direction::Reply if i == lost => r.gap(Direction::Reply, ts, 5),
            Direction::Reply => r.rep(ts, b"+OK\r\n"),
        };
    }
    r.finish();
    r.got.iter().map(|g| (g.line().split(' ').nth(1).unwrap()[1..].parse().unwrap(), g.reply_ts)).collect()
}

#[test]
fn a_quiet_moment_on_a_lagging_connection_does_not_resume_pairing() {
    let got = lagging_loader(100);
    assert_eq!(got.len(), SETS, "every SET kept");
    for &(i, reply_ts) in &got {
        if let Some(t) = reply_ts {
            assert_eq!(t, 10 * i as i64 + LAG, "SET l{i} paired with the reply of SET l{}", (t - LAG) / 10);
        }
    }
    let paired = got.iter().filter(|g| g.1.is_some()).count();
    assert!(paired >= 97, "the SETs before the loss keep their replies: {paired} paired");
}

/// A loader whose first exchanges are one command each (a connection's set-up), then one pipeline the server
/// answers once it is all sent: every boundary clean. Then a long pipeline the server answers a piece behind:
/// the client sends its SETs in pieces of `PIECE`, and the replies to piece p come just after piece p + 1
/// was sent. Client bytes are lost in piece `LOST_PIECE`, before the first reply to the pipeline: the
/// connection has shown no dirty boundary yet. Returns each kept SET's number with the time of the reply it
/// was paired with, if any; the reply to SET `i` of the lagged pipeline comes at `pipelined_reply_ts(i)`.
const SETUP: usize = 3;
const FIRST: usize = 40;
const PIECE: usize = 8;
const PIECES: usize = 25;
const LOST_PIECE: usize = 1;

fn pipelined_reply_ts(i: usize) -> i64 {
    // Piece p's replies, one segment each, after piece p + 1 was sent.
    10_000 + 100 * (i / PIECE + 1) as i64 + 50 + (i % PIECE) as i64
}

fn loader_after_setup() -> Vec<(usize, Option<i64>)> {
    lagged_after_setup(Loss::Client)
}

/// Where `lagged_after_setup` loses bytes: the client's, in piece `LOST_PIECE`, or the reply to the first
/// piece's third SET (before any boundary inside the pipeline: no dirty one is seen).
#[derive(PartialEq)]
enum Loss {
    Client,
    Reply,
}

fn lagged_after_setup(loss: Loss) -> Vec<(usize, Option<i64>)> {
    let mut r = Run::new();
    for i in 0..SETUP {
        r.req(100 * i as i64, &cmds(&format!("SET s{i} v")));
        r.rep(100 * i as i64 + 50, b"+OK\r\n");
    }
    r.req(1_000, &(0..FIRST).flat_map(|i| cmds(&format!("SET f{i} v"))).collect::<Vec<u8>>());
    for i in 0..FIRST {
        r.rep(1_100 + i as i64, b"+OK\r\n");
    }
    let base = SETUP + FIRST;
    let line = |i: usize| cmds(&format!("SET l{} v{i}", base + i));
    for p in 0..=PIECES {
        let ts = 10_000 + 100 * p as i64;
        if p < PIECES {
            let piece: Vec<usize> = (p * PIECE..(p + 1) * PIECE).collect();
            if p == LOST_PIECE && loss == Loss::Client {
                // The piece's middle three SETs are lost with their segment.
                r.req(ts, &piece[..2].iter().flat_map(|&i| line(i)).collect::<Vec<u8>>());
                r.gap(Direction::Request, ts + 1, piece[2..5].iter().map(|&i| line(i).len() as u64).sum());
                r.req(ts + 2, &piece[5..].iter().flat_map(|&i| line(i)).collect::<Vec<u8>>());
            } else {
                r.req(ts, &piece.iter().flat_map(|&i| line(i)).collect::<Vec<u8>>());
            }
        }
        if p > 0 {
            for i in (p - 1) * PIECE..p * PIECE {
                if loss == Loss::Reply && i == 2 {
                    r.gap(Direction::Reply, pipelined_reply_ts(i), 5);
                } else {
                    r.rep(pipelined_reply_ts(i), b"+OK\r\n");
                }
            }
        }
    }
    r.finish();
    r.got
        .iter()
        .filter(|g| g.line().starts_with("SET l"))
        .map(|g| (g.line().split(' ').nth(1).unwrap()[1..].parse::<usize>().unwrap() - base, g.reply_ts))
        .collect()
}

/// The set-up's clean boundaries closed batches of one command, and one pipeline was answered whole: what
/// four clean boundaries showed is batches of one command. Here the server answers a piece behind, the same
/// count at every boundary after the loss, so the count of replies before each piece pointed to one offset
/// three times over, a piece off (it paired each SET with the `+OK` of the SET eight before it). No SET may
/// be paired with another's reply.
#[test]
fn a_count_of_replies_is_not_taken_from_batches_wider_than_the_client_was_seen_to_wait_for() {
    let got = loader_after_setup();
    assert_eq!(got.len(), PIECE * PIECES - 3, "every SET not lost kept");
    for &(i, reply_ts) in &got {
        if let Some(t) = reply_ts {
            assert_eq!(t, pipelined_reply_ts(i), "SET {i} of the pipeline paired with another SET's reply");
        }
    }
}

/// As above, the loss taking one reply of the lagged pipeline instead: the moments the server falls quiet
/// between pieces look like turns (a piece sent after the server spoke, none of its bytes while it was
/// sent), and the connection has shown no dirty boundary. One that was taken for a turn ended the
/// realignment and paired every SET after it with the reply of the SET a piece before. A client that was
/// seen to pipeline does not end a realignment at such a moment: no SET may be paired with another's reply.
#[test]
fn a_quiet_moment_inside_a_lagged_pipeline_does_not_end_a_realignment() {
    let got = lagged_after_setup(Loss::Reply);
    assert_eq!(got.len(), PIECE * PIECES, "every SET kept");
    for &(i, reply_ts) in &got {
        if let Some(t) = reply_ts {
            assert_eq!(t, pipelined_reply_ts(i), "SET {i} of the pipeline paired with another SET's reply");
        }
    }
    let paired = got.iter().filter(|g| g.1.is_some()).count();
    assert!(paired >= 2, "the SETs before the loss keep their replies: {paired} paired");
}
