"""What parsing an input found (losses, cut records, limits reached, other commands, error replies), as the
lines parse.py prints: simulate.py prints the same lines when it reads a capture or a text trace itself, so an
input is reported the same way whichever command reads it."""

from __future__ import annotations

from cachescope.parse.error_names import error_line
from cachescope.trace.text_formats import TEXT_FORMATS

# Segments, bytes and signals reassembly set aside (each also in --stats-json under its key).
REASSEMBLY_DROPS = [
    ("segments_after_close", "segments after their connection closed ({bytes_after_close:,} bytes)"),
    ("ignored_rsts", "RSTs outside the window (ignored)"),
    ("out_of_window_segments", "segments beyond any TCP window ({out_of_window_bytes:,} bytes)"),
    ("out_of_window_acks", "ACKs beyond any TCP window"),
    ("segments_before_start", "segments before a connection's first byte seen"),
    ("non_redis_segments", "segments on no Redis port"),
    ("reassembly_limit_hits", "reassembly limits reached"),
]


def input_line(s: dict) -> str:
    """The input's size: packets, bytes and connections (flow files for a tcpflow directory)."""
    if s.get("input_format") in TEXT_FORMATS:
        hosts = s.get("client_hosts", 0)
        clients = f", {hosts:,} client host{'s' if hosts != 1 else ''}" if s["input_format"] == "monitor" else ""
        return (f"{s['input']}: {s['input_format']} trace, {s.get('lines', 0):,} lines, {s.get('bytes', 0):,} "
                f"bytes{clients}")
    if s.get("input_format") == "tcpflow":
        return (f"{s['input']}: tcpflow directory, {s.get('files', 0):,} flow files, {s.get('bytes', 0):,} bytes, "
                f"{s.get('connections', 0):,} connections ({s.get('mid_stream_connections', 0):,} not seen "
                f"from their start)")
    return (f"{s['input']}: {s.get('packets', 0):,} packets, {s.get('bytes', 0):,} bytes, "
            f"{s.get('connections', 0):,} connections ({s.get('mid_stream_connections', 0):,} already open)")


def input_report(s: dict) -> list[str]:
    """Losses, drops, limits reached, a cut last record, other commands and error replies: one line each. A text
    trace has no packets to lose nor replies: only its other commands."""
    if s.get("input_format") in TEXT_FORMATS:
        return _other_commands(s)
    lines = [
        f"  losses: {s.get('gaps', 0):,} gaps ({s.get('gap_bytes', 0):,} bytes), "
        f"{s.get('retransmissions', 0):,} retransmissions, {s.get('out_of_order', 0):,} out of order, "
        f"{s.get('resyncs', 0):,} resyncs, {s.get('unknown_replies', 0):,} replies unknown",
    ]
    dropped = [(n, what) for n, what in ((s.get(k, 0), what) for k, what in REASSEMBLY_DROPS) if n]
    if dropped:
        counts = {k: s.get(k, 0) for k in ("bytes_after_close", "out_of_window_bytes")}
        lines.append("  dropped by reassembly: " + ", ".join(f"{n:,} {what.format(**counts)}" for n, what in dropped))
    if s.get("ports_found"):
        lines.append(f"  Redis found by content on port(s) {', '.join(map(str, s['redis_ports']))} (--port to choose)")
    limits = [(s.get("oversized_commands", 0), "commands over the size limit (no rows)"),
              (s.get("oversized_replies", 0), "replies too large to describe (lookups unknown)"),
              (s.get("elided_keys", 0), "rows dropped for a key or field not kept"),
              (s.get("args_lost_in_gaps", 0), "arguments cut by a gap (command kept)"),
              (s.get("unconfirmed_commands", 0), "commands after a resync unconfirmed (dropped)"),
              (s.get("refused_inline_lines", 0), "inline lines Redis refuses"),
              (s.get("unparsable_bytes", 0), "unparsable bytes"),
              (s.get("encrypted_connections", 0), "encrypted (TLS) connections, not read"),
              (s.get("rows_out_of_order", 0), "rows out of send order (a reply later than the reorder window)")]
    if any(n for n, _ in limits):
        lines.append("  limits: " + ", ".join(f"{n:,} {what}" for n, what in limits if n))
    if s.get("truncated_tail"):
        lines.append("  the capture ends in a cut record (tcpdump stopped mid-write): the rest was parsed")
    lines += _other_commands(s)
    errors = error_line(s)
    if errors:
        lines.append(errors)
    return lines


def _other_commands(s: dict) -> list[str]:
    other = s.get("other_commands") or {}
    if not other:
        return []
    top = sorted(other.items(), key=lambda kv: -kv[1])[:8]
    return ["  other commands: " + ", ".join(f"{name} {n:,}" for name, n in top)]
