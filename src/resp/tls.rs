//! Telling TLS from Redis: a connection whose client begins with a TLS record carries nothing cachescope can
//! read (its sessions count it, port discovery names it).

/// Whether client bytes begin with a TLS record header: content type (handshake 0x16 as a connection opens;
/// alert, change cipher spec or application data picked up mid-stream), version 3.x, a length a record can
/// have. RESP begins with `*` and an inline command with a letter: neither is a control byte.
pub fn is_tls_record(d: &[u8]) -> bool {
    match d {
        [t, 3, minor, rest @ ..] if (0x14..=0x17).contains(t) && *minor <= 4 => {
            rest.len() < 2 || u16::from_be_bytes([rest[0], rest[1]]) <= (1 << 14) + 2048
        }
        _ => false,
    }
}
