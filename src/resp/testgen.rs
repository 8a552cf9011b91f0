//! Test helpers: RESP encoders, and a recorder that turns what a session emits into owned values.

use super::{Command, Direction, Limits, Reply, Session};

/// A command as a client sends it: a RESP array of bulk strings.
pub fn cmd(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// `cmd` from a space-separated string.
pub fn cmds(line: &str) -> Vec<u8> {
    let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    cmd(&args)
}

pub fn bulk(value: &[u8]) -> Vec<u8> {
    let mut out = format!("${}\r\n", value.len()).into_bytes();
    out.extend_from_slice(value);
    out.extend_from_slice(b"\r\n");
    out
}

/// An array of bulk strings (`None` for nil).
pub fn array(items: &[Option<&[u8]>]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", items.len()).into_bytes();
    for item in items {
        match item {
            Some(v) => out.extend(bulk(v)),
            None => out.extend_from_slice(b"$-1\r\n"),
        }
    }
    out
}

/// An owned copy of `Reply`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Owned {
    Unknown,
    NoReply,
    Nil,
    Bulk(u32),
    Array(Vec<Option<u32>>),
    Map(Vec<Vec<u8>>, Vec<Option<u32>>),
    Integer(i64),
    Simple,
    /// Its code.
    Error(String),
    Other,
}

impl Owned {
    pub fn of(r: &Reply) -> Owned {
        match *r {
            Reply::Unknown => Owned::Unknown,
            Reply::NoReply => Owned::NoReply,
            Reply::Nil => Owned::Nil,
            Reply::Bulk { len } => Owned::Bulk(len),
            Reply::Array(lens) => Owned::Array(lens.to_vec()),
            Reply::Map { fields, value_lens } => {
                Owned::Map(fields.iter().map(<[u8]>::to_vec).collect(), value_lens.to_vec())
            }
            Reply::Integer(v) => Owned::Integer(v),
            Reply::Simple => Owned::Simple,
            Reply::Error(code) => Owned::Error(code.as_str().to_string()),
            Reply::Other => Owned::Other,
        }
    }
}

/// An owned copy of `Command`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Got {
    pub ts: i64,
    pub args: Vec<Vec<u8>>,
    pub reply: Owned,
    pub reply_ts: Option<i64>,
    pub inline: bool,
    pub elided: u32,
    /// Which arguments were not kept (they read as empty).
    pub elided_at: Vec<bool>,
}

impl Got {
    pub fn of(c: &Command) -> Got {
        Got {
            ts: c.ts_ns,
            args: c.args.iter().map(<[u8]>::to_vec).collect(),
            reply: Owned::of(&c.reply),
            reply_ts: c.reply_ts_ns,
            inline: c.inline,
            elided: c.elided_args,
            elided_at: (0..c.args.len()).map(|i| c.args.is_elided(i)).collect(),
        }
    }
    /// Whether these are the arguments `sent`, but for those not kept.
    pub fn args_match(&self, sent: &[Vec<u8>]) -> bool {
        self.args.len() == sent.len()
            && self.args.iter().zip(sent).enumerate().all(|(i, (a, b))| a == b || self.elided_at[i])
    }
    /// The arguments joined by spaces, lossily.
    pub fn line(&self) -> String {
        let args: Vec<String> = self.args.iter().map(|a| String::from_utf8_lossy(a).into_owned()).collect();
        args.join(" ")
    }
}

/// A session and everything it emitted.
pub struct Run {
    pub session: Session,
    pub got: Vec<Got>,
}

impl Run {
    pub fn new() -> Run {
        Run { session: Session::new(Limits::default()), got: Vec::new() }
    }
    pub fn with(session: Session) -> Run {
        Run { session, got: Vec::new() }
    }
    pub fn req(&mut self, ts: i64, data: &[u8]) -> &mut Run {
        self.data(Direction::Request, ts, data)
    }
    pub fn rep(&mut self, ts: i64, data: &[u8]) -> &mut Run {
        self.data(Direction::Reply, ts, data)
    }
    pub fn data(&mut self, dir: Direction, ts: i64, data: &[u8]) -> &mut Run {
        let got = &mut self.got;
        self.session.on_data(dir, ts, data, &mut |c| got.push(Got::of(c)));
        self
    }
    pub fn gap(&mut self, dir: Direction, ts: i64, missing: u64) -> &mut Run {
        let got = &mut self.got;
        self.session.on_gap(dir, ts, missing, &mut |c| got.push(Got::of(c)));
        self
    }
    /// The connection ended at `ts` with a FIN each way (`Session::ended`).
    pub fn ended(&mut self, ts: i64) -> &mut Run {
        self.session.ended(ts);
        self
    }
    pub fn finish(&mut self) -> &mut Run {
        let got = &mut self.got;
        self.session.finish(&mut |c| got.push(Got::of(c)));
        self
    }
    /// (command line, reply) of everything emitted.
    pub fn pairs(&self) -> Vec<(String, Owned)> {
        self.got.iter().map(|g| (g.line(), g.reply.clone())).collect()
    }
}
