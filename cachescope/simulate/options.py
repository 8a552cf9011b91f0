"""The feature-store semantics a simulation can model, from what users write to what the core takes:
durations, times, batch refresh schedules, allow-lists, and the memory an entry costs."""

from __future__ import annotations

import csv
import math
import re
from datetime import datetime, timedelta, timezone

from cachescope import _native
from cachescope.errors import UsageError

WRITE_MODES = ("ignore", "invalidate", "update")

# Bytes a JVM Caffeine cache spends per entry besides the key's and field's characters and the value's bytes
# (64-bit JVM, compressed oops). Caffeine's bounded node (header, key/value refs, access-order links,
# weight) ~40; ConcurrentHashMap.Node 32 and its table slot ~8; the key object, a record of (String entity,
# int feature) 24; the entity String 24 plus its byte[] header 16; the value's byte[] header 16; the
# frequency sketch's 8 bytes per entry of maximum size. 40+32+8+24+24+16+16+8 = 168.
DEFAULT_ENTRY_OVERHEAD = 168

# Times and durations are i64 nanoseconds in the core: 1677-09-21 to 2262-04-11 since the epoch.
NS_MAX = 2**63 - 1
NS_MIN = -(2**63)
# Shortest --restart-every: each restart empties every cache, so a nanosecond interval would mean billions of
# restarts a second of trace (and the list of restart times with them).
MIN_RESTART_EVERY_NS = 10**9

_DURATION_UNITS = {"ns": 1, "us": 10**3, "ms": 10**6, "s": 10**9, "sec": 10**9, "m": 60 * 10**9,
                   "min": 60 * 10**9, "h": 3600 * 10**9, "hr": 3600 * 10**9, "d": 86400 * 10**9}


def parse_duration(text) -> int:
    """`90s`, `15m`, `6h`, `1d`, `500ms`, or a number of seconds, as ns."""
    if isinstance(text, (int, float)) and not isinstance(text, bool):
        if not math.isfinite(text):
            raise UsageError(f"duration {text!r} is not a number of seconds")
        ns = int(text * 10**9)
    else:
        m = re.fullmatch(r"\s*([0-9]*\.?[0-9]+)\s*([a-z]*)\s*", str(text))
        if m and m.group(2) not in ("", *_DURATION_UNITS):
            m = None
        if not m:
            raise UsageError(f"duration {text!r} is not like 90s, 15m, 6h or 1d")
        ns = int(float(m.group(1)) * _DURATION_UNITS[m.group(2) or "s"])
    if ns <= 0:
        raise UsageError(f"duration {text!r} must be positive")
    if ns > NS_MAX:
        raise UsageError(f"duration {text!r} is too long (at most 292 years)")
    return ns


def parse_time(text) -> int:
    """Unix time in seconds (`1700000000.5`) or an ISO 8601 date-time (UTC unless it says otherwise), as ns."""
    s = str(text).strip()
    if re.fullmatch(r"[0-9]+(\.[0-9]+)?", s):
        whole, _, frac = s.partition(".")
        return _in_range(int(whole) * 10**9 + int((frac + "000000000")[:9]), s)
    try:
        dt = datetime.fromisoformat(s.replace("Z", "+00:00"))
        if dt.tzinfo is None:
            dt = dt.replace(tzinfo=timezone.utc)
        # Whole seconds from the date (exact for any year), microseconds apart: no float rounding.
        seconds = (dt - datetime(1970, 1, 1, tzinfo=timezone.utc)) // timedelta(seconds=1)
    except (ValueError, OverflowError):
        raise UsageError(f"time {s!r} is neither unix seconds nor an ISO 8601 date-time") from None
    return _in_range(seconds * 10**9 + dt.microsecond * 1000, s)


def _in_range(ns: int, text: str) -> int:
    if not NS_MIN <= ns <= NS_MAX:
        raise UsageError(f"time {text!r} is outside 1677-09-21 to 2262-04-11 (nanosecond timestamps)")
    return ns


def feature_field(feature: str) -> str:
    """The field id that stores `feature`, as the trace spells it: a decimal xxHash32 id is taken as written, a
    feature name is hashed with xxHash32 as the feature store does."""
    feature = feature.strip()
    return feature if feature.isdigit() else str(_native.xxh32(feature.encode()))


def feature_hash(feature: str) -> int:
    """The core's hash of the field that stores `feature` (a name or its decimal xxHash32 id)."""
    return _native.key_hash(feature_field(feature).encode())


def read_allow_list(source) -> list[int]:
    """Feature names or xxHash32 ids, from a file (one a line, `#` comments) or an iterable."""
    if isinstance(source, str):
        items = read_feature_file(source, "the allow-list is empty")
    else:
        items = [str(i) for i in source]
    return [feature_hash(i) for i in items]


def read_feature_file(path: str, empty: str) -> list[str]:
    """The feature names or ids of a file, one a line, blank lines and `#` comments left out; `empty`: what to
    say of a file that has none."""
    try:
        with open(path, encoding="utf-8") as f:
            items = [line.split("#", 1)[0].strip() for line in f]
    except UnicodeDecodeError:
        raise UsageError(f"{path}: not a text file of feature names") from None
    except OSError as e:
        raise UsageError(f"{path}: {e.strerror}") from None
    items = [item for item in items if item]
    if not items:
        raise UsageError(f"{path}: {empty}")
    return items


def read_refresh_schedule(source) -> list[tuple[int, int]]:
    """(time ns, field hash) pairs from a CSV of `feature,time` rows (a header row is optional), or from an
    iterable of (feature, time) pairs."""
    return [(t, feature_hash(f)) for t, f in read_refresh_rows(source)]


def refresh_features(rows) -> dict:
    """{field hash: (feature as the schedule names it, field id)} of a schedule's rows (read_refresh_rows), in
    the order the schedule first names each: what the core's per-field refresh costs are reported under."""
    out: dict = {}
    for _, feature in rows:
        out.setdefault(feature_hash(feature), (feature.strip(), feature_field(feature)))
    return out


def read_refresh_rows(source) -> list[tuple[int, str]]:
    """(time ns, feature as written) pairs of a refresh schedule: see read_refresh_schedule."""
    if not isinstance(source, str):
        return [(parse_time(t), str(f)) for f, t in source]
    out = []
    lineno = 0
    try:
        with open(source, newline="", encoding="utf-8") as f:
            for lineno, row in enumerate(csv.reader(f), start=1):
                entry = _schedule_row(source, lineno, row)
                if entry is not None:
                    out.append(entry)
    except (UnicodeDecodeError, csv.Error) as e:
        # Text is decoded ahead of the CSV rows, so a bad byte is placed only roughly.
        why = f"bytes that are not UTF-8 after line {lineno}" if isinstance(e, UnicodeDecodeError) \
            else f"line {lineno + 1}: {e}"
        raise UsageError(f"{source}: not a CSV of `feature,time` rows ({why})") from None
    if not out:
        raise UsageError(f"{source}: the refresh schedule is empty")
    return out


def _schedule_row(source: str, lineno: int, row: list[str]):
    """(time ns, feature) of one CSV row of a refresh schedule; None for a comment, blank or header row."""
    if not row or row[0].strip().startswith("#"):
        return None
    if lineno == 1 and [c.strip().lower() for c in row[:2]] == ["feature", "time"]:
        return None
    if len(row) != 2:
        raise UsageError(f"{source}: line {lineno}: expected `feature,time`, got {len(row)} columns")
    try:
        return parse_time(row[1]), row[0]
    except UsageError as e:
        raise UsageError(f"{source}: line {lineno}: {e}") from None
