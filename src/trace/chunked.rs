//! A text trace read into events on several threads: one reads the file and cuts it into chunks of whole
//! lines, workers read each chunk's lines exactly as `TextReader` does (the same `LineParser` and `Tally`),
//! and the caller gets the chunks' events back in file order, their line numbers, command indexes and client
//! hosts renumbered as if one reader had read them all. So the events, counters and errors are
//! `TextReader`'s (a test below holds them equal); only the time differs.
//!
//! Memory is bounded: a few chunks (`start`'s `in_flight`) are read, parsed or waiting at any time.

use std::collections::BTreeMap;
use std::io::{self, Read};
use std::sync::mpsc::{channel, sync_channel, Receiver, SyncSender};
use std::sync::{Arc, Mutex};
use std::thread;

use super::line::LineParser;
use super::lines::MAX_LINE_BYTES;
use super::newlines::newlines;
use super::reader::{Batch, EventSink, Tally, TraceStats, EMPTY};
use super::{Granularity, TextFormat};
use crate::error::TraceError;
use crate::fleet::pattern::KeyPattern;

/// Bytes a chunk holds, lines cut at its end aside: small enough that the chunks in flight stay a few MiB of
/// text and tens of MiB of events, large enough that handing one over costs nothing next to reading it.
const CHUNK_BYTES: usize = 1 << 20;

/// A chunk's bytes for `format`. A MONITOR line takes twice a `commands` line's bytes for the same events
/// (its time, client and quotes), so its chunks are twice as large: a chunk alone is then a batch of the size
/// the simulation is fed best (`next_batch`), not two chunks copied together (4% of reading a MONITOR log).
fn chunk_bytes(format: TextFormat) -> usize {
    match format {
        TextFormat::Monitor => 2 * CHUNK_BYTES,
        _ => CHUNK_BYTES,
    }
}

/// What one chunk gave.
struct ChunkOut {
    batch: Batch,
    tally: Tally,
    lines: u64,
    bytes: u64,
    /// The first line refused, by its number within the chunk, and why.
    error: Option<(u64, String)>,
    /// A MONITOR `OK` line skipped because no command came before it in this chunk: right only if no
    /// command came before the chunk either.
    ok_at: Option<u64>,
    /// The input ends with this chunk.
    last: bool,
}

/// A chunk to parse: its index, its bytes (the first `len` of `buf`), and whether it is a line too long to be
/// one.
struct Job {
    index: u64,
    buf: Vec<u8>,
    len: usize,
    too_long: bool,
    last: bool,
    failed: Option<String>,
}

struct Pipeline {
    results: Receiver<(u64, ChunkOut)>,
    /// One token per chunk the reading thread may start; given back as each chunk is taken.
    tokens: SyncSender<()>,
    waiting: BTreeMap<u64, ChunkOut>,
    next: u64,
}

pub struct ChunkedEvents {
    path: String,
    format: TextFormat,
    granularity: Granularity,
    key_pattern: Option<Arc<KeyPattern>>,
    // In Mutexes only so that the reader can be shared between threads (a Receiver is not Sync); reached
    // through `&mut self`, never locked.
    src: Mutex<Option<Box<dyn Read + Send>>>,
    pipeline: Mutex<Option<Pipeline>>,
    /// With no worker threads: the input cut and read here, chunk by chunk, and the last chunk's buffer.
    inline: Mutex<Option<(Cutter, Vec<u8>)>>,
    workers: usize,
    tally: Tally,
    lines: u64,
    bytes: u64,
    ended: bool,
}

impl ChunkedEvents {
    /// `workers`: threads reading lines, besides the one reading the file; none: the caller's thread reads the
    /// file and its lines, one chunk at a time (a task given one thread: `crate::threads`).
    pub fn new<R: Read + Send + 'static>(src: R, path: &str, format: TextFormat, granularity: Granularity, workers: usize) -> Self {
        ChunkedEvents {
            path: path.to_string(),
            format,
            granularity,
            key_pattern: None,
            src: Mutex::new(Some(Box::new(src))),
            pipeline: Mutex::new(None),
            inline: Mutex::new(None),
            workers,
            tally: Tally::default(),
            lines: 0,
            bytes: 0,
            ended: false,
        }
    }

    /// Every event read from now on carries its shard id by `pattern` (set before the first batch).
    pub fn set_key_pattern(&mut self, pattern: KeyPattern) {
        self.key_pattern = Some(Arc::new(pattern));
    }

    pub fn format(&self) -> TextFormat {
        self.format
    }

    pub fn stats(&self) -> TraceStats {
        self.tally.stats
    }

    pub fn other_commands(&self) -> &BTreeMap<String, u64> {
        &self.tally.other_by_name
    }

    pub fn hosts(&self) -> &[String] {
        &self.tally.hosts
    }

    pub fn lines(&self) -> u64 {
        self.lines
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes
    }

    /// The next events, as `TextReader::next_batch`, but a batch is one chunk's events (`chunk_bytes` of
    /// text) as the chunk gave them, not copied, once that is at least a sixteenth of `min_events`; chunks with
    /// fewer are put together up to that. (Not fewer: `simulate.py` on a MONITOR log took 15-25% longer fed
    /// batches half that size, measured alternating builds.) None at the end.
    pub fn next_batch(&mut self, min_events: usize) -> Result<Option<Batch>, TraceError> {
        let mut out: Option<Batch> = None;
        let enough = (min_events / 16).max(1);
        while out.as_ref().map_or(0, Batch::len) < enough && !self.ended {
            let chunk = self.next_chunk()?;
            let batch = self.merge(chunk)?;
            match &mut out {
                None => out = Some(batch),
                Some(o) => o.append(batch),
            }
        }
        match out {
            Some(b) if !b.is_empty() => Ok(Some(b)),
            _ if self.tally.stats.commands == 0 => Err(TraceError::whole(&self.path, EMPTY)),
            _ => Ok(None),
        }
    }

    fn next_chunk(&mut self) -> Result<ChunkOut, TraceError> {
        if self.workers == 0 {
            return Ok(self.next_chunk_here());
        }
        if self.pipeline.get_mut().unwrap_or_else(|e| e.into_inner()).is_none() {
            self.start();
        }
        let lines = self.lines;
        let p = self.pipeline.get_mut().unwrap_or_else(|e| e.into_inner()).as_mut().expect("started above");
        loop {
            if let Some(chunk) = p.waiting.remove(&p.next) {
                p.next += 1;
                let _ = p.tokens.send(());
                return Ok(chunk);
            }
            match p.results.recv() {
                Ok((index, chunk)) => {
                    p.waiting.insert(index, chunk);
                }
                Err(_) => return Err(TraceError::at(&self.path, lines + 1, "read failed: the reading threads stopped")),
            }
        }
    }

    /// The next chunk cut and read on this thread, into the last one's buffer.
    fn next_chunk_here(&mut self) -> ChunkOut {
        let inline = self.inline.get_mut().unwrap_or_else(|e| e.into_inner());
        if inline.is_none() {
            let src = self.src.get_mut().unwrap_or_else(|e| e.into_inner()).take().expect("started once");
            *inline = Some((Cutter::new(src, chunk_bytes(self.format)), Vec::new()));
        }
        let (cutter, spare) = inline.as_mut().expect("made above");
        let job = cutter.next(std::mem::take(spare));
        let out = parse_chunk(&job, self.format, self.granularity, self.key_pattern.clone());
        *spare = job.buf;
        out
    }

    /// A chunk's events renumbered after those before it, its counts added; its error, at its line.
    fn merge(&mut self, chunk: ChunkOut) -> Result<Batch, TraceError> {
        let commands_before = self.tally.stats.commands;
        if let Some(ok) = chunk.ok_at.filter(|_| commands_before > 0) {
            if chunk.error.as_ref().is_none_or(|(line, _)| ok < *line) {
                let why = LineParser::new(self.format).parse(b"OK", false, |_| {}).err().unwrap_or_default();
                return Err(TraceError::at(&self.path, self.lines + ok, why));
            }
        }
        if let Some((line, why)) = chunk.error {
            return Err(TraceError::at(&self.path, self.lines + line, why));
        }
        let mut batch = chunk.batch;
        if commands_before > 0 {
            batch.reqs.iter_mut().for_each(|r| *r += commands_before);
        }
        if !chunk.tally.hosts.is_empty() {
            let global: Vec<u32> = chunk.tally.hosts.iter().map(|h| self.tally.host_id(h)).collect();
            batch.clients.iter_mut().for_each(|c| *c = global[*c as usize]);
        }
        self.tally.add_counts(&chunk.tally);
        self.lines += chunk.lines;
        self.bytes += chunk.bytes;
        self.ended = chunk.last;
        Ok(batch)
    }

    fn start(&mut self) {
        let src = self.src.get_mut().unwrap_or_else(|e| e.into_inner()).take().expect("started once");
        // As many bytes in flight whatever the chunks' size: MONITOR's larger chunks are fewer.
        let chunk = chunk_bytes(self.format);
        let in_flight = ((2 * self.workers + 2) * CHUNK_BYTES / chunk).max(self.workers + 1);
        let (tokens, allowed) = sync_channel::<()>(in_flight);
        for _ in 0..in_flight {
            let _ = tokens.send(());
        }
        let (job_tx, job_rx) = sync_channel::<Job>(self.workers);
        let jobs = Arc::new(Mutex::new(job_rx));
        let (result_tx, results) = channel();
        // Chunks' buffers go back to the reading thread once parsed: fresh ones cost a page fault every 4 KiB.
        let (spare_tx, spare) = channel::<Vec<u8>>();
        thread::spawn(move || cut(Cutter::new(src, chunk), allowed, job_tx, spare));
        for _ in 0..self.workers {
            let (jobs, result_tx, spare_tx) = (jobs.clone(), result_tx.clone(), spare_tx.clone());
            let (format, granularity, pattern) = (self.format, self.granularity, self.key_pattern.clone());
            thread::spawn(move || loop {
                let job = match jobs.lock() {
                    Ok(rx) => rx.recv(),
                    Err(_) => return,
                };
                let Ok(job) = job else { return };
                let out = parse_chunk(&job, format, granularity, pattern.clone());
                let _ = spare_tx.send(job.buf);
                if result_tx.send((job.index, out)).is_err() {
                    return;
                }
            });
        }
        *self.pipeline.get_mut().unwrap_or_else(|e| e.into_inner()) =
            Some(Pipeline { results, tokens, waiting: BTreeMap::new(), next: 0 });
    }
}

/// The input cut after the last newline of every `chunk` bytes or so, a chunk per call, into a parsed
/// chunk's buffer when one has come back; the rest of a line carried into the next chunk.
///
/// The buffers are read into with `Read::read`, over bytes they already hold, and keep their length: read
/// through a `Read` that cannot take uninitialized room (a `Box<dyn Read>`, a `Chain`), `read_to_end` zeroed
/// every chunk's room before reading into it, two fifths of the reading thread's time.
struct Cutter {
    src: Box<dyn Read + Send>,
    chunk: usize,
    carry: Vec<u8>,
    index: u64,
}

impl Cutter {
    fn new(src: Box<dyn Read + Send>, chunk: usize) -> Cutter {
        Cutter { src, chunk, carry: Vec::new(), index: 0 }
    }

    /// The next chunk, read into `buf`; the one marked `last` ends the input.
    fn next(&mut self, mut buf: Vec<u8>) -> Job {
        let carry = &mut self.carry;
        grow(&mut buf, carry.len());
        buf[..carry.len()].copy_from_slice(carry);
        let mut len = carry.len();
        carry.clear();
        let mut want = self.chunk;
        let (mut eof, mut failed, mut too_long) = (false, None, false);
        loop {
            grow(&mut buf, want);
            while len < want && !eof && failed.is_none() {
                match self.src.read(&mut buf[len..want]) {
                    Ok(0) => eof = true,
                    Ok(n) => len += n,
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => failed = Some(format!("read failed: {e}")),
                }
            }
            if eof || failed.is_some() {
                break;
            }
            match memchr::memrchr(b'\n', &buf[..len]) {
                Some(nl) => {
                    carry.extend_from_slice(&buf[nl + 1..len]);
                    len = nl + 1;
                    break;
                }
                None if len > MAX_LINE_BYTES => {
                    too_long = true;
                    break;
                }
                // A line longer than a chunk: read on until it ends (or is too long to be one).
                None => want = len + self.chunk,
            }
        }
        let last = eof || failed.is_some() || too_long;
        let index = self.index;
        self.index += 1;
        Job { index, buf, len, too_long, last, failed }
    }
}

/// The reading thread: a chunk per token, each into a parsed chunk's buffer when one has come back.
fn cut(mut cutter: Cutter, allowed: Receiver<()>, jobs: SyncSender<Job>, spare: Receiver<Vec<u8>>) {
    loop {
        if allowed.recv().is_err() {
            return;
        }
        let job = cutter.next(spare.try_recv().unwrap_or_default());
        let last = job.last;
        if jobs.send(job).is_err() || last {
            return;
        }
    }
}

/// `buf` made at least `len` bytes long, the new ones zeroed (once per buffer: buffers come back to be read
/// into again).
fn grow(buf: &mut Vec<u8>, len: usize) {
    if buf.len() < len {
        buf.resize(len, 0);
    }
}

/// A chunk's lines read as `TextReader::read_into` reads them, its events numbered from 0.
fn parse_chunk(job: &Job, format: TextFormat, granularity: Granularity, pattern: Option<Arc<KeyPattern>>) -> ChunkOut {
    let chunk = &job.buf[..job.len];
    let lean = format == TextFormat::Keys;
    let clock = format == TextFormat::Monitor;
    // About one event per 8 bytes of a keys trace, per 14 of the others; room for more, since running out
    // copies the columns (a keys trace of five- and six-digit ids has lines of 6 and 7 bytes, and outgrew a
    // seventh: 5% of reading it went to copies). Room never written to takes no fresh memory.
    let room = if lean { chunk.len() / 5 + 16 } else { chunk.len() / 12 + 16 };
    let mut batch = Batch::with_capacity(room, lean, clock, pattern);
    let mut out = ChunkOut {
        batch: Batch::default(),
        tally: Tally::default(),
        lines: 0,
        bytes: chunk.len() as u64,
        error: None,
        ok_at: None,
        last: job.last,
    };
    let nul = memchr::memchr(0, chunk);
    if job.too_long {
        out.error = Some((1, too_long()));
    } else if lean && nul.is_none() {
        read_keys(chunk, &mut batch, &mut out);
    } else {
        let mut parser = LineParser::new(format);
        let mut sink = EventSink::new(&mut batch, granularity, lean);
        let mut start = 0;
        for end in line_ends(chunk) {
            out.lines += 1;
            if end - start >= MAX_LINE_BYTES {
                out.error = Some((out.lines, too_long()));
                break;
            }
            if nul.is_some_and(|at| at >= start && at < end) {
                out.error = Some((out.lines, "binary data (NUL byte): not a text trace".into()));
                break;
            }
            let mut line = &chunk[start..end];
            while let [rest @ .., b'\r' | b'\n'] = line {
                line = rest;
            }
            start = end + 1;
            let first = out.tally.stats.commands == 0;
            if first && job.index > 0 && out.ok_at.is_none() && clock && line.trim_ascii() == b"OK" {
                out.ok_at = Some(out.lines);
            }
            if let Err(why) = out.tally.read_line(&mut parser, line, first, &mut sink) {
                out.error = Some((out.lines, why));
                break;
            }
        }
    }
    if let Some(why) = job.failed.clone().filter(|_| out.error.is_none()) {
        out.error = Some((out.lines + 1, why));
    }
    out.batch = batch;
    out
}

/// The lines of a `keys` chunk without NUL bytes, read as `LineParser` reads a keys line (the id trimmed, a
/// blank line skipped) in one pass over the newlines (`line_ends`). A keys line is a lookup and
/// nothing else, so the command machinery of the other formats (table, arity, op, counters by kind) is left
/// out: it took half the time of reading one.
fn read_keys(chunk: &[u8], batch: &mut Batch, out: &mut ChunkOut) {
    let mut start = 0;
    let mut keys = 0;
    for end in line_ends(chunk) {
        out.lines += 1;
        if end - start >= MAX_LINE_BYTES {
            out.error = Some((out.lines, too_long()));
            break;
        }
        let key = chunk[start..end].trim_ascii();
        start = end + 1;
        if !key.is_empty() {
            batch.push_lean(key);
            keys += 1;
        }
    }
    out.tally.stats.commands += keys;
    out.tally.stats.lookups += keys;
}

/// Where each line of a chunk ends: at its newlines, found 64 bytes at a time over the whole chunk (a search
/// per line paid memchr's set-up on every line longer than a few words), and at the chunk's end when its last
/// line has no newline.
fn line_ends(chunk: &[u8]) -> impl Iterator<Item = usize> + '_ {
    newlines(chunk).chain(chunk.last().is_some_and(|&c| c != b'\n').then_some(chunk.len()))
}

fn too_long() -> String {
    format!("line longer than {} MiB: not a text trace", MAX_LINE_BYTES >> 20)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::TextReader;

    /// Everything a reader gives: the events' columns, the counters, the hosts, the lines; or its error.
    type Got = (Vec<Vec<u64>>, TraceStats, Vec<String>, BTreeMap<String, u64>, u64);

    fn columns(b: &Batch) -> Vec<Vec<u64>> {
        let wide = |v: &[u32]| v.iter().map(|&x| u64::from(x)).collect::<Vec<u64>>();
        vec![
            b.keys.clone(),
            b.ops.iter().map(|&x| u64::from(x)).collect(),
            b.entities.clone(),
            b.fields.clone(),
            wide(&b.key_bytes),
            b.reqs.clone(),
            b.ts_ns.iter().map(|&x| x as u64).collect(),
            wide(&b.clients),
        ]
    }

    fn append(all: &mut [Vec<u64>], b: &Batch) {
        for (col, new) in all.iter_mut().zip(columns(b)) {
            col.extend(new);
        }
    }

    fn sequential(text: &[u8], format: TextFormat) -> Result<Got, String> {
        let mut r = TextReader::new(text, "t", format, Granularity::Field);
        let mut all = vec![Vec::new(); 8];
        while let Some(b) = r.next_batch(3).map_err(|e| e.to_string())? {
            append(&mut all, &b);
        }
        Ok((all, r.stats(), r.hosts().to_vec(), r.other_commands().clone(), r.lines()))
    }

    /// Read by worker threads, and on the caller's thread alone (a task given one thread): the same.
    fn chunked(text: &[u8], format: TextFormat) -> Result<Got, String> {
        let threaded = chunked_by(text, format, 3);
        assert_eq!(chunked_by(text, format, 0), threaded, "{format:?} read on the caller's thread");
        threaded
    }

    fn chunked_by(text: &[u8], format: TextFormat, workers: usize) -> Result<Got, String> {
        let mut r = ChunkedEvents::new(io::Cursor::new(text.to_vec()), "t", format, Granularity::Field, workers);
        let mut all = vec![Vec::new(); 8];
        while let Some(b) = r.next_batch(3).map_err(|e| e.to_string())? {
            append(&mut all, &b);
        }
        Ok((all, r.stats(), r.hosts().to_vec(), r.other_commands().clone(), r.lines()))
    }

    /// A trace of many chunks, made of `line(i)`.
    fn trace(n: usize, line: impl Fn(usize) -> String) -> Vec<u8> {
        (0..n).map(|i| line(i) + "\n").collect::<String>().into_bytes()
    }

    #[test]
    fn the_same_events_counts_and_hosts_as_one_reader() {
        let monitor = trace(60_000, |i| {
            let cmd = match i % 7 {
                0 => format!("\"HSET\" \"st_{i}\" \"f\" \"v\""),
                1 => "\"PING\"".to_string(),
                2 => format!("\"MGET\" \"a{i}\" \"b\""),
                _ => format!("\"HMGET\" \"st_{}\" \"1\" \"2\"", i % 100),
            };
            format!("1700000000.{:06} [0 10.0.{}.{}:5000] {cmd}", i % 1_000_000, (i / 20_000), i % 5)
        });
        let mut with_ok = b"OK\n".to_vec();
        with_ok.extend(&monitor);
        let commands = trace(80_000, |i| if i % 3 == 0 { format!("HMGET st_{i} 1 2 3") } else { format!("GET k{i}") });
        // Blank lines, spaces around ids, CRLF endings, and a last line without its newline.
        let mut keys = trace(200_000, |i| match i % 11 {
            0 => String::new(),
            1 => format!(" {} \r", i * 7919 % 1000),
            _ => format!("{}", i * 7919 % 1000),
        });
        keys.extend(b"last");
        for (text, format) in [(with_ok, TextFormat::Monitor), (commands, TextFormat::Commands), (keys, TextFormat::Keys)] {
            let one = sequential(&text, format).unwrap();
            assert!(one.1.commands > 10_000);
            assert_eq!(chunked(&text, format).unwrap(), one, "{format:?}");
        }
    }

    #[test]
    fn the_same_errors_at_the_same_lines() {
        let good = trace(100_000, |i| format!("GET k{i}"));
        for bad in ["FROB x", "GET \"a", "GET a b", "G\0T a"] {
            for at in [0, 50_000, 99_999] {
                let mut text = good.clone();
                let cut = text.iter().enumerate().filter(|(_, &c)| c == b'\n').nth(at).map_or(0, |(i, _)| i + 1);
                text.splice(cut..cut, format!("{bad}\n").into_bytes());
                let one = sequential(&text, TextFormat::Commands).unwrap_err();
                assert_eq!(chunked(&text, TextFormat::Commands).unwrap_err(), one);
                assert!(one.contains(&format!("line {}:", at + 2)), "{one}");
            }
        }
        // A MONITOR `OK` is skipped only before the first command, in whichever chunk it comes.
        let mut late_ok = trace(100_000, |i| format!("1700000000.1 [0 1.2.3.4:5] \"GET\" \"k{i}\""));
        late_ok.extend(b"OK\n");
        assert_eq!(chunked(&late_ok, TextFormat::Monitor).unwrap_err(), sequential(&late_ok, TextFormat::Monitor).unwrap_err());
        let mut blank_then_ok = vec![b'\n'; 3 << 20];
        blank_then_ok.extend(b"OK\n1.5 [0 a:1] GET k\n");
        assert_eq!(chunked(&blank_then_ok, TextFormat::Monitor).unwrap(), sequential(&blank_then_ok, TextFormat::Monitor).unwrap());
        assert_eq!(chunked(b"\n\n", TextFormat::Keys).unwrap_err(), sequential(b"\n\n", TextFormat::Keys).unwrap_err());
    }

    #[test]
    fn lines_longer_than_a_chunk() {
        let long = "k".repeat(3 * CHUNK_BYTES + 17);
        let text = format!("a\n{long}\nb\n").into_bytes();
        assert_eq!(chunked(&text, TextFormat::Keys).unwrap(), sequential(&text, TextFormat::Keys).unwrap());
    }
}
