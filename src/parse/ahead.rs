//! Parsing one batch ahead on a second thread. A `CaptureParser` moves into a worker thread that builds the
//! next batch of rows while the caller (Python, turning the previous batch into Arrow and writing Parquet)
//! works on the one it was handed: on two cores the parser's time and the caller's overlap instead of adding
//! up. The caller asks for each batch; the worker parses at most one batch beyond the one being handed out,
//! so at most two batches exist besides the caller's (memory stays bounded). At the start the caller may ask
//! for a few batches at once (`head_start`): parse.py asks before it imports numpy and pyarrow, so that the
//! parse and its start-up overlap too. With each batch comes the parser's state when that batch was cut
//! (counters, offset, new command names), so what the caller reads alongside a batch is what the plain parser
//! would have shown at that point, and an error arrives at the same point of the stream with the same message.

use std::collections::BTreeMap;
use std::io::Read;
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread;

use super::{CaptureParser, RowBatch};
use crate::error::TraceError;

type Parsed = Result<Option<RowBatch>, TraceError>;

/// Batches a head start may ask for at once: each holds 128 Ki rows (~15 MiB) in parse.py.
pub const MAX_HEAD_START: usize = 4;

/// The parser's state when a batch was cut; command names only those new since the last (a batch carries
/// the endpoints of its own connections).
struct Progress {
    offset: u64,
    counters: Vec<(&'static str, u64)>,
    other_commands: BTreeMap<String, u64>,
    error_replies: BTreeMap<String, u64>,
    error_commands: BTreeMap<String, u64>,
    new_cmd_names: Vec<String>,
}

pub struct ParseAhead {
    path: String,
    /// `min_rows` of each batch asked for; None once the parse has ended or failed.
    requests: Option<SyncSender<usize>>,
    /// In a Mutex only so that the parser can be shared between threads (Python objects must be); it is
    /// reached through `&mut self` (`get_mut`), never locked.
    replies: Mutex<Receiver<(Parsed, Progress)>>,
    /// Batches asked for and not yet handed out (the one being parsed ahead, or those of a head start).
    asked: usize,
    /// Batches asked for at each `next_batch`: this one and the next (2), or this one alone (1: the parse
    /// and the caller take turns on one core, as a task given one thread must: `crate::threads`).
    depth: usize,
    /// Where the parse stopped, repeated to any later call.
    failed: Option<TraceError>,
    offset: u64,
    counters: Vec<(&'static str, u64)>,
    other_commands: BTreeMap<String, u64>,
    error_replies: BTreeMap<String, u64>,
    error_commands: BTreeMap<String, u64>,
    cmd_names: Vec<String>,
}

impl ParseAhead {
    /// Starts the worker thread; it parses nothing until the first `next_batch`.
    pub fn new<R: Read + Send + 'static>(parser: CaptureParser<R>) -> ParseAhead {
        let path = parser.path.clone();
        let counters = parser.counters();
        // Two requests are outstanding at most (this batch and the next), but for a head start.
        let (requests, asked) = sync_channel(MAX_HEAD_START);
        let (done, replies) = sync_channel(MAX_HEAD_START);
        thread::spawn(move || work(parser, asked, done));
        ParseAhead {
            path,
            requests: Some(requests),
            replies: Mutex::new(replies),
            asked: 0,
            depth: 2,
            failed: None,
            offset: 0,
            counters,
            other_commands: BTreeMap::new(),
            error_replies: BTreeMap::new(),
            error_commands: BTreeMap::new(),
            cmd_names: Vec::new(),
        }
    }

    /// From now on the next batch is parsed only when asked for, not while the caller works on this one.
    pub fn one_at_a_time(&mut self) {
        self.depth = 1;
    }

    /// Asks for the first `batches` batches (at most `MAX_HEAD_START`) of `min_rows` rows now, before the
    /// caller wants them; `next_batch` then hands them out, asked with the same `min_rows`. Only before the
    /// first `next_batch`.
    pub fn head_start(&mut self, min_rows: usize, batches: usize) {
        let Some(requests) = &self.requests else { return };
        while self.asked < batches.min(MAX_HEAD_START) {
            let _ = requests.send(min_rows);
            self.asked += 1;
        }
    }

    /// As `CaptureParser::next_batch`, except that the batches parsed ahead were asked for with the previous
    /// call's `min_rows` (callers keep it the same).
    pub fn next_batch(&mut self, min_rows: usize) -> Result<Option<RowBatch>, TraceError> {
        if let Some(e) = &self.failed {
            return Err(e.clone());
        }
        let Some(requests) = &self.requests else { return Ok(None) };
        // This batch (unless already parsed ahead), then the next one, so the worker goes on at once. A send
        // fails only once the worker has stopped, after its last reply, which is still received below.
        while self.asked < self.depth {
            let _ = requests.send(min_rows);
            self.asked += 1;
        }
        self.asked -= 1;
        let replies = self.replies.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
        let Ok((parsed, progress)) = replies.recv() else {
            return self.stop(Err(TraceError::whole(&self.path, "the parser thread stopped unexpectedly")));
        };
        self.offset = progress.offset;
        self.counters = progress.counters;
        self.other_commands = progress.other_commands;
        self.error_replies = progress.error_replies;
        self.error_commands = progress.error_commands;
        self.cmd_names.extend(progress.new_cmd_names);
        match parsed {
            Ok(Some(batch)) => Ok(Some(batch)),
            end_or_error => self.stop(end_or_error),
        }
    }

    fn stop(&mut self, last: Parsed) -> Parsed {
        self.requests = None;
        self.asked = 0;
        self.failed = last.as_ref().err().cloned();
        last
    }

    /// As the parser's, as of the last batch handed out.
    pub fn offset(&self) -> u64 {
        self.offset
    }

    pub fn cmd_names(&self) -> &[String] {
        &self.cmd_names
    }

    pub fn counters(&self) -> &[(&'static str, u64)] {
        &self.counters
    }

    /// Commands that touch no cached value, by name (`RowStats::other_commands`).
    pub fn other_commands(&self) -> &BTreeMap<String, u64> {
        &self.other_commands
    }

    /// Commands answered with an error, by code (`RowStats::error_replies`).
    pub fn error_replies(&self) -> &BTreeMap<String, u64> {
        &self.error_replies
    }

    /// The same by code and command (`RowStats::error_commands`).
    pub fn error_commands(&self) -> &BTreeMap<String, u64> {
        &self.error_commands
    }
}

/// The worker: one batch per request, until the capture ends, an error, or the caller is gone.
fn work<R: Read>(mut parser: CaptureParser<R>, asked: Receiver<usize>, done: SyncSender<(Parsed, Progress)>) {
    let mut names_sent = 0;
    for min_rows in asked {
        let parsed = parser.next_batch(min_rows);
        let last = !matches!(parsed, Ok(Some(_)));
        let progress = Progress {
            offset: parser.offset(),
            counters: parser.counters(),
            other_commands: parser.row_stats().other_commands.clone(),
            error_replies: parser.row_stats().error_replies.clone(),
            error_commands: parser.row_stats().error_commands.clone(),
            new_cmd_names: parser.cmd_names()[names_sent..].to_vec(),
        };
        names_sent = parser.cmd_names().len();
        if done.send((parsed, progress)).is_err() || last {
            return;
        }
    }
}
