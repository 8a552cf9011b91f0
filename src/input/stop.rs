//! Ending a live input on request: `tcpdump -w - | simulate.py -` runs until Ctrl-C, SIGTERM or a
//! `--duration`, and then must finish as if the pipe had ended, with every byte already read taken into
//! account. A thread reads the input and hands over whatever each read returned (never waiting for a full
//! block, which could hold a slow stream's last packets back forever); the reader's side waits for the next
//! bytes a short while at a time, and once the flag is raised it takes what was already handed over and then
//! reports the end of the input. The reading thread may stay blocked on the pipe; it ends with the process.

use std::io::{self, Read};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{sync_channel, Receiver, RecvTimeoutError};
use std::sync::Arc;
use std::thread;
use std::time::Duration;

/// Raised (from any thread) to end a `Stoppable` input.
#[derive(Clone, Default, Debug)]
pub struct StopFlag(Arc<AtomicBool>);

impl StopFlag {
    pub fn stop(&self) {
        self.0.store(true, Ordering::SeqCst);
    }
    pub fn is_stopped(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

const CHUNK: usize = 1 << 16;
/// How long the reader's side waits before looking at the flag again.
const POLL: Duration = Duration::from_millis(50);

pub struct Stoppable {
    chunks: Receiver<io::Result<Vec<u8>>>,
    flag: StopFlag,
    chunk: Vec<u8>,
    at: usize,
    done: bool,
}

impl Stoppable {
    pub fn new<R: Read + Send + 'static>(mut src: R, flag: StopFlag) -> Stoppable {
        // A few chunks in flight: enough to keep the reading thread busy, bounded so memory is too.
        let (tx, chunks) = sync_channel(16);
        thread::spawn(move || {
            let mut buf = vec![0; CHUNK];
            loop {
                match src.read(&mut buf) {
                    Ok(0) => {
                        let _ = tx.send(Ok(Vec::new()));
                        return;
                    }
                    Ok(n) => {
                        if tx.send(Ok(buf[..n].to_vec())).is_err() {
                            return;
                        }
                    }
                    Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                    Err(e) => {
                        let _ = tx.send(Err(e));
                        return;
                    }
                }
            }
        });
        Stoppable { chunks, flag, chunk: Vec::new(), at: 0, done: false }
    }

    /// The next chunk: waits for one until the flag is raised, then only takes those already handed over.
    fn next_chunk(&mut self) -> Option<io::Result<Vec<u8>>> {
        loop {
            if self.flag.is_stopped() {
                return self.chunks.try_recv().ok();
            }
            match self.chunks.recv_timeout(POLL) {
                Ok(c) => return Some(c),
                Err(RecvTimeoutError::Timeout) => {}
                Err(RecvTimeoutError::Disconnected) => return None,
            }
        }
    }
}

impl Read for Stoppable {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        while self.at == self.chunk.len() {
            if self.done {
                return Ok(0);
            }
            match self.next_chunk() {
                Some(Ok(c)) if !c.is_empty() => {
                    self.chunk = c;
                    self.at = 0;
                }
                Some(Ok(_)) | None => self.done = true,
                Some(Err(e)) => {
                    self.done = true;
                    return Err(e);
                }
            }
        }
        let n = buf.len().min(self.chunk.len() - self.at);
        buf[..n].copy_from_slice(&self.chunk[self.at..self.at + n]);
        self.at += n;
        Ok(n)
    }
}
