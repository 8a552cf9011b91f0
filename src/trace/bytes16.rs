//! What 16 bytes of text are, a bit each (bit i: the byte at i): where the newlines are, for `newlines`, and
//! where the whitespace, quotes and backslashes are, for `quick_split`. One compare for all 16 bytes with SSE2,
//! which every x86_64 has; elsewhere a plain loop gives the same masks (`portable`, tested against SSE2 here).

#[cfg(target_arch = "x86_64")]
pub use sse2::{classify16, newlines16};
#[cfg(not(target_arch = "x86_64"))]
pub use portable::{classify16, newlines16};

#[cfg(target_arch = "x86_64")]
mod sse2 {
    use std::arch::x86_64::{__m128i, _mm_cmpeq_epi8, _mm_loadu_si128, _mm_movemask_epi8, _mm_or_si128, _mm_set1_epi8};

    // SAFETY (each `unsafe` below): SSE2 is part of x86_64 itself, so its instructions run on every machine
    // this code is built for; the load reads exactly the 16 bytes its argument refers to, unaligned.

    #[inline]
    fn load(b: &[u8; 16]) -> __m128i {
        unsafe { _mm_loadu_si128(b.as_ptr().cast()) }
    }

    /// 0xff where the byte is `c`.
    #[inline]
    fn eq(v: __m128i, c: u8) -> __m128i {
        unsafe { _mm_cmpeq_epi8(v, _mm_set1_epi8(c as i8)) }
    }

    #[inline]
    fn or(a: __m128i, b: __m128i) -> __m128i {
        unsafe { _mm_or_si128(a, b) }
    }

    /// Bit i: the high bit of byte i.
    #[inline]
    fn bits(v: __m128i) -> u16 {
        unsafe { _mm_movemask_epi8(v) as u16 }
    }

    /// The `\n` of 16 bytes.
    #[inline]
    pub fn newlines16(b: &[u8; 16]) -> u16 {
        bits(eq(load(b), b'\n'))
    }

    /// (ASCII whitespace, quotes, backslashes) of 16 bytes.
    #[inline]
    pub fn classify16(b: &[u8; 16]) -> (u16, u16, u16) {
        let v = load(b);
        let space = or(or(or(eq(v, b'\t'), eq(v, b'\n')), or(eq(v, 0x0c), eq(v, b'\r'))), eq(v, b' '));
        (bits(space), bits(eq(v, b'"')), bits(eq(v, b'\\')))
    }
}

/// The same masks a byte at a time: for other machines, and what SSE2's are tested against.
#[cfg_attr(target_arch = "x86_64", allow(dead_code))]
mod portable {
    fn mask(b: &[u8; 16], hit: impl Fn(u8) -> bool) -> u16 {
        b.iter().enumerate().fold(0, |m, (i, &c)| m | (u16::from(hit(c)) << i))
    }

    pub fn newlines16(b: &[u8; 16]) -> u16 {
        mask(b, |c| c == b'\n')
    }

    pub fn classify16(b: &[u8; 16]) -> (u16, u16, u16) {
        (mask(b, |c| c.is_ascii_whitespace()), mask(b, |c| c == b'"'), mask(b, |c| c == b'\\'))
    }
}

#[cfg(all(test, target_arch = "x86_64"))]
mod tests {
    use super::*;

    /// Every byte value in every place, beside another: SSE2's masks are the plain loop's.
    #[test]
    fn sse2_agrees_with_the_portable_masks() {
        for b in 0..=255u8 {
            for at in 0..16 {
                let mut block = [b'x'; 16];
                block[at] = b;
                block[(at + 5) % 16] = b.wrapping_add(1);
                assert_eq!(sse2::newlines16(&block), portable::newlines16(&block), "{b} at {at}");
                assert_eq!(sse2::classify16(&block), portable::classify16(&block), "{b} at {at}");
            }
        }
    }
}
