"""The summary's line of error replies, each code with the commands it answered (`error_commands`, counted by
the parser as "CODE COMMAND"), and what the known harmless ones are: a client library's handshake that an
older Redis refuses answers `ERR` on every connection, which alone reads as an alarm."""

from __future__ import annotations

# (code, command) -> why it is no cause for alarm.
HARMLESS = {
    # redis-py >= 5 and other clients name themselves at connect; the subcommand is new in Redis 7.2.
    ("ERR", "CLIENT SETINFO"): "which Redis < 7.2 refuses: harmless",
    # redis-cli >= 7 asks for command docs at start-up (for its hints); new in Redis 7.0.
    ("ERR", "COMMAND DOCS"): "which Redis < 7.0 refuses: harmless",
}

# Codes and, per code, commands named on the line; the rest are summed up as "...".
TOP_CODES, TOP_COMMANDS = 8, 3


def error_line(s: dict) -> str | None:
    """`  answered with an error (...): ERR 31 (CLIENT SETINFO, which Redis < 7.2 refuses: harmless), ...`;
    None when no command was answered with an error."""
    errors = s.get("error_replies") or {}
    if not errors:
        return None
    by_code: dict[str, list[tuple[str, int]]] = {}
    for key, n in (s.get("error_commands") or {}).items():
        code, _, command = key.partition(" ")
        by_code.setdefault(code, []).append((command, n))
    top = sorted(errors.items(), key=lambda kv: -kv[1])[:TOP_CODES]
    return ("  answered with an error (rows marked in `error`, no lookups): "
            + ", ".join(_code(code, n, by_code.get(code, [])) for code, n in top))


def _code(code: str, n: int, commands: list[tuple[str, int]]) -> str:
    if not commands:
        return f"{code} {n:,}"
    commands.sort(key=lambda cn: -cn[1])
    shown = commands[:TOP_COMMANDS]
    parts = []
    for command, k in shown:
        note = HARMLESS.get((code, command))
        count = "" if len(commands) == 1 else f" {k:,}"
        parts.append(f"{command}{count}" + (f", {note}" if note else ""))
    if len(commands) > len(shown):
        parts.append("...")
    return f"{code} {n:,} ({'; '.join(parts)})"
