//! The PyO3 bindings, `cachescope._native`: thin wrappers that move numpy arrays in and out in bulk and
//! release the GIL while Rust loops. No logic lives here.

use std::fs::File;
use std::io::BufReader;

use numpy::{IntoPyArray, PyArray1, PyArray2, PyReadonlyArray1};
use pyo3::create_exception;
use pyo3::exceptions::{PyOSError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;

use crate::error::TraceError;
use crate::hash;
use crate::policy::POLICY_NAMES;
use crate::sim;
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

#[pyclass(module = "cachescope._native")]
struct TextReader {
    inner: trace::TextReader<BufReader<File>>,
}

#[pymethods]
impl TextReader {
    #[new]
    fn new(path: &str, format: &str, granularity_name: &str) -> PyResult<Self> {
        let format = TextFormat::from_name(format).ok_or_else(|| value_err(format!("unknown text format {format:?}")))?;
        let file = File::open(path).map_err(|e| PyOSError::new_err(format!("{path}: {e}")))?;
        let src = BufReader::with_capacity(1 << 20, file);
        Ok(TextReader { inner: trace::TextReader::new(src, path, format, granularity(granularity_name)?) })
    }

    /// The next lookups, at least `min_lookups` unless the trace ends: (keys uint64, ts_ns int64 or None),
    /// or None at the end.
    #[allow(clippy::type_complexity)]
    fn next_batch<'py>(
        &mut self,
        py: Python<'py>,
        min_lookups: usize,
    ) -> PyResult<Option<(Bound<'py, PyArray1<u64>>, Option<Bound<'py, PyArray1<i64>>>)>> {
        let inner = &mut self.inner;
        let batch = py.detach(|| inner.next_batch(min_lookups)).map_err(trace_err)?;
        Ok(batch.map(|b| {
            let ts = (!b.ts_ns.is_empty()).then(|| b.ts_ns.into_pyarray(py));
            (b.keys.into_pyarray(py), ts)
        }))
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
struct Simulation {
    inner: sim::Simulation,
}

#[pymethods]
impl Simulation {
    #[new]
    fn new(policies: Vec<(String, u64)>, window: u64) -> PyResult<Self> {
        Ok(Simulation { inner: sim::Simulation::new(&policies, window).map_err(value_err)? })
    }

    /// `sizes` (uint32, one per key), if given, are what capacities count (e.g. bytes); else every size is 1.
    #[pyo3(signature = (keys, ts_ns=None, sizes=None))]
    fn feed(
        &mut self,
        py: Python<'_>,
        keys: PyReadonlyArray1<u64>,
        ts_ns: Option<PyReadonlyArray1<i64>>,
        sizes: Option<PyReadonlyArray1<u32>>,
    ) -> PyResult<()> {
        let keys = keys.as_slice()?;
        let ts = ts_ns.as_ref().map(|t| t.as_slice()).transpose()?;
        let sizes = sizes.as_ref().map(|s| s.as_slice()).transpose()?;
        let inner = &mut self.inner;
        py.detach(|| inner.feed_sized(keys, sizes, ts)).map_err(value_err)
    }

    #[getter]
    fn lookups(&self) -> u64 {
        self.inner.lookups()
    }

    /// One dict per policy run: name, capacity, hits, resident.
    fn results<'py>(&self, py: Python<'py>) -> PyResult<Vec<Bound<'py, PyDict>>> {
        self.inner
            .runs()
            .iter()
            .map(|r| {
                let d = PyDict::new(py);
                d.set_item("policy", &r.name)?;
                d.set_item("capacity", r.capacity)?;
                d.set_item("hits", r.hits())?;
                d.set_item("resident", r.resident())?;
                Ok(d)
            })
            .collect()
    }

    /// (window_end uint64, ts_ns int64 or None, hits uint64[runs, windows]).
    #[allow(clippy::type_complexity)]
    fn timeline<'py>(
        &self,
        py: Python<'py>,
    ) -> PyResult<(Bound<'py, PyArray1<u64>>, Option<Bound<'py, PyArray1<i64>>>, Bound<'py, PyArray2<u64>>)> {
        let t = self.inner.timeline();
        let ts = self.inner.has_clock().then(|| t.ts.into_pyarray(py));
        let hits = PyArray2::from_vec2(py, &t.hits).map_err(|e| value_err(e.to_string()))?;
        let hits = if t.hits.is_empty() { PyArray2::zeros(py, [0, t.ends.len()], false) } else { hits };
        Ok((t.ends.into_pyarray(py), ts, hits))
    }
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

#[pymodule]
fn _native(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<TextReader>()?;
    m.add_class::<Simulation>()?;
    m.add_function(wrap_pyfunction!(sniff_format, m)?)?;
    m.add_function(wrap_pyfunction!(hash_string_column, m)?)?;
    m.add_function(wrap_pyfunction!(hash_field_column, m)?)?;
    m.add("NativeTraceError", m.py().get_type::<NativeTraceError>())?;
    m.add("POLICY_NAMES", POLICY_NAMES.to_vec())?;
    Ok(())
}
