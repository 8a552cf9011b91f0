//! The PyO3 bindings, `cachescope._native`: thin wrappers that move numpy arrays in and out in bulk and
//! release the GIL while Rust loops. No logic lives here.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Cursor, Read};
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::error::TraceError;
use crate::hash;
use crate::policy::SPECS;
use crate::parse;
use crate::sim::{self, Events, Options, Unit, WriteMode};
use crate::simulation::{self, RunSpec};
use crate::trace::{self, Granularity, TextFormat};

create_exception!(_native, NativeTraceError, PyValueError, "A trace file that cannot be read: `path: line N: why`.");

/// Makes numpy's C API ready (the first array made imports it, running Python code). Done when a reader is
/// opened, before any output exists: a signal that lands in that import would make the numpy crate panic,
/// where one landing in the loop that follows ends the command cleanly (Ctrl-C, SIGTERM).
fn numpy_ready(py: Python<'_>) {
    let _ = PyArray1::<u8>::zeros(py, 0, false);
}

fn trace_err(e: TraceError) -> PyErr {
    NativeTraceError::new_err(e.to_string())
}

fn value_err(e: String) -> PyErr {
    PyValueError::new_err(e)
}

fn granularity(name: &str) -> PyResult<Granularity> {
    match name {
        "field" => Ok(Granularity::Field),
        "entity" => Ok(Granularity::Entity),
        other => Err(value_err(format!("unknown granularity {other:?}; use field or entity"))),
    }
}

/// An input as the readers take it: the bytes Python already read to tell the format (from a FIFO, a
/// `<(...)` pipe or standard input, they cannot be read twice), then the rest of the same open file, decoded
/// when compressed (`input::open`) and, for a live input, ended when `stop` is raised.
/// In a Mutex only so that a pyclass holding it may be shared between threads (a pyclass must be Sync);
/// reached through `&mut`, never contended.
struct Source(std::sync::Mutex<Box<dyn Read + Send>>);

impl Source {
    fn new(r: impl Read + Send + 'static) -> Source {
        Source(std::sync::Mutex::new(Box::new(r)))
    }
}

impl Read for Source {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        self.0.get_mut().unwrap_or_else(|p| p.into_inner()).read(buf)
    }
}

/// `path` opened afresh, or, given `fd`, a duplicate of that open descriptor, after `head`. Compressed
/// input is decoded on a thread of its own (`ReadAhead`), so decoding overlaps with parsing.
fn open_source(path: &str, fd: Option<i32>, head: Vec<u8>, stop: Option<&StopFlag>) -> PyResult<Source> {
    open_threaded(path, fd, head, stop, crate::threads::UNLIMITED).map(|(source, _)| source)
}

/// As `open_source`, and whether the source is the file's own bytes (neither compressed nor live). A compressed
/// one is decoded on a thread of its own, unless `threads` (`crate::threads`) allows only the caller's.
fn open_threaded(path: &str, fd: Option<i32>, head: Vec<u8>, stop: Option<&StopFlag>, threads: usize)
                 -> PyResult<(Source, bool)> {
    let file = match fd {
        // SAFETY: the caller keeps `fd` open for the duration of this call; only a duplicate is kept.
        Some(fd) => unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().map(File::from),
        None => File::open(path),
    }
    .map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    let (compression, plain) =
        crate::input::open(Cursor::new(head).chain(file)).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    Ok(match (stop, compression) {
        (Some(flag), _) => (Source::new(crate::input::Stoppable::new(plain, flag.0.clone())), false),
        (None, Some(_)) if threads != 1 => (Source::new(crate::capture::ReadAhead::new(plain)), false),
        (None, Some(_)) => (Source::new(plain), false),
        (None, None) => (Source::new(plain), true),
    })
}

/// An input's plain bytes (decoded when compressed) for Python's own readers (parse.py's MONITOR logs).
#[pyclass(module = "cachescope._native")]
struct PlainInput {
    source: std::sync::Mutex<Source>, // locked: `read` takes `&self`
    path: String,
}

#[pymethods]
impl PlainInput {
    #[new]
    #[pyo3(signature = (path, fd=None, head=Vec::new()))]
    fn new(path: &str, fd: Option<i32>, head: Vec<u8>) -> PyResult<Self> {
        Ok(PlainInput { source: std::sync::Mutex::new(open_source(path, fd, head, None)?), path: path.to_string() })
    }

    /// Up to `n` bytes; empty at the end. A decoding error is an OSError with its one-line message.
    fn read<'py>(&self, py: Python<'py>, n: usize) -> PyResult<Bound<'py, PyBytes>> {
        let mut buf = vec![0; n];
        let got = py.detach(|| {
            let mut src = self.source.lock().unwrap_or_else(|p| p.into_inner());
            loop {
                match src.read(&mut buf) {
                    Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                    other => return other,
                }
            }
        });
        let got = got.map_err(|e| PyOSError::new_err(format!("{}: {e}", self.path)))?;
        Ok(PyBytes::new(py, &buf[..got]))
    }
}

/// Raised to end a live input (standard input, a pipe) as if it had ended: `stop()` may be called from any
/// thread, a signal's or a timer's.
#[pyclass(module = "cachescope._native")]
#[derive(Default)]
struct StopFlag(crate::input::StopFlag);

#[pymethods]
impl StopFlag {
    #[new]
    fn new() -> Self {
        StopFlag::default()
    }
    fn stop(&self) {
        self.0.stop();
    }
    #[getter]
    fn stopped(&self) -> bool {
        self.0.is_stopped()
    }
}

#[pyclass(module = "cachescope._native")]
struct TextReader {
    // Read on a thread of its own and parsed on others, chunk by chunk (`trace::chunked`).
    inner: trace::chunked::ChunkedEvents,
}

#[pymethods]
impl TextReader {
    /// `fd` and `head`: read the already open `fd` after the bytes `head` taken from it (see `Source`);
    /// `stop`: a live input, ended when it is raised; `threads`: at most this many threads read the lines,
    /// the caller's among them (1: the caller's alone), else a reading thread and up to 4 more.
    #[new]
    #[pyo3(signature = (path, format, granularity_name, fd=None, head=Vec::new(), stop=None, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(py: Python<'_>, path: &str, format: &str, granularity_name: &str, fd: Option<i32>, head: Vec<u8>,
           stop: Option<PyRef<'_, StopFlag>>, threads: Option<usize>) -> PyResult<Self> {
        numpy_ready(py);
        let format = TextFormat::from_name(format).ok_or_else(|| value_err(format!("unknown text format {format:?}")))?;
        let src = open_source(path, fd, head, stop.as_deref())?;
        // The caller simulates what the workers read: a limit of n leaves it n - 1 of them.
        let workers = match threads {
            Some(n) => n.saturating_sub(1).min(4),
            None => std::thread::available_parallelism().map_or(2, |n| n.get()).clamp(1, 4),
        };
        let inner = trace::chunked::ChunkedEvents::new(src, path, format, granularity(granularity_name)?, workers);
        Ok(TextReader { inner })
    }

    /// The next events, at least `min_events` unless the trace ends, as a dict of numpy columns (keys,
    /// key_bytes; ops, entities, fields and reqs but for a `keys` trace; ts_ns when the format has a clock);
    /// None at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>, min_events: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let Some(b) = py.detach(|| inner.next_batch(min_events)).map_err(trace_err)? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        if !b.ts_ns.is_empty() {
            d.set_item("ts_ns", b.ts_ns.into_pyarray(py))?;
        }
        // A `keys` trace's batches have only `keys` and `key_bytes` (see `Batch::push_lean`).
        let full = !b.ops.is_empty();
        d.set_item("keys", b.keys.into_pyarray(py))?;
        d.set_item("key_bytes", b.key_bytes.into_pyarray(py))?;
        if full {
            d.set_item("ops", b.ops.into_pyarray(py))?;
            d.set_item("entities", b.entities.into_pyarray(py))?;
            d.set_item("fields", b.fields.into_pyarray(py))?;
            d.set_item("reqs", b.reqs.into_pyarray(py))?;
        }
        if !b.clients.is_empty() {
            d.set_item("clients", b.clients.into_pyarray(py))?;
        }
        if !b.shards.is_empty() {
            d.set_item("shards", b.shards.into_pyarray(py))?;
            d.set_item("unmatched_shards", b.unmatched_shards)?;
        }
        Ok(Some(d))
    }

    /// From the next batch on, each event carries the hash of the shard id `pattern` takes from its key.
    fn set_key_pattern(&mut self, pattern: &str) -> PyResult<()> {
        self.inner.set_key_pattern(crate::fleet::pattern::KeyPattern::new(pattern).map_err(value_err)?);
        Ok(())
    }

    /// The client hosts seen so far, by the index the `clients` column holds.
    fn hosts(&self) -> Vec<String> {
        self.inner.hosts().to_vec()
    }

    #[getter]
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        text_stats(py, self.inner.stats())
    }

    /// What the input report says of a text trace: lines read, and the other commands by name.
    fn input_stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = &self.inner;
        let read = TextRead { format: r.format(), lines: r.lines(), bytes: r.bytes_read(), stats: r.stats(),
                              hosts: r.hosts().len(), other: r.other_commands(), connections: 0 };
        text_input_stats(py, &read)
    }
}

fn text_stats(py: Python<'_>, s: trace::TraceStats) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("commands", s.commands)?;
    d.set_item("lookups", s.lookups)?;
    d.set_item("writes", s.writes)?;
    d.set_item("deletes", s.deletes)?;
    d.set_item("other_commands", s.other_commands)?;
    Ok(d)
}

/// What reading a text trace found, whichever reader read it.
struct TextRead<'a> {
    format: TextFormat,
    lines: u64,
    bytes: u64,
    stats: trace::TraceStats,
    hosts: usize,
    other: &'a std::collections::BTreeMap<String, u64>,
    /// MONITOR's client addresses (rows only; 0: not counted).
    connections: usize,
}

/// The counters parse.py and simulate.py both report of a text trace.
fn text_input_stats<'py>(py: Python<'py>, r: &TextRead) -> PyResult<Bound<'py, PyDict>> {
    let s = r.stats;
    let d = PyDict::new(py);
    d.set_item("input_format", r.format.name())?;
    d.set_item("lines", r.lines)?;
    d.set_item("bytes", r.bytes)?;
    d.set_item("commands", s.commands)?;
    d.set_item("rows", s.lookups + s.writes + s.deletes)?;
    d.set_item("lookups", s.lookups)?;
    d.set_item("writes", s.writes)?;
    d.set_item("deletes", s.deletes)?;
    d.set_item("client_hosts", r.hosts)?;
    if r.connections > 0 {
        d.set_item("connections", r.connections)?;
    }
    d.set_item("other_commands", r.other.clone())?;
    Ok(d)
}

/// A text trace read as trace rows (see `parse::text_rows`): the reader `TextReader` is, rows out.
#[pyclass(module = "cachescope._native")]
struct TextRows {
    inner: parse::text_rows::TextRows<crate::capture::ReadAhead>,
}

#[pymethods]
impl TextRows {
    /// `fd` and `head` as for `TextReader`.
    #[new]
    #[pyo3(signature = (path, format, anonymize_salt=None, fd=None, head=Vec::new()))]
    fn new(py: Python<'_>, path: &str, format: &str, anonymize_salt: Option<u64>, fd: Option<i32>, head: Vec<u8>) -> PyResult<Self> {
        numpy_ready(py);
        let format = TextFormat::from_name(format).ok_or_else(|| value_err(format!("unknown text format {format:?}")))?;
        let src = crate::capture::ReadAhead::new(open_source(path, fd, head, None)?);
        Ok(TextRows { inner: parse::text_rows::TextRows::new(src, path, format, anonymize_salt) })
    }

    /// The next rows, at least `min_rows` unless the trace ends, as `CaptureParser.next_batch` gives them
    /// (`ts_ns` meaningless when `has_clock` is false); None at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>, min_rows: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let Some(b) = py.detach(|| inner.next_batch(min_rows)).map_err(trace_err)? else {
            return Ok(None);
        };
        row_columns(py, b).map(Some)
    }

    #[getter]
    fn has_clock(&self) -> bool {
        self.inner.has_clock()
    }

    #[getter]
    fn bytes_read(&self) -> u64 {
        self.inner.reader().bytes_read()
    }

    fn cmd_names(&self) -> Vec<String> {
        self.inner.cmd_names().to_vec()
    }

    /// The client address of each conn, by conn (MONITOR logs; empty otherwise).
    fn clients(&self) -> Vec<String> {
        self.inner.clients().to_vec()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.inner.reader();
        let read = TextRead { format: r.format(), lines: r.lines(), bytes: r.bytes_read(), stats: r.stats(),
                              hosts: r.hosts().len(), other: r.other_commands(),
                              connections: self.inner.clients().len() };
        text_input_stats(py, &read)
    }
}

/// An object trace (libCacheSim's `oracleGeneral`, a CSV with a column spec): requests of object ids.
#[pyclass(module = "cachescope._native")]
struct ObjectReader {
    inner: ObjectReaderKind,
}

enum ObjectReaderKind {
    OracleGeneral(trace::oracle_general::OracleGeneralReader<Source>),
    Csv(trace::csv::CsvReader<BufReader<Source>>),
}

#[pymethods]
impl ObjectReader {
    /// `format`: "oracleGeneral" or "csv" (with `csv_spec`: libCacheSim's column spec or a preset's name);
    /// `fd`, `head` and `stop` as for `TextReader`. `mapped`: an oracleGeneral file that is a plain regular
    /// file (not compressed, not a stream) is mapped rather than read, for `Simulation.feed_sampled`.
    /// `threads`: at most this many threads read (hash ids, decompress), the caller's among them.
    #[new]
    #[pyo3(signature = (path, format, csv_spec=None, fd=None, head=Vec::new(), stop=None, mapped=false, threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(path: &str, format: &str, csv_spec: Option<&str>, fd: Option<i32>, head: Vec<u8>,
           stop: Option<PyRef<'_, StopFlag>>, mapped: bool, threads: Option<usize>) -> PyResult<Self> {
        let threads = threads.unwrap_or(crate::threads::UNLIMITED);
        let inner = match format {
            "oracleGeneral" => {
                let plain_file = fd.is_none() && head.is_empty() && stop.is_none();
                let (src, own_bytes) = open_threaded(path, fd, head, stop.as_deref(), threads)?;
                let mut reader = trace::oracle_general::OracleGeneralReader::new(src, path).lean().threads(threads);
                if mapped && plain_file && own_bytes {
                    let file = File::open(path).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
                    let map = crate::input::mapped::Mapped::of(&file)
                        .map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
                    if let Some(map) = map {
                        // Under a limit of one thread, unmapped by the caller (`crate::threads`).
                        reader = reader.mapped(if threads == 1 { map } else { map.unmapped_beside() });
                    }
                }
                ObjectReaderKind::OracleGeneral(reader)
            }
            "csv" => {
                let spec = trace::csv::CsvSpec::parse(csv_spec.unwrap_or_default()).map_err(value_err)?;
                let src = BufReader::with_capacity(1 << 20, open_source(path, fd, head, stop.as_deref())?);
                ObjectReaderKind::Csv(trace::csv::CsvReader::new(src, path, spec))
            }
            other => return Err(value_err(format!("unknown object trace format {other:?}"))),
        };
        Ok(ObjectReader { inner })
    }

    /// The next requests, at least `min_events` unless the trace ends, as numpy columns (keys, ops, reqs,
    /// value_sizes, key_bytes, ts_ns when the trace has a clock); for oracleGeneral keys, value_sizes and
    /// ts_ns only (every record a read of its own: `OracleGeneralReader::lean`); None at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>, min_events: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let batch = py.detach(|| match inner {
            ObjectReaderKind::OracleGeneral(r) => r.next_batch(min_events),
            ObjectReaderKind::Csv(r) => r.next_batch(min_events),
        });
        let Some(b) = batch.map_err(trace_err)? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        if !b.ts_ns.is_empty() {
            d.set_item("ts_ns", b.ts_ns.into_pyarray(py))?;
        }
        d.set_item("value_sizes", b.value_sizes.into_pyarray(py))?;
        if b.ops.is_empty() {
            // A lean batch (oracleGeneral): every record a read of its own, its key its entity.
            d.set_item("keys", b.keys.into_pyarray(py))?;
            return Ok(Some(d));
        }
        d.set_item("keys", b.keys.clone().into_pyarray(py))?;
        d.set_item("entities", b.keys.into_pyarray(py))?;
        d.set_item("ops", b.ops.into_pyarray(py))?;
        d.set_item("reqs", b.reqs.into_pyarray(py))?;
        d.set_item("key_bytes", b.key_bytes.into_pyarray(py))?;
        if !b.next_access.is_empty() {
            d.set_item("next_access", b.next_access.into_pyarray(py))?;
        }
        Ok(Some(d))
    }

    #[getter]
    fn bytes_read(&self) -> u64 {
        match &self.inner {
            ObjectReaderKind::OracleGeneral(r) => r.bytes_read(),
            ObjectReaderKind::Csv(r) => r.bytes_read(),
        }
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = match &self.inner {
            ObjectReaderKind::OracleGeneral(r) => r.stats(),
            ObjectReaderKind::Csv(r) => r.stats(),
        };
        let d = PyDict::new(py);
        d.set_item("commands", s.requests)?;
        d.set_item("lookups", s.lookups)?;
        d.set_item("writes", s.writes)?;
        d.set_item("deletes", s.deletes)?;
        d.set_item("other_commands", 0)?;
        d.set_item("zero_size_requests", s.zero_size)?;
        Ok(d)
    }
}

#[pyclass(module = "cachescope._native")]
struct CaptureParser {
    // Parsed on a thread of its own, one batch ahead (see `parse::ahead`), from a file read ahead on a third
    // (`capture::ReadAhead`; the reader takes its 1 MiB blocks, a BufReader in between would only copy); or,
    // under a limit of one thread, on the caller's alone.
    inner: parse::ParseAhead,
}

#[pymethods]
impl CaptureParser {
    /// `fd`, `head` and `stop` as for `TextReader`. `head_start`: (rows, batches), the first `batches` batches
    /// of `rows` rows (at most 4) are parsed from now on, before `next_batch` asks for them with the same
    /// `rows`; numpy is imported meanwhile (parse.py imports pyarrow after: the parse overlaps both).
    /// `threads`: the threads it may take (`crate::threads`; None: no limit); with 1, the file is read and
    /// parsed on the caller's thread as it asks for each batch (a Dask task given one thread), and a head start
    /// is ignored.
    #[new]
    #[pyo3(signature = (path, ports, anonymize_salt=None, fd=None, head=Vec::new(), stop=None, head_start=None,
                        threads=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(py: Python<'_>, path: &str, ports: Vec<u16>, anonymize_salt: Option<u64>, fd: Option<i32>, head: Vec<u8>,
           stop: Option<PyRef<'_, StopFlag>>, head_start: Option<(usize, usize)>, threads: Option<usize>)
           -> PyResult<Self> {
        let threads = threads.unwrap_or(crate::threads::UNLIMITED);
        let head_start = head_start.filter(|_| threads != 1);
        if head_start.is_none() {
            numpy_ready(py);
        }
        let (file, own_bytes) = open_threaded(path, fd, head, stop.as_deref(), threads)?;
        let config = parse::ParseConfig { ports, anonymize_salt, ..parse::ParseConfig::default() };
        // A plain file is read ahead in blocks; a compressed one already is, and a live input hands over what
        // each read gives (`Stoppable`).
        let file = if own_bytes && threads != 1 { Source::new(crate::capture::ReadAhead::new(file)) } else { file };
        // Without the GIL: a live input's file header may take a while to come, and a signal's watcher thread
        // must be able to run meanwhile (`cachescope/trace/live.py`).
        let parser = py.detach(|| parse::CaptureParser::new(file, path, &config)).map_err(trace_err)?;
        if threads == 1 {
            return Ok(CaptureParser { inner: parse::ParseAhead::on_callers_thread(parser) });
        }
        let mut inner = parse::ParseAhead::new(parser);
        if let Some((rows, batches)) = head_start {
            inner.head_start(rows, batches);
            numpy_ready(py); // still before any output exists, as the signal handling needs
        }
        Ok(CaptureParser { inner })
    }

    /// The next rows, at least `min_rows` unless the capture ends, as a dict of numpy columns (see
    /// `parse::RowBatch`); None at the end. The next batch is parsed meanwhile, with this `min_rows`.
    fn next_batch<'py>(&mut self, py: Python<'py>, min_rows: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let Some(b) = py.detach(|| inner.next_batch(min_rows)).map_err(trace_err)? else {
            return Ok(None);
        };
        row_columns(py, b).map(Some)
    }

    /// What follows is as of the last batch handed out.
    #[getter]
    fn bytes_read(&self) -> u64 {
        self.inner.offset()
    }

    fn cmd_names(&self) -> Vec<String> {
        self.inner.cmd_names().to_vec()
    }

    /// Every counter by name, and the commands that touch no cached value, by name.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for &(name, value) in self.inner.counters() {
            d.set_item(name, value)?;
        }
        d.set_item("other_commands", self.inner.other_commands().clone())?;
        d.set_item("error_replies", self.inner.error_replies().clone())?;
        d.set_item("error_commands", self.inner.error_commands().clone())?;
        Ok(d)
    }
}

/// A batch of trace rows as numpy columns (see `parse::RowBatch`).
fn row_columns(py: Python<'_>, b: parse::RowBatch) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ts_ns", b.ts_ns.into_pyarray(py))?;
    d.set_item("conn", b.conn.into_pyarray(py))?;
    d.set_item("req", b.req.into_pyarray(py))?;
    d.set_item("batch", b.batch.into_pyarray(py))?;
    d.set_item("op", b.op.into_pyarray(py))?;
    d.set_item("cmd", b.cmd.into_pyarray(py))?;
    d.set_item("key_offsets", b.key_offsets.into_pyarray(py))?;
    d.set_item("key_data", b.key_data.into_pyarray(py))?;
    d.set_item("field_offsets", b.field_offsets.into_pyarray(py))?;
    d.set_item("field_data", b.field_data.into_pyarray(py))?;
    d.set_item("field_valid", b.field_valid.into_pyarray(py))?;
    d.set_item("value_size", b.value_size.into_pyarray(py))?;
    d.set_item("found", b.found.into_pyarray(py))?;
    d.set_item("latency_ns", b.latency_ns.into_pyarray(py))?;
    d.set_item("error", b.error.into_pyarray(py))?;
    d.set_item("error_names", b.error_names)?;
    // The endpoints of the connections the rows name, by conn (captures only).
    let ids: Vec<u32> = b.endpoints.iter().map(|e| e.0).collect();
    d.set_item("conn_ids", ids.into_pyarray(py))?;
    d.set_item("clients", b.endpoints.iter().map(|e| e.1.to_string()).collect::<Vec<_>>())?;
    d.set_item("servers", b.endpoints.iter().map(|e| e.2.to_string()).collect::<Vec<_>>())?;
    Ok(d)
}

/// Connections given as two byte streams each (tcpflow's files), read one after the other.
#[pyclass(module = "cachescope._native")]
struct StreamParser {
    inner: parse::StreamParser<File>,
}

fn open_file(path: Option<&str>) -> PyResult<Option<File>> {
    path.map(|p| File::open(p).map_err(|e| PyOSError::new_err(format!("{p}: {e}")))).transpose()
}

#[pymethods]
impl StreamParser {
    #[new]
    #[pyo3(signature = (anonymize_salt=None))]
    fn new(anonymize_salt: Option<u64>) -> Self {
        StreamParser { inner: parse::StreamParser::new(crate::resp::Limits::default(), anonymize_salt) }
    }

    /// Starts connection `conn`: its client's and its server's byte files (either may be None), the time
    /// its rows get, and whether its client spoke first (then it may be read from its start).
    fn open(
        &mut self,
        conn: u32,
        request: Option<&str>,
        reply: Option<&str>,
        ts_ns: i64,
        client_first: bool,
    ) -> PyResult<()> {
        let (q, r) = (open_file(request)?, open_file(reply)?);
        self.inner.open(conn, q, r, ts_ns, client_first).map_err(|e| PyOSError::new_err(e.to_string()))
    }

    /// The open connection's next rows, at least `min_rows` unless it ends, as `CaptureParser.next_batch`
    /// gives them; None once it has ended.
    fn next_batch<'py>(&mut self, py: Python<'py>, min_rows: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let batch = py.detach(|| inner.next_batch(min_rows)).map_err(|e| PyOSError::new_err(e.to_string()))?;
        batch.map(|b| row_columns(py, b)).transpose()
    }

    fn cmd_names(&self) -> Vec<String> {
        self.inner.cmd_names().to_vec()
    }

    /// Every counter by name, and the commands that touch no cached value, by name.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        for (name, value) in self.inner.counters() {
            d.set_item(name, value)?;
        }
        d.set_item("other_commands", self.inner.row_stats().other_commands.clone())?;
        d.set_item("error_replies", self.inner.row_stats().error_replies.clone())?;
        d.set_item("error_commands", self.inner.row_stats().error_commands.clone())?;
        Ok(d)
    }
}

#[pyclass(module = "cachescope._native")]
struct Simulation {
    inner: simulation::Simulation,
}

/// A run as Python gives it: (policy, capacity) for entries, or (policy, capacity, entry_overhead or None),
/// or that and the policy's parameters, {name: value}.
#[derive(FromPyObject)]
enum RunArg {
    WithParams(String, u64, Option<u32>, HashMap<String, f64>),
    Full(String, u64, Option<u32>),
    Entries(String, u64),
}

fn write_mode(name: &str) -> PyResult<WriteMode> {
    match name {
        "ignore" => Ok(WriteMode::Ignore),
        "invalidate" => Ok(WriteMode::Invalidate),
        "update" => Ok(WriteMode::Update),
        other => Err(value_err(format!("unknown write mode {other:?}; use ignore, invalidate or update"))),
    }
}

#[pymethods]
impl Simulation {
    /// `runs`: (policy, capacity), (policy, capacity, entry_overhead or None), or (policy, capacity,
    /// entry_overhead or None, {parameter: value}). No overhead means an entry-count capacity; a number means a
    /// byte capacity whose entries weigh value + key + field + overhead bytes. A policy with parameters needs
    /// every one of them (the Python registry holds their defaults).
    #[new]
    #[pyo3(signature = (runs, window, writes="ignore", ttl_ns=None, allow=None, refreshes=Vec::new(),
                        restarts_at=Vec::new(), restart_every_ns=None, future=None))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        runs: Vec<RunArg>,
        window: u64,
        writes: &str,
        ttl_ns: Option<i64>,
        allow: Option<Vec<u64>>,
        refreshes: Vec<(i64, u64)>,
        restarts_at: Vec<i64>,
        restart_every_ns: Option<i64>,
        future: Option<PyReadonlyArray1<u64>>,
    ) -> PyResult<Self> {
        let specs: Vec<RunSpec> = runs
            .into_iter()
            .map(|run| {
                let (policy, capacity, overhead, params) = match run {
                    RunArg::WithParams(policy, capacity, overhead, params) => (policy, capacity, overhead, params),
                    RunArg::Full(policy, capacity, overhead) => (policy, capacity, overhead, HashMap::new()),
                    RunArg::Entries(policy, capacity) => (policy, capacity, None, HashMap::new()),
                };
                let unit = overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
                let mut params: Vec<(String, f64)> = params.into_iter().collect();
                params.sort_by(|a, b| a.0.cmp(&b.0));
                RunSpec { policy, capacity, unit, params }
            })
            .collect();
        let opts = Options {
            window,
            writes: write_mode(writes)?,
            ttl_ns,
            allow: allow.map(|a| a.into_iter().collect()),
            refreshes,
            restarts_at,
            restart_every_ns,
            restart_phase_ns: 0,
        };
        let future = future.map(|f| f.as_slice().map(Arc::from)).transpose()?;
        Ok(Simulation { inner: simulation::Simulation::new(&specs, opts, future).map_err(value_err)? })
    }

    #[pyo3(signature = (keys, ts_ns=None, ops=None, entities=None, fields=None, value_sizes=None, key_bytes=None, reqs=None,
                        clients=None, shards=None, conns=None, batches=None))]
    #[allow(clippy::too_many_arguments)]
    fn feed(
        &mut self,
        py: Python<'_>,
        keys: PyReadonlyArray1<u64>,
        ts_ns: Option<PyReadonlyArray1<i64>>,
        ops: Option<PyReadonlyArray1<u8>>,
        entities: Option<PyReadonlyArray1<u64>>,
        fields: Option<PyReadonlyArray1<u64>>,
        value_sizes: Option<PyReadonlyArray1<u32>>,
        key_bytes: Option<PyReadonlyArray1<u32>>,
        reqs: Option<PyReadonlyArray1<u64>>,
        clients: Option<PyReadonlyArray1<u32>>,
        shards: Option<PyReadonlyArray1<u64>>,
        conns: Option<PyReadonlyArray1<u64>>,
        batches: Option<PyReadonlyArray1<u64>>,
    ) -> PyResult<()> {
        let ev = Events {
            keys: keys.as_slice()?,
            ts_ns: ts_ns.as_ref().map(|a| a.as_slice()).transpose()?,
            ops: ops.as_ref().map(|a| a.as_slice()).transpose()?,
            entities: entities.as_ref().map(|a| a.as_slice()).transpose()?,
            fields: fields.as_ref().map(|a| a.as_slice()).transpose()?,
            value_sizes: value_sizes.as_ref().map(|a| a.as_slice()).transpose()?,
            key_bytes: key_bytes.as_ref().map(|a| a.as_slice()).transpose()?,
            reqs: reqs.as_ref().map(|a| a.as_slice()).transpose()?,
            clients: clients.as_ref().map(|a| a.as_slice()).transpose()?,
            shards: shards.as_ref().map(|a| a.as_slice()).transpose()?,
            conns: conns.as_ref().map(|a| a.as_slice()).transpose()?,
            batches: batches.as_ref().map(|a| a.as_slice()).transpose()?,
        };
        let inner = &mut self.inner;
        py.detach(|| inner.feed(&ev)).map_err(value_err)
    }

    /// Whether this simulation reads only a sample of the keys (SHARDS curves beside the estimated bound, and
    /// nothing else): an oracleGeneral trace can then be fed by `feed_sampled`.
    #[getter]
    fn sampled_only(&self) -> bool {
        self.inner.sampled_below().is_some()
    }

    /// Reads the next `min_events` records of an oracleGeneral `reader` and feeds them as `feed` would feed its
    /// `next_batch`, the ids hashed on the simulation's threads and only the sampled lookups passed on
    /// (`sampled_only` must hold); False at the end of the trace.
    fn feed_sampled(&mut self, py: Python<'_>, mut reader: PyRefMut<'_, ObjectReader>, min_events: usize)
                    -> PyResult<bool> {
        let ObjectReaderKind::OracleGeneral(r) = &mut reader.inner else {
            return Err(value_err("only an oracleGeneral trace is fed a sample of its records".into()));
        };
        let inner = &mut self.inner;
        py.detach(|| {
            let Some(records) = r.next_records(min_events).map_err(trace_err)? else {
                return Ok(false);
            };
            let (lookups, zero_size) = inner.feed_sampled_records(records).map_err(value_err)?;
            r.counted(lookups, zero_size);
            Ok(true)
        })
    }

    /// Adds a SHARDS estimate of the LRU curve (see `add_lru_curve` for the units): `samples` disjoint
    /// samples of `rate` of the keys each, and with `max_keys` at most that many keys in each.
    #[pyo3(signature = (capacities, rate, samples, max_keys=None, entry_overhead=None))]
    fn add_shards(&mut self, capacities: Vec<u64>, rate: f64, samples: usize, max_keys: Option<usize>,
                  entry_overhead: Option<u32>) -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        self.inner.add_shards(&capacities, unit, rate, samples, max_keys).map_err(value_err)
    }

    /// Adds the SHARDS estimate of the LRU curve of a fleet of `pods` caches routed by `route` (as `add_fleet`
    /// routes), capacities per pod; otherwise as `add_shards`.
    #[pyo3(signature = (capacities, rate, samples, max_keys, entry_overhead, pods, route, seed=0))]
    #[allow(clippy::too_many_arguments)]
    fn add_fleet_shards(&mut self, capacities: Vec<u64>, rate: f64, samples: usize, max_keys: Option<usize>,
                        entry_overhead: Option<u32>, pods: u32, route: &str, seed: u64) -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        let route = crate::fleet::Route::parse(route, seed).map_err(value_err)?;
        self.inner.add_fleet_shards(&capacities, unit, rate, samples, max_keys, pods, route).map_err(value_err)
    }

    /// Adds miniature simulations of `policy` at `capacities`: `samples` disjoint samples of `rate` of the
    /// keys each, run through caches of capacity x rate.
    #[pyo3(signature = (policy, capacities, rate, samples, params=HashMap::new(), entry_overhead=None))]
    fn add_minisim(&mut self, policy: &str, capacities: Vec<u64>, rate: f64, samples: usize,
                   params: HashMap<String, f64>, entry_overhead: Option<u32>) -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        let mut params: Vec<(String, f64)> = params.into_iter().collect();
        params.sort_by(|a, b| a.0.cmp(&b.0));
        self.inner.add_minisim(policy, &capacities, unit, &params, rate, samples).map_err(value_err)
    }

    /// Adds miniature simulations of a fleet of `pods` caches of `policy` routed by `route` (as `add_fleet`
    /// routes), capacities per pod; otherwise as `add_minisim`.
    #[pyo3(signature = (policy, capacities, rate, samples, pods, route, params=HashMap::new(), entry_overhead=None, seed=0))]
    #[allow(clippy::too_many_arguments)]
    fn add_fleet_minisim(&mut self, policy: &str, capacities: Vec<u64>, rate: f64, samples: usize, pods: u32,
                         route: &str, params: HashMap<String, f64>, entry_overhead: Option<u32>, seed: u64)
                         -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        let mut params: Vec<(String, f64)> = params.into_iter().collect();
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let route = crate::fleet::Route::parse(route, seed).map_err(value_err)?;
        self.inner.add_fleet_minisim(policy, &capacities, unit, &params, rate, samples, pods, route).map_err(value_err)
    }

    /// Adds a fleet of `pods` caches of `policy` at `capacity` each (bytes when `entry_overhead` is given),
    /// routed by `route` (`random`, `round-robin`, `entity`); with `rolling` (every_ns, over_ns), a rolling
    /// restart of the pods every `every_ns`, from the first pod to the last over `over_ns`.
    /// `time_factor`: the pods' clock runs that many times faster than the trace's (the sharded what-if from
    /// one pod's capture). `part` (part, of): run only the pods `p % of == part` (one task of a sweep split by
    /// pods; `fleets` then hands out the parts that the other tasks' complete).
    #[pyo3(signature = (policy, capacity, pods, route, entry_overhead=None, params=HashMap::new(), seed=0,
                        rolling=None, time_factor=1, part=None))]
    #[allow(clippy::too_many_arguments)]
    fn add_fleet(&mut self, policy: &str, capacity: u64, pods: u32, route: &str, entry_overhead: Option<u32>,
                 params: HashMap<String, f64>, seed: u64, rolling: Option<(i64, i64)>, time_factor: u32,
                 part: Option<(u32, u32)>) -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        let mut params: Vec<(String, f64)> = params.into_iter().collect();
        params.sort_by(|a, b| a.0.cmp(&b.0));
        let route = crate::fleet::Route::parse(route, seed).map_err(value_err)?;
        self.inner.add_fleet(policy, capacity, unit, &params, pods, route, rolling).map_err(value_err)?;
        if time_factor > 1 {
            self.inner.last_fleet().compress_time(time_factor);
        }
        if let Some((part, of)) = part {
            self.inner.last_fleet().only_pods(part, of).map_err(value_err)?;
        }
        Ok(())
    }

    /// One dict per fleet: `policy`, `capacity`, `route`, `pods`, `per_pod` (one dict of counters per pod, with
    /// `resident` and `restart_times`), `window_hits`, the fleet's hits per timeline window, and `served`, the
    /// fleet's own `commands`, `commands_served`, `round_trips` and `round_trips_saved` (a sharded request can
    /// reach several pods: these are not sums over pods). A fleet that runs only some pods (`part`) has
    /// `per_pod` for those, their numbers in `pod_ids`, and `part` (part, of), `window_pods` (uint64[windows,
    /// pods run here, 2]: each window's hits and lookups of each, the open window last) and `served_parts`
    /// (`commands`, `command_candidates`, `command_misses`, `lone_hits`, `batched`, `round_trips`,
    /// `round_trip_candidates`, `round_trip_misses`; the misses as bits in uint64 words, see
    /// `fleet::ServedParts`).
    fn fleets<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .fleets()
            .iter()
            .map(|f| {
                let d = PyDict::new(py);
                d.set_item("policy", f.policy.as_str())?;
                d.set_item("capacity", f.capacity)?;
                d.set_item("route", f.route().name())?;
                d.set_item("pods", f.pod_count())?;
                d.set_item("rolling", f.rolls())?;
                d.set_item("time_factor", f.time_factor())?;
                let per_pod = f.pods().iter().map(|r| run_dict(py, r)).collect::<PyResult<Vec<_>>>()?;
                d.set_item("per_pod", per_pod)?;
                d.set_item("window_hits", f.window_hits().into_pyarray(py))?;
                let spread: Vec<f32> = f.window_spread().concat();
                let windows = spread.len() / 3;
                let spread = numpy::ndarray::Array2::from_shape_vec((windows, 3), spread)
                    .map_err(|e| value_err(e.to_string()))?;
                d.set_item("window_spread", spread.into_pyarray(py))?;
                let s = f.served();
                let served = PyDict::new(py);
                served.set_item("commands", s.commands)?;
                served.set_item("commands_served", s.commands_served)?;
                served.set_item("round_trips", s.round_trips)?;
                served.set_item("round_trips_saved", s.round_trips_saved)?;
                d.set_item("served", served)?;
                if let (Some((part, of)), Some(parts), Some(windows)) = (f.part(), f.served_parts(), f.pod_windows()) {
                    d.set_item("part", (part, of))?;
                    d.set_item("pod_ids", f.pod_ids().to_vec())?;
                    let pods = f.pods().len();
                    let flat: Vec<u64> = windows.iter().flatten().flat_map(|&(h, l)| [h, l]).collect();
                    let windows = numpy::ndarray::Array3::from_shape_vec((windows.len(), pods, 2), flat)
                        .map_err(|e| value_err(e.to_string()))?;
                    d.set_item("window_pods", windows.into_pyarray(py))?;
                    let p = PyDict::new(py);
                    p.set_item("commands", parts.commands)?;
                    p.set_item("command_candidates", parts.command_candidates)?;
                    p.set_item("command_misses", parts.command_misses.into_pyarray(py))?;
                    p.set_item("lone_hits", parts.lone_hits)?;
                    p.set_item("batched", parts.batched)?;
                    p.set_item("round_trips", parts.round_trips)?;
                    p.set_item("round_trip_candidates", parts.round_trip_candidates)?;
                    p.set_item("round_trip_misses", parts.round_trip_misses.into_pyarray(py))?;
                    d.set_item("served_parts", p)?;
                }
                Ok(d)
            })
            .collect()
    }

    /// Adds an exact LRU curve at `capacities`: in entries, or in bytes when `entry_overhead` is given (each
    /// entry weighs value + key + field + overhead bytes). Before the first `feed`.
    #[pyo3(signature = (capacities, entry_overhead=None, window_columns=64))]
    fn add_lru_curve(&mut self, capacities: Vec<u64>, entry_overhead: Option<u32>, window_columns: usize) -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        self.inner.add_lru_curve(&capacities, unit, window_columns).map_err(value_err)
    }

    /// Adds the exact LRU curve of a fleet of `pods` caches routed by `route` (as `add_fleet` routes), at
    /// `capacities` per pod. Before the first `feed`.
    #[pyo3(signature = (capacities, pods, route, entry_overhead=None, window_columns=64, seed=0))]
    fn add_fleet_lru_curve(&mut self, capacities: Vec<u64>, pods: u32, route: &str, entry_overhead: Option<u32>,
                           window_columns: usize, seed: u64) -> PyResult<()> {
        let unit = entry_overhead.map_or(Unit::Entries, |entry_overhead| Unit::Bytes { entry_overhead });
        let route = crate::fleet::Route::parse(route, seed).map_err(value_err)?;
        self.inner.add_fleet_lru_curve(&capacities, unit, window_columns, pods, route).map_err(value_err)
    }

    /// One dict per curve: `capacities` (sorted), and at each capacity `hits`, `bytes_hit`,
    /// `commands_served`; `lookups`, `bytes_looked_up`, `commands`; `window_capacities` and `window_hits`,
    /// hits per window at each of them (uint64[windows, window_capacities]).
    fn curves<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        use crate::curve::lru::cumulative;
        use crate::curve::Curve;
        self.inner
            .curves()
            .iter()
            .map(|curve| {
                let curve = match curve {
                    Curve::Exact(c) => c,
                    Curve::Shards(s) => return shards_dict(py, s, self.inner.lookups()),
                    Curve::Mini(m) => return minisim_dict(py, m),
                };
                let d = PyDict::new(py);
                d.set_item("method", "exact")?;
                if let Some((pods, route)) = curve.fleet_shape() {
                    d.set_item("pods", pods)?;
                    d.set_item("route", route)?;
                }
                let c = curve.counts();
                let columns = curve.window_capacities();
                let n = columns.len();
                d.set_item("capacities", curve.capacities.clone().into_pyarray(py))?;
                d.set_item("window_capacities", columns.into_pyarray(py))?;
                d.set_item("lookups", c.lookups)?;
                d.set_item("hits", cumulative(&c.hits).into_pyarray(py))?;
                d.set_item("bytes_looked_up", c.bytes_looked_up)?;
                d.set_item("bytes_hit", cumulative(&c.bytes_hit).into_pyarray(py))?;
                d.set_item("commands", c.commands)?;
                d.set_item("commands_served", cumulative(&c.commands_served).into_pyarray(py))?;
                d.set_item("round_trips", c.round_trips)?;
                d.set_item("round_trips_saved", cumulative(&c.round_trips_saved).into_pyarray(py))?;
                let windows: Vec<Vec<u64>> = c.window_hits.chunks(n + 1).map(cumulative).collect();
                let flat: Vec<u64> = windows.concat();
                let heat = numpy::ndarray::Array2::from_shape_vec((windows.len(), n), flat)
                    .map_err(|e| value_err(e.to_string()))?;
                d.set_item("window_hits", heat.into_pyarray(py))?;
                Ok(d)
            })
            .collect()
    }

    /// Every single run counts its lookups and hits per field from now on: each result then has
    /// `hits_by_field`. Before the first `feed`.
    fn count_by_field(&mut self) {
        self.inner.count_by_field();
    }

    /// Each batch from now on is simulated on at most `threads` threads, the caller's among them (a Dask
    /// task given fewer than the machine's cores); by default each run, curve and routing has one.
    fn limit_threads(&mut self, threads: usize) -> PyResult<()> {
        if threads == 0 {
            return Err(value_err("a simulation needs at least one thread".to_string()));
        }
        self.inner.limit_threads(threads);
        Ok(())
    }

    /// The time of the trace's first lookup (ns), None before it or without a clock.
    #[getter]
    fn first_ts(&self) -> Option<i64> {
        self.inner.first_ts()
    }

    #[getter]
    fn lookups(&self) -> u64 {
        self.inner.lookups()
    }

    /// Unique keys looked up, if the simulation counted them apart from its runs (else None).
    #[getter]
    fn unique_reads(&self) -> Option<usize> {
        self.inner.unique_reads()
    }

    /// Counts the unique keys read in a sketch of constant memory instead of a set of every key: what stands in
    /// for an infinite run when only sampled curves are asked for. Before the first `feed`.
    fn estimate_unique_reads(&mut self) -> PyResult<()> {
        self.inner.estimate_unique_reads().map_err(value_err)
    }

    /// (estimated unique keys read, its relative standard error, the estimate at the end of each completed
    /// window as float64[windows]) after `estimate_unique_reads`; else None.
    #[getter]
    #[allow(clippy::type_complexity)]
    fn distinct_reads<'py>(&self, py: Python<'py>) -> Option<(f64, f64, Bound<'py, PyArray1<f64>>)> {
        self.inner.distinct_reads().map(|d| {
            (d.estimate(), simulation::DistinctReads::RELATIVE_ERROR, d.window_estimates().to_vec().into_pyarray(py))
        })
    }

    /// Estimates the bound's commands and round trips served from a sample of entities of at most `max_keys`
    /// keys (`simulation::ServedSample`), for traces whose commands read several keys. Before the first `feed`.
    fn estimate_served_commands(&mut self, max_keys: usize) -> PyResult<()> {
        self.inner.estimate_served_commands(max_keys).map_err(value_err)
    }

    /// After `estimate_served_commands`: {"commands": counts, "round_trips": counts or None}, each counts a
    /// dict of groups, several (groups over several entities), sampled_unserved, sampled_unserved_squares and
    /// rate; else None.
    #[getter]
    fn served_counts<'py>(&self, py: Python<'py>) -> PyResult<Option<Bound<'py, PyDict>>> {
        let Some((commands, trips)) = self.inner.served_counts() else {
            return Ok(None);
        };
        let as_dict = |c: simulation::ServedCounts| -> PyResult<Bound<'py, PyDict>> {
            let d = PyDict::new(py);
            d.set_item("groups", c.groups)?;
            d.set_item("several", c.several)?;
            d.set_item("sampled_unserved", c.sampled_unserved)?;
            d.set_item("sampled_unserved_squares", c.sampled_unserved_squares)?;
            d.set_item("rate", c.rate)?;
            Ok(d)
        };
        let d = PyDict::new(py);
        d.set_item("commands", as_dict(commands)?)?;
        d.set_item("round_trips", trips.map(as_dict).transpose()?)?;
        Ok(Some(d))
    }

    /// Every entry-capacity run and fleet pod reports `resident_bytes_peak` from now on: the largest bytes
    /// its cache held, each entry weighing value + key + field + `entry_overhead` bytes. Before the first `feed`.
    fn track_resident_bytes(&mut self, entry_overhead: u32) {
        self.inner.track_resident_bytes(entry_overhead);
    }

    /// One dict per run: policy, capacity, resident, every counter, the restart times applied,
    /// `refresh_by_field` ((field hash, entries dropped, re-fetches) per refreshed field) and, after
    /// `count_by_field`, `hits_by_field` ((field hash, lookups, hits) per field).
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner.runs().iter().map(|r| run_dict(py, r)).collect()
    }

    /// (window_end uint64, ts_ns int64 or None, hits uint64[runs, windows]).
    #[allow(clippy::type_complexity)]
    fn timeline<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray1<u64>>, Option<Bound<'py, PyArray1<i64>>>, Bound<'py, PyArray2<u64>>)> {
        let t = self.inner.timeline();
        let ts = self.inner.has_clock().then(|| t.ts.into_pyarray(py));
        let hits = if t.hits.is_empty() {
            PyArray2::zeros(py, [0, t.ends.len()], false)
        } else {
            PyArray2::from_vec2(py, &t.hits).map_err(|e| value_err(e.to_string()))?
        };
        Ok((t.ends.into_pyarray(py), ts, hits))
    }
}

fn run_dict<'py>(py: Python<'py>, r: &sim::Run) -> PyResult<Bound<'py, PyDict>> {
    let c = r.counters();
    let d = PyDict::new(py);
    d.set_item("policy", &r.name)?;
    d.set_item("capacity", r.capacity)?;
    d.set_item("resident", r.resident())?;
    for (name, value) in [
        ("lookups", c.lookups),
        ("hits", c.hits),
        ("bytes_looked_up", c.bytes_looked_up),
        ("bytes_hit", c.bytes_hit),
        ("commands", c.commands),
        ("commands_served", c.commands_served),
        ("round_trips", c.round_trips),
        ("round_trips_saved", c.round_trips_saved),
        ("evictions", c.evictions),
        ("invalidations", c.invalidations),
        ("refresh_evictions", c.refresh_evictions),
        ("refresh_refetches", c.refresh_refetches),
        ("expirations", c.expirations),
        ("stale_reads", c.stale_reads),
        ("uncacheable", c.uncacheable),
        ("restarts", c.restarts),
    ] {
        d.set_item(name, value)?;
    }
    d.set_item("restart_times", r.restart_times().to_vec())?;
    if let Some(peak) = r.resident_bytes_peak() {
        d.set_item("resident_bytes_peak", peak)?;
    }
    // Per field hash: (field, entries its refreshes dropped, lookups that missed because of them).
    let refresh: Vec<(u64, u64, u64)> = r.refresh_by_field().iter().map(|(f, c)| (*f, c.dropped, c.refetched)).collect();
    d.set_item("refresh_by_field", refresh)?;
    if let Some(by_field) = r.hits_by_field() {
        let tallies: Vec<(u64, u64, u64)> = by_field.iter().map(|(f, h)| (*f, h.lookups, h.hits)).collect();
        d.set_item("hits_by_field", tallies)?;
    }
    Ok(d)
}

/// The ports of a capture that carry Redis commands (found by content, one pass over the file), and the
/// ports that look like servers with their segments, busiest first.
#[pyfunction]
fn discover_ports(py: Python<'_>, path: &str) -> PyResult<(Vec<u16>, Vec<(u16, u64)>, Vec<(u16, u64)>)> {
    let file = open_source(path, None, Vec::new(), None)?;
    let report = py.detach(|| parse::discover_ports(crate::capture::ReadAhead::new(file), path)).map_err(trace_err)?;
    Ok((report.redis, report.servers, report.tls))
}

/// Whether these first bytes are a pcap or pcapng file.
#[pyfunction]
fn is_capture(head: &[u8]) -> bool {
    crate::capture::is_capture(head)
}

/// The compression whose magic number these first bytes start with ("gzip", "zstd", "xz", "lz4"), or None.
#[pyfunction]
fn compression(head: &[u8]) -> Option<&'static str> {
    crate::input::Compression::detect(head).map(crate::input::Compression::name)
}

/// Up to `max` plain bytes that these first bytes of an input decode to (themselves when not compressed).
#[pyfunction]
fn plain_head<'py>(py: Python<'py>, head: &[u8], max: usize) -> Bound<'py, PyBytes> {
    let plain = py.detach(|| crate::input::plain_head(head, max));
    PyBytes::new(py, &plain)
}

#[pyfunction]
fn sniff_format(head: &[u8]) -> PyResult<&'static str> {
    trace::sniff_format(head).map(TextFormat::name).map_err(value_err)
}

#[pyfunction]
fn hash_string_column<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<i64>,
    data: PyReadonlyArray1<u8>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (o, d) = (offsets.as_slice()?, data.as_slice()?);
    Ok(py.detach(|| hash::hash_string_column(o, d)).map_err(value_err)?.into_pyarray(py))
}

/// The shard id hash `pattern` takes from each string of a column (offsets into data), and how many did not
/// match (their whole key is their shard).
#[pyfunction]
fn shard_column<'py>(
    py: Python<'py>,
    pattern: &str,
    offsets: PyReadonlyArray1<i64>,
    data: PyReadonlyArray1<u8>,
) -> PyResult<(Bound<'py, PyArray1<u64>>, u64)> {
    let p = crate::fleet::pattern::KeyPattern::new(pattern).map_err(value_err)?;
    let (o, d) = (offsets.as_slice()?, data.as_slice()?);
    let (shards, unmatched) = py.detach(|| p.shard_column(o, d)).map_err(value_err)?;
    Ok((shards.into_pyarray(py), unmatched))
}

#[pyfunction]
fn hash_field_column<'py>(
    py: Python<'py>,
    key_hashes: PyReadonlyArray1<u64>,
    offsets: PyReadonlyArray1<i64>,
    data: PyReadonlyArray1<u8>,
    valid: PyReadonlyArray1<bool>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (k, o, d, v) = (key_hashes.as_slice()?, offsets.as_slice()?, data.as_slice()?, valid.as_slice()?);
    Ok(py.detach(|| hash::hash_field_column(k, o, d, v)).map_err(value_err)?.into_pyarray(py))
}

#[pyfunction]
fn hash_field_by_index<'py>(
    py: Python<'py>,
    key_hashes: PyReadonlyArray1<u64>,
    offsets: PyReadonlyArray1<i64>,
    data: PyReadonlyArray1<u8>,
    index: PyReadonlyArray1<i64>,
    valid: PyReadonlyArray1<bool>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (k, o, d, i, v) = (key_hashes.as_slice()?, offsets.as_slice()?, data.as_slice()?, index.as_slice()?, valid.as_slice()?);
    Ok(py.detach(|| hash::hash_field_by_index(k, o, d, i, v)).map_err(value_err)?.into_pyarray(py))
}

#[pyfunction]
fn hash_optional_column<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<i64>,
    data: PyReadonlyArray1<u8>,
    valid: PyReadonlyArray1<bool>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (o, d, v) = (offsets.as_slice()?, data.as_slice()?, valid.as_slice()?);
    Ok(py.detach(|| hash::hash_optional_column(o, d, v)).map_err(value_err)?.into_pyarray(py))
}

/// A batch of trace rows as text lines (`style`: "commands" or "monitor"), from the columns of its Arrow
/// record batch; rows whose `keep` is false are left out.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
fn text_lines<'py>(
    py: Python<'py>,
    style: &str,
    ts_ns: PyReadonlyArray1<i64>,
    req: PyReadonlyArray1<u64>,
    cmd: PyReadonlyArray1<i16>,
    cmd_names: Vec<String>,
    key_offsets: PyReadonlyArray1<i64>,
    key_data: PyReadonlyArray1<u8>,
    field_offsets: PyReadonlyArray1<i64>,
    field_data: PyReadonlyArray1<u8>,
    field_valid: PyReadonlyArray1<bool>,
    client: PyReadonlyArray1<i32>,
    client_names: Vec<String>,
    keep: PyReadonlyArray1<bool>,
) -> PyResult<Bound<'py, PyBytes>> {
    use parse::text_out::{write_text, TextRows, TextStyle};
    let style = match style {
        "commands" => TextStyle::Commands,
        "monitor" => TextStyle::Monitor,
        other => return Err(value_err(format!("unknown text style {other:?}"))),
    };
    let rows = TextRows {
        ts_ns: ts_ns.as_slice()?, req: req.as_slice()?, cmd: cmd.as_slice()?, cmd_names: &cmd_names,
        key_offsets: key_offsets.as_slice()?, key_data: key_data.as_slice()?, field_offsets: field_offsets.as_slice()?,
        field_data: field_data.as_slice()?, field_valid: field_valid.as_slice()?, client: client.as_slice()?,
        client_names: &client_names, keep: keep.as_slice()?,
    };
    let n = rows.req.len();
    let columns = [rows.ts_ns.len(), rows.cmd.len(), rows.key_offsets.len().saturating_sub(1),
                   rows.field_offsets.len().saturating_sub(1), rows.field_valid.len(), rows.client.len(), rows.keep.len()];
    if columns.iter().any(|&c| c != n) {
        return Err(value_err(format!("text_lines: columns of different lengths {columns:?}, {n} rows")));
    }
    let mut out = Vec::new();
    py.detach(|| write_text(&rows, style, &mut out));
    Ok(PyBytes::new(py, &out))
}

/// `policy::belady::next_access_chunk`: a chunk's next reads, and the map of keys to their first later read.
#[pyfunction]
fn next_access_chunk<'py>(
    py: Python<'py>,
    ids: PyReadonlyArray1<u64>,
    start: i64,
    keys: PyReadonlyArray1<u64>,
    later: PyReadonlyArray1<i64>,
) -> PyResult<(Bound<'py, PyArray1<i64>>, Bound<'py, PyArray1<u64>>, Bound<'py, PyArray1<i64>>)> {
    let (i, k, l) = (ids.as_slice()?, keys.as_slice()?, later.as_slice()?);
    if k.len() != l.len() {
        return Err(value_err(format!("next_access_chunk: {} keys, {} positions", k.len(), l.len())));
    }
    let (next, keys, later) = py.detach(|| crate::policy::belady::next_access_chunk(i, start, k, l));
    Ok((next.into_pyarray(py), keys.into_pyarray(py), later.into_pyarray(py)))
}

/// For each lookup, the position of the next lookup of the same key (2**64-1 if none): what Belady needs.
#[pyfunction]
fn next_access<'py>(py: Python<'py>, keys: PyReadonlyArray1<u64>) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let k = keys.as_slice()?;
    Ok(py.detach(|| crate::policy::belady::next_access(k)).into_pyarray(py))
}

/// The hash the core gives a key or a field (as in the `fields` column of a batch).
#[pyfunction]
fn key_hash(data: &[u8]) -> u64 {
    hash::key_hash(data)
}

/// xxHash32, how feature stores turn feature names into hash fields.
#[pyfunction]
#[pyo3(signature = (data, seed=0))]
fn xxh32(data: &[u8], seed: u32) -> u32 {
    xxhash_rust::xxh32::xxh32(data, seed)
}

/// The policy registry (`src/policy/`), in its order: one dict per policy with `name`, `label`,
/// `description`, `keyword`, `needs_future`, `sized` and `params`, a list of `(name, default, help)`.
#[pyfunction]
fn policy_specs(py: Python<'_>) -> PyResult<Vec<Bound<'_, PyDict>>> {
    SPECS
        .iter()
        .map(|spec| {
            let d = PyDict::new(py);
            d.set_item("name", spec.name)?;
            d.set_item("label", spec.label)?;
            d.set_item("description", spec.description)?;
            d.set_item("keyword", spec.keyword)?;
            d.set_item("needs_future", spec.needs_future)?;
            d.set_item("sized", spec.sized)?;
            let params: Vec<_> = spec.params.iter().map(|p| (p.name, p.default, p.help)).collect();
            d.set_item("params", params)?;
            Ok(d)
        })
        .collect()
}

/// A SHARDS curve: `method`, `capacities`, the estimated `hit_rates` of each sample at each capacity
/// (float64[samples, capacities]) and each sample's final `sample_rates`.
fn shards_dict<'py>(py: Python<'py>, s: &crate::curve::Shards, lookups: u64) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("method", "shards")?;
    if let Some((pods, route)) = s.fleet_shape() {
        d.set_item("pods", pods)?;
        d.set_item("route", route)?;
    }
    d.set_item("capacities", s.capacities.clone().into_pyarray(py))?;
    let rows: Vec<f64> = s.samples.iter().flat_map(|x| x.hit_rates(lookups)).collect();
    let a = numpy::ndarray::Array2::from_shape_vec((s.samples.len(), s.capacities.len()), rows)
        .map_err(|e| value_err(e.to_string()))?;
    d.set_item("hit_rates", a.into_pyarray(py))?;
    d.set_item("sample_rates", s.samples.iter().map(|x| x.rate()).collect::<Vec<_>>().into_pyarray(py))?;
    Ok(d)
}

/// Miniature simulations: `method`, `policy`, `capacities`, `scaled_capacities`, `sample_rate`, and per salt
/// and capacity the scaled-down runs' `lookups`, `hits`, `bytes_looked_up`, `bytes_hit` (uint64[salts, caps]).
fn minisim_dict<'py>(py: Python<'py>, m: &crate::curve::MiniSim) -> PyResult<Bound<'py, PyDict>> {
    let counters = m.counters();
    let d = PyDict::new(py);
    d.set_item("method", "minisim")?;
    d.set_item("policy", m.policy.as_str())?;
    if let Some((pods, route)) = m.fleet_shape() {
        d.set_item("pods", pods)?;
        d.set_item("route", route)?;
    }
    d.set_item("capacities", m.capacities.clone().into_pyarray(py))?;
    d.set_item("scaled_capacities", m.scaled_capacities().into_pyarray(py))?;
    d.set_item("sample_rate", m.rate())?;
    let grid = |f: &dyn Fn(&sim::Counters) -> u64| -> PyResult<Bound<'py, PyArray2<u64>>> {
        let rows: Vec<Vec<u64>> = counters.iter().map(|salt| salt.iter().map(f).collect()).collect();
        let shape = (rows.len(), m.capacities.len());
        let a = numpy::ndarray::Array2::from_shape_vec(shape, rows.concat()).map_err(|e| value_err(e.to_string()))?;
        Ok(a.into_pyarray(py))
    };
    d.set_item("lookups", grid(&|c| c.lookups)?)?;
    d.set_item("hits", grid(&|c| c.hits)?)?;
    d.set_item("bytes_looked_up", grid(&|c| c.bytes_looked_up)?)?;
    d.set_item("bytes_hit", grid(&|c| c.bytes_hit)?)?;
    Ok(d)
}

/// Keeps the memory a batch frees for the next batch rather than giving it back to the system at once.
///
/// Every batch's columns are allocated on a reader's thread and freed when Python drops them: 12 to 49 bytes
/// an event, hundreds of MB over a trace. glibc returns what they free as soon as more than twice its mmap
/// threshold (which it raises only up to the largest block freed so far, about 1 MB here) is free at the top
/// of a heap, so every batch took its memory afresh from the kernel: a page fault every 4 KiB, a fifth to a
/// third of reading a `commands` or MONITOR trace (`bench/bench_text_readers.py`). These are the thresholds
/// glibc reaches by itself once a 32 MiB block has been freed: blocks up to 32 MiB come from the heap, and
/// up to 64 MiB free at its top are kept. A user's own `MALLOC_MMAP_THRESHOLD_` or `MALLOC_TRIM_THRESHOLD_`
/// is left alone.
///
/// And in one arena: glibc gives each thread an arena of its own (up to eight a core) on its first allocation,
/// and each kept its 64 MiB. A Parquet trace's batches are decoded on Arrow's threads, turned into events on
/// the reader's and simulated on the core's: over the 10^8-lookup dataset, `--curve lru --sample-keys 32768`
/// held 137 MB in five arenas for 8 MB in use at its end, its peak 113-127 MiB above the interpreter's
/// against 86 in one arena, in the same CPU time (small blocks come from each thread's own cache; the
/// threads are few). A user's own `MALLOC_ARENA_MAX` is left alone. Set when the module is imported, before
/// the threads that read and simulate exist.
fn keep_freed_memory() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    {
        let set_by_user = ["MALLOC_MMAP_THRESHOLD_", "MALLOC_TRIM_THRESHOLD_"].iter().any(|v| std::env::var_os(v).is_some());
        // SAFETY (both): mallopt only changes glibc's settings; it may be called at any time, from any thread.
        if !set_by_user {
            unsafe {
                libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20);
                libc::mallopt(libc::M_TRIM_THRESHOLD, 64 << 20);
            }
        }
        if std::env::var_os("MALLOC_ARENA_MAX").is_none() {
            unsafe {
                libc::mallopt(libc::M_ARENA_MAX, 1);
            }
        }
    }
}

/// Gives back to the system the pages free in the allocator's heaps, wherever they are (glibc returns only
/// those at a heap's top by itself): see `cachescope/simulate/freed_memory.py`.
#[pyfunction]
fn release_freed_memory(py: Python<'_>) {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    py.detach(|| {
        // SAFETY: malloc_trim only returns free pages; it may be called at any time, from any thread.
        unsafe { libc::malloc_trim(0) };
    });
    #[cfg(not(all(target_os = "linux", target_env = "gnu")))]
    let _ = py;
}

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    keep_freed_memory();
    m.add_class::<TextReader>()?;
    m.add_class::<TextRows>()?;
    m.add_class::<Simulation>()?;
    m.add_class::<CaptureParser>()?;
    m.add_class::<StreamParser>()?;
    m.add_class::<StopFlag>()?;
    m.add_class::<PlainInput>()?;
    m.add_class::<ObjectReader>()?;
    m.add_function(wrap_pyfunction!(compression, m)?)?;
    m.add_function(wrap_pyfunction!(plain_head, m)?)?;
    m.add_function(wrap_pyfunction!(is_capture, m)?)?;
    m.add_function(wrap_pyfunction!(discover_ports, m)?)?;
    m.add_function(wrap_pyfunction!(sniff_format, m)?)?;
    m.add_function(wrap_pyfunction!(hash_string_column, m)?)?;
    m.add_function(wrap_pyfunction!(hash_field_column, m)?)?;
    m.add_function(wrap_pyfunction!(hash_field_by_index, m)?)?;
    m.add_function(wrap_pyfunction!(shard_column, m)?)?;
    m.add_function(wrap_pyfunction!(hash_optional_column, m)?)?;
    m.add_function(wrap_pyfunction!(key_hash, m)?)?;
    m.add_function(wrap_pyfunction!(next_access, m)?)?;
    m.add_function(wrap_pyfunction!(text_lines, m)?)?;
    m.add_function(wrap_pyfunction!(next_access_chunk, m)?)?;
    m.add_function(wrap_pyfunction!(policy_specs, m)?)?;
    m.add_function(wrap_pyfunction!(xxh32, m)?)?;
    m.add_function(wrap_pyfunction!(release_freed_memory, m)?)?;
    m.add("NativeTraceError", m.py().get_type::<NativeTraceError>())?;
    m.add("POLICY_NAMES", SPECS.iter().map(|s| s.name).collect::<Vec<_>>())?;
    m.add("NEEDS_FUTURE", SPECS.iter().filter(|s| s.needs_future).map(|s| s.name).collect::<Vec<_>>())?;
    Ok(())
}
