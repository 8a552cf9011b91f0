//! Which commands the errors answered, so that a summary can say what an error code stands for: every
//! redis-py connection to a Redis older than 7.2 gets `ERR` for its `CLIENT SETINFO` handshake, which alone
//! reads as an alarm. Counted by "CODE COMMAND" (`ERR CLIENT SETINFO`), the command named by its upper-case
//! name and, for the commands that are containers of subcommands, the subcommand.

use std::collections::BTreeMap;

use crate::resp::{ArgsView, ErrorCode};
use crate::trace::commands::lookup;

/// Commands whose second argument names what they do (`CLIENT SETINFO`, `CONFIG GET`, ...).
const CONTAINERS: [&[u8]; 14] = [
    b"ACL", b"CLIENT", b"CLUSTER", b"COMMAND", b"CONFIG", b"DEBUG", b"FUNCTION", b"MEMORY", b"MODULE", b"OBJECT",
    b"PUBSUB", b"SCRIPT", b"SLOWLOG", b"XINFO",
];

/// Distinct (code, command) pairs counted; further ones are counted as `CODE ?` (hostile traffic could
/// otherwise make the table grow without bound: subcommands are the client's text).
const MAX_ENTRIES: usize = 1024;

/// Longest subcommand named; longer ones read `?`.
const MAX_SUBCOMMAND: usize = 24;

/// The command as the summary names it: its upper-case name if Redis knows it (else `?`), and for a container
/// its subcommand, when that is a word.
pub fn command_label(args: ArgsView) -> String {
    let Some(name) = args.get(0) else { return "?".to_string() };
    let upper = name.to_ascii_uppercase();
    if lookup(&upper).is_none() {
        return "?".to_string();
    }
    let mut label = String::from_utf8_lossy(&upper).into_owned();
    if CONTAINERS.contains(&&upper[..]) {
        let sub = args.get(1).filter(|s| !s.is_empty() && s.len() <= MAX_SUBCOMMAND);
        match sub.filter(|s| s.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'-' || *b == b'_')) {
            Some(s) => {
                label.push(' ');
                label.push_str(&String::from_utf8_lossy(&s.to_ascii_uppercase()));
            }
            None if args.len() > 1 => label.push_str(" ?"),
            None => {}
        }
    }
    label
}

/// Counts one error reply of `code` to the command `args`.
pub fn count(table: &mut BTreeMap<String, u64>, code: ErrorCode, args: ArgsView) {
    let key = format!("{} {}", code.as_str(), command_label(args));
    let key = if table.len() >= MAX_ENTRIES && !table.contains_key(&key) { format!("{} ?", code.as_str()) } else { key };
    *table.entry(key).or_default() += 1;
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::resp::OwnedArgs;

    fn args(words: &[&[u8]]) -> OwnedArgs {
        let mut a = OwnedArgs::default();
        words.iter().for_each(|w| a.push(w));
        a
    }

    fn label(line: &str) -> String {
        let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
        command_label(args(&words).view())
    }

    #[test]
    fn commands_are_named_with_their_subcommand_when_they_hold_some() {
        assert_eq!(label("client setinfo LIB-NAME redis-py"), "CLIENT SETINFO");
        assert_eq!(label("GET k"), "GET");
        assert_eq!(label("hmget k a b"), "HMGET");
        assert_eq!(label("CONFIG"), "CONFIG");
        // Not a word (a client's text could be anything), or no command Redis knows.
        assert_eq!(label("CLIENT a\u{1}b"), "CLIENT ?");
        assert_eq!(label(&format!("CLIENT {}", "X".repeat(MAX_SUBCOMMAND + 1))), "CLIENT ?");
        assert_eq!(label("NOSUCHCOMMAND x"), "?");
    }

    #[test]
    fn the_table_stays_bounded() {
        let mut table = BTreeMap::new();
        for i in 0..MAX_ENTRIES + 10 {
            let sub = format!("SUB{i}");
            count(&mut table, ErrorCode::UNNAMED, args(&[b"CLIENT", sub.as_bytes()]).view());
        }
        assert_eq!(table.len(), MAX_ENTRIES + 1);
        assert_eq!(table["? ?"], 10);
    }
}
