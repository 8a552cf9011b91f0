//! The one fatal error of capture reading: bytes that are not a capture, or a capture broken past its first
//! records, with the byte offset in the file where the problem starts. Anomalies inside packets are not
//! errors: the decoder reports them as `Skip` reasons to count.

use std::fmt;

#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError {
    /// Byte offset in the file of the record or header that is wrong.
    pub offset: u64,
    pub message: String,
}

impl CaptureError {
    pub fn at(offset: u64, message: impl Into<String>) -> CaptureError {
        CaptureError { offset, message: message.into() }
    }
}

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "offset {}: {}", self.offset, self.message)
    }
}

impl std::error::Error for CaptureError {}
