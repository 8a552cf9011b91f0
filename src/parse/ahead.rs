//! Parsing one batch ahead on a second thread. A `CaptureParser` moves into a worker thread that builds the
//! next batch of rows while the caller (Python, turning the previous batch into Arrow and writing Parquet)
//! works on the one it was handed: on two cores the parser's time and the caller's overlap instead of adding
//! up. The caller asks for each batch; the worker parses at most one batch beyond the one being handed out,
//! so at most two batches exist besides the caller's (memory stays bounded). At the start the caller may ask
//! for a few batches at once (`head_start`): parse.py asks before it imports numpy and pyarrow, so that the
//! parse and its start-up overlap too. With each batch comes the parser's state when that batch was cut
//! (counters, offset, new command names), so what the caller reads alongside a batch is what the plain parser
//! would have shown at that point, and an error arrives at the same point of the stream with the same message.
//! A task given one thread (`crate::threads`) parses on the caller's thread instead (`on_callers_thread`),
//! through the same step the worker takes, so that both hand out the same batches and state.

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
    /// `min_rows` of each batch asked for; None once the parse has ended or failed, or when it runs on the
    /// caller's thread.
    requests: Option<SyncSender<usize>>,
    /// In a Mutex only so that the parser can be shared between threads (Python objects must be); it is
    /// reached through `&mut self` (`get_mut`), never locked.
    replies: Mutex<Receiver<(Parsed, Progress)>>,
    /// The parse itself when it runs on the caller's thread (`on_callers_thread`), in a Mutex as `replies`;
    /// None once it has ended.
    here: Option<Mutex<Step>>,
    /// Batches asked for and not yet handed out (the one being parsed ahead, or those of a head start).
    asked: usize,
    /// Where the parse stopped, repeated to any later call.
    failed: Option<TraceError>,
    offset: u64,
    counters: Vec<(&'static str, u64)>,
    other_commands: BTreeMap<String, u64>,
    error_replies: BTreeMap<String, u64>,
    error_commands: BTreeMap<String, u64>,
    cmd_names: Vec<String>,
}

/// One batch of at least the rows asked for, and the parser's state after it: what the worker does for each
/// request, or the caller itself on its own thread.
type Step = Box<dyn FnMut(usize) -> (Parsed, Progress) + Send>;

fn step_of<R: Read + Send + 'static>(mut parser: CaptureParser<R>) -> Step {
    let mut names_sent = 0;
    Box::new(move |min_rows| {
        let parsed = parser.next_batch(min_rows);
        let progress = Progress {
            offset: parser.offset(),
            counters: parser.counters(),
            other_commands: parser.row_stats().other_commands.clone(),
            error_replies: parser.row_stats().error_replies.clone(),
            error_commands: parser.row_stats().error_commands.clone(),
            new_cmd_names: parser.cmd_names()[names_sent..].to_vec(),
        };
        names_sent = parser.cmd_names().len();
        (parsed, progress)
    })
}

impl ParseAhead {
    /// Starts the worker thread; it parses nothing until the first `next_batch`.
    pub fn new<R: Read + Send + 'static>(parser: CaptureParser<R>) -> ParseAhead {
        // Two requests are outstanding at most (this batch and the next), but for a head start.
        let (requests, asked) = sync_channel(MAX_HEAD_START);
        let (done, replies) = sync_channel(MAX_HEAD_START);
        let mut ahead = ParseAhead::idle(&parser, replies);
        let step = step_of(parser);
        thread::spawn(move || work(step, asked, done));
        ahead.requests = Some(requests);
        ahead
    }

    /// The same batches, each parsed on the caller's thread when it asks: no thread of its own (a task given
    /// one thread, `crate::threads`). A head start asks for nothing ahead.
    pub fn on_callers_thread<R: Read + Send + 'static>(parser: CaptureParser<R>) -> ParseAhead {
        let mut ahead = ParseAhead::idle(&parser, sync_channel(0).1);
        ahead.here = Some(Mutex::new(step_of(parser)));
        ahead
    }

    fn idle<R: Read>(parser: &CaptureParser<R>, replies: Receiver<(Parsed, Progress)>) -> ParseAhead {
        ParseAhead {
            path: parser.path.clone(),
            requests: None,
            replies: Mutex::new(replies),
            here: None,
            asked: 0,
            failed: None,
            offset: 0,
            counters: parser.counters(),
            other_commands: BTreeMap::new(),
            error_replies: BTreeMap::new(),
            error_commands: BTreeMap::new(),
            cmd_names: Vec::new(),
        }
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
        let (parsed, progress) = if let Some(here) = &mut self.here {
            (here.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner()))(min_rows)
        } else {
            let Some(requests) = &self.requests else { return Ok(None) };
            // This batch (unless already parsed ahead), then the next one, so the worker goes on at once. A
            // send fails only once the worker has stopped, after its last reply, which is still received below.
            while self.asked < 2 {
                let _ = requests.send(min_rows);
                self.asked += 1;
            }
            self.asked -= 1;
            let replies = self.replies.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
            let Ok(reply) = replies.recv() else {
                return self.stop(Err(TraceError::whole(&self.path, "the parser thread stopped unexpectedly")));
            };
            reply
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
        self.here = None;
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
fn work(mut step: Step, asked: Receiver<usize>, done: SyncSender<(Parsed, Progress)>) {
    for min_rows in asked {
        let (parsed, progress) = step(min_rows);
        let last = !matches!(parsed, Ok(Some(_)));
        if done.send((parsed, progress)).is_err() || last {
            return;
        }
    }
}
