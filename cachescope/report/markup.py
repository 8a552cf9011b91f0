"""The report's HTML pieces: escaping, a section, a note on what is missing, tables, facts, and the way numbers
and durations are written."""

from __future__ import annotations

import html
import math


def esc(x) -> str:
    return html.escape(str(x))


def section(sid: str, title: str, body: str) -> str:
    return f'<section id="{sid}"><h2>{esc(title)}</h2>{body}</section>'


def missing(text: str) -> str:
    return f'<p class="missing">{esc(text)}</p>'


def table(headers, rows, text_columns=()) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f'<td{" class=text" if i in text_columns else ""}>{esc(c)}</td>'
                                     for i, c in enumerate(r)) + "</tr>" for r in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def facts(pairs) -> str:
    return '<dl class="facts">' + "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in pairs) + "</dl>"


def pct(x, digits=1) -> str:
    return "" if is_missing(x) else f"{x:.{digits}%}"


def is_missing(x) -> bool:
    return x is None or (isinstance(x, float) and math.isnan(x))


def count(x) -> str:
    """A count, or blank for one a row does not have (or a non-number a newer result may hold there)."""
    try:
        return "" if is_missing(x) else f"{int(x):,}"
    except (TypeError, ValueError):
        return ""


def duration(seconds) -> str:
    if is_missing(seconds):
        return ""
    if seconds < 1:
        return f"{seconds * 1000:.1f} ms"
    if seconds >= 7200:
        return f"{seconds / 3600:.1f} h"
    return f"{seconds / 60:.1f} min" if seconds >= 120 else f"{seconds:.1f} s"
