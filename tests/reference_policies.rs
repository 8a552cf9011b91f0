//! Golden numbers: every policy's hits on a real block I/O trace (`tests/data/reference/cloudPhysicsIO`) at
//! six capacities, exactly as an independent simulator (libCacheSim 0.3.5) counts them. The expected counts
//! are read from the reference JSON, not copied here.

use std::path::PathBuf;

use cachescope::hash::key_hash;
use cachescope::policy::{AnyPolicy, Policy};

fn reference_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/data/reference")
}

/// The trace's keys, hashed as the `keys` text reader does (one key per line, surrounding blanks trimmed).
fn trace_keys() -> Vec<u64> {
    let text = std::fs::read(reference_dir().join("cloudPhysicsIO.keys.txt")).expect("reference trace");
    text.split(|&b| b == b'\n').map(|l| l.trim_ascii()).filter(|l| !l.is_empty()).map(key_hash).collect()
}

/// The JSON array that follows `"name": [` in `json` from byte `from` on, as integers.
fn int_array(json: &str, from: usize, name: &str) -> Vec<u64> {
    let tag = format!("\"{name}\": [");
    let start = from + json[from..].find(&tag).unwrap_or_else(|| panic!("{tag} not in the reference")) + tag.len();
    let end = start + json[start..].find(']').expect("unterminated array");
    json[start..end].split(',').map(|v| v.trim().parse().unwrap_or_else(|e| panic!("{name}: {v:?}: {e}"))).collect()
}

/// (capacities, hits) of one policy from the reference's `trace` object.
fn expected(policy: &str) -> (Vec<u64>, Vec<u64>) {
    let json = std::fs::read_to_string(reference_dir().join("cloudPhysicsIO.expected.json")).expect("reference json");
    let trace = json.find("\"trace\": {").expect("trace object");
    let hits = trace + json[trace..].find("\"hits\": {").expect("trace.hits");
    (int_array(&json, trace, "capacities"), int_array(&json, hits, policy))
}

/// The integer after `"name": ` in the reference's `trace` object.
fn trace_int(name: &str) -> u64 {
    let json = std::fs::read_to_string(reference_dir().join("cloudPhysicsIO.expected.json")).expect("reference json");
    let trace = json.find("\"trace\": {").expect("trace object");
    let tag = format!("\"{name}\": ");
    let start = trace + json[trace..].find(&tag).expect("field") + tag.len();
    let digits: String = json[start..].chars().take_while(|c| c.is_ascii_digit()).collect();
    digits.parse().expect("an integer")
}

fn check(name: &str, json_name: &str) {
    let keys = trace_keys();
    assert_eq!(keys.len() as u64, trace_int("n_req"));
    let (capacities, hits) = expected(json_name);
    assert_eq!(capacities.len(), 6);
    assert_eq!(capacities.len(), hits.len());
    for (&capacity, &want) in capacities.iter().zip(&hits) {
        let mut policy = AnyPolicy::new(name, capacity, None).unwrap();
        let got = keys.iter().filter(|&&k| policy.access(k, 1)).count() as u64;
        assert_eq!(got, want, "{name} at capacity {capacity}");
    }
}

#[test]
fn lru() {
    check("lru", "LRU");
}

#[test]
fn lfu() {
    check("lfu", "LFU");
}

#[test]
fn fifo() {
    check("fifo", "FIFO");
}

#[test]
fn clock() {
    check("clock", "Clock");
}

#[test]
fn sieve() {
    check("sieve", "Sieve");
}
