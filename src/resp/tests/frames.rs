//! The reply parser on every frame type, whole and cut into pieces, and on its bounds.

use crate::resp::reply::{Kind, Plan, ReplyParser, Step};
use crate::resp::Limits;

/// A frame as the parser summarized it: (kind, depth, len, int) per node, captured keys, tag.
type Summary = (Vec<(Kind, u8, u32, i64)>, Vec<Vec<u8>>, Option<Vec<u8>>);

/// Parses `bytes` fed in pieces of `piece` bytes; returns the frames, or Err at invalid input.
fn parse(bytes: &[u8], piece: usize, plan: Plan, limits: Limits) -> Result<Vec<Summary>, usize> {
    let mut p = ReplyParser::new(limits);
    let mut frames = Vec::new();
    let mut offset = 0;
    for chunk in bytes.chunks(piece.max(1)) {
        let mut pos = 0;
        while pos < chunk.len() {
            if p.at_boundary() {
                p.begin(plan);
            }
            let (n, step) = p.advance(&chunk[pos..], 7);
            pos += n;
            match step {
                Step::Frame => {
                    let f = &p.frame;
                    let nodes = f.nodes.iter().map(|n| (n.kind, n.depth, n.len, n.int)).collect();
                    let keys = f
                        .key_spans
                        .iter()
                        .map(|s| f.keys[s.start as usize..(s.start + s.len) as usize].to_vec())
                        .collect();
                    frames.push((nodes, keys, f.tag().map(<[u8]>::to_vec)));
                }
                Step::More => assert_eq!(pos, chunk.len()),
                Step::Invalid => return Err(offset + pos),
            }
        }
        offset += chunk.len();
    }
    if !p.at_boundary() {
        // Valid so far, but unfinished: the tests below use that to tell "invalid" from "needs more".
        return Ok(Vec::new());
    }
    Ok(frames)
}

/// Parses `bytes` whole and byte by byte (the same frames either way); returns the frames.
fn frames(bytes: &[u8], plan: Plan) -> Vec<Summary> {
    let whole = parse(bytes, bytes.len(), plan, Limits::default()).expect("valid");
    assert!(!whole.is_empty(), "unfinished frame");
    for piece in [1, 2, 3, 5] {
        assert_eq!(parse(bytes, piece, plan, Limits::default()).expect("valid"), whole, "pieces of {piece}");
    }
    whole
}

fn one(bytes: &[u8]) -> Vec<(Kind, u8, u32, i64)> {
    let mut f = frames(bytes, Plan { depth: 1, keys_at: 0 });
    assert_eq!(f.len(), 1);
    f.remove(0).0
}

fn invalid(bytes: &[u8], limits: Limits) -> bool {
    parse(bytes, bytes.len(), Plan::default(), limits).is_err()
}

#[test]
fn resp2_scalars() {
    use Kind::*;
    assert_eq!(one(b"+OK\r\n"), [(Simple, 0, 2, 0)]);
    assert_eq!(one(b"-ERR wrong\r\n"), [(Error, 0, 9, 0)]);
    assert_eq!(one(b":-42\r\n"), [(Integer, 0, 0, -42)]);
    assert_eq!(one(b"$5\r\nhello\r\n"), [(Bulk, 0, 5, 0)]);
    assert_eq!(one(b"$0\r\n\r\n"), [(Bulk, 0, 0, 0)]);
    assert_eq!(one(b"$-1\r\n"), [(Nil, 0, 0, 0)]);
    assert_eq!(one(b"*-1\r\n"), [(Nil, 0, 0, 0)]);
    // A bulk may hold CR, LF and anything else: only its length counts.
    assert_eq!(one(b"$4\r\n\r\n\r\n\r\n"), [(Bulk, 0, 4, 0)]);
}

#[test]
fn resp2_arrays() {
    use Kind::*;
    assert_eq!(
        one(b"*3\r\n$2\r\nab\r\n$-1\r\n$3\r\nxyz\r\n"),
        [(Array, 0, 3, 0), (Bulk, 1, 2, 0), (Nil, 1, 0, 0), (Bulk, 1, 3, 0)]
    );
    assert_eq!(one(b"*0\r\n"), [(Array, 0, 0, 0)]);
    // Nested: depth-2 nodes are not recorded at plan depth 1.
    assert_eq!(one(b"*2\r\n*1\r\n:1\r\n:2\r\n"), [(Array, 0, 2, 0), (Array, 1, 1, 0), (Integer, 1, 0, 2)]);
    let deep = frames(b"*2\r\n*1\r\n:1\r\n:2\r\n", Plan { depth: 2, keys_at: 0 });
    assert_eq!(deep[0].0[2], (Integer, 2, 0, 1));
}

#[test]
fn resp3_types() {
    use Kind::*;
    assert_eq!(one(b"_\r\n"), [(Null, 0, 0, 0)]);
    assert_eq!(one(b"#t\r\n"), [(Bool, 0, 0, 0)]);
    assert_eq!(one(b",3.14\r\n"), [(Double, 0, 0, 0)]);
    assert_eq!(one(b",-inf\r\n"), [(Double, 0, 0, 0)]);
    assert_eq!(one(b"(3492890328409238509324850943850943825024385\r\n"), [(BigNumber, 0, 0, 0)]);
    assert_eq!(one(b"!21\r\nSYNTAX invalid syntax\r\n"), [(BulkError, 0, 21, 0)]);
    assert_eq!(one(b"=15\r\ntxt:Some string\r\n"), [(Verbatim, 0, 15, 0)]);
    assert_eq!(one(b"~2\r\n+a\r\n:1\r\n"), [(Set, 0, 2, 0), (Simple, 1, 1, 0), (Integer, 1, 0, 1)]);
    assert_eq!(one(b"%1\r\n+key\r\n$3\r\nval\r\n"), [(Map, 0, 1, 0), (Simple, 1, 3, 0), (Bulk, 1, 3, 0)]);
    assert_eq!(one(b">2\r\n$7\r\nmessage\r\n$1\r\nx\r\n")[0], (Push, 0, 2, 0));
}

#[test]
fn attributes_are_skipped() {
    use Kind::*;
    // An attribute before the reply, and one before an element inside it.
    let bytes = b"|1\r\n+key-popularity\r\n%1\r\n$1\r\na\r\n,0.19\r\n*2\r\n:1\r\n|1\r\n+ttl\r\n:3600\r\n:2\r\n";
    assert_eq!(one(bytes), [(Array, 0, 2, 0), (Integer, 1, 0, 1), (Integer, 1, 0, 2)]);
    assert_eq!(one(b"|0\r\n:5\r\n"), [(Integer, 0, 0, 5)]);
}

#[test]
fn tags_and_keys() {
    let f = frames(b"+QUEUED\r\n", Plan::default());
    assert_eq!(f[0].2.as_deref(), Some(&b"QUEUED"[..]));
    let f = frames(b"*3\r\n$9\r\nsubscribe\r\n$2\r\nch\r\n:1\r\n", Plan { depth: 1, keys_at: 0 });
    assert_eq!(f[0].2.as_deref(), Some(&b"subscribe"[..]));
    // HGETALL, RESP2 and RESP3: field names at even positions are captured, values are not.
    let plan = Plan { depth: 1, keys_at: 1 };
    let f = frames(b"*4\r\n$2\r\nf1\r\n$3\r\nabc\r\n$2\r\nf2\r\n$-1\r\n", plan);
    assert_eq!(f[0].1, [b"f1".to_vec(), b"f2".to_vec()]);
    let f = frames(b"%2\r\n$2\r\nf1\r\n$3\r\nabc\r\n$2\r\nf2\r\n$1\r\nz\r\n", plan);
    assert_eq!(f[0].1, [b"f1".to_vec(), b"f2".to_vec()]);
}

#[test]
fn several_frames_in_one_chunk() {
    let f = frames(b"+OK\r\n:1\r\n$1\r\na\r\n*1\r\n$0\r\n\r\n", Plan { depth: 1, keys_at: 0 });
    assert_eq!(f.len(), 4);
}

#[test]
fn bounds_and_malformed_input() {
    let d = Limits::default();
    let small = Limits { max_bulk_len: 10, max_aggregate_len: 3, max_depth: 2, max_line_len: 8, ..d };
    assert!(invalid(b"$11\r\n", small));
    assert!(!invalid(b"$10\r\n0123456789\r\n", small));
    assert!(invalid(b"*4\r\n", small));
    assert!(!invalid(b"%2\r\n", small));
    assert!(!invalid(b"*3\r\n", small));
    assert!(invalid(b"*1\r\n*1\r\n*1\r\n:1\r\n", small));
    assert!(invalid(b"+123456789\r\n", small));
    assert!(invalid(&[b"$".as_slice(), &[b'9'; 30], b"\r\n"].concat(), d));
    assert!(invalid(b"$536870913\r\n", d));
    assert!(invalid(b"$-2\r\n", d));
    assert!(invalid(b"*-2\r\n", d));
    assert!(invalid(b"%-1\r\n", d));
    assert!(invalid(b"$3\r\nabcd\r\n", d));
    assert!(invalid(b":12a\r\n", d));
    assert!(invalid(b":1\n", d));
    assert!(invalid(b"+a\rb\r\n", d));
    assert!(invalid(b"_x\r\n", d));
    assert!(invalid(b"#x\r\n", d));
    assert!(invalid(b"$?\r\n", d));
    assert!(invalid(b"@1\r\n", d));
    assert!(invalid(b"=3\r\ntxt\r\n", d));
}

#[test]
fn a_large_bulk_in_many_chunks_is_skipped_not_buffered() {
    let len = 8 << 20;
    let mut bytes = format!("*2\r\n${len}\r\n").into_bytes();
    bytes.resize(bytes.len() + len, b'x');
    bytes.extend_from_slice(b"\r\n:7\r\n");
    let mut p = ReplyParser::new(Limits::default());
    p.begin(Plan { depth: 1, keys_at: 0 });
    let mut frames = 0;
    for chunk in bytes.chunks(1000) {
        let (n, step) = p.advance(chunk, 0);
        assert_eq!(n, chunk.len());
        frames += matches!(step, Step::Frame) as usize;
    }
    assert_eq!(frames, 1);
    assert_eq!(p.frame.nodes[1].len, len as u32);
    assert!(p.held_bytes() < 4096, "held {}", p.held_bytes());
}

#[test]
fn a_top_level_bulk_is_skipped_not_captured() {
    // Plan::keys_at 0 means no keys: a GET's value must not be copied as if it were an HGETALL field name.
    let len = 8 << 20;
    let mut bytes = format!("${len}\r\n").into_bytes();
    bytes.resize(bytes.len() + len, b'x');
    bytes.extend_from_slice(b"\r\n");
    let mut p = ReplyParser::new(Limits::default());
    p.begin(Plan { depth: 1, keys_at: 0 });
    let steps: Vec<bool> = bytes.chunks(1000).map(|c| matches!(p.advance(c, 0).1, Step::Frame)).collect();
    assert_eq!(steps.iter().filter(|&&f| f).count(), 1);
    assert!(p.frame.keys.is_empty() && p.frame.key_spans.is_empty() && !p.frame.overflow);
    assert!(p.held_bytes() < 4096, "held {}", p.held_bytes());
}

#[test]
fn a_top_level_bulk_whose_value_ends_inside_a_loss_ends_there() {
    let mut p = ReplyParser::new(Limits::default());
    p.begin(Plan { depth: 1, keys_at: 0 });
    // "$10\r\n0123456789\r\n:7\r\n" with "3456789\r\n:7" lost: the bulk ends, 3 bytes of the loss after it.
    assert!(matches!(p.advance(b"$10\r\n012", 0).1, Step::More));
    assert_eq!(p.end_cut_bulk(12), Some(3));
    assert!(p.at_boundary());
    assert_eq!((p.frame.nodes[0].kind, p.frame.nodes[0].len), (Kind::Bulk, 10));
    // A loss ending within the value (or its CRLF) is `skip_value`'s; inside an aggregate or a header, the
    // frame's summary needs what was lost.
    p.begin(Plan { depth: 1, keys_at: 0 });
    p.advance(b"$4\r\nab", 0);
    assert_eq!(p.end_cut_bulk(4), None);
    assert_eq!(p.end_cut_bulk(5), Some(1));
    p.begin(Plan { depth: 1, keys_at: 0 });
    p.advance(b"*2\r\n$4\r\nab", 0);
    assert_eq!(p.end_cut_bulk(10), None);
    p.reset();
    p.begin(Plan { depth: 1, keys_at: 0 });
    p.advance(b"$4", 0);
    assert_eq!(p.end_cut_bulk(10), None);
}

#[test]
fn a_loss_inside_a_skipped_value_keeps_the_frame() {
    let mut p = ReplyParser::new(Limits::default());
    p.begin(Plan { depth: 1, keys_at: 0 });
    // "*2\r\n:5\r\n$10\r\n0123456789\r\n" with "3456789\r" lost: the frame goes on.
    assert!(matches!(p.advance(b"*2\r\n:5\r\n$10\r\n012", 0).1, Step::More));
    assert_eq!(p.skip_value(8), Some(false));
    assert!(matches!(p.advance(b"\n", 0).1, Step::Frame));
    assert_eq!(p.frame.nodes[2].len, 10);
    // A loss running past the value's CRLF, or inside a header, is not skippable.
    p.begin(Plan { depth: 1, keys_at: 0 });
    p.advance(b"$4\r\nab", 0);
    assert_eq!(p.skip_value(5), None);
    assert_eq!(p.skip_value(4), Some(true));
    p.begin(Plan { depth: 1, keys_at: 0 });
    p.advance(b"*2\r\n$1", 0);
    assert_eq!(p.skip_value(1), None);
    // The first string of an aggregate may be its tag (a pub/sub kind), and HGETALL's field names are
    // needed: a loss inside either is not skippable.
    p.reset();
    p.begin(Plan { depth: 1, keys_at: 0 });
    p.advance(b"*3\r\n$7\r\nmes", 0);
    assert_eq!(p.skip_value(1), None);
    p.reset();
    p.begin(Plan { depth: 1, keys_at: 1 });
    p.advance(b"*2\r\n$6\r\nfie", 0);
    assert_eq!(p.skip_value(1), None);
}
