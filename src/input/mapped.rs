//! A regular file mapped into memory, read-only: an uncompressed oracleGeneral trace read for a sampled curve
//! (`crate::simulation::sampled_scan`) is scanned where the page cache holds it, as libCacheSim's tools read
//! theirs, instead of copied into a buffer first by `read` (the kernel's copy was a tenth of such a run, on
//! the one thread that read while the others waited).
//!
//! The pages are faulted in by whichever thread scans them, so the cost of mapping is spread like the scan.
//! A file shortened by another process while it is mapped would fault (SIGBUS) where a `read` would have
//! ended early: traces are read once they are written, and `read` stays for anything but a regular file.

use std::fs::File;
use std::io;
use std::os::fd::AsRawFd;

pub struct Mapped {
    ptr: *mut libc::c_void,
    len: usize,
}

// SAFETY: the mapping is read-only; its bytes are only ever read, from any thread.
unsafe impl Send for Mapped {}
unsafe impl Sync for Mapped {}

impl Mapped {
    /// The whole of `file` mapped; None when it is not a regular file or is empty (nothing to map: the
    /// caller reads it instead).
    pub fn of(file: &File) -> io::Result<Option<Mapped>> {
        let meta = file.metadata()?;
        let Ok(len) = usize::try_from(meta.len()) else { return Ok(None) };
        if !meta.is_file() || len == 0 {
            return Ok(None);
        }
        // SAFETY: a fresh read-only mapping of an open file descriptor; checked for failure below.
        // Shared, as libCacheSim maps its traces, and without MADV_SEQUENTIAL, which cost more system time in
        // faults than it saved (10^8 records: 0.46-0.61 s against 0.60-0.75 s, same load).
        let ptr = unsafe {
            libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ, libc::MAP_SHARED, file.as_raw_fd(), 0)
        };
        if ptr == libc::MAP_FAILED {
            return Err(io::Error::last_os_error());
        }
        Ok(Some(Mapped { ptr, len }))
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        // SAFETY: unmaps exactly the mapping made in `of`, which no slice outlives (they borrow `self`).
        unsafe { libc::munmap(self.ptr, self.len) };
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    #[test]
    fn a_mapped_file_reads_as_its_bytes_and_an_empty_one_is_not_mapped() {
        let dir = std::env::temp_dir().join(format!("cachescope-mapped-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let data: Vec<u8> = (0..100_000u32).map(|i| (i * 7 % 251) as u8).collect();
        File::create(&path).unwrap().write_all(&data).unwrap();
        let m = Mapped::of(&File::open(&path).unwrap()).unwrap().expect("a regular file is mapped");
        assert_eq!(m.bytes(), &data[..]);
        File::create(&path).unwrap();
        assert!(Mapped::of(&File::open(&path).unwrap()).unwrap().is_none());
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
