"""The page around the sections: one HTML file, its style inline (screen and print), no script, no link that
leaves the file."""

from __future__ import annotations

import html
import os
from datetime import datetime, timezone

from cachescope.report import sections

CSS = """
:root { --ink: #1b1f24; --muted: #5b6470; --line: #d8dde3; --accent: #0072B2; --warn: #9a4b00; }
* { box-sizing: border-box; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", "DejaVu Sans", sans-serif; color: var(--ink);
       margin: 0 auto; padding: 24px 32px 48px; max-width: 1080px; }
h1 { font-size: 26px; margin: 0 0 4px; }
h2 { font-size: 20px; margin: 36px 0 8px; padding-top: 10px; border-top: 2px solid var(--line); }
h3 { font-size: 16px; margin: 22px 0 6px; }
p, li { max-width: 80ch; }
.sub { color: var(--muted); margin: 0 0 16px; }
.answer { border-left: 4px solid var(--accent); background: #f2f7fb; padding: 10px 16px; margin: 14px 0; }
.answer p { margin: 4px 0; }
.missing { color: var(--warn); border-left: 4px solid #e6b37d; background: #fdf6ee; padding: 8px 14px; }
table { border-collapse: collapse; margin: 8px 0 14px; font-size: 13.5px; }
th, td { padding: 3px 10px; border-bottom: 1px solid var(--line); text-align: right; white-space: nowrap; }
th { background: #f4f6f8; font-weight: 600; }
td:first-child, th:first-child { text-align: left; }
td.text { text-align: left; white-space: normal; }
.grid { display: grid; grid-template-columns: repeat(auto-fit, minmax(300px, 1fr)); gap: 14px; }
svg.figure { width: 100%; height: auto; display: block; margin: 6px 0 12px; }
.facts { display: grid; grid-template-columns: max-content 1fr; gap: 2px 18px; margin: 8px 0; }
.facts dt { color: var(--muted); }
.facts dd { margin: 0; }
code, pre { font: 13px ui-monospace, "DejaVu Sans Mono", monospace; background: #f4f6f8; padding: 0 3px; }
pre { padding: 8px 12px; max-height: 24em; overflow: auto; }
details summary { cursor: pointer; color: var(--accent); }
footer { margin-top: 40px; color: var(--muted); font-size: 12.5px; }
@media print {
  body { max-width: none; padding: 0; font-size: 11pt; }
  h2 { break-after: avoid; }
  svg.figure, table, .answer { break-inside: avoid; }
  .answer, .missing, th { -webkit-print-color-adjust: exact; print-color-adjust: exact; }
}
"""

SECTION_IDS = ("input", "anatomy", "sizing", "timeline", "fleets", "limits")


def write_report(result, path: str, feature_names=None, title: str | None = None) -> str:
    """Writes the report of `result` to `path` (see `report_page`); returns `path`."""
    _write(path, report_page(result, feature_names, title))
    return path


def report_page(result, feature_names=None, title: str | None = None) -> str:
    """The report of `result` as one HTML page; `feature_names`: a file or list naming the features (field ids)."""
    from cachescope.report.features import read_feature_names

    names = None if feature_names is None else read_feature_names(feature_names)
    context = sections.Context.build(result, names)
    body = [
        sections.answer(context),
        sections.input_section(context),
        sections.anatomy_section(context),
        sections.sizing_section(context),
        sections.timeline_section(context),
        sections.fleet_section(context),
        sections.limits_section(context),
    ]
    name = ", ".join(os.path.basename(p) for p, *_ in result.request.get("inputs", [])) or result.trace.path
    heading = title or f"Cache sizing: {name}"
    import cachescope

    made = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
        f"<title>{html.escape(heading)}</title><style>{CSS}</style></head><body>"
        f"<h1>{html.escape(heading)}</h1>"
        f"<p class=\"sub\">{html.escape(result.trace.path)} ({html.escape(result.trace.format)}); "
        f"{result.trace.lookups:,} lookups. Made by cachescope {cachescope.__version__} on {made}.</p>"
        + "".join(body)
        + "<footer>Hit rate = lookup hits / lookups, cold start included. Everything on this page comes from "
        "the trace's commands, keys' prefixes, field ids and value sizes; no value of the traffic is read or "
        "shown.</footer></body></html>\n"
    )
    return page


def _write(path: str, text: str) -> None:
    """Written beside and renamed into place (a half-written page never stands where the report should); a
    FIFO or a device in place."""
    from cachescope.outputs import in_place, rename_target

    target = os.fspath(path)
    if in_place(target):
        with open(target, "w", encoding="utf-8") as f:
            f.write(text)
        return
    target = rename_target(target)
    tmp = f"{target}.partial"
    try:
        with open(tmp, "w", encoding="utf-8") as f:
            f.write(text)
        os.replace(tmp, target)
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)
