//! Deep pipelines: one connection sending 200,000 commands before it reads a reply, as `redis-cli --pipe`
//! and batch uploads do. Each command used to count every command still waiting (for the batch it belongs
//! to), which made such a connection quadratic: 20 s for 100,000 GETs. These runs take well under a second
//! in a debug build when each command costs the same at any depth; quadratic, they take minutes, and the
//! generous bound below fails.

use std::time::{Duration, Instant};

use crate::resp::testgen::{bulk, cmds, Got, Owned};
use crate::resp::{Direction, Limits, Session};

const DEPTH: usize = 200_000;
/// Far above what linear parsing takes in a debug build on a loaded machine, far below a quadratic run.
const BOUND: Duration = Duration::from_secs(20);

/// The client's bytes of DEPTH GETs and the server's DEPTH replies, cut into segments as TCP would.
fn feed(session: &mut Session, replies: bool) -> Vec<Got> {
    let mut req = Vec::new();
    for i in 0..DEPTH {
        req.extend(cmds(&format!("GET key:{i:08}")));
    }
    let rep: Vec<u8> = bulk(b"value-0123").repeat(DEPTH);
    let mut got = Vec::new();
    let mut ts = 0;
    for chunk in req.chunks(1448) {
        ts += 1;
        session.on_data(Direction::Request, ts, chunk, &mut |c| got.push(Got::of(c)));
    }
    if replies {
        for chunk in rep.chunks(1448) {
            ts += 1;
            session.on_data(Direction::Reply, ts, chunk, &mut |c| got.push(Got::of(c)));
        }
    }
    session.finish(&mut |c| got.push(Got::of(c)));
    session.check_counts();
    got
}

#[test]
fn deep_pipeline_with_replies_is_linear() {
    let limits = Limits::default();
    let start = Instant::now();
    let got = feed(&mut Session::new(limits), true);
    let took = start.elapsed();
    assert_eq!(got.len(), DEPTH);
    assert!(got.iter().enumerate().all(|(i, g)| g.line() == format!("GET key:{i:08}")));
    // The queue holds max_pending_commands: the oldest beyond it leave with their reply unknown, and the
    // replies are then paired with the commands still held, the last ones.
    let held = limits.max_pending_commands;
    assert!(got[..DEPTH - held].iter().all(|g| g.reply == Owned::Unknown));
    assert!(got[DEPTH - held..].iter().all(|g| g.reply == Owned::Bulk(10)));
    assert!(took < BOUND, "{DEPTH} pipelined GETs and their replies took {took:?}");
}

#[test]
fn deep_pipeline_without_replies_is_linear() {
    let start = Instant::now();
    let got = feed(&mut Session::new(Limits::default()), false);
    let took = start.elapsed();
    assert_eq!(got.len(), DEPTH);
    assert!(got.iter().all(|g| g.reply == Owned::Unknown));
    assert!(took < BOUND, "{DEPTH} pipelined GETs took {took:?}");
}
