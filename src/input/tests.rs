use std::io::{Cursor, Read, Write};
use std::time::Duration;

use super::*;

fn plain(n: usize) -> Vec<u8> {
    // Text-like and compressible, but not trivially: every line differs.
    (0..n).flat_map(|i| format!("HMGET st_{} {}\n", i % 977, i.wrapping_mul(2654435761) % 100_000).into_bytes()).collect()
}

fn compress(kind: Compression, data: &[u8]) -> Vec<u8> {
    match kind {
        Compression::Gzip => {
            let mut e = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Compression::Zstd => zstd::encode_all(data, 3).unwrap(),
        Compression::Xz => {
            let mut e = lzma_rust2::XzWriter::new(Vec::new(), lzma_rust2::XzOptions::default()).unwrap();
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
        Compression::Lz4 => {
            // As the lz4 command writes them: a checksum of the content at the end of the frame.
            let info = lz4_flex::frame::FrameInfo::new().content_checksum(true);
            let mut e = lz4_flex::frame::FrameEncoder::with_frame_info(info, Vec::new());
            e.write_all(data).unwrap();
            e.finish().unwrap()
        }
    }
}

const KINDS: [Compression; 4] = [Compression::Gzip, Compression::Zstd, Compression::Xz, Compression::Lz4];

fn read_all(r: &mut dyn Read) -> (Vec<u8>, std::io::Result<()>) {
    let (mut out, mut buf) = (Vec::new(), vec![0; 7777]);
    loop {
        match r.read(&mut buf) {
            Ok(0) => return (out, Ok(())),
            Ok(n) => out.extend_from_slice(&buf[..n]),
            Err(e) => return (out, Err(e)),
        }
    }
}

#[test]
fn every_compression_is_told_by_its_magic_and_decoded_whole() {
    let data = plain(40_000);
    for kind in KINDS {
        let packed = compress(kind, &data);
        let (found, mut r) = open(Cursor::new(packed)).unwrap();
        assert_eq!(found, Some(kind));
        let (got, end) = read_all(&mut r);
        assert!(end.is_ok(), "{kind:?}: {end:?}");
        assert!(got == data, "{kind:?}: {} bytes back of {}", got.len(), data.len());
    }
    let (found, mut r) = open(Cursor::new(data.clone())).unwrap();
    assert_eq!(found, None);
    assert!(read_all(&mut r).0 == data);
    let (found, mut r) = open(Cursor::new(b"ab".to_vec())).unwrap();
    assert_eq!((found, read_all(&mut r).0), (None, b"ab".to_vec()));
}

#[test]
fn concatenated_streams_are_one_input() {
    let (a, b) = (plain(1000), plain(3000));
    for kind in [Compression::Gzip, Compression::Zstd, Compression::Lz4] {
        let packed = [compress(kind, &a), compress(kind, &b)].concat();
        let (_, mut r) = open(Cursor::new(packed)).unwrap();
        let (got, end) = read_all(&mut r);
        assert!(end.is_ok(), "{kind:?}: {end:?}");
        assert!(got == [a.clone(), b.clone()].concat(), "{kind:?} {} {} {}", got.len(), a.len(), b.len());
    }
}

#[test]
fn a_cut_short_stream_is_an_error_naming_the_file_and_position_after_the_bytes_before_it() {
    let data = plain(30_000);
    for kind in KINDS {
        let packed = compress(kind, &data);
        for cut in [packed.len() / 2, packed.len() - 3] {
            let (_, mut r) = open(Cursor::new(packed[..cut].to_vec())).unwrap();
            let (got, end) = read_all(&mut r);
            let e = end.expect_err(&format!("{kind:?} cut at {cut} of {}", packed.len())).to_string();
            assert!(e.contains(&format!("{} stream cut short at compressed byte {cut}", kind.name())), "{e}");
            assert!(e.contains(&format!("after {} bytes decompressed", got.len())), "{e}");
            assert!(data.starts_with(&got), "{kind:?}: the bytes before the cut are the data's");
            assert!(read_all(&mut r).1.is_err(), "the error stays");
        }
    }
}

#[test]
fn corrupt_data_is_an_error_not_garbage() {
    let data = plain(30_000);
    for kind in KINDS {
        let mut packed = compress(kind, &data);
        let at = packed.len() / 2;
        for b in &mut packed[at..at + 64] {
            *b ^= 0x5a;
        }
        let (_, mut r) = open(Cursor::new(packed)).unwrap();
        let (got, end) = read_all(&mut r);
        let e = end.expect_err(&format!("{kind:?}")).to_string();
        assert!(e.contains("compressed byte"), "{e}");
        // gzip and lz4 (by default) check their data only at the end of a member or frame: what comes before
        // is handed out.
        assert!(matches!(kind, Compression::Gzip | Compression::Lz4) || got.len() < data.len(), "{kind:?}");
    }
}

#[test]
fn the_plain_head_is_what_the_first_compressed_bytes_decode_to() {
    let data = plain(30_000);
    for kind in KINDS {
        let packed = compress(kind, &data);
        // A block is decoded only whole: lz4's blocks (up to 4 MiB) need the whole of this small input.
        let cut = if kind == Compression::Lz4 { packed.len() } else { packed.len().min(300_000) };
        let head = plain_head(&packed[..cut], 4096);
        assert!(head.len() == 4096 && data.starts_with(&head), "{kind:?}: {} bytes", head.len());
    }
    assert_eq!(plain_head(b"GET a\n", 3), b"GET".to_vec());
}

/// A reader that gives its bytes, then blocks until told, like a pipe whose writer is still there.
struct Stalling {
    data: Cursor<Vec<u8>>,
    release: std::sync::mpsc::Receiver<()>,
}
impl Read for Stalling {
    fn read(&mut self, buf: &mut [u8]) -> std::io::Result<usize> {
        let n = self.data.read(buf)?;
        if n == 0 {
            let _ = self.release.recv();
        }
        Ok(n)
    }
}

#[test]
fn a_stopped_input_ends_after_every_byte_already_read() {
    let data = plain(1000);
    let (_keep, release) = std::sync::mpsc::channel();
    let flag = StopFlag::default();
    let mut r = Stoppable::new(Stalling { data: Cursor::new(data.clone()), release }, flag.clone());
    let mut got = vec![0; data.len()];
    r.read_exact(&mut got).unwrap();
    assert!(got == data);
    let stopper = flag.clone();
    std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(200));
        stopper.stop();
    });
    let mut rest = Vec::new();
    assert_eq!(r.read_to_end(&mut rest).unwrap(), 0, "the end, once stopped, though the pipe is still open");
}
