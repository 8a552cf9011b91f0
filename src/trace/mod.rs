//! Text traces in, cache-key hashes out: the three text formats of DESIGN.md, read as a stream.

pub mod bytes16;
pub mod chunked;
pub mod commands;
pub mod csv;
pub mod line;
pub mod lines;
pub mod memo;
pub mod newlines;
pub mod objects;
pub mod oracle_general;
pub mod quick_split;
pub mod reader;
pub mod same_tail;
pub mod sniff;
pub mod swar;
#[cfg(test)]
mod test_rng;
pub mod tokenize;

pub use reader::{Batch, CommandSink, HostSink, TextReader, TraceStats};
pub use sniff::sniff_format;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TextFormat {
    /// One command per line: `HMGET st_1426727 2496559762 1170383926`.
    Commands,
    /// `redis-cli MONITOR` output: `1700000000.123456 [0 10.1.2.3:51234] "HMGET" "st_1" "2496559762"`.
    Monitor,
    /// One cache key per line, as generic cache traces are written.
    Keys,
}

impl TextFormat {
    pub fn from_name(name: &str) -> Option<TextFormat> {
        match name {
            "commands" => Some(TextFormat::Commands),
            "monitor" => Some(TextFormat::Monitor),
            "keys" => Some(TextFormat::Keys),
            _ => None,
        }
    }
    pub fn name(self) -> &'static str {
        match self {
            TextFormat::Commands => "commands",
            TextFormat::Monitor => "monitor",
            TextFormat::Keys => "keys",
        }
    }
}

/// What a lookup's cache key is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Granularity {
    /// `(key, field)`: what a feature-store client caches.
    Field,
    /// The Redis key alone: one cache entry per entity.
    Entity,
}
