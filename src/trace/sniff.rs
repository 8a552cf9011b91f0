//! Telling the text formats apart from the first lines of a file.

use super::commands;
use super::line::looks_like_epoch;
use super::tokenize::split_args;
use super::TextFormat;

/// Picks the text format of a trace from its first bytes: a MONITOR line starts with a unix time and a
/// `[db client]` block, a commands line with a Redis command name; one key per line only when nearly all the
/// first lines are a single word (prose, CSV with spaces or a README is no key trace: it would "simulate").
/// Binary content and anything unrecognized are refused here so that a wrong file fails with one clear message.
pub fn sniff_format(head: &[u8]) -> Result<TextFormat, String> {
    if head.contains(&0) {
        return Err("binary data, not a text trace (use --format if this is a trace)".into());
    }
    let first = head
        .split(|&c| c == b'\n')
        .map(<[u8]>::trim_ascii)
        .find(|l| !l.is_empty() && *l != b"OK");
    let Some(line) = first else {
        return Err("empty trace: no commands".into());
    };
    let first_word = line.split(|c| c.is_ascii_whitespace()).next().unwrap_or_default();
    if looks_like_epoch(first_word) && line[first_word.len()..].trim_ascii_start().starts_with(b"[") {
        return Ok(TextFormat::Monitor);
    }
    let (mut spans, mut scratch) = (Vec::new(), Vec::new());
    if split_args(line, &mut spans, &mut scratch).is_ok() && spans.len() >= 2 {
        let name = spans[0].get(line, &scratch).to_ascii_uppercase();
        if commands::lookup(&name).is_some() {
            return Ok(TextFormat::Commands);
        }
    }
    if looks_like_keys(head) {
        return Ok(TextFormat::Keys);
    }
    Err("could not recognize the format: neither MONITOR lines, nor Redis commands, nor one key per line \
         (give --format if it is a trace)"
        .into())
}

/// Lines looked at, and how many of them may hold more than one word, for a file to be read as keys.
const KEY_SAMPLE_LINES: usize = 100;
const KEY_SAMPLE_TOLERANCE: usize = 10; // percent

/// Whether at least 90% of the first (complete) non-blank lines are one word each.
fn looks_like_keys(head: &[u8]) -> bool {
    let complete = match head.iter().rposition(|&c| c == b'\n') {
        Some(end) if end + 1 < head.len() => &head[..end],
        _ => head,
    };
    let lines: Vec<&[u8]> = complete
        .split(|&c| c == b'\n')
        .map(<[u8]>::trim_ascii)
        .filter(|l| !l.is_empty())
        .take(KEY_SAMPLE_LINES)
        .collect();
    let multi = lines.iter().filter(|l| l.iter().any(u8::is_ascii_whitespace)).count();
    !lines.is_empty() && multi * 100 <= lines.len() * KEY_SAMPLE_TOLERANCE
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tells_formats_apart() {
        assert_eq!(sniff_format(b"HMGET st_1 1 2\n").unwrap(), TextFormat::Commands);
        assert_eq!(sniff_format(b"\nOK\n1700000000.1 [0 1.2.3.4:5] \"GET\" \"a\"\n").unwrap(), TextFormat::Monitor);
        assert_eq!(sniff_format(b"42932745\n42932746\n").unwrap(), TextFormat::Keys);
        assert!(sniff_format(b"\xd4\xc3\xb2\xa1\x02\x00\x04\x00\x00\x00").is_err());
        assert!(sniff_format(b"\n \n").is_err());
        assert_eq!(sniff_format(b"99999999999.1 [0 1.2.3.4:5] \"GET\" \"a\"\n").unwrap(), TextFormat::Monitor);
        assert_eq!(sniff_format(b"a b\nk1\nk2\nk3\nk4\nk5\nk6\nk7\nk8\nk9\n").unwrap(), TextFormat::Keys);
        let readme = b"# cachescope\n\nOffline toolkit turning captured Redis traffic\ninto answers.\n";
        assert!(sniff_format(readme).unwrap_err().contains("--format"));
        assert!(sniff_format(b"a b\nc d\nk1\n").is_err());
    }
}
