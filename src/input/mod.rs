//! Inputs as users have them: a file, a FIFO or standard input, compressed or not, turned into the plain
//! byte stream the readers take (a capture, a text trace, an `oracleGeneral` trace).
//!
//! The compression is told by the first bytes (magic numbers), never by the name: tcpdump's `-z gzip`
//! rotation, a `.zst` trace renamed `.bin`, a pipe. Decoding is a stream (no temporary file), so memory is
//! the decoder's window whatever the size. A corrupt or cut-short compressed stream is an error naming the
//! compressed byte it was found at and how much was decoded before it (`decode`), which the readers put
//! after the input's name and their own position.
//!
//! A live input (standard input fed by `tcpdump -w -`) can be ended on request (`stop`): the readers then see
//! the end of the input after every byte already read, and finish as they do at the end of a file.

mod compression;
mod decode;
pub mod mapped;
pub mod stop;

pub use compression::Compression;
pub use decode::decompressed;
pub use stop::{Stoppable, StopFlag};

use std::io::{self, Read};

/// Longest magic number looked at.
pub const MAGIC_BYTES: usize = 6;

/// `raw` as plain bytes: decoded when its first bytes are a compressed format's, as is otherwise. The bytes
/// peeked at are put back in front, so nothing is read twice.
pub fn open<R: Read + Send + 'static>(mut raw: R) -> io::Result<(Option<Compression>, Box<dyn Read + Send>)> {
    let mut magic = Vec::with_capacity(MAGIC_BYTES);
    (&mut raw).take(MAGIC_BYTES as u64).read_to_end(&mut magic)?;
    let kind = Compression::detect(&magic);
    let raw = io::Cursor::new(magic).chain(raw);
    Ok(match kind {
        Some(kind) => (Some(kind), decompressed(kind, raw)),
        None => (None, Box::new(raw)),
    })
}

/// The first `max` plain bytes of an input whose first (compressed) bytes are `head`, for telling its format:
/// as much as decodes from `head` alone (a cut-off end is expected here, not an error). `head` itself when it
/// is not compressed.
pub fn plain_head(head: &[u8], max: usize) -> Vec<u8> {
    let Some(kind) = Compression::detect(head) else {
        return head[..head.len().min(max)].to_vec();
    };
    let mut out = Vec::new();
    let mut decoder = decompressed(kind, io::Cursor::new(head.to_vec()));
    let mut buf = vec![0; 64 * 1024];
    while out.len() < max {
        match decoder.read(&mut buf) {
            Ok(0) | Err(_) => break,
            Ok(n) => out.extend_from_slice(&buf[..n.min(max - out.len())]),
        }
    }
    out
}

#[cfg(test)]
mod tests;
