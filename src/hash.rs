//! Cache keys as 64-bit hashes.
//!
//! A lookup's cache key is `(key, field)` (or `key` alone at entity granularity). Rather than interning the
//! strings into a table that grows with every unique key, each key is hashed to 64 bits as it is read: readers
//! keep no per-key state, and a policy stores 8 bytes per resident key instead of the strings. Two different
//! keys collide with probability about n^2 / 2^65 for n unique keys (3e-6 at 10 M keys, 3e-4 at 100 M), which
//! is far below any difference a hit rate can show.
//!
//! A plain key's 64 bits also carry the Java `String.hashCode` of its text, recoverable with `java_hash_code`:
//! W-TinyLFU's frequency sketch is indexed by the key's `hashCode()` in Caffeine, and a real Caffeine cache's
//! hit rate moves by up to ~3 points on a real trace when only the keys' `hashCode` changes (measured on
//! cloudPhysicsIO), so agreeing with Caffeine needs the same hash, not just an equally good one. The layout is
//! `hi << 32 | (hi ^ java)` with `hi` the top half of xxh3: the low half stays uniform (a random `hi` XORed
//! in), `hi ^ lo` gives the Java hash back, and two keys collide only if both their xxh3 halves and their Java
//! hashes do (for keys whose Java hashes collide, as `"Aa"` and `"BB"` do, with probability 2^-32).

use std::hash::{BuildHasher, Hasher};
use xxhash_rust::xxh3::{xxh3_64, xxh3_64_with_seed};

/// The cache key of a plain Redis key (GET, or any lookup at entity granularity).
#[inline]
pub fn key_hash(key: &[u8]) -> u64 {
    let hi = xxh3_64(key) >> 32;
    (hi << 32) | (hi ^ u64::from(java_string_hash(key)))
}

/// `key_hash` of the text of `len` (1 to 8) bytes held in `word` (its first byte the lowest, the rest zero),
/// without reading it back byte by byte: a numeric id's digits are made in a register (`numeric_key`).
#[inline]
pub fn key_hash_word(word: u64, len: usize) -> u64 {
    if word & 0x8080_8080_8080_8080 == 0 {
        return key_hash_ascii_word(word, len);
    }
    let hi = xxh3_word(word, len) >> 32;
    (hi << 32) | (hi ^ u64::from(java_string_hash(&word.to_le_bytes()[..len])))
}

/// `key_hash_word` of bytes all below 0x80 (a numeric id's digits): no loop left, so it inlines into a loop
/// that hashes several ids side by side (`numeric_key_inlined`).
#[inline(always)]
pub fn key_hash_ascii_word(word: u64, len: usize) -> u64 {
    debug_assert!((1..=8).contains(&len) && (len == 8 || word >> (8 * len) == 0));
    debug_assert!(word & 0x8080_8080_8080_8080 == 0);
    let hi = xxh3_word(word, len) >> 32;
    (hi << 32) | (hi ^ u64::from(java_hash_word(word << (8 * (8 - len)))))
}

/// The first 24 bytes of xxh3's default secret, all its short inputs read.
const XXH3_SECRET: [u8; 24] = [
    0xb8, 0xfe, 0x6c, 0x39, 0x23, 0xa4, 0x4b, 0xbe, 0x7c, 0x01, 0x81, 0x2c, 0xf7, 0x21, 0xad, 0x1c,
    0xde, 0xd4, 0x6d, 0xe9, 0x83, 0x90, 0x97, 0xdb,
];

const fn secret32(at: usize) -> u32 {
    let s = &XXH3_SECRET;
    u32::from_le_bytes([s[at], s[at + 1], s[at + 2], s[at + 3]])
}

const fn secret64(at: usize) -> u64 {
    (secret32(at) as u64) | ((secret32(at + 4) as u64) << 32)
}

/// `xxh3_64` (seed 0) of the `len` (1 to 8) bytes held in `word`, its first byte the lowest: the same
/// arithmetic as the library's short inputs (`xxh3_64_1to3`, `xxh3_64_4to8`), on the register rather than on
/// bytes stored and read back, and without its dispatch on the length of a slice (an object trace hashes an
/// id's digits so at every record; tested equal to the library for every length).
#[inline(always)]
pub fn xxh3_word(word: u64, len: usize) -> u64 {
    debug_assert!((1..=8).contains(&len));
    if len >= 4 {
        let first = word & 0xffff_ffff;
        let last = (word >> (8 * (len - 4))) & 0xffff_ffff;
        let keyed = last.wrapping_add(first << 32) ^ (secret64(8) ^ secret64(16));
        // XXH3's rrmxmx.
        let mut h = keyed ^ keyed.rotate_left(49) ^ keyed.rotate_left(24);
        h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
        h ^= (h >> 35).wrapping_add(len as u64);
        h = h.wrapping_mul(0x9FB2_1C65_1E98_DF25);
        return h ^ (h >> 28);
    }
    let byte = |i: usize| (word >> (8 * i)) & 0xff;
    let combined = (byte(0) << 16) | (byte(len >> 1) << 24) | byte(len - 1) | ((len as u64) << 8);
    // XXH64's avalanche.
    let mut h = combined ^ u64::from(secret32(0) ^ secret32(4));
    h ^= h >> 33;
    h = h.wrapping_mul(0xC2B2_AE3D_27D4_EB4F);
    h ^= h >> 29;
    h = h.wrapping_mul(0x1656_67B1_9E37_79F9);
    h ^ (h >> 32)
}

/// Powers of 31, the multiplier of Java's `String.hashCode`, up to a word's eight bytes.
const POW: [u32; 9] = {
    let mut p = [1u32; 9];
    let mut k = 1;
    while k < 9 {
        p[k] = p[k - 1].wrapping_mul(31);
        k += 1;
    }
    p
};

/// The `hashCode()` a Java cache would see for this key: `String.hashCode` of the key's text for keys made by
/// `key_hash`, and `Long.hashCode` (`(int) (k ^ k >>> 32)`) for any other u64, such as ids given as integers.
#[inline]
pub fn java_hash_code(key: u64) -> u32 {
    (key ^ (key >> 32)) as u32
}

/// Java's `String.hashCode` of `text` decoded as UTF-8 (malformed bytes read as U+FFFD, as Java decodes
/// them): the sum of `c * 31^(n-1-i)` over the UTF-16 code units, in wrapping 32-bit arithmetic.
#[inline]
pub fn java_string_hash(text: &[u8]) -> u32 {
    // Up to eight bytes (an id, a short name: a `keys` trace's every line), one word without the loop.
    if let n @ 1..=8 = text.len() {
        let w = low_word(text);
        if w & 0x8080_8080_8080_8080 == 0 {
            return java_hash_word(w << (8 * (8 - n)));
        }
    }
    // ASCII (nearly every key): eight characters a step, h = h * 31^8 + the word's own sum, which
    // `java_hash_word` takes in three multiplies rather than eight that wait on each other; the ASCII test
    // folded in. The last bytes are the low end of a word whose first bytes are zero.
    let (mut h, mut high) = (0u32, 0u64);
    let mut chunks = text.chunks_exact(8);
    for c in &mut chunks {
        let w = u64::from_le_bytes(c.try_into().expect("8 bytes"));
        h = h.wrapping_mul(POW[8]).wrapping_add(java_hash_word(w));
        high |= w;
    }
    let rest = chunks.remainder();
    if !rest.is_empty() {
        let w = low_word(rest);
        h = h.wrapping_mul(POW[rest.len()]).wrapping_add(java_hash_word(w << (8 * (8 - rest.len()))));
        high |= w;
    }
    if high & 0x8080_8080_8080_8080 == 0 {
        return h;
    }
    java_utf16_hash(text)
}

/// `java_string_hash` of text that is not all ASCII, out of line: the ASCII path stays small enough to inline.
#[cold]
#[inline(never)]
fn java_utf16_hash(text: &[u8]) -> u32 {
    // Borrowed, not copied, when the text is valid UTF-8.
    let decoded = String::from_utf8_lossy(text);
    decoded.encode_utf16().fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)))
}

/// `sum(b[j] * 31^(7-j))` over the eight bytes of `w` (b[0] its lowest) for bytes below 0x80: adjacent
/// bytes paired in 16-bit lanes, pairs in 32-bit lanes, no lane overflowing.
#[inline(always)]
fn java_hash_word(w: u64) -> u32 {
    const BYTES: u64 = 0x00ff_00ff_00ff_00ff;
    const PAIRS: u64 = 0x0000_ffff_0000_ffff;
    let pairs = (w & BYTES).wrapping_mul(31) + ((w >> 8) & BYTES);
    let quads = (pairs & PAIRS).wrapping_mul(31 * 31) + ((pairs >> 16) & PAIRS);
    (quads as u32).wrapping_mul(POW[4]).wrapping_add((quads >> 32) as u32)
}

/// Up to eight bytes as the low end of a little-endian word, the rest zero (the first eight of a longer
/// slice), read without a loop or a call: overlapping loads whose shared bytes agree. Short keys, fields and
/// the ends of lines are read so.
#[inline]
pub fn low_word(bytes: &[u8]) -> u64 {
    let n = bytes.len();
    let half = |at: usize| u64::from(u32::from_le_bytes(bytes[at..at + 4].try_into().expect("4 bytes")));
    match n {
        8.. => u64::from_le_bytes(bytes[..8].try_into().expect("8 bytes")),
        4..8 => half(0) | half(n - 4) << (8 * (n - 4)),
        1..4 => u64::from(bytes[0]) | u64::from(bytes[n / 2]) << (8 * (n / 2)) | u64::from(bytes[n - 1]) << (8 * (n - 1)),
        0 => 0,
    }
}

/// The cache key of a hash field: the field hashed with its key's hash as seed, so `(a, bc)` and `(ab, c)`
/// differ and no separator byte has to be reserved.
#[inline]
pub fn field_hash(key_hash: u64, field: &[u8]) -> u64 {
    xxh3_64_with_seed(field, key_hash)
}

/// murmur3's 64-bit finalizer: a bijection that spreads the bits of any u64, so keys that arrive as raw small
/// integers (a `keys` trace of block numbers, an id array from Python) index hash tables as well as xxh3 output.
#[inline]
pub fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Hasher for tables keyed by u64 cache keys: one `mix64`, nothing else.
#[derive(Default, Clone, Copy)]
pub struct U64Hasher(u64);

impl Hasher for U64Hasher {
    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
    #[inline]
    fn write(&mut self, bytes: &[u8]) {
        // Only u64 keys are hashed with this hasher; other input still gets a sound (if slower) hash.
        self.0 = xxh3_64_with_seed(bytes, self.0);
    }
    #[inline]
    fn write_u64(&mut self, x: u64) {
        self.0 = mix64(x ^ self.0);
    }
}

#[derive(Default, Clone, Copy)]
pub struct BuildU64Hasher;

impl BuildHasher for BuildU64Hasher {
    type Hasher = U64Hasher;
    #[inline]
    fn build_hasher(&self) -> U64Hasher {
        U64Hasher(0)
    }
}

pub type KeyMap<V> = hashbrown::HashMap<u64, V, BuildU64Hasher>;
pub type KeySet = hashbrown::HashSet<u64, BuildU64Hasher>;

/// Cache keys of a column of strings in Arrow layout (`offsets` has one more entry than there are rows).
pub fn hash_string_column(offsets: &[i64], data: &[u8]) -> Result<Vec<u64>, String> {
    column_rows(offsets, data.len())?.map(|(a, b)| Ok(key_hash(&data[a..b]))).collect()
}

/// Cache keys of `(key, field)` rows: `key_hashes` from `hash_string_column`, the fields in Arrow layout,
/// and a null field (`valid[i] == false`) meaning a plain key.
pub fn hash_field_column(key_hashes: &[u64], offsets: &[i64], data: &[u8], valid: &[bool]) -> Result<Vec<u64>, String> {
    if key_hashes.len() != valid.len() || offsets.len() != valid.len() + 1 {
        return Err("key, field and validity columns differ in length".into());
    }
    column_rows(offsets, data.len())?
        .zip(key_hashes.iter().zip(valid))
        .map(|((a, b), (&k, &v))| Ok(if v { field_hash(k, &data[a..b]) } else { k }))
        .collect()
}

/// `hash_field_column` for a dictionary-encoded field column (a Parquet trace's): row `i`'s field is entry
/// `index[i]` of the dictionary whose strings are in Arrow layout, so no row's string is copied out.
pub fn hash_field_by_index(key_hashes: &[u64], offsets: &[i64], data: &[u8], index: &[i64], valid: &[bool])
                           -> Result<Vec<u64>, String> {
    if key_hashes.len() != valid.len() || index.len() != valid.len() {
        return Err("key, field index and validity columns differ in length".into());
    }
    let entries: Vec<(usize, usize)> = column_rows(offsets, data.len())?.collect();
    key_hashes
        .iter()
        .zip(index.iter().zip(valid))
        .map(|(&k, (&j, &v))| {
            if !v {
                return Ok(k);
            }
            let &(a, b) = usize::try_from(j).ok().and_then(|j| entries.get(j)).ok_or("field index outside its dictionary")?;
            Ok(field_hash(k, &data[a..b]))
        })
        .collect()
}

/// Hash of each string of a nullable column (`key_hash`), 0 for a null: how fields are named by allow-lists
/// and refresh schedules, and a capture's keys.
pub fn hash_optional_column(offsets: &[i64], data: &[u8], valid: &[bool]) -> Result<Vec<u64>, String> {
    if offsets.len() != valid.len() + 1 {
        return Err("string and validity columns differ in length".into());
    }
    // The rows of one command repeat its key (an HMGET's dozens of fields): a string equal to the one before
    // it takes that one's hash, after comparing the bytes.
    let mut last: (&[u8], u64) = (&[], key_hash(&[]));
    column_rows(offsets, data.len())?
        .zip(valid)
        .map(|((a, b), &v)| {
            if !v {
                return Ok(0);
            }
            let s = &data[a..b];
            if s != last.0 {
                last = (s, key_hash(s));
            }
            Ok(last.1)
        })
        .collect()
}

fn column_rows(offsets: &[i64], data_len: usize) -> Result<impl Iterator<Item = (usize, usize)> + '_, String> {
    let sorted = offsets.windows(2).all(|w| 0 <= w[0] && w[0] <= w[1]);
    if offsets.is_empty() || !sorted || offsets[offsets.len() - 1] as usize > data_len {
        return Err("corrupt string column offsets".into());
    }
    Ok(offsets.windows(2).map(|w| (w[0] as usize, w[1] as usize)))
}

#[cfg(test)]
mod tests {
    #[test]
    fn xxh3_of_a_word_is_the_librarys_of_its_bytes() {
        let mut x = 0x0123_4567_89ab_cdefu64;
        for round in 0..20_000u64 {
            x = mix64(x ^ round);
            for len in 1..=8 {
                let word = if len == 8 { x } else { x & ((1u64 << (8 * len)) - 1) };
                assert_eq!(xxh3_word(word, len), xxh3_64(&word.to_le_bytes()[..len]), "{word:#x} of {len} bytes");
            }
        }
    }

    use super::*;

    #[test]
    fn field_hash_depends_on_the_split() {
        assert_ne!(field_hash(key_hash(b"a"), b"bc"), field_hash(key_hash(b"ab"), b"c"));
    }

    #[test]
    fn key_hash_carries_the_java_string_hash() {
        // Values of "...".hashCode() printed by Java.
        for (text, java) in [("", 0), ("a", 97), ("hello", 99_162_322), ("Aa", 2112), ("BB", 2112),
            ("st_1426727:2496559762", JAVA_ST), ("caf\u{e9}", 3_045_921), ("\u{1f600}x", JAVA_EMOJI)]
        {
            assert_eq!(java_string_hash(text.as_bytes()) as i32, java, "{text}");
            assert_eq!(java_hash_code(key_hash(text.as_bytes())) as i32, java, "{text}");
        }
        assert_ne!(key_hash(b"Aa"), key_hash(b"BB"));
        assert_eq!(java_hash_code(0x1234_5678_0000_0001), 0x1234_5679); // Long.hashCode
    }
    const JAVA_ST: i32 = -266_729_956;
    const JAVA_EMOJI: i32 = 54_959_989;

    #[test]
    fn java_string_hash_matches_the_plain_loop_at_every_length() {
        // Every ASCII byte, 0x7f and control bytes included: the largest lanes of the word-wide sum.
        let mut text: Vec<u8> = (0..64u64).map(|i| (mix64(i) % 128) as u8).collect();
        text.extend([0x7f; 24]);
        let plain = |t: &[u8]| t.iter().fold(0u32, |h, &b| h.wrapping_mul(31).wrapping_add(u32::from(b)));
        for len in 0..=text.len() {
            assert_eq!(java_string_hash(&text[..len]), plain(&text[..len]), "length {len}");
        }
        // Short texts (one word) from every place in it.
        for start in 0..text.len() {
            for end in start..text.len().min(start + 10) {
                assert_eq!(java_string_hash(&text[start..end]), plain(&text[start..end]), "{start}..{end}");
            }
        }
        // Short and long texts that are not ASCII, as Java hashes their UTF-16 code units.
        let java = |t: &str| t.encode_utf16().fold(0u32, |h, c| h.wrapping_mul(31).wrapping_add(u32::from(c)));
        for t in ["é", "aé", "日本", "ab日", "1234567é", "12345678é", "日本語のキー", "😀"] {
            assert_eq!(java_string_hash(t.as_bytes()), java(t), "{t}");
        }
    }

    #[test]
    fn fields_by_dictionary_index_hash_as_the_fields_themselves() {
        let (offsets, data) = ([0i64, 2, 5, 5], b"f1f22".as_slice()); // "f1", "f22", ""
        let keys = [key_hash(b"a"), key_hash(b"b"), key_hash(b"c"), key_hash(b"d")];
        let (index, valid) = ([1i64, 0, 7, 2], [true, true, false, true]); // row 2 has no field
        let want = [field_hash(keys[0], b"f22"), field_hash(keys[1], b"f1"), keys[2], field_hash(keys[3], b"")];
        assert_eq!(hash_field_by_index(&keys, &offsets, data, &index, &valid).unwrap(), want);
        assert!(hash_field_by_index(&keys, &offsets, data, &[3, 0, 0, 0], &valid).is_err(), "index past the end");
        assert!(hash_field_by_index(&keys, &offsets, data, &[-1, 0, 0, 0], &valid).is_err());
    }

    #[test]
    fn mix64_is_a_bijection_on_a_sample() {
        let mut seen = KeySet::default();
        for i in 0..100_000u64 {
            assert!(seen.insert(mix64(i)));
        }
    }

    /// Columns with runs of equal strings, empty strings and nulls between them: each row hashed as if alone.
    #[test]
    fn an_optional_column_with_repeats_hashes_each_row_as_it_is() {
        let rows: [Option<&str>; 10] =
            [Some("k1"), Some("k1"), None, Some("k2"), Some(""), Some(""), Some("k10"), Some("k1"), None, Some("")];
        let (mut offsets, mut data, mut valid) = (vec![0i64], Vec::new(), Vec::new());
        for r in rows {
            data.extend_from_slice(r.unwrap_or("").as_bytes());
            offsets.push(data.len() as i64);
            valid.push(r.is_some());
        }
        let expected: Vec<u64> = rows.iter().map(|r| r.map_or(0, |s| key_hash(s.as_bytes()))).collect();
        assert_eq!(hash_optional_column(&offsets, &data, &valid).unwrap(), expected);
    }
}
