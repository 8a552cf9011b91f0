//! Reading a file ahead on a thread of its own: the kernel's copy of the file into memory (a fifth of the
//! parser's time on a capture in the page cache) overlaps with parsing. Blocks of BLOCK bytes go through a
//! channel of two, and come back empty to be refilled, so memory is three blocks whatever the file's size.

use std::io::{self, Read};
use std::sync::mpsc::{sync_channel, Receiver, SyncSender};
use std::sync::Mutex;
use std::thread;

const BLOCK: usize = 1 << 20;

pub struct ReadAhead {
    /// Filled blocks (an empty one at the end), or the error that stopped reading. In a Mutex only so that
    /// the reader can be shared between threads; reached through `&mut self`, never locked.
    full: Mutex<Receiver<io::Result<Vec<u8>>>>,
    empty: SyncSender<Vec<u8>>,
    block: Vec<u8>,
    at: usize,
    done: bool,
}

impl ReadAhead {
    pub fn new<R: Read + Send + 'static>(src: R) -> ReadAhead {
        let (to_reader, empty) = sync_channel::<Vec<u8>>(3);
        let (filled, full) = sync_channel(2);
        for _ in 0..2 {
            let _ = to_reader.send(vec![0; BLOCK]);
        }
        thread::spawn(move || fill(src, empty, filled));
        ReadAhead { full: Mutex::new(full), empty: to_reader, block: Vec::new(), at: 0, done: false }
    }
}

impl Read for ReadAhead {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        while self.at == self.block.len() && !self.done {
            let full = self.full.get_mut().unwrap_or_else(|poisoned| poisoned.into_inner());
            let next = match full.recv() {
                Ok(r) => r?,
                Err(_) => return Err(io::Error::other("the read-ahead thread stopped unexpectedly")),
            };
            self.done = next.is_empty();
            let spent = std::mem::replace(&mut self.block, next);
            if spent.capacity() == BLOCK {
                let _ = self.empty.send(spent);
            }
            self.at = 0;
        }
        let n = out.len().min(self.block.len() - self.at);
        out[..n].copy_from_slice(&self.block[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}

/// The reading thread: fills each empty block it gets back, until the file ends (an empty block says so),
/// fails (the bytes before the error, then the error), or nobody reads.
fn fill<R: Read>(mut src: R, empty: Receiver<Vec<u8>>, filled: SyncSender<io::Result<Vec<u8>>>) {
    for mut block in empty {
        block.resize(BLOCK, 0);
        let mut n = 0;
        let failed = loop {
            match src.read(&mut block[n..]) {
                Ok(0) => break None,
                Ok(k) => {
                    n += k;
                    if n == BLOCK {
                        break None;
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(e) => break Some(e),
            }
        };
        block.truncate(n);
        let end = n == 0;
        if (n > 0 || failed.is_none()) && filled.send(Ok(block)).is_err() {
            return;
        }
        if let Some(e) = failed {
            let _ = filled.send(Err(e));
            return;
        }
        if end {
            return;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Cursor;

    fn bytes(n: usize) -> Vec<u8> {
        (0..n).map(|i| (i * 7 + i / 251) as u8).collect()
    }

    /// Everything `r` gives, read `step` bytes at a time.
    fn read_all(r: &mut impl Read, step: usize) -> (Vec<u8>, io::Result<()>) {
        let (mut out, mut buf) = (Vec::new(), vec![0; step]);
        loop {
            match r.read(&mut buf) {
                Ok(0) => return (out, Ok(())),
                Ok(n) => out.extend_from_slice(&buf[..n]),
                Err(e) => return (out, Err(e)),
            }
        }
    }

    #[test]
    fn hands_out_the_same_bytes_across_blocks() {
        for len in [0, 1, BLOCK - 1, BLOCK, 3 * BLOCK + BLOCK / 2] {
            for step in [7, 4096, BLOCK + 3] {
                let data = bytes(len);
                let (got, end) = read_all(&mut ReadAhead::new(Cursor::new(data.clone())), step);
                assert!(end.is_ok());
                assert!(got == data, "{len} bytes read {step} at a time differ");
            }
        }
    }

    /// Gives `ok` bytes, then fails.
    struct Failing {
        data: Cursor<Vec<u8>>,
        ok: usize,
    }
    impl Read for Failing {
        fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
            let left = self.ok - self.data.position() as usize;
            if left == 0 {
                return Err(io::Error::new(io::ErrorKind::InvalidData, "disk on fire"));
            }
            let n = out.len().min(left);
            self.data.read(&mut out[..n])
        }
    }

    #[test]
    fn an_error_comes_after_the_bytes_before_it() {
        let ok = 2 * BLOCK + 5;
        let data = bytes(3 * BLOCK);
        let (got, end) = read_all(&mut ReadAhead::new(Failing { data: Cursor::new(data.clone()), ok }), 4096);
        assert!(got == data[..ok], "every byte before the error");
        let e = end.unwrap_err();
        assert_eq!((e.kind(), e.to_string()), (io::ErrorKind::InvalidData, "disk on fire".to_string()));
    }
}
