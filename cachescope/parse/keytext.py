"""Keys and fields as text in the trace, one-to-one with their bytes (the same rule as the Rust core's
`parse::rows::push_text`): valid UTF-8 without a backslash stays as it is; anything else is escaped, a
backslash as `\\\\` and every byte outside printable ASCII as `\\xHH`. A text holds a backslash exactly when it is
escaped, so distinct keys never share a text (the byte 0x80 reads `\\x80`, a key spelled `\\x80` reads
`\\\\x80`), and `key_bytes` gives the bytes back."""

from __future__ import annotations

import re

_ESCAPE = re.compile(rb"\\\\|\\x([0-9a-f]{2})")


def key_text(raw: bytes) -> str:
    if b"\\" not in raw:
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError:
            pass
    return "".join("\\\\" if b == 0x5C else chr(b) if 0x20 <= b <= 0x7E else f"\\x{b:02x}" for b in raw)


def key_bytes(text: str) -> bytes:
    data = text.encode("utf-8")
    if b"\\" not in data:
        return data
    return _ESCAPE.sub(lambda m: bytes([int(m.group(1), 16)]) if m.group(1) else b"\\", data)
