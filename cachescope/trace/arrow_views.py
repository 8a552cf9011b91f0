"""numpy views of Arrow arrays, read from their buffers: `Array.to_numpy` (and `is_valid().to_numpy`) import
pandas the first time they are called, which would add 0.2-0.4 s to `parse.py` to a text or binary trace and
to `simulate.py` on a Parquet trace."""

from __future__ import annotations

import numpy as np
import pyarrow as pa


def values(arr: pa.Array, dtype) -> np.ndarray:
    """The values of a fixed-width column (a dictionary column's indices), nulls included as whatever their
    slot holds; no copy."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.indices
    buf = arr.buffers()[1]
    if buf is None:
        return np.zeros(len(arr), dtype)
    return np.frombuffer(buf, dtype)[arr.offset : arr.offset + len(arr)]


def integers(arr: pa.Array) -> np.ndarray:
    """An integer column (a dictionary column's indices) in its own width and signedness; nulls as whatever
    their slot holds."""
    t = arr.indices.type if pa.types.is_dictionary(arr.type) else arr.type
    if not pa.types.is_integer(t):
        raise TypeError(f"not an integer column: {t}")
    return values(arr, np.dtype(f"{'u' if pa.types.is_unsigned_integer(t) else 'i'}{t.bit_width // 8}"))


def valid(arr: pa.Array) -> np.ndarray:
    """True where the row has a value."""
    bitmap = arr.buffers()[0]
    if bitmap is None:
        return np.full(len(arr), arr.null_count == 0)
    bits = np.unpackbits(np.frombuffer(bitmap, np.uint8), bitorder="little")
    return bits[arr.offset : arr.offset + len(arr)].astype(bool)


def strings(arr: pa.Array) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """(int64 offsets, uint8 data, validity) of a string or binary column (a dictionary column decoded);
    offsets index the whole data buffer. The 32-bit offsets of `string` and `binary` are widened in numpy:
    an Arrow cast would import pyarrow.compute (0.07 s) for it."""
    if pa.types.is_dictionary(arr.type):
        arr = arr.dictionary_decode()
    wide = pa.types.is_large_string(arr.type) or pa.types.is_large_binary(arr.type)
    _, offsets, data = arr.buffers()
    offsets = np.frombuffer(offsets, np.int64 if wide else np.int32)[arr.offset : arr.offset + len(arr) + 1]
    data = np.frombuffer(data, np.uint8) if data is not None else np.zeros(0, np.uint8)
    return np.ascontiguousarray(offsets, dtype=np.int64), data, valid(arr)
