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
