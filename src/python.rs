//! The PyO3 bindings, `cachescope._native`: thin wrappers that move numpy arrays in and out in bulk and
//! release the GIL while Rust loops. No logic lives here.

use std::collections::HashMap;
use std::fs::File;
use std::io::{BufReader, Chain, Cursor, Read};
use std::os::fd::BorrowedFd;
use std::sync::Arc;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::TraceError;
use crate::hash;
use crate::policy::POLICY_NAMES;
use crate::parse;
use crate::sim::{self, Events, Options, RunSpec, Unit, WriteMode};
use crate::trace::{self, Granularity, TextFormat};

create_exception!(_native, NativeTraceError, PyValueError, "A trace file that cannot be read: `path: line N: why`.");

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

/// An input as the readers take it: the bytes Python already read to tell the format (from a FIFO or a
/// `<(...)` pipe, they cannot be read twice), then the rest of the same open file.
type Source = Chain<Cursor<Vec<u8>>, File>;

/// `path` opened afresh, or, given `fd`, a duplicate of that open descriptor, after `head`.
fn open_source(path: &str, fd: Option<i32>, head: Vec<u8>) -> PyResult<Source> {
    let file = match fd {
        // SAFETY: the caller keeps `fd` open for the duration of this call; only a duplicate is kept.
        Some(fd) => unsafe { BorrowedFd::borrow_raw(fd) }.try_clone_to_owned().map(File::from),
        None => File::open(path),
    }
    .map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
    Ok(Cursor::new(head).chain(file))
}

#[pyclass(module = "cachescope._native")]
struct TextReader {
    inner: trace::TextReader<BufReader<Source>>,
}

#[pymethods]
impl TextReader {
    /// `fd` and `head`: read the already open `fd` after the bytes `head` taken from it (see `Source`).
    #[new]
    #[pyo3(signature = (path, format, granularity_name, fd=None, head=Vec::new()))]
    fn new(path: &str, format: &str, granularity_name: &str, fd: Option<i32>, head: Vec<u8>) -> PyResult<Self> {
        let format = TextFormat::from_name(format).ok_or_else(|| value_err(format!("unknown text format {format:?}")))?;
        let src = BufReader::with_capacity(1 << 20, open_source(path, fd, head)?);
        Ok(TextReader { inner: trace::TextReader::new(src, path, format, granularity(granularity_name)?) })
    }

    /// The next events, at least `min_events` unless the trace ends, as a dict of numpy columns (keys,
    /// ops, entities, fields, key_bytes, reqs, and ts_ns when the format has a clock); None at the end.
    fn next_batch<'py>(&mut self, py: Python<'py>, min_events: usize) -> PyResult<Option<Bound<'py, PyDict>>> {
        let inner = &mut self.inner;
        let Some(b) = py.detach(|| inner.next_batch(min_events)).map_err(trace_err)? else {
            return Ok(None);
        };
        let d = PyDict::new(py);
        if !b.ts_ns.is_empty() {
            d.set_item("ts_ns", b.ts_ns.into_pyarray(py))?;
        }
        d.set_item("keys", b.keys.into_pyarray(py))?;
        d.set_item("ops", b.ops.into_pyarray(py))?;
        d.set_item("entities", b.entities.into_pyarray(py))?;
        d.set_item("fields", b.fields.into_pyarray(py))?;
        d.set_item("key_bytes", b.key_bytes.into_pyarray(py))?;
        d.set_item("reqs", b.reqs.into_pyarray(py))?;
        Ok(Some(d))
    }

    #[getter]
    fn bytes_read(&self) -> u64 {
        self.inner.bytes_read()
    }

    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let s = self.inner.stats();
        let d = PyDict::new(py);
        d.set_item("commands", s.commands)?;
        d.set_item("lookups", s.lookups)?;
        d.set_item("writes", s.writes)?;
        d.set_item("deletes", s.deletes)?;
        d.set_item("other_commands", s.other_commands)?;
        Ok(d)
    }
}

#[pyclass(module = "cachescope._native")]
struct CaptureParser {
    // Parsed on a thread of its own, one batch ahead (see `parse::ahead`), from a file read ahead on a third
    // (`capture::ReadAhead`; the reader takes its 1 MiB blocks, a BufReader in between would only copy).
    inner: parse::ParseAhead,
}

#[pymethods]
impl CaptureParser {
    /// `fd` and `head` as for `TextReader`.
    #[new]
    #[pyo3(signature = (path, ports, anonymize_salt=None, fd=None, head=Vec::new()))]
    fn new(path: &str, ports: Vec<u16>, anonymize_salt: Option<u64>, fd: Option<i32>, head: Vec<u8>) -> PyResult<Self> {
        let file = open_source(path, fd, head)?;
        let config = parse::ParseConfig { ports, anonymize_salt, ..parse::ParseConfig::default() };
        let file = crate::capture::ReadAhead::new(file);
        let parser = parse::CaptureParser::new(file, path, &config).map_err(trace_err)?;
        Ok(CaptureParser { inner: parse::ParseAhead::new(parser) })
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

    fn conns(&self) -> Vec<(String, String)> {
        self.inner.conns().iter().map(|(c, s)| (c.to_string(), s.to_string())).collect()
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
        Ok(d)
    }
}

/// A batch of trace rows as numpy columns (see `parse::RowBatch`).
fn row_columns(py: Python<'_>, b: parse::RowBatch) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ts_ns", b.ts_ns.into_pyarray(py))?;
    d.set_item("conn", b.conn.into_pyarray(py))?;
    d.set_item("req", b.req.into_pyarray(py))?;
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
        Ok(d)
    }
}

#[pyclass(module = "cachescope._native")]
struct Simulation {
    inner: sim::Simulation,
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
        };
        let future = future.map(|f| f.as_slice().map(Arc::from)).transpose()?;
        Ok(Simulation { inner: sim::Simulation::new(&specs, opts, future).map_err(value_err)? })
    }

    #[pyo3(signature = (keys, ts_ns=None, ops=None, entities=None, fields=None, value_sizes=None, key_bytes=None, reqs=None))]
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
        };
        let inner = &mut self.inner;
        py.detach(|| inner.feed(&ev)).map_err(value_err)
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

    /// One dict per run: policy, capacity, resident, every counter, and the restart times applied.
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
        ("evictions", c.evictions),
        ("invalidations", c.invalidations),
        ("refresh_evictions", c.refresh_evictions),
        ("expirations", c.expirations),
        ("stale_reads", c.stale_reads),
        ("uncacheable", c.uncacheable),
        ("restarts", c.restarts),
    ] {
        d.set_item(name, value)?;
    }
    d.set_item("restart_times", r.restart_times().to_vec())?;
    Ok(d)
}

/// Whether these first bytes are a pcap or pcapng file.
#[pyfunction]
fn is_capture(head: &[u8]) -> bool {
    crate::capture::is_capture(head)
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
fn hash_optional_column<'py>(
    py: Python<'py>,
    offsets: PyReadonlyArray1<i64>,
    data: PyReadonlyArray1<u8>,
    valid: PyReadonlyArray1<bool>,
) -> PyResult<Bound<'py, PyArray1<u64>>> {
    let (o, d, v) = (offsets.as_slice()?, data.as_slice()?, valid.as_slice()?);
    Ok(py.detach(|| hash::hash_optional_column(o, d, v)).map_err(value_err)?.into_pyarray(py))
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TextReader>()?;
    m.add_class::<Simulation>()?;
    m.add_class::<CaptureParser>()?;
    m.add_class::<StreamParser>()?;
    m.add_function(wrap_pyfunction!(is_capture, m)?)?;
    m.add_function(wrap_pyfunction!(sniff_format, m)?)?;
    m.add_function(wrap_pyfunction!(hash_string_column, m)?)?;
    m.add_function(wrap_pyfunction!(hash_field_column, m)?)?;
    m.add_function(wrap_pyfunction!(hash_optional_column, m)?)?;
    m.add_function(wrap_pyfunction!(key_hash, m)?)?;
    m.add_function(wrap_pyfunction!(next_access, m)?)?;
    m.add("NEEDS_FUTURE", crate::policy::NEEDS_FUTURE.to_vec())?;
    m.add_function(wrap_pyfunction!(xxh32, m)?)?;
    m.add("NativeTraceError", m.py().get_type::<NativeTraceError>())?;
    m.add("POLICY_NAMES", POLICY_NAMES.to_vec())?;
    Ok(())
}
