//! Trace rows written back as text commands, one line per command: the `commands` format (arguments bare,
//! quoted only when they must be) and the `monitor` format (as redis-cli MONITOR prints a command). Values
//! never reach the text: a `?` stands where the command sent one.
//!
//! Keys and fields arrive as the trace holds them (`rows::push_text`: UTF-8, or escaped with `\\` and `\xHH`
//! when the bytes were not UTF-8 or held a backslash); a quoted argument is written as the key's bytes, so the
//! text readers read back exactly the key the client sent.

use std::io::Write;

const PLACEHOLDER: &[u8] = b"?";

/// One batch of trace rows, as the columns of an Arrow record batch: strings as offsets into data.
pub struct TextRows<'a> {
    pub ts_ns: &'a [i64],
    pub req: &'a [u64],
    /// Indices into `cmd_names`.
    pub cmd: &'a [i16],
    pub cmd_names: &'a [String],
    pub key_offsets: &'a [i64],
    pub key_data: &'a [u8],
    pub field_offsets: &'a [i64],
    pub field_data: &'a [u8],
    /// false: the row has no field (a plain key).
    pub field_valid: &'a [bool],
    /// Indices into `client_names` (-1: unknown).
    pub client: &'a [i32],
    pub client_names: &'a [String],
    /// false: the row is left out (its command was answered with an error: not a lookup in a text trace).
    pub keep: &'a [bool],
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TextStyle {
    Commands,
    Monitor,
}

impl TextRows<'_> {
    fn key(&self, i: usize) -> &[u8] {
        &self.key_data[self.key_offsets[i] as usize..self.key_offsets[i + 1] as usize]
    }

    fn field(&self, i: usize) -> Option<&[u8]> {
        self.field_valid[i].then(|| &self.field_data[self.field_offsets[i] as usize..self.field_offsets[i + 1] as usize])
    }
}

/// Appends one line per command to `out`: the kept rows, consecutive rows of the same `req` forming one
/// command (a command cut by a batch boundary is two lines, as each batch is written on its own).
pub fn write_text(rows: &TextRows, style: TextStyle, out: &mut Vec<u8>) {
    let n = rows.req.len();
    let mut group: Vec<usize> = Vec::new();
    let mut i = 0;
    while i < n {
        if !rows.keep[i] {
            i += 1;
            continue;
        }
        group.clear();
        let req = rows.req[i];
        let mut j = i;
        while j < n && (!rows.keep[j] || rows.req[j] == req) {
            if rows.keep[j] {
                group.push(j);
            }
            j += 1;
        }
        // Rows left out between two rows of the same command do not split it; trailing ones are skipped here.
        write_command(rows, &group, style, out);
        i = j;
    }
}

fn write_command(rows: &TextRows, group: &[usize], style: TextStyle, out: &mut Vec<u8>) {
    let first = group[0];
    let cmd = rows.cmd_names[rows.cmd[first] as usize].as_bytes();
    let mut args: Vec<&[u8]> = Vec::with_capacity(2 + 2 * group.len());
    command_args(rows, group, cmd, &mut args);
    if style == TextStyle::Monitor {
        let ts = rows.ts_ns[first];
        let client = usize::try_from(rows.client[first]).ok().and_then(|c| rows.client_names.get(c));
        let _ = write!(out, "{}.{:06} [0 {}]", ts.div_euclid(1_000_000_000), ts.rem_euclid(1_000_000_000) / 1000,
                       client.map_or("None", String::as_str));
        for a in &args {
            out.push(b' ');
            quote(a, out);
        }
    } else {
        for (k, a) in args.iter().enumerate() {
            if k > 0 {
                out.push(b' ');
            }
            bare(a, out);
        }
    }
    out.push(b'\n');
}

/// The command as arguments, rebuilt from its rows (values replaced by the placeholder).
fn command_args<'a>(rows: &'a TextRows, group: &[usize], cmd: &'a [u8], args: &mut Vec<&'a [u8]>) {
    args.push(cmd);
    let first = group[0];
    if cmd == b"HGETALL" {
        args.push(rows.key(first));
        return;
    }
    let extra = placeholder_args(cmd);
    if rows.field(first).is_some() {
        // Per-field rows of one key.
        args.push(rows.key(first));
        let field_value = matches!(cmd, b"HSET" | b"HMSET");
        for &r in group {
            args.push(rows.field(r).unwrap_or(b""));
            if field_value {
                args.push(PLACEHOLDER);
            }
        }
        if field_value {
            return;
        }
    } else {
        let key_value = matches!(cmd, b"SET" | b"SETNX" | b"GETSET" | b"APPEND" | b"MSET" | b"MSETNX");
        for &r in group {
            args.push(rows.key(r));
            if key_value {
                args.push(PLACEHOLDER);
            }
        }
        if key_value {
            return;
        }
    }
    args.extend(std::iter::repeat_n(PLACEHOLDER, extra));
}

/// Arguments after the key (or key and field) that are neither: a TTL, an increment, an offset.
fn placeholder_args(cmd: &[u8]) -> usize {
    match cmd {
        b"EXPIRE" | b"PEXPIRE" | b"EXPIREAT" | b"PEXPIREAT" | b"INCRBY" | b"DECRBY" | b"INCRBYFLOAT" | b"HINCRBY"
        | b"HINCRBYFLOAT" | b"HSETNX" => 1,
        b"SETEX" | b"PSETEX" | b"SETRANGE" => 2,
        _ => 0,
    }
}

/// Python's `str.isspace`, which the commands format has always used to decide what to quote.
fn is_space(c: char) -> bool {
    matches!(c, '\t'..='\r' | '\x1c'..=' ' | '\u{85}' | '\u{a0}' | '\u{1680}' | '\u{2000}'..='\u{200a}'
                | '\u{2028}' | '\u{2029}' | '\u{202f}' | '\u{205f}' | '\u{3000}')
}

fn needs_quotes(c: char) -> bool {
    is_space(c) || c == '"' || c == '\\' || (c as u32) < 0x20 || c == '\x7f'
}

/// An argument for the commands format: as it is, or quoted when it holds spaces, quotes, control
/// characters, a backslash (an escaped key: its bytes are written back) or nothing.
fn bare(arg: &[u8], out: &mut Vec<u8>) {
    let plain = !arg.is_empty()
        && if arg.is_ascii() {
            arg.iter().all(|&b| !needs_quotes(b as char))
        } else {
            std::str::from_utf8(arg).is_ok_and(|s| !s.chars().any(needs_quotes))
        };
    if plain {
        out.extend_from_slice(arg);
    } else {
        quote(arg, out);
    }
}

/// The argument's bytes (its escapes undone), double-quoted as Redis prints a string in MONITOR
/// (`sdscatrepr`): a few escapes, printable ASCII as it is, any other byte as `\xHH`.
fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    if arg.contains(&b'\\') {
        let mut i = 0;
        while i < arg.len() {
            let (b, step) = unescape_at(arg, i);
            repr(b, out);
            i += step;
        }
    } else {
        for &b in arg {
            repr(b, out);
        }
    }
    out.push(b'"');
}

/// The byte at `i` of an escaped text and how many text bytes it took: `\\` is a backslash, `\xHH` (lower-case
/// hex) a byte; any other backslash stands for itself.
fn unescape_at(text: &[u8], i: usize) -> (u8, usize) {
    if text[i] != b'\\' {
        return (text[i], 1);
    }
    match text.get(i + 1) {
        Some(b'\\') => (b'\\', 2),
        Some(b'x') => match (text.get(i + 2).and_then(|&h| hex(h)), text.get(i + 3).and_then(|&l| hex(l))) {
            (Some(h), Some(l)) => (h << 4 | l, 4),
            _ => (b'\\', 1),
        },
        _ => (b'\\', 1),
    }
}

fn hex(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        _ => None,
    }
}

fn repr(b: u8, out: &mut Vec<u8>) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    match b {
        b'\\' => out.extend_from_slice(b"\\\\"),
        b'"' => out.extend_from_slice(b"\\\""),
        b'\n' => out.extend_from_slice(b"\\n"),
        b'\r' => out.extend_from_slice(b"\\r"),
        b'\t' => out.extend_from_slice(b"\\t"),
        0x07 => out.extend_from_slice(b"\\a"),
        0x08 => out.extend_from_slice(b"\\b"),
        0x20..=0x7e => out.push(b),
        _ => out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Rows {
        cmd: Vec<i16>,
        req: Vec<u64>,
        keys: Vec<&'static str>,
        fields: Vec<Option<&'static str>>,
    }

    fn render(r: &Rows, style: TextStyle) -> String {
        let n = r.req.len();
        let (mut ko, mut kd, mut fo, mut fd) = (vec![0i64], Vec::new(), vec![0i64], Vec::new());
        for i in 0..n {
            kd.extend_from_slice(r.keys[i].as_bytes());
            ko.push(kd.len() as i64);
            fd.extend_from_slice(r.fields[i].unwrap_or("").as_bytes());
            fo.push(fd.len() as i64);
        }
        let names: Vec<String> = ["GET", "HSET", "HGETALL", "SETEX", "MGET"].iter().map(|s| s.to_string()).collect();
        let valid: Vec<bool> = r.fields.iter().map(Option::is_some).collect();
        let ts: Vec<i64> = (0..n as i64).map(|i| 1_700_000_000_123_456_789 + i).collect();
        let rows = TextRows {
            ts_ns: &ts, req: &r.req, cmd: &r.cmd, cmd_names: &names, key_offsets: &ko, key_data: &kd,
            field_offsets: &fo, field_data: &fd, field_valid: &valid, client: &vec![0; n],
            client_names: &["10.0.0.1:5000".to_string()], keep: &vec![true; n],
        };
        let mut out = Vec::new();
        write_text(&rows, style, &mut out);
        String::from_utf8(out).unwrap()
    }

    #[test]
    fn commands_group_rows_and_put_placeholders_for_values() {
        let r = Rows {
            cmd: vec![1, 1, 4, 4, 2, 3],
            req: vec![0, 0, 1, 1, 2, 3],
            keys: vec!["h", "h", "a b", "k", "h", ""],
            fields: vec![Some("f1"), Some("f\"2"), None, None, None, None],
        };
        assert_eq!(render(&r, TextStyle::Commands),
                   "HSET h f1 ? \"f\\\"2\" ?\nMGET \"a b\" k\nHGETALL h\nSETEX \"\" ? ?\n");
    }

    #[test]
    fn monitor_quotes_the_key_bytes_with_escapes_undone() {
        let r = Rows { cmd: vec![0], req: vec![7], keys: vec!["\\x00\\\\\\x80é\\q"], fields: vec![None] };
        assert_eq!(render(&r, TextStyle::Monitor),
                   "1700000000.123456 [0 10.0.0.1:5000] \"GET\" \"\\x00\\\\\\x80\\xc3\\xa9\\\\q\"\n");
    }

    #[test]
    fn unicode_spaces_are_quoted_as_python_isspace_says() {
        let r = Rows { cmd: vec![0, 0], req: vec![0, 1], keys: vec!["a\u{3000}b", "é"], fields: vec![None, None] };
        assert_eq!(render(&r, TextStyle::Commands), "GET \"a\\xe3\\x80\\x80b\"\nGET é\n");
    }
}
