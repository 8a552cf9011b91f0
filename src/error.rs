//! The one fatal error of trace reading: input that is not what it claims to be, with where it happened.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TraceError {
    pub path: String,
    /// 1-based line of a text trace; None when the problem is the file as a whole.
    pub line: Option<u64>,
    pub message: String,
}

impl TraceError {
    pub fn at(path: &str, line: u64, message: impl Into<String>) -> TraceError {
        TraceError { path: path.to_string(), line: Some(line), message: message.into() }
    }
    pub fn whole(path: &str, message: impl Into<String>) -> TraceError {
        TraceError { path: path.to_string(), line: None, message: message.into() }
    }
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(line) => write!(f, "{}: line {}: {}", self.path, line, self.message),
            None => write!(f, "{}: {}", self.path, self.message),
        }
    }
}

impl std::error::Error for TraceError {}
