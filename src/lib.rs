//! cachescope's core: text traces read as streams of hashed cache keys, and cache policies simulated over
//! them. Plain Rust with no knowledge of Python; the PyO3 bindings live in `python.rs` behind the `python`
//! feature, so `cargo test` runs without linking an interpreter.

pub mod capture;
pub mod curve;
pub mod error;
pub mod fleet;
pub mod hash;
pub mod input;
pub mod net;
pub mod parse;
pub mod policy;
pub mod reassembly;
pub mod resp;
pub mod sim;
pub mod simulation;
pub mod threads;
pub mod trace;

#[cfg(feature = "python")]
mod python;
