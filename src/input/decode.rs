//! Decoders for each compression, as one `Read` of plain bytes whose errors say where they happened.
//!
//! Every decoder reads the compressed input through `Counted`, which knows how many compressed bytes were
//! taken and whether the input has ended; `Named` wraps the decoder and turns its error into one line: the
//! compression, the compressed byte it was found at ("cut short" when the input had ended: a file copied
//! while tcpdump still wrote it, a download stopped), and the plain bytes decoded before it, which the
//! readers have already used.

use std::io::{self, BufRead, BufReader, Read};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::Compression;

/// `raw` (starting with `kind`'s magic number) decoded as a stream. Its errors do not name the input: the
/// readers put its name (and their own position) in front.
pub fn decompressed<R: Read + Send + 'static>(kind: Compression, raw: R) -> Box<dyn Read + Send> {
    let position = Arc::new(Position::default());
    let counted = BufReader::with_capacity(1 << 16, Counted { inner: raw, position: Arc::clone(&position), tail: [0xff; 8] });
    let decoder: Box<dyn Read + Send> = match kind {
        Compression::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(counted)),
        // Frames one after another (`zstd` and `cat a.zst b.zst` write several), skippable frames skipped.
        Compression::Zstd => match zstd::stream::read::Decoder::with_buffer(counted) {
            Ok(d) => Box::new(d),
            Err(e) => Box::new(Failed(Some(e))),
        },
        Compression::Xz => Box::new(lzma_rust2::XzReader::new(counted, true)),
        Compression::Lz4 => Box::new(Lz4Frames(lz4_flex::frame::FrameDecoder::new(counted))),
    };
    Box::new(Named { inner: decoder, kind, position, decoded: 0, failed: None })
}

/// Compressed bytes taken so far, and whether the compressed input has ended.
#[derive(Default)]
struct Position {
    taken: AtomicU64,
    ended: AtomicBool,
}

struct Counted<R> {
    inner: R,
    position: Arc<Position>,
    /// The last 8 compressed bytes taken (an lz4 frame's end is told by them).
    tail: [u8; 8],
}

impl<R: Read> Read for Counted<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        if n == 0 && !buf.is_empty() {
            self.position.ended.store(true, Ordering::Relaxed);
        }
        let keep = n.min(8);
        self.tail.copy_within(keep.., 0);
        self.tail[8 - keep..].copy_from_slice(&buf[n - keep..n]);
        self.position.taken.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

struct Named<D> {
    inner: D,
    kind: Compression,
    position: Arc<Position>,
    decoded: u64,
    /// The error once given: a decoder is not read past its error (some would go on with garbage).
    failed: Option<(io::ErrorKind, String)>,
}

impl<D: Read> Read for Named<D> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        if let Some((kind, message)) = &self.failed {
            return Err(io::Error::new(*kind, message.clone()));
        }
        match self.inner.read(buf) {
            Ok(n) => {
                self.decoded += n as u64;
                Ok(n)
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => Err(e),
            Err(e) => {
                let taken = self.position.taken.load(Ordering::Relaxed);
                let cut = self.position.ended.load(Ordering::Relaxed) || e.kind() == io::ErrorKind::UnexpectedEof;
                let what = if cut {
                    format!("{} stream cut short at compressed byte {taken} (its end)", self.kind.name())
                } else {
                    format!("corrupt {} data near compressed byte {taken} ({e})", self.kind.name())
                };
                let message = format!("{what}, after {} bytes decompressed", self.decoded);
                let kind = if cut { io::ErrorKind::UnexpectedEof } else { io::ErrorKind::InvalidData };
                self.failed = Some((kind, message.clone()));
                Err(io::Error::new(kind, message))
            }
        }
    }
}

/// lz4 frames one after another. lz4_flex ends its output at the end of each frame, and also, quietly, at
/// an input that ends between two blocks of a frame: a cut-off file would pass for a whole one. A frame ends
/// with a zero block size (then its content checksum, when it has one), so the last bytes tell.
struct Lz4Frames<R: Read>(lz4_flex::frame::FrameDecoder<BufReader<Counted<R>>>);

impl<R: Read> Read for Lz4Frames<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let n = self.0.read(buf)?;
            if n > 0 || buf.is_empty() {
                return Ok(n);
            }
            let source = self.0.get_mut();
            if !source.fill_buf()?.is_empty() {
                continue; // the next frame
            }
            let tail = source.get_ref().tail;
            if tail[4..] != [0; 4] && tail[..4] != [0; 4] {
                return Err(io::ErrorKind::UnexpectedEof.into());
            }
            return Ok(0);
        }
    }
}

/// A decoder that could not start (out of memory for its context): its error, once.
struct Failed(Option<io::Error>);

impl Read for Failed {
    fn read(&mut self, _: &mut [u8]) -> io::Result<usize> {
        Err(self.0.take().unwrap_or_else(|| io::Error::other("the decoder could not start")))
    }
}
