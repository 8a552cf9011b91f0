//! Random Redis conversations with known answers, for the property tests: a client sends batches of
//! commands (plain ones, MULTI/EXEC, DISCARD, CLIENT REPLY OFF...ON, HELLO 3, inline), a server answers
//! them (RESP2 or RESP3, with pushes and attributes in RESP3), and every command carries its true reply.
//! Then the bytes are delivered to a session in random chunks, both directions interleaved in causal order,
//! optionally with chunks lost.

use crate::resp::testgen::{cmd, Got, Owned};
use crate::resp::{Direction, RespStats, Session};

/// splitmix64: a tiny deterministic generator, seeded by proptest.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (n > 0).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
    pub fn chance(&mut self, per_mille: u32) -> bool {
        self.below(1000) < per_mille as u64
    }
    /// Bytes that look like RESP as often as not: values may hold anything.
    pub fn bytes(&mut self, len: usize) -> Vec<u8> {
        const ALPHABET: &[u8] = b"ab\r\n*$:+-%_0123456789";
        (0..len).map(|_| ALPHABET[self.below(ALPHABET.len() as u64) as usize]).collect()
    }
}

pub struct Op {
    pub args: Vec<Vec<u8>>,
    pub expect: Owned,
}

/// A conversation: the bytes of each direction, and per command where its bytes and its reply's end.
#[derive(Default)]
pub struct Traffic {
    pub req: Vec<u8>,
    pub rep: Vec<u8>,
    pub ops: Vec<Op>,
    /// Per op: end of its bytes in `req`, end of its reply (and any push after it) in `rep`, its batch.
    pub cmd_end: Vec<usize>,
    pub rep_end: Vec<usize>,
    pub batch: Vec<usize>,
}

struct Gen {
    rng: Rng,
    t: Traffic,
    resp3: bool,
    batch: usize,
    n: usize,
}

/// A conversation of `batches` batches.
pub fn generate(seed: u64, batches: usize) -> Traffic {
    let mut g = Gen { rng: Rng::new(seed), t: Traffic::default(), resp3: false, batch: 0, n: 0 };
    for b in 0..batches {
        g.batch = b;
        let items = 1 + g.rng.below(4);
        for _ in 0..items {
            g.item();
        }
    }
    g.t
}

impl Gen {
    fn item(&mut self) {
        match self.rng.below(100) {
            0..=4 => self.transaction(true),
            5..=6 => self.transaction(false),
            7..=8 => self.client_reply_off(),
            9 if !self.resp3 => {
                self.resp3 = true;
                self.op(
                    b"HELLO 3".split(|&b| b == b' ').map(<[u8]>::to_vec).collect(),
                    b"%0\r\n".to_vec(),
                    Owned::Other,
                );
            }
            10..=12 => {
                self.n += 1;
                let line = format!("GET i{}\r\n", self.n);
                let (reply, expect) = self.bulk_reply();
                self.raw_op(
                    line.into_bytes(),
                    vec![b"GET".to_vec(), format!("i{}", self.n).into_bytes()],
                    reply,
                    expect,
                );
            }
            _ => {
                let (args, reply, expect) = self.plain();
                self.op(args, reply, expect);
            }
        }
    }

    /// One command with a reply.
    fn plain(&mut self) -> (Vec<Vec<u8>>, Vec<u8>, Owned) {
        self.n += 1;
        let n = self.n;
        let key = |p: &str| format!("{p}{n}").into_bytes();
        match self.rng.below(8) {
            0 => {
                let (reply, expect) = self.bulk_reply();
                (vec![b"GET".to_vec(), key("k\r\n")], reply, expect)
            }
            1 | 2 => {
                let fields = 1 + self.rng.below(25) as usize;
                let mut args = vec![b"HMGET".to_vec(), key("e")];
                args.extend((0..fields).map(|f| format!("{f}").into_bytes()));
                let (reply, expect) = self.array_reply(fields);
                (args, reply, expect)
            }
            3 => {
                let keys = 1 + self.rng.below(4) as usize;
                let mut args = vec![b"MGET".to_vec()];
                args.extend((0..keys).map(|k| format!("m{n}_{k}").into_bytes()));
                let (reply, expect) = self.array_reply(keys);
                (args, reply, expect)
            }
            4 => {
                let pairs = self.rng.below(4) as usize;
                let (reply, expect) = self.map_reply(pairs, n);
                (vec![b"HGETALL".to_vec(), key("h")], reply, expect)
            }
            5 => (vec![b"INCR".to_vec(), key("c")], format!(":{n}\r\n").into_bytes(), Owned::Integer(n as i64)),
            6 => (vec![b"SET".to_vec(), key("s"), self.rng.bytes(5)], b"+OK\r\n".to_vec(), Owned::Simple),
            _ => (vec![key("NOPE")], b"-ERR unknown command\r\n".to_vec(), Owned::Error("ERR".into())),
        }
    }

    fn nil(&self) -> &'static [u8] {
        if self.resp3 {
            b"_\r\n"
        } else {
            b"$-1\r\n"
        }
    }

    fn bulk(&mut self, len: usize, out: &mut Vec<u8>) {
        out.extend(format!("${len}\r\n").as_bytes());
        out.extend(self.rng.bytes(len));
        out.extend(b"\r\n");
    }

    fn bulk_reply(&mut self) -> (Vec<u8>, Owned) {
        if self.rng.chance(150) {
            return (self.nil().to_vec(), Owned::Nil);
        }
        let len = self.rng.below(300) as usize;
        let mut out = Vec::new();
        self.bulk(len, &mut out);
        (out, Owned::Bulk(len as u32))
    }

    fn array_reply(&mut self, n: usize) -> (Vec<u8>, Owned) {
        let mut out = format!("*{n}\r\n").into_bytes();
        let mut lens = Vec::new();
        for _ in 0..n {
            if self.rng.chance(200) {
                out.extend(self.nil());
                lens.push(None);
            } else {
                let len = self.rng.below(40) as usize;
                self.bulk(len, &mut out);
                lens.push(Some(len as u32));
            }
        }
        (out, Owned::Array(lens))
    }

    fn map_reply(&mut self, pairs: usize, n: usize) -> (Vec<u8>, Owned) {
        let mut out = if self.resp3 { format!("%{pairs}\r\n") } else { format!("*{}\r\n", 2 * pairs) }.into_bytes();
        let (mut fields, mut lens) = (Vec::new(), Vec::new());
        for p in 0..pairs {
            let field = format!("f{n}_{p}").into_bytes();
            out.extend(format!("${}\r\n", field.len()).as_bytes());
            out.extend(&field);
            out.extend(b"\r\n");
            let len = self.rng.below(20) as usize;
            self.bulk(len, &mut out);
            fields.push(field);
            lens.push(Some(len as u32));
        }
        (out, Owned::Map(fields, lens))
    }

    fn transaction(&mut self, exec: bool) {
        self.op(vec![b"MULTI".to_vec()], b"+OK\r\n".to_vec(), Owned::Simple);
        let mut exec_reply = Vec::new();
        let inner = 1 + self.rng.below(3);
        for _ in 0..inner {
            let (args, reply, expect) = self.plain();
            let expect = if exec { expect } else { Owned::NoReply };
            self.op(args, b"+QUEUED\r\n".to_vec(), expect);
            exec_reply.extend(reply);
        }
        if exec {
            let mut reply = format!("*{inner}\r\n").into_bytes();
            reply.extend(exec_reply);
            self.op(vec![b"EXEC".to_vec()], reply, Owned::Other);
        } else {
            self.op(vec![b"DISCARD".to_vec()], b"+OK\r\n".to_vec(), Owned::Simple);
        }
    }

    fn client_reply_off(&mut self) {
        let words = |s: &str| s.split(' ').map(|w| w.as_bytes().to_vec()).collect::<Vec<_>>();
        self.op(words("CLIENT REPLY OFF"), Vec::new(), Owned::NoReply);
        for _ in 0..1 + self.rng.below(3) {
            let (args, _, _) = self.plain();
            self.op(args, Vec::new(), Owned::NoReply);
        }
        self.op(words("CLIENT REPLY ON"), b"+OK\r\n".to_vec(), Owned::Simple);
    }

    fn op(&mut self, args: Vec<Vec<u8>>, reply: Vec<u8>, expect: Owned) {
        let refs: Vec<&[u8]> = args.iter().map(Vec::as_slice).collect();
        self.raw_op(cmd(&refs), args, reply, expect);
    }

    fn raw_op(&mut self, bytes: Vec<u8>, args: Vec<Vec<u8>>, reply: Vec<u8>, expect: Owned) {
        let t = &mut self.t;
        t.req.extend(bytes);
        if self.resp3 && !reply.is_empty() && self.rng.chance(100) {
            t.rep.extend(b"|1\r\n+key-popularity\r\n,0.5\r\n");
        }
        t.rep.extend(reply);
        if self.resp3 && self.rng.chance(100) {
            t.rep.extend(b">2\r\n$10\r\ninvalidate\r\n*1\r\n$1\r\nk\r\n");
        }
        t.cmd_end.push(t.req.len());
        t.rep_end.push(t.rep.len());
        t.batch.push(self.batch);
        t.ops.push(Op { args, expect });
    }
}

/// How bytes reach the session.
#[derive(Clone, Copy, Debug)]
pub struct Delivery {
    pub max_chunk: usize,
    /// The client waits for all replies of a batch before it sends the next, and the server answers a
    /// batch once it has all of it (what the loss-recovery rules assume).
    pub batch_wait: bool,
    /// With `batch_wait`: the server may answer a command before the rest of its batch is sent.
    pub interleave: bool,
    /// Chance that a chunk is lost (reported as a gap), per mille.
    pub loss_per_mille: u32,
    /// Losses may hit the client's bytes too (else only the server's).
    pub lose_requests: bool,
    /// Offsets in (requests, replies) where the capture begins (a mid-stream start).
    pub start: (usize, usize),
}

/// What a session emitted, its stats, and the most memory it held along the way.
pub struct Outcome {
    pub got: Vec<Got>,
    pub stats: RespStats,
    pub peak_memory: usize,
}

/// Delivers `t` to `session`, then finishes it.
pub fn deliver(t: &Traffic, seed: u64, d: Delivery, mut session: Session) -> Outcome {
    let mut rng = Rng::new(seed);
    let mut got = Vec::new();
    let mut peak_memory = 0;
    let (mut rq, mut rp, mut sent, mut clock) = (d.start.0, d.start.1, 0usize, 0i64);
    let batches = t.batch.last().map_or(0, |b| b + 1);
    let mut req_batch_end = vec![0; batches];
    let mut rep_batch_end = vec![0; batches];
    for i in 0..t.ops.len() {
        req_batch_end[t.batch[i]] = t.cmd_end[i];
        rep_batch_end[t.batch[i]] = t.rep_end[i];
    }
    while rq < t.req.len() || rp < t.rep.len() {
        while sent < t.ops.len() && t.cmd_end[sent] <= rq {
            sent += 1;
        }
        // How far each direction may go now without breaking causality (or the batch discipline).
        let (req_limit, rep_limit) = if d.batch_wait {
            let b = t.batch.get(sent).copied().unwrap_or(batches);
            let prev_replies = if b == 0 { 0 } else { rep_batch_end[b - 1] };
            let req_limit = if rp >= prev_replies && b < batches { req_batch_end[b] } else { rq };
            let causal = if sent == 0 { 0 } else { t.rep_end[sent - 1] };
            (req_limit, if d.interleave { causal } else { prev_replies })
        } else {
            (t.req.len(), if sent == 0 { 0 } else { t.rep_end[sent - 1] })
        };
        let can_req = rq < req_limit;
        let can_rep = rp < rep_limit;
        assert!(can_req || can_rep, "delivery stuck at {rq}/{rp}");
        let dir = if can_req && (!can_rep || rng.chance(500)) { Direction::Request } else { Direction::Reply };
        let (pos, limit, bytes) = match dir {
            Direction::Request => (&mut rq, req_limit, &t.req),
            Direction::Reply => (&mut rp, rep_limit, &t.rep),
        };
        let len = (1 + rng.below(d.max_chunk as u64) as usize).min(limit - *pos);
        clock += 1;
        if rng.chance(d.loss_per_mille) && (d.lose_requests || dir == Direction::Reply) {
            session.on_gap(dir, clock, len as u64, &mut |c| got.push(Got::of(c)));
        } else {
            session.on_data(dir, clock, &bytes[*pos..*pos + len], &mut |c| got.push(Got::of(c)));
        }
        *pos += len;
        peak_memory = peak_memory.max(session.memory_bytes());
        session.check_counts();
    }
    session.finish(&mut |c| got.push(Got::of(c)));
    Outcome { got, stats: *session.stats(), peak_memory }
}

/// Where a capture could begin in a batch-waiting conversation: while the client sends batch `b` (`into`
/// its bytes), or (`!sending`) while the server answers batch `b - 1`.
pub fn mid_stream_start(t: &Traffic, b: usize, sending: bool, into: usize) -> (usize, usize) {
    let end = |ends: &Vec<usize>, batch: usize| {
        (0..t.ops.len()).filter(|&i| t.batch[i] < batch).map(|i| ends[i]).max().unwrap_or(0)
    };
    let (req0, rep0) = (end(&t.cmd_end, b), end(&t.rep_end, b));
    if sending || b == 0 {
        (req0 + into % (end(&t.cmd_end, b + 1) - req0).max(1), rep0)
    } else {
        let before = end(&t.rep_end, b - 1);
        (req0, before + into % (rep0 - before).max(1))
    }
}
