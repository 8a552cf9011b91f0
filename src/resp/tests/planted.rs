//! Values never reach a row. Every value of a random conversation, sent (HSET, SET) or answered (HMGET,
//! GET, MGET, HGETALL), carries a marker, and some spell whole commands whose keys carry it too (RESP arrays
//! and inline lines, as a serialized pipeline stored in Redis would). The conversation goes through a session
//! and the row builder in random chunks, with chunks of either side lost, from its start or picked up
//! mid-stream, with the server answering while the client is still sending (pipelining across quiet
//! moments); whatever is lost and however pairing goes, no row's key, field or command name may hold the
//! marker.

use proptest::prelude::*;

use super::traffic::Rng;
use crate::parse::rows::RowBuilder;
use crate::resp::testgen::{array, bulk, cmd};
use crate::resp::{Direction, Limits, Session};

const MARK: &[u8] = b"PLANTED";

struct Conv {
    req: Vec<u8>,
    rep: Vec<u8>,
    /// Per command: where its bytes end in `req`, and its reply in `rep`.
    cmd_end: Vec<usize>,
    rep_end: Vec<usize>,
}

/// A marked value: the marker, bytes that look like RESP, and now and then a whole command whose name is
/// real and whose key and field are marked.
fn value(rng: &mut Rng) -> Vec<u8> {
    let mut v = MARK.to_vec();
    let n = rng.below(30) as usize;
    v.extend(rng.bytes(n));
    match rng.below(6) {
        0 => v.extend(cmd(&[b"HMGET", b"PLANTEDkey", b"PLANTEDfield"])),
        1 => v.extend(cmd(&[b"GET", b"PLANTEDget"])),
        2 => v.extend(b"\r\nGET PLANTEDinline\r\n"),
        3 => v.extend(cmd(&[b"HGETALL", b"PLANTEDall"])),
        _ => {}
    }
    if rng.chance(100) {
        let n = 200 + rng.below(2000) as usize;
        v.extend(MARK.repeat(n));
    }
    v.extend(MARK);
    v
}

fn maybe_value(rng: &mut Rng) -> Option<Vec<u8>> {
    (!rng.chance(150)).then(|| value(rng))
}

fn generate(rng: &mut Rng, commands: usize) -> Conv {
    let mut c = Conv { req: Vec::new(), rep: Vec::new(), cmd_end: Vec::new(), rep_end: Vec::new() };
    for i in 0..commands {
        let key = format!("k{}", rng.below(20)).into_bytes();
        let fields: Vec<Vec<u8>> = (0..1 + rng.below(4)).map(|j| format!("f{j}").into_bytes()).collect();
        let (request, reply) = match rng.below(9) {
            0 | 1 => {
                let mut args: Vec<&[u8]> = vec![b"HMGET", &key];
                args.extend(fields.iter().map(Vec::as_slice));
                let values: Vec<Option<Vec<u8>>> = fields.iter().map(|_| maybe_value(rng)).collect();
                let items: Vec<Option<&[u8]>> = values.iter().map(|v| v.as_deref()).collect();
                (cmd(&args), array(&items))
            }
            2 => (cmd(&[b"GET", &key]), maybe_value(rng).map_or(b"$-1\r\n".to_vec(), |v| bulk(&v))),
            3 => {
                let (a, b) = (maybe_value(rng), maybe_value(rng));
                (cmd(&[b"MGET", &key, b"other"]), array(&[a.as_deref(), b.as_deref()]))
            }
            4 | 5 => {
                let pairs: Vec<(Vec<u8>, Vec<u8>)> =
                    fields.iter().map(|f| ([b"h".as_slice(), f].concat(), value(rng))).collect();
                let mut reply =
                    if rng.chance(500) { format!("%{}\r\n", pairs.len()) } else { format!("*{}\r\n", 2 * pairs.len()) }
                        .into_bytes();
                for (f, v) in &pairs {
                    reply.extend(bulk(f));
                    reply.extend(bulk(v));
                }
                (cmd(&[b"HGETALL", &key]), reply)
            }
            6 => (cmd(&[b"HSET", &key, &fields[0], &value(rng)]), b":1\r\n".to_vec()),
            7 => (cmd(&[b"SET", &key, &value(rng)]), b"+OK\r\n".to_vec()),
            _ => (format!("GET k{i}\r\n").into_bytes(), maybe_value(rng).map_or(b"$-1\r\n".to_vec(), |v| bulk(&v))),
        };
        c.req.extend(request);
        c.rep.extend(reply);
        c.cmd_end.push(c.req.len());
        c.rep_end.push(c.rep.len());
    }
    c
}

/// Delivers `c` from offsets `start` in random chunks, a reply's bytes never before its command's, losing
/// chunks with `loss` per mille; returns the rows' keys, fields and command names.
fn deliver(c: &Conv, rng: &mut Rng, max_chunk: usize, loss: u32, start: Option<(usize, usize)>) -> Vec<Vec<u8>> {
    let mut session = match start {
        None => Session::new(Limits::default()),
        Some(_) => Session::mid_stream(Limits::default()),
    };
    let mut rows = RowBuilder::new(None);
    let (mut rq, mut rp) = start.unwrap_or((0, 0));
    let mut clock = 0i64;
    while rq < c.req.len() || rp < c.rep.len() {
        let sent = c.cmd_end.iter().take_while(|&&e| e <= rq).count();
        let rep_limit = if sent == 0 { 0 } else { c.rep_end[sent - 1] }.max(rp);
        let can_req = rq < c.req.len();
        let can_rep = rp < rep_limit;
        let dir = if can_req && (!can_rep || rng.chance(500)) { Direction::Request } else { Direction::Reply };
        let (pos, limit, bytes) = match dir {
            Direction::Request => (&mut rq, c.req.len(), &c.req),
            Direction::Reply => (&mut rp, rep_limit, &c.rep),
        };
        let len = (1 + rng.below(max_chunk as u64) as usize).min(limit - *pos);
        clock += 1;
        let mut out = |cmd: &crate::resp::Command| rows.push_command(0, cmd);
        if rng.chance(loss) {
            session.on_gap(dir, clock, len as u64, &mut out);
        } else {
            session.on_data(dir, clock, &bytes[*pos..*pos + len], &mut out);
        }
        *pos += len;
    }
    session.finish(&mut |cmd| rows.push_command(0, cmd));
    let b = rows.take();
    let texts = |offsets: &[i64], data: &[u8]| -> Vec<Vec<u8>> {
        offsets.windows(2).map(|w| data[w[0] as usize..w[1] as usize].to_vec()).collect()
    };
    let mut found = texts(&b.key_offsets, &b.key_data);
    found.extend(texts(&b.field_offsets, &b.field_data));
    found.extend(rows.cmd_names().iter().map(|n| n.as_bytes().to_vec()));
    found
}

fn marked(s: &[u8]) -> bool {
    s.windows(MARK.len()).any(|w| w.eq_ignore_ascii_case(MARK))
}

proptest! {
    #![proptest_config(ProptestConfig { cases: cases(), ..ProptestConfig::default() })]

    #[test]
    fn no_planted_value_reaches_a_row(
        seed: u64, commands in 1usize..60, max_chunk in 1usize..400, loss in 0u32..120, mid: bool, at: usize,
    ) {
        let mut rng = Rng::new(seed);
        let c = generate(&mut rng, commands);
        // A mid-stream start anywhere: inside a command or a value, and inside a reply already due.
        let start = mid.then(|| {
            let rq = at % c.req.len();
            let due = c.cmd_end.iter().zip(&c.rep_end).take_while(|(&e, _)| e <= rq).last().map_or(0, |(_, &r)| r);
            (rq, (at / 7) % (due + 1))
        });
        let found = deliver(&c, &mut rng, max_chunk, loss, start);
        for s in &found {
            prop_assert!(!marked(s), "a value reached a row: {:?}", String::from_utf8_lossy(s));
        }
    }
}

/// The property is not won by emitting nothing: without losses every command gives its rows.
#[test]
fn rows_do_come_out() {
    let mut rng = Rng::new(7);
    let c = generate(&mut rng, 200);
    let found = deliver(&c, &mut rng, 300, 0, None);
    assert!(found.len() > 400, "{} strings", found.len());
    assert!(found.iter().all(|s| !marked(s)));
}

/// 256 cases, or `PROPTEST_CASES` for a longer search.
fn cases() -> u32 {
    std::env::var("PROPTEST_CASES").ok().and_then(|v| v.parse().ok()).unwrap_or(256)
}
