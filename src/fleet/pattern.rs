//! The key-pattern route's shard key: an application id taken from the Redis key by a regular expression's
//! first capture group (`mer_(\d+):` shards by merchant), as the service would shard its caches. A key the
//! pattern does not match is its own shard (and counted), so nothing is dropped.

use regex::bytes::Regex;

use crate::hash::key_hash;

#[derive(Debug)]
pub struct KeyPattern {
    regex: Regex,
}

impl KeyPattern {
    pub fn new(pattern: &str) -> Result<KeyPattern, String> {
        let regex = Regex::new(pattern).map_err(|e| {
            // The parser's message draws the pattern over several lines; its last line says what is wrong.
            let text = e.to_string();
            let what = text.lines().rev().find(|l| !l.trim().is_empty()).unwrap_or("invalid").trim().to_string();
            format!("key pattern {pattern:?} is not a regular expression: {}", what.trim_start_matches("error: "))
        })?;
        if regex.captures_len() < 2 {
            return Err(format!("key pattern {pattern:?} has no capture group: put the id to shard by in (...)"));
        }
        Ok(KeyPattern { regex })
    }

    /// The hash of the key's shard id, and whether the pattern matched (else the whole key is the id).
    pub fn shard(&self, key: &[u8]) -> (u64, bool) {
        match self.regex.captures(key).and_then(|c| c.get(1)) {
            Some(id) => (key_hash(id.as_bytes()), true),
            None => (key_hash(key), false),
        }
    }

    /// `shard` of every string of an Arrow-style column (offsets into data), and how many did not match.
    pub fn shard_column(&self, offsets: &[i64], data: &[u8]) -> Result<(Vec<u64>, u64), String> {
        let mut unmatched = 0;
        let mut out = Vec::with_capacity(offsets.len().saturating_sub(1));
        for w in offsets.windows(2) {
            let (a, b) = (usize::try_from(w[0]), usize::try_from(w[1]));
            let key = match (a, b) {
                (Ok(a), Ok(b)) if a <= b && b <= data.len() => &data[a..b],
                _ => return Err("string offsets out of range".into()),
            };
            let (h, matched) = self.shard(key);
            unmatched += u64::from(!matched);
            out.push(h);
        }
        Ok((out, unmatched))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_group_is_the_shard_and_a_miss_is_its_own() {
        let p = KeyPattern::new(r"^mer_(\d+):").unwrap();
        assert_eq!(p.shard(b"mer_12:st_1"), p.shard(b"mer_12:st_99"));
        assert_ne!(p.shard(b"mer_12:st_1").0, p.shard(b"mer_13:st_1").0);
        assert_eq!(p.shard(b"other"), (key_hash(b"other"), false));
        assert!(KeyPattern::new("mer_").unwrap_err().contains("no capture group"));
        assert!(KeyPattern::new("(").is_err());
    }
}
