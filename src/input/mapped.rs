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
    /// Unmapped on a thread of its own when dropped (`unmapped_beside`).
    beside: bool,
}

/// Mappings smaller than this are unmapped where they are dropped, whatever `unmapped_beside` says.
const BESIDE_MIN: usize = 64 << 20;

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
        Ok(Some(Mapped { ptr, len, beside: false }))
    }

    /// The mapping is undone on a thread of its own when dropped, while the caller goes on: tearing down
    /// the page tables of a file read whole takes the kernel 1.5 ms a 24 MiB (30 ms of a 20 M-record trace),
    /// and the end of a sampled curve's run, its result and its output, waited for it.
    pub fn unmapped_beside(mut self) -> Mapped {
        self.beside = true;
        self
    }

    pub fn bytes(&self) -> &[u8] {
        // SAFETY: `ptr` maps `len` readable bytes until `drop`.
        unsafe { std::slice::from_raw_parts(self.ptr.cast::<u8>(), self.len) }
    }
}

impl Drop for Mapped {
    fn drop(&mut self) {
        let (at, len) = (self.ptr as usize, self.len);
        // SAFETY: unmaps exactly the mapping made in `of`, which no slice outlives (they borrow `self`), once.
        let unmap = move || unsafe { libc::munmap(at as *mut libc::c_void, len) };
        if self.beside && len >= BESIDE_MIN {
            // Should no thread start, the caller unmaps, as without `beside`.
            if std::thread::Builder::new().name("unmap".into()).spawn(unmap).is_ok() {
                return;
            }
        }
        unmap();
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

    /// Whether this process maps `path` (`/proc/self/maps` names each file mapping's file).
    fn maps(path: &std::path::Path) -> bool {
        let path = path.to_str().unwrap();
        std::fs::read_to_string("/proc/self/maps").unwrap().lines().any(|line| line.ends_with(path))
    }

    #[test]
    fn a_large_mapping_unmapped_beside_is_gone_soon_after_its_drop() {
        let dir = std::env::temp_dir().join(format!("cachescope-beside-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("t.bin");
        let file = File::create(&path).unwrap();
        file.set_len(BESIDE_MIN as u64).unwrap();
        let m = Mapped::of(&File::open(&path).unwrap()).unwrap().unwrap().unmapped_beside();
        assert!(m.bytes().iter().step_by(4096).all(|&b| b == 0));
        assert!(maps(&path));
        drop(m);
        let start = std::time::Instant::now();
        while maps(&path) {
            assert!(start.elapsed().as_secs() < 10, "still mapped 10 s after its drop");
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
