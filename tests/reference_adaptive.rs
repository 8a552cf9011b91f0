//! Golden numbers for ARC and S3-FIFO: hits on a real block I/O trace (`tests/data/reference/cloudPhysicsIO`) at
//! six capacities, exactly as an independent simulator (libCacheSim 0.3.5) counts them. The expected counts
//! and the configurations they were made with are read from the reference JSON, not copied here.

use std::path::PathBuf;

use cachescope::hash::key_hash;
use cachescope::policy::{AnyPolicy, Policy};

fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference")
}

fn reference_json() -> String {
    std::fs::read_to_string(reference_dir().join("cloudPhysicsIO.expected.json")).expect("reference json")
}

/// The trace's keys, hashed as the `keys` text reader does (one key per line, surrounding blanks trimmed).
fn trace_keys() -> Vec<u64> {
    let text = std::fs::read(reference_dir().join("cloudPhysicsIO.keys.txt")).expect("reference trace");
    text.split(|&b| b == b'\n').map(|l| l.trim_ascii()).filter(|l| !l.is_empty()).map(key_hash).collect()
}

/// The text after `"name": ` in `json`, from byte `from` on.
fn after<'a>(json: &'a str, from: usize, name: &str) -> &'a str {
    let tag = format!("\"{name}\": ");
    let at = json[from..].find(&tag).unwrap_or_else(|| panic!("{tag} not in the reference"));
    &json[from + at + tag.len()..]
}

/// The JSON array of integers that follows `"name": ` in `json` from byte `from` on.
fn int_array(json: &str, from: usize, name: &str) -> Vec<u64> {
    let rest = after(json, from, name).strip_prefix('[').expect("an array");
    let body = &rest[..rest.find(']').expect("unterminated array")];
    body.split(',').map(|v| v.trim().parse().unwrap_or_else(|e| panic!("{name}: {v:?}: {e}"))).collect()
}

/// The reference's capacities, request count, and hits of `policy`, from its `trace` object.
fn expected(policy: &str) -> (Vec<u64>, u64, Vec<u64>) {
    let json = reference_json();
    let trace = json.find("\"trace\": {").expect("trace object");
    let hits = trace + json[trace..].find("\"hits\": {").expect("trace.hits");
    let n_req = after(&json, trace, "n_req").split(|c: char| !c.is_ascii_digit()).next().unwrap().parse().unwrap();
    (int_array(&json, trace, "capacities"), n_req, int_array(&json, hits, policy))
}

/// How the reference describes its run of `policy` (`algorithm_notes`).
fn note(policy: &str) -> String {
    let json = reference_json();
    let notes = json.find("\"algorithm_notes\": {").expect("algorithm notes");
    let rest = after(&json, notes, policy).strip_prefix('"').expect("a string");
    rest[..rest.find('"').expect("unterminated string")].to_string()
}

fn check(name: &str, json_name: &str, params: &[(&str, f64)]) {
    let keys = trace_keys();
    let (capacities, n_req, hits) = expected(json_name);
    assert_eq!(keys.len() as u64, n_req);
    assert_eq!((capacities.len(), hits.len()), (6, 6));
    let params: Vec<(String, f64)> = params.iter().map(|&(n, v)| (n.to_string(), v)).collect();
    for (&capacity, &want) in capacities.iter().zip(&hits) {
        let mut policy = AnyPolicy::with_params(name, capacity, &params, None).unwrap();
        let got = keys.iter().filter(|&&k| policy.access(k, 1)).count() as u64;
        assert_eq!(got, want, "{name} at capacity {capacity}");
    }
}

#[test]
fn arc() {
    assert_eq!(note("ARC"), "ARC (ghost lists sized to capacity)");
    check("arc", "ARC", &[]);
}

#[test]
fn s3fifo() {
    assert_eq!(note("S3FIFO"), "S3FIFO small=0.1, ghost=0.9, move_to_main_threshold=2");
    check("s3fifo", "S3FIFO", &[("small_ratio", 0.1), ("ghost_ratio", 0.9), ("move_to_main_threshold", 2.0)]);
}
