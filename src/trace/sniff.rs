//! Telling the text formats apart from the first lines of a file.

use super::commands;
use super::reader::parse_epoch_ns;
use super::tokenize::split_args;
use super::TextFormat;

/// Picks the text format of a trace from its first bytes: a MONITOR line starts with a unix time and a
/// `[db client]` block, a commands line with a Redis command name; anything else is one key per line.
/// Binary content is refused here so that a wrong file fails with one clear message.
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
    if parse_epoch_ns(first_word).is_some() && line[first_word.len()..].trim_ascii_start().starts_with(b"[") {
        return Ok(TextFormat::Monitor);
    }
    let (mut spans, mut scratch) = (Vec::new(), Vec::new());
    if split_args(line, &mut spans, &mut scratch).is_ok() && spans.len() >= 2 {
        let name = spans[0].get(line, &scratch).to_ascii_uppercase();
        if commands::lookup(&name).is_some() {
            return Ok(TextFormat::Commands);
        }
    }
    Ok(TextFormat::Keys)
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
    }
}
