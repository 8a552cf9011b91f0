//! Pairing on a clean connection: pipelining, transactions, pub/sub, RESP3 pushes, CLIENT REPLY, inline
//! commands, redaction, timestamps.

use crate::resp::testgen::{array, bulk, cmd, cmds, Owned, Run};
use crate::resp::{Limits, Session, REDACTED};

fn s(line: &str) -> String {
    line.to_string()
}

#[test]
fn request_reply_with_timestamps() {
    let mut r = Run::new();
    r.req(100, &cmds("GET k1")).rep(150, &bulk(b"hello"));
    r.req(200, &cmds("HMGET st_1 f1 f2 f3")).rep(260, &array(&[Some(b"ab"), None, Some(b"")]));
    r.req(300, &cmds("INCR n")).rep(301, b":5\r\n");
    r.req(400, &cmds("SET k v")).rep(402, b"+OK\r\n");
    r.req(500, &cmds("GET missing")).rep(503, b"$-1\r\n");
    r.req(600, &cmds("FOO")).rep(604, b"-ERR unknown command 'FOO'\r\n");
    assert_eq!(
        r.pairs(),
        [
            (s("GET k1"), Owned::Bulk(5)),
            (s("HMGET st_1 f1 f2 f3"), Owned::Array(vec![Some(2), None, Some(0)])),
            (s("INCR n"), Owned::Integer(5)),
            (s("SET k v"), Owned::Simple),
            (s("GET missing"), Owned::Nil),
            (s("FOO"), Owned::Error(s("ERR"))),
        ]
    );
    assert_eq!((r.got[1].ts, r.got[1].reply_ts), (200, Some(260)));
    let st = r.session.stats();
    assert_eq!((st.commands, st.paired, st.unknown_replies), (6, 6, 0));
}

#[test]
fn pipelined_commands_pair_in_order() {
    let mut r = Run::new();
    let mut reqs = Vec::new();
    let mut reps = Vec::new();
    for i in 0..50 {
        reqs.extend(cmds(&format!("HMGET e{i} a b")));
        reps.extend(array(&[Some(&vec![b'x'; i][..]), None]));
    }
    r.req(10, &reqs);
    assert!(r.got.is_empty(), "nothing is emitted before its reply");
    r.rep(20, &reps);
    assert_eq!(r.got.len(), 50);
    for (i, g) in r.got.iter().enumerate() {
        assert_eq!(g.line(), format!("HMGET e{i} a b"));
        assert_eq!(g.reply, Owned::Array(vec![Some(i as u32), None]));
    }
}

#[test]
fn command_timestamp_is_that_of_its_first_byte() {
    let c = cmds("GET key");
    let mut r = Run::new();
    r.req(10, &c[..3]).req(20, &c[3..]).rep(30, &bulk(b"v")[..2]).rep(40, &bulk(b"v")[2..]);
    assert_eq!((r.got[0].ts, r.got[0].reply_ts), (10, Some(30)));
}

#[test]
fn mget_and_hgetall_in_both_protocols() {
    let mut r = Run::new();
    r.req(1, &cmds("MGET a b")).rep(2, &array(&[None, Some(b"xyz")]));
    r.req(3, &cmds("HGETALL h")).rep(4, &array(&[Some(b"f1"), Some(b"v1v1"), Some(b"f22"), Some(b"")]));
    r.req(5, &cmds("HELLO 3")).rep(6, b"%1\r\n$6\r\nserver\r\n$5\r\nredis\r\n");
    r.req(7, &cmds("HGETALL h")).rep(8, b"%2\r\n$2\r\nf1\r\n$4\r\nv1v1\r\n$3\r\nf22\r\n_\r\n");
    r.req(9, &cmds("HGETALL empty")).rep(10, b"%0\r\n");
    r.req(11, &cmds("GET k")).rep(12, b"_\r\n");
    let map = Owned::Map(vec![b"f1".to_vec(), b"f22".to_vec()], vec![Some(4), Some(0)]);
    let map3 = Owned::Map(vec![b"f1".to_vec(), b"f22".to_vec()], vec![Some(4), None]);
    assert_eq!(
        r.pairs(),
        [
            (s("MGET a b"), Owned::Array(vec![None, Some(3)])),
            (s("HGETALL h"), map),
            (s("HELLO 3"), Owned::Other),
            (s("HGETALL h"), map3),
            (s("HGETALL empty"), Owned::Map(vec![], vec![])),
            (s("GET k"), Owned::Nil),
        ]
    );
}

#[test]
fn resp3_pushes_are_not_replies() {
    let mut r = Run::new();
    r.req(1, &cmds("HELLO 3")).rep(2, b"%0\r\n");
    r.req(3, &cmds("GET a"));
    r.rep(4, b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\na\r\n");
    r.rep(5, b"|1\r\n+ttl\r\n:10\r\n$2\r\nvv\r\n");
    assert_eq!(r.pairs()[1], (s("GET a"), Owned::Bulk(2)));
    assert_eq!(r.session.stats().pushes, 1);
}

#[test]
fn transaction_replies_come_from_exec() {
    let mut r = Run::new();
    let mut reqs = cmds("MULTI");
    reqs.extend(cmds("HMGET e f1 f2"));
    reqs.extend(cmds("HGETALL h"));
    reqs.extend(cmds("INCR n"));
    reqs.extend(cmds("EXEC"));
    reqs.extend(cmds("GET after"));
    r.req(10, &reqs);
    r.rep(20, b"+OK\r\n+QUEUED\r\n+QUEUED\r\n+QUEUED\r\n");
    assert_eq!(r.pairs(), [(s("MULTI"), Owned::Simple)], "queued commands wait for EXEC");
    let mut exec = b"*3\r\n".to_vec();
    exec.extend(array(&[Some(b"abc"), None]));
    exec.extend(array(&[Some(b"f"), Some(b"12")]));
    exec.extend(b":7\r\n");
    r.rep(30, &exec).rep(31, &bulk(b"x"));
    assert_eq!(
        r.pairs(),
        [
            (s("MULTI"), Owned::Simple),
            (s("HMGET e f1 f2"), Owned::Array(vec![Some(3), None])),
            (s("HGETALL h"), Owned::Map(vec![b"f".to_vec()], vec![Some(2)])),
            (s("INCR n"), Owned::Integer(7)),
            (s("EXEC"), Owned::Other),
            (s("GET after"), Owned::Bulk(1)),
        ]
    );
    assert_eq!(r.got[1].reply_ts, Some(30));
}

#[test]
fn discarded_aborted_and_failed_transactions() {
    let mut r = Run::new();
    let tx = |last: &str| [cmds("MULTI"), cmds("GET a"), cmds(last)].concat();
    r.req(1, &tx("DISCARD")).rep(2, b"+OK\r\n+QUEUED\r\n+OK\r\n");
    r.req(3, &tx("EXEC")).rep(4, b"+OK\r\n+QUEUED\r\n*-1\r\n");
    r.req(5, &[cmds("MULTI"), cmds("GET a"), cmds("NOPE"), cmds("EXEC")].concat());
    r.rep(6, b"+OK\r\n+QUEUED\r\n-ERR unknown command\r\n-EXECABORT Transaction discarded\r\n");
    let no = Owned::NoReply;
    assert_eq!(
        r.pairs(),
        [
            (s("MULTI"), Owned::Simple),
            (s("GET a"), no.clone()),
            (s("DISCARD"), Owned::Simple),
            (s("MULTI"), Owned::Simple),
            (s("GET a"), no.clone()),
            (s("EXEC"), Owned::Nil),
            (s("MULTI"), Owned::Simple),
            (s("GET a"), no),
            (s("NOPE"), Owned::Error(s("ERR"))),
            (s("EXEC"), Owned::Error(s("EXECABORT"))),
        ]
    );
    assert_eq!(r.session.stats().no_reply, 3);
}

#[test]
fn subscribe_mode_resp2() {
    let mut r = Run::new();
    r.req(1, &cmds("SUBSCRIBE a b"));
    r.rep(2, b"*3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$9\r\nsubscribe\r\n$1\r\nb\r\n:2\r\n");
    r.rep(3, b"*3\r\n$7\r\nmessage\r\n$1\r\na\r\n$5\r\nhello\r\n");
    r.req(4, &cmds("PING"));
    r.rep(5, b"*3\r\n$7\r\nmessage\r\n$1\r\nb\r\n$2\r\nhi\r\n*2\r\n$4\r\npong\r\n$0\r\n\r\n");
    r.req(6, &cmds("UNSUBSCRIBE"));
    r.rep(7, b"*3\r\n$11\r\nunsubscribe\r\n$1\r\na\r\n:1\r\n*3\r\n$11\r\nunsubscribe\r\n$1\r\nb\r\n:0\r\n");
    // Out of subscribe mode, an array starting with "message" is an ordinary reply again.
    r.req(8, &cmds("LRANGE l 0 -1")).rep(9, &array(&[Some(b"message"), Some(b"x")]));
    assert_eq!(
        r.pairs(),
        [
            (s("SUBSCRIBE a b"), Owned::Other),
            (s("PING"), Owned::Array(vec![Some(4), Some(0)])),
            (s("UNSUBSCRIBE"), Owned::Other),
            (s("LRANGE l 0 -1"), Owned::Array(vec![Some(7), Some(1)])),
        ]
    );
    assert_eq!(r.session.stats().pushes, 4);
    assert_eq!(r.session.stats().unpaired_replies, 0);
}

/// A connection already open when the capture starts, as a client-side-caching invalidation connection
/// is: SUBSCRIBE, PINGs, then PSUBSCRIBE while pairing is still lost. Its confirmations (out-of-band frames)
/// answer it, so pairing comes back at the next quiet turn instead of waiting forever for replies that
/// already came.
#[test]
fn subscribe_then_psubscribe_on_a_connection_picked_up_mid_stream() {
    let mut r = Run::with(Session::mid_stream(Limits::default()));
    let pong = b"*2\r\n$4\r\npong\r\n$0\r\n\r\n";
    r.req(1, &cmds("SUBSCRIBE __redis__:invalidate"));
    r.rep(2, b"*3\r\n$9\r\nsubscribe\r\n$20\r\n__redis__:invalidate\r\n:1\r\n");
    for t in [10, 20, 30] {
        r.req(t, &cmds("PING")).rep(t + 1, pong);
    }
    // The request stream is trusted again from here (four commands confirmed in a row); PSUBSCRIBE's quiet
    // start finds the reply stream's frame boundaries.
    r.req(40, &cmds("PSUBSCRIBE p* q*"));
    r.rep(41, b"*3\r\n$10\r\npsubscribe\r\n$2\r\np*\r\n:2\r\n*3\r\n$10\r\npsubscribe\r\n$2\r\nq*\r\n:3\r\n");
    r.rep(45, b"*3\r\n$7\r\nmessage\r\n$20\r\n__redis__:invalidate\r\n*1\r\n$1\r\nk\r\n");
    for t in [50, 60] {
        r.req(t, &cmds("PING")).rep(t + 1, pong);
    }
    r.req(70, &cmds("UNSUBSCRIBE"));
    r.rep(71, b"*3\r\n$11\r\nunsubscribe\r\n$20\r\n__redis__:invalidate\r\n:2\r\n");
    r.req(80, &cmds("GET k")).rep(81, &bulk(b"abc"));
    r.finish();
    let pairs = r.pairs();
    assert_eq!(pairs[5], (s("PING"), Owned::Array(vec![Some(4), Some(0)])));
    assert_eq!(pairs[6], (s("PING"), Owned::Array(vec![Some(4), Some(0)])));
    assert_eq!(pairs[7], (s("UNSUBSCRIBE"), Owned::Other));
    // Still subscribed to two patterns: the GET's reply is an ordinary one.
    assert_eq!(pairs[8], (s("GET k"), Owned::Bulk(3)));
    assert_eq!(r.session.stats().pairing_resyncs, 1);
}

#[test]
fn subscribe_mode_resp3() {
    let mut r = Run::new();
    r.req(1, &cmds("HELLO 3")).rep(2, b"%0\r\n");
    r.req(3, &cmds("SUBSCRIBE a"));
    r.rep(4, b">3\r\n$9\r\nsubscribe\r\n$1\r\na\r\n:1\r\n>3\r\n$7\r\nmessage\r\n$1\r\na\r\n$1\r\nm\r\n");
    r.req(5, &cmds("GET k")).rep(6, &bulk(b"abcd"));
    assert_eq!(r.pairs()[1..], [(s("SUBSCRIBE a"), Owned::Other), (s("GET k"), Owned::Bulk(4))]);
    assert_eq!(r.session.stats().pushes, 1);
}

#[test]
fn client_reply_off_skip_on() {
    let mut r = Run::new();
    let reqs = [
        cmds("CLIENT REPLY OFF"),
        cmds("SET a 1"),
        cmds("SET b 2"),
        cmds("CLIENT REPLY ON"),
        cmds("GET a"),
        cmds("CLIENT REPLY SKIP"),
        cmds("SET c 3"),
        cmds("GET b"),
    ]
    .concat();
    r.req(1, &reqs);
    r.rep(2, b"+OK\r\n$1\r\n1\r\n$1\r\n2\r\n");
    let no = Owned::NoReply;
    assert_eq!(
        r.pairs(),
        [
            (s("CLIENT REPLY OFF"), no.clone()),
            (s("SET a 1"), no.clone()),
            (s("SET b 2"), no.clone()),
            (s("CLIENT REPLY ON"), Owned::Simple),
            (s("GET a"), Owned::Bulk(1)),
            (s("CLIENT REPLY SKIP"), no.clone()),
            (s("SET c 3"), no),
            (s("GET b"), Owned::Bulk(1)),
        ]
    );
}

#[test]
fn inline_commands() {
    let mut r = Run::new();
    r.req(1, b"PING\r\nHMGET a b c\r\n\r\nGET \"x y\"\n").rep(2, b"+PONG\r\n*2\r\n$1\r\nx\r\n$-1\r\n$1\r\nz\r\n");
    assert_eq!(
        r.pairs(),
        [
            (s("PING"), Owned::Simple),
            (s("HMGET a b c"), Owned::Array(vec![Some(1), None])),
            (s("GET x y"), Owned::Bulk(1)),
        ]
    );
    assert!(r.got.iter().all(|g| g.inline));
    assert_eq!(r.got[2].args, [b"GET".to_vec(), b"x y".to_vec()]);
    assert_eq!(r.session.stats().inline_commands, 3);
}

/// Inline lines are split as Redis splits them (`sdssplitargs`: single quotes, quotes inside words), and a
/// line Redis refuses (unbalanced quotes, an unknown command) is counted, keeps its place among the replies
/// (Redis answers it with an error), and parsing goes on with the next line.
#[test]
fn inline_lines_split_as_redis_does_and_refused_ones_keep_their_reply() {
    let mut r = Run::new();
    let request = b"SET k 'it\\'s a b'\r\nGET \"unbalanced\r\nGET a\"b c\"\r\nNOTACOMMAND x\r\nGET k2\r\n";
    r.req(1, request);
    r.rep(2, b"+OK\r\n-ERR Protocol error: unbalanced quotes in request\r\n$1\r\nv\r\n-ERR unknown command\r\n$2\r\nvv\r\n");
    r.finish();
    assert_eq!(
        r.pairs(),
        [(s("SET k it's a b"), Owned::Simple), (s("GET ab c"), Owned::Bulk(1)), (s("GET k2"), Owned::Bulk(2))]
    );
    let st = r.session.stats();
    assert_eq!((st.commands, st.inline_commands, st.refused_inline_lines, st.invalid_requests), (3, 3, 2, 0));
    assert_eq!(st.unparsable_bytes, (b"GET \"unbalanced\r\n".len() + b"NOTACOMMAND x\r\n".len()) as u64);
    assert_eq!((st.unknown_replies, st.unpaired_replies, st.request_resyncs), (0, 0, 0));
}

/// TLS on the Redis port used to come out as commands (its records read as inline lines), random bytes as
/// thousands of them. A client that begins with a TLS record marks the connection encrypted; bytes that are
/// neither RESP nor a known inline command are unparsable, never commands.
#[test]
fn tls_and_garbage_are_not_commands() {
    let mut r = Run::new();
    let mut hello = vec![0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xfc, 0x03, 0x03];
    hello.extend((0..500u32).map(|i| (i * 7 + 13) as u8));
    r.req(1, &hello).rep(2, &[0x16, 0x03, 0x03, 0x00, 0x7a, 0x02, b'\n', b'\r']);
    r.req(3, b"\x17\x03\x03\x00\x20GET k\r\n").finish();
    assert!(r.got.is_empty());
    assert_eq!(r.session.stats().encrypted_connections, 1);

    let mut rng = 0x2545_f491_4f6c_dd1du64;
    let garbage: Vec<u8> = (0..20_000)
        .map(|_| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            (rng >> 24) as u8
        })
        .filter(|&b| b != b'*')
        .collect();
    let mut r = Run::new();
    r.req(1, &garbage).finish();
    let st = r.session.stats();
    assert_eq!(st.commands, 0, "{:?}", r.pairs());
    assert!(st.refused_inline_lines > 10 && st.unparsable_bytes > 1000);
}

#[test]
fn credentials_are_redacted_as_read() {
    let mut r = Run::new();
    let reqs = [
        cmds("AUTH s3cret"),
        cmds("auth alice s3cret"),
        cmds("HELLO 3 AUTH alice s3cret SETNAME app"),
        b"AUTH s3cret\r\n".to_vec(),
    ]
    .concat();
    // Byte by byte, so no argument is ever whole in one chunk.
    for b in reqs.chunks(1) {
        r.req(1, b);
    }
    r.rep(2, b"+OK\r\n+OK\r\n%0\r\n+OK\r\n");
    let red = String::from_utf8(REDACTED.to_vec()).unwrap();
    assert_eq!(r.got[0].line(), format!("AUTH {red}"));
    assert_eq!(r.got[1].line(), format!("auth {red} {red}"));
    assert_eq!(r.got[2].line(), format!("HELLO 3 AUTH {red} {red} SETNAME app"));
    assert_eq!(r.got[3].line(), format!("AUTH {red}"));
    assert_eq!(r.session.stats().redacted_args, 6);
}

#[test]
fn long_arguments_are_elided_and_long_commands_dropped() {
    let limits = Limits { max_arg_bytes: 8, max_command_bytes: 64, ..Limits::default() };
    let mut r = Run::with(Session::new(limits));
    r.req(1, &cmd(&[b"SET", b"k", &[b'v'; 100]])).rep(2, b"+OK\r\n");
    let many: Vec<&[u8]> = std::iter::once(&b"HMGET"[..]).chain(std::iter::repeat_n(&b"field"[..], 20)).collect();
    r.req(3, &cmd(&many)).rep(4, &array(&[None; 19]));
    r.req(5, &cmds("GET k")).rep(6, &bulk(b"v"));
    assert_eq!(r.pairs(), [(s("SET k "), Owned::Simple), (s("GET k"), Owned::Bulk(1))]);
    assert_eq!(r.got[0].elided, 1);
    assert_eq!(r.session.stats().oversized_commands, 1);
    assert_eq!(r.session.stats().elided_args, 1);
}

#[test]
fn large_values_are_skipped_piece_by_piece() {
    // A 64 MiB value on each side, in 4 KiB chunks: skipped by length, never buffered.
    let len = 64 << 20;
    let mut req = format!("*3\r\n$3\r\nSET\r\n$1\r\nk\r\n${len}\r\n").into_bytes();
    req.resize(req.len() + len, b'v');
    req.extend_from_slice(b"\r\n");
    let mut rep = format!("${len}\r\n").into_bytes();
    rep.resize(rep.len() + len, b'\r');
    rep.extend_from_slice(b"\r\n");
    let mut r = Run::new();
    let start = std::time::Instant::now();
    for c in req.chunks(4096) {
        r.req(1, c);
    }
    r.rep(2, b"+OK\r\n");
    r.req(3, &cmds("GET k"));
    for c in rep.chunks(4096) {
        r.rep(4, c);
        assert!(r.session.memory_bytes() < 1 << 20);
    }
    assert_eq!(r.pairs(), [(s("SET k "), Owned::Simple), (s("GET k"), Owned::Bulk(len as u32))]);
    assert!(start.elapsed().as_secs() < 20, "took {:?}", start.elapsed());
}

#[test]
fn verbatim_strings_count_their_text() {
    let mut r = Run::new();
    r.req(1, &cmds("HELLO 3")).rep(2, b"%0\r\n");
    r.req(3, &cmds("GET k")).rep(4, b"=9\r\ntxt:hello\r\n");
    assert_eq!(r.got[1].reply, Owned::Bulk(5));
}
