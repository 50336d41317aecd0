"""The cells of the benchmark pages: figures as recorded, ratios computed from them, and the Markdown around them.

A table spec (a ``TABLES`` entry of a workload's module, e.g. :mod:`benchmarks.reporting.scale`) is a dict: ``key``; ``heading`` (a ``##``
heading, or ``None`` to continue the section above); ``rows`` (the run-file row targets it shows); ``intro``;
``columns``, each ``(header, f(row))`` or ``(header, f(row, rows))`` (a header starting with ``">"`` is
right-aligned); optionally ``filter`` (which rows), ``transform`` (rows -> the rows shown) and ``prose``
(one sentence instead of a table).
"""

import re

from keras_capsules import markdown


def num(value):
    """A figure as recorded: thousands separated, ``—`` where there is none."""
    if value is None:
        return "—"
    if isinstance(value, (int, float)):
        return f"{value:,}"
    return str(value)


def ratio(numerator, denominator):
    return None if numerator is None or denominator is None else numerator / denominator


def r2(value):
    return "—" if value is None else f"{value:.2f}"


def run_label(run):
    time = run["time_utc"]
    return run["host"]["name"] + (f", {time.split('-')[0]} UTC" if time and time[0].isdigit() else "")


def run_stamp(run):
    time = run["time_utc"]
    return run["date"] + (f" {time.split('-')[0]}" if time and time[0].isdigit() else "")


def table(headers, lines):
    """The lines of a Markdown table (:func:`keras_capsules.markdown.table`); a header starting with ``">"`` is
    right-aligned."""
    align = "".join("r" if h.startswith(">") else "l" for h in headers)
    return markdown.table([h.lstrip("> ") for h in headers], lines, align=align)


def col(key, header=None):
    return (header or key, lambda row: num(row.get(key)))


PEER_RATIO = ("> ours / peer", lambda row: r2(ratio(row.get("ours_ms"), row.get("peer_ms"))))

RSS_PAIR = ("> peak RSS peer / ours (MB)", lambda row: f"{num(row.get('peer_rss_mb'))} / {num(row.get('ours_rss_mb'))}")


def ratio_of(a, b):
    return lambda row: r2(ratio(row.get(a), row.get(b)))


def megabytes(key):
    return lambda row: num(None if row.get(key) is None else round(row[key] / 1e6))


def percent(key):
    """A fraction in ``row[key]`` as a percentage, one decimal; a list of them joined by commas."""

    def cell(row):
        value = row.get(key)
        if value is None:
            return "—"
        return ", ".join(f"{100 * v:.1f}" for v in value) if isinstance(value, list) else f"{100 * value:.1f}"

    return cell


def measured_only(cell):
    """``cell(row)`` for a measured row, a dash for one whose application refused the input."""
    return lambda row: cell(row) if row["status"] == "measured" else "—"


def before_after(key, show):
    """``before_<key>`` and ``after_<key>`` of a row, each shown by ``show``: ``"before · after"``."""
    return lambda row: f"{show(row['before_' + key])} · {show(row['after_' + key])}"


def call(f, row, rows):
    return f(row, rows) if f.__code__.co_argcount == 2 else f(row)


def anchor(heading):
    """GitHub's anchor for a ``## heading``."""
    text = re.sub(r"[^\w\- ]", "", heading.lower())
    return text.replace(" ", "-")
