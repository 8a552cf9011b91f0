//! Credentials never leave the parser: the arguments that carry them are recognized before their bytes are
//! read, and are replaced by a fixed placeholder instead of being stored.
//!
//! Which arguments: everything after `AUTH`; the user name and password after the `AUTH` option of `HELLO`;
//! the password after `MIGRATE ... AUTH` and the user and password after `MIGRATE ... AUTH2`; the rules of
//! `ACL SETUSER` (they hold passwords and their hashes); and the values of `CONFIG SET` parameters whose name
//! mentions a password or authentication (`requirepass`, `masterauth`, `masteruser`, TLS key passwords).

/// What a redacted argument reads as.
pub const REDACTED: &[u8] = b"<redacted>";

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Rule {
    None,
    /// AUTH: every argument.
    All,
    /// HELLO and MIGRATE: the arguments after an AUTH (or AUTH2) option.
    AfterOption {
        migrate: bool,
    },
    /// ACL: decided by the subcommand.
    Acl,
    /// ACL SETUSER: every argument after the user name.
    AclRules,
    /// CONFIG: decided by the subcommand.
    Config,
    /// CONFIG SET: the values of sensitive parameters.
    ConfigSet,
}

/// Follows one command's arguments as they are read.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Redactor {
    rule: Rule,
    /// The next this many arguments are credentials.
    pending: u32,
}

impl Default for Redactor {
    fn default() -> Redactor {
        Redactor { rule: Rule::None, pending: 0 }
    }
}

impl Redactor {
    /// Whether argument `i` (0 is the command name) must be replaced; call before reading it.
    #[inline]
    pub fn redact(&mut self, i: u32) -> bool {
        if self.pending > 0 {
            self.pending -= 1;
            return true;
        }
        match self.rule {
            Rule::All => i >= 1,
            Rule::AclRules => i >= 3,
            _ => false,
        }
    }

    /// Whether `observe` wants to see argument `i`.
    #[inline]
    pub fn watching(&self, i: u32) -> bool {
        i == 0 || self.rule != Rule::None
    }

    /// Takes note of argument `i`, read and stored (not redacted).
    #[inline]
    pub fn observe(&mut self, i: u32, arg: &[u8]) {
        if i > 0 && self.rule == Rule::None {
            return;
        }
        if i == 0 {
            self.pending = 0;
            self.rule = match arg.len() {
                3 if arg.eq_ignore_ascii_case(b"ACL") => Rule::Acl,
                4 if arg.eq_ignore_ascii_case(b"AUTH") => Rule::All,
                5 if arg.eq_ignore_ascii_case(b"HELLO") => Rule::AfterOption { migrate: false },
                6 if arg.eq_ignore_ascii_case(b"CONFIG") => Rule::Config,
                7 if arg.eq_ignore_ascii_case(b"MIGRATE") => Rule::AfterOption { migrate: true },
                _ => Rule::None,
            };
            return;
        }
        match self.rule {
            Rule::AfterOption { migrate } => {
                if arg.eq_ignore_ascii_case(b"AUTH") {
                    self.pending = if migrate { 1 } else { 2 };
                } else if migrate && arg.eq_ignore_ascii_case(b"AUTH2") {
                    self.pending = 2;
                }
            }
            Rule::Acl if i == 1 => {
                self.rule = if arg.eq_ignore_ascii_case(b"SETUSER") { Rule::AclRules } else { Rule::None };
            }
            Rule::Config if i == 1 => {
                self.rule = if arg.eq_ignore_ascii_case(b"SET") { Rule::ConfigSet } else { Rule::None };
            }
            Rule::ConfigSet if i.is_multiple_of(2) && sensitive_parameter(arg) => self.pending = 1,
            _ => {}
        }
    }
}

fn sensitive_parameter(name: &[u8]) -> bool {
    let contains = |needle: &[u8]| name.windows(needle.len()).any(|w| w.eq_ignore_ascii_case(needle));
    contains(b"pass") || contains(b"auth") || contains(b"masteruser")
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Which arguments of `args` are redacted.
    fn redacted(args: &[&str]) -> Vec<bool> {
        let mut r = Redactor::default();
        args.iter()
            .enumerate()
            .map(|(i, a)| {
                let hide = r.redact(i as u32);
                if !hide {
                    r.observe(i as u32, a.as_bytes());
                }
                hide
            })
            .collect()
    }

    #[test]
    fn auth_and_hello() {
        assert_eq!(redacted(&["AUTH", "pw"]), [false, true]);
        assert_eq!(redacted(&["auth", "user", "pw"]), [false, true, true]);
        assert_eq!(
            redacted(&["HELLO", "3", "AUTH", "u", "p", "SETNAME", "n"]),
            [false, false, false, true, true, false, false]
        );
        assert_eq!(redacted(&["HELLO", "3"]), [false, false]);
    }

    #[test]
    fn migrate_acl_config() {
        assert_eq!(
            redacted(&["MIGRATE", "h", "1", "", "0", "5", "AUTH", "p", "KEYS", "k"]),
            [false, false, false, false, false, false, false, true, false, false]
        );
        assert_eq!(redacted(&["MIGRATE", "h", "1", "k", "0", "5", "AUTH2", "u", "p"])[7..], [true, true]);
        assert_eq!(redacted(&["ACL", "SETUSER", "bob", "on", ">pw"]), [false, false, false, true, true]);
        assert_eq!(redacted(&["ACL", "LIST"]), [false, false]);
        assert_eq!(
            redacted(&["CONFIG", "SET", "maxmemory", "1gb", "requirepass", "pw", "masterauth", "x"]),
            [false, false, false, false, false, true, false, true]
        );
        assert_eq!(redacted(&["CONFIG", "GET", "requirepass"]), [false, false, false]);
        assert_eq!(redacted(&["HMGET", "auth", "pass"]), [false, false, false]);
    }
}
