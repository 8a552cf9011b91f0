//! CSV object traces with a column spec, as libCacheSim's `-t csv -t-params "..."` reads them:
//! `time-col=1,obj-id-col=2,obj-size-col=3,op-col=4,delimiter=,,has-header=true,obj-id-is-num=true`
//! (columns counted from 1). Also `key-size-col` (bytes of the key, counted in an entry's weight as a Redis
//! key's are), and presets by name (`twitter`: Twitter's cache traces, `timestamp,key,key size,value size,
//! client id,operation,TTL` without a header). Fields are split at the delimiter (no quoting: the public
//! traces have none). Without `has-header`, a first line whose numeric columns are not numbers is a header.
//!
//! Without an op column every request is a read, as libCacheSim simulates them; with one, writes and
//! deletes are events as in a Redis trace (`--writes` says what they do). With a size column, requests of
//! size 0 are left out and counted, as libCacheSim does.

use std::io::BufRead;

use super::objects::{numeric_key, op_of, ObjectBatch, ObjectStats};
use super::reader::OP_READ;
use crate::error::TraceError;
use crate::hash::key_hash;

/// Longest line accepted: a binary file without newlines must not be read into memory whole.
const MAX_LINE: u64 = 1 << 20;

#[derive(Clone, Debug, PartialEq, Eq)]
pub struct CsvSpec {
    /// 0-based columns.
    pub time: Option<usize>,
    pub key: usize,
    pub size: Option<usize>,
    pub key_size: Option<usize>,
    pub op: Option<usize>,
    pub delimiter: u8,
    pub header: Option<bool>,
    pub numeric_ids: bool,
}

/// Named layouts of public traces.
pub const PRESETS: &[(&str, &str)] = &[(
    "twitter",
    "time-col=1,obj-id-col=2,key-size-col=3,obj-size-col=4,op-col=6,delimiter=,,has-header=false,obj-id-is-num=false",
)];

impl CsvSpec {
    /// A spec, or the name of a preset.
    pub fn parse(spec: &str) -> Result<CsvSpec, String> {
        if let Some((_, preset)) = PRESETS.iter().find(|(name, _)| name.eq_ignore_ascii_case(spec.trim())) {
            return CsvSpec::parse(preset);
        }
        let mut s = CsvSpec {
            time: None, key: usize::MAX, size: None, key_size: None, op: None, delimiter: b',', header: None,
            numeric_ids: false,
        };
        let mut items = spec.split(',').peekable();
        while let Some(item) = items.next() {
            let item = item.trim();
            if item.is_empty() {
                continue;
            }
            let (name, value) = item.split_once('=').ok_or_else(|| format!("{item:?} is not NAME=VALUE"))?;
            let col = || -> Result<usize, String> {
                match value.trim().parse::<usize>() {
                    Ok(n) if n >= 1 => Ok(n - 1),
                    _ => Err(format!("{name}={value}: a column is counted from 1")),
                }
            };
            match name.trim() {
                "time-col" => s.time = Some(col()?),
                "obj-id-col" | "key-col" => s.key = col()?,
                "obj-size-col" | "size-col" => s.size = Some(col()?),
                "key-size-col" => s.key_size = Some(col()?),
                "op-col" | "op-type-col" => s.op = Some(col()?),
                "ttl-col" => {
                    return Err("ttl-col: per-request TTLs are not simulated yet (--ttl gives every entry one)".into())
                }
                "delimiter" => {
                    s.delimiter = match value {
                        // `delimiter=,` splits into `delimiter=` and an empty item.
                        "" if items.peek() == Some(&"") => {
                            items.next();
                            b','
                        }
                        "tab" | "\\t" | "\t" => b'\t',
                        "space" | " " => b' ',
                        v if v.len() == 1 => v.as_bytes()[0],
                        v => return Err(format!("delimiter {v:?}: one character (or tab, space)")),
                    }
                }
                "has-header" => s.header = Some(boolean(value)?),
                "obj-id-is-num" => s.numeric_ids = boolean(value)?,
                other => return Err(format!("unknown CSV spec item {other:?} (time-col, obj-id-col, obj-size-col, \
                                             key-size-col, op-col, delimiter, has-header, obj-id-is-num)")),
            }
        }
        if s.key == usize::MAX {
            return Err("the CSV spec needs obj-id-col (the column of the key)".into());
        }
        Ok(s)
    }
}

fn boolean(v: &str) -> Result<bool, String> {
    match v.trim().to_ascii_lowercase().as_str() {
        "true" | "1" | "yes" => Ok(true),
        "false" | "0" | "no" => Ok(false),
        other => Err(format!("{other:?} is not true or false")),
    }
}

pub struct CsvReader<R> {
    src: R,
    path: String,
    spec: CsvSpec,
    line_no: u64,
    bytes_read: u64,
    stats: ObjectStats,
    line: Vec<u8>,
    fields: Vec<(usize, usize)>,
}

impl<R: BufRead> CsvReader<R> {
    pub fn new(src: R, path: &str, spec: CsvSpec) -> Self {
        CsvReader {
            src, path: path.to_string(), spec, line_no: 0, bytes_read: 0, stats: ObjectStats::default(),
            line: Vec::new(), fields: Vec::new(),
        }
    }

    pub fn stats(&self) -> ObjectStats {
        self.stats
    }

    pub fn bytes_read(&self) -> u64 {
        self.bytes_read
    }

    pub fn next_batch(&mut self, min_events: usize) -> Result<Option<ObjectBatch>, TraceError> {
        let mut b = ObjectBatch::default();
        while b.len() < min_events.max(1) {
            if !self.read_line()? {
                break;
            }
            if self.line.trim_ascii().is_empty() {
                continue;
            }
            self.split();
            if self.line_no == 1 || self.spec.header == Some(true) && self.stats.requests == 0 {
                let header = match self.spec.header {
                    Some(h) => h && self.line_no == 1,
                    None => self.line_no == 1 && self.looks_like_header(),
                };
                if header {
                    continue;
                }
            }
            self.push(&mut b).map_err(|e| TraceError::at(&self.path, self.line_no, e))?;
        }
        if b.is_empty() {
            if self.stats.requests == 0 {
                return Err(TraceError::whole(&self.path, "empty trace: no requests"));
            }
            return Ok(None);
        }
        Ok(Some(b))
    }

    fn read_line(&mut self) -> Result<bool, TraceError> {
        use std::io::Read;
        self.line.clear();
        let n = (&mut self.src)
            .take(MAX_LINE + 1)
            .read_until(b'\n', &mut self.line)
            .map_err(|e| TraceError::at(&self.path, self.line_no + 1, format!("read failed: {e}")))?;
        if n == 0 {
            return Ok(false);
        }
        self.line_no += 1;
        self.bytes_read += n as u64;
        if n as u64 > MAX_LINE {
            return Err(TraceError::at(&self.path, self.line_no, format!("line longer than {} MiB: not a CSV trace", MAX_LINE >> 20)));
        }
        while matches!(self.line.last(), Some(b'\n' | b'\r')) {
            self.line.pop();
        }
        Ok(true)
    }

    fn split(&mut self) {
        self.fields.clear();
        let mut start = 0;
        for (i, &c) in self.line.iter().enumerate() {
            if c == self.spec.delimiter {
                self.fields.push((start, i));
                start = i + 1;
            }
        }
        self.fields.push((start, self.line.len()));
    }

    fn field(&self, col: usize) -> Result<&[u8], String> {
        let &(a, b) = self
            .fields
            .get(col)
            .ok_or_else(|| format!("{} columns, the spec reads column {}", self.fields.len(), col + 1))?;
        Ok(self.line[a..b].trim_ascii())
    }

    fn looks_like_header(&self) -> bool {
        let numeric = |col: Option<usize>| col.is_some_and(|c| self.field(c).map_or(true, |f| parse_f64(f).is_none()));
        numeric(self.spec.time)
            || numeric(self.spec.size)
            || numeric(self.spec.key_size)
            || (self.spec.numeric_ids && numeric(Some(self.spec.key)))
    }

    fn push(&mut self, b: &mut ObjectBatch) -> Result<(), String> {
        let key = self.field(self.spec.key)?;
        let key_hash = if self.spec.numeric_ids {
            let id = std::str::from_utf8(key).ok().and_then(|t| t.parse::<u64>().ok());
            numeric_key(id.ok_or_else(|| format!("object id {:?} is not a number (obj-id-is-num)", show(key)))?)
        } else {
            key_hash(key)
        };
        let op = match self.spec.op {
            Some(c) => {
                let name = self.field(c)?;
                op_of(name).ok_or_else(|| format!("unknown operation {:?}", show(name)))?
            }
            None => OP_READ,
        };
        let ts_ns = match self.spec.time {
            Some(c) => {
                let t = self.field(c)?;
                let secs = parse_f64(t).filter(|s| (0.0..9.2e9).contains(s));
                (secs.ok_or_else(|| format!("time {:?} is not a number of seconds", show(t)))? * 1e9).round() as i64
            }
            None => 0,
        };
        let size = |col: Option<usize>, what: &str| -> Result<u32, String> {
            match col {
                Some(c) => {
                    let f = self.field(c)?;
                    std::str::from_utf8(f)
                        .ok()
                        .and_then(|t| t.parse::<u32>().ok())
                        .ok_or_else(|| format!("{what} {:?} is not a number of bytes below 4 GiB", show(f)))
                }
                None => Ok(0),
            }
        };
        let value_size = size(self.spec.size, "size")?;
        let key_size = size(self.spec.key_size, "key size")?;
        if self.spec.size.is_some() && value_size == 0 {
            self.stats.zero_size += 1; // as libCacheSim (see `ObjectStats::zero_size`)
            return Ok(());
        }
        b.keys.push(key_hash);
        b.ops.push(op);
        if self.spec.time.is_some() {
            b.ts_ns.push(ts_ns);
        }
        b.value_sizes.push(value_size);
        b.key_bytes.push(key_size);
        b.reqs.push(self.stats.requests);
        self.stats.count(op);
        Ok(())
    }
}

fn parse_f64(f: &[u8]) -> Option<f64> {
    std::str::from_utf8(f).ok()?.parse::<f64>().ok().filter(|x| x.is_finite())
}

fn show(f: &[u8]) -> String {
    String::from_utf8_lossy(&f[..f.len().min(64)]).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::trace::reader::{OP_DELETE, OP_WRITE};
    use std::io::Cursor;

    fn read(text: &str, spec: &str) -> Result<Vec<ObjectBatch>, TraceError> {
        let mut r = CsvReader::new(Cursor::new(text.as_bytes().to_vec()), "t.csv", CsvSpec::parse(spec).unwrap());
        let mut out = Vec::new();
        while let Some(b) = r.next_batch(2)? {
            out.push(b);
        }
        Ok(out)
    }

    #[test]
    fn specs_as_libcachesim_writes_them() {
        let s = CsvSpec::parse("time-col=1,obj-id-col=2,obj-size-col=3,delimiter=,,has-header=true,obj-id-is-num=1").unwrap();
        assert_eq!((s.time, s.key, s.size, s.delimiter, s.header, s.numeric_ids), (Some(0), 1, Some(2), b',', Some(true), true));
        assert_eq!(CsvSpec::parse("obj-id-col=3,delimiter=tab").unwrap().delimiter, b'\t');
        let t = CsvSpec::parse("twitter").unwrap();
        assert_eq!((t.key, t.key_size, t.size, t.op, t.header), (1, Some(2), Some(3), Some(5), Some(false)));
        assert!(CsvSpec::parse("time-col=1").unwrap_err().contains("obj-id-col"));
        assert!(CsvSpec::parse("obj-id-col=0").is_err());
        assert!(CsvSpec::parse("obj-id-col=1,ttl-col=2").unwrap_err().contains("--ttl"));
        assert!(CsvSpec::parse("obj-id-col=1,frob=2").is_err());
    }

    #[test]
    fn reads_columns_ops_and_a_header() {
        let text = "10,a,1,100,3,get,0\n11,b,1,200,3,set,0\n\n12,a,1,100,4,delete,0\n";
        let batches = read(text, "twitter").unwrap();
        let keys: Vec<u64> = batches.iter().flat_map(|b| b.keys.clone()).collect();
        let ops: Vec<u8> = batches.iter().flat_map(|b| b.ops.clone()).collect();
        let sizes: Vec<u32> = batches.iter().flat_map(|b| b.value_sizes.clone()).collect();
        let ts: Vec<i64> = batches.iter().flat_map(|b| b.ts_ns.clone()).collect();
        assert_eq!(keys, vec![key_hash(b"a"), key_hash(b"b"), key_hash(b"a")]);
        assert_eq!(ops, vec![OP_READ, OP_WRITE, OP_DELETE]);
        assert_eq!(sizes, vec![100, 200, 100]);
        assert_eq!(ts, vec![10_000_000_000, 11_000_000_000, 12_000_000_000]);
        // A header is told by its numeric columns that are not numbers, unless the spec says.
        let spec = "time-col=1,obj-id-col=2,obj-size-col=4";
        let with_header = format!("ts,key,ksize,vsize\n{text}");
        assert_eq!(read(&with_header, spec).unwrap().iter().map(ObjectBatch::len).sum::<usize>(), 3);
        assert!(read(&with_header, "twitter").is_err(), "twitter's traces have no header");
    }

    #[test]
    fn numeric_ids_are_the_keys_their_text_is_and_errors_name_the_line() {
        let b = read("1,007\n2,7\n", "time-col=1,obj-id-col=2,obj-id-is-num=true").unwrap();
        assert_eq!(b[0].keys, vec![numeric_key(7), numeric_key(7)]);
        let e = read("1,a,get\n2,b,frob\n", "time-col=1,obj-id-col=2,op-col=3").unwrap_err();
        assert_eq!(e.to_string(), "t.csv: line 2: unknown operation \"frob\"");
        let e = read("1,a\n2\n", "time-col=1,obj-id-col=2").unwrap_err();
        assert!(e.to_string().starts_with("t.csv: line 2: 1 columns"), "{e}");
        assert!(read("", "obj-id-col=1").is_err());
    }
}
