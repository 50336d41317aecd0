"""Markdown for the generated pages: tables, and blocks between HTML-comment markers.

The documentation generators (the presets' model cards, the docs' measured figures, the benchmark pages)
write parts of hand-written pages. Each part sits between two markers, ``<!-- NAME:start -->`` and
``<!-- NAME:end -->``, where ``NAME`` carries the generator's prefix (``"presets"``,
``"figures:main-job-readme"``); :func:`replace_block` rewrites what lies between them and leaves the rest of
the page as it was.

    >>> print("\\n".join(table(["model", "accuracy (%)"], [["EffCapsNet", "99.10"]], align="lr")))
    | model | accuracy (%) |
    |---|---:|
    | EffCapsNet | 99.10 |
    >>> replace_block("a\\n<!-- x:start -->\\nold\\n<!-- x:end -->\\nb", "x", "new", "page.md")
    'a\\n<!-- x:start -->\\nnew\\n<!-- x:end -->\\nb'
"""

ALIGNMENTS = {"l": "---", "r": "---:"}


def _row(cells):
    """One table row: ``| a | b |``; an empty cell is a single space (``| a | | b |``)."""
    return "|" + "|".join(f" {cell} " if cell != "" else " " for cell in cells) + "|"


def table(headers, rows, align=None):
    """The lines of a Markdown table (no trailing newline; join them with ``"\\n"``).

    Args:
        headers: the column headers, a sequence of ``n`` strings (``""`` for an empty header).
        rows: sequences of ``n`` cells each; a cell is written as ``str(cell)``, with no escaping (a ``|``
            inside a cell splits it).
        align: one letter a column, ``"l"`` (left) or ``"r"`` (right), e.g. ``"lrr"``; ``None``: all left.

    Returns:
        ``[header line, separator line, one line a row]``.

    Raises:
        ValueError: when ``align`` is not ``n`` letters among ``l`` and ``r``, or a row does not hold ``n`` cells.
    """
    headers = [str(header) for header in headers]
    align = "l" * len(headers) if align is None else align
    if len(align) != len(headers) or set(align) - set(ALIGNMENTS):
        raise ValueError(
            f"markdown.table: align must give one of {sorted(ALIGNMENTS)} per column ({len(headers)} columns: "
            f"{headers}); received {align!r}"
        )
    lines = [_row(headers), "|" + "|".join(ALIGNMENTS[letter] for letter in align) + "|"]
    for index, row in enumerate(rows):
        cells = [str(cell) for cell in row]
        if len(cells) != len(headers):
            raise ValueError(
                f"markdown.table: row {index} holds {len(cells)} cells, expected {len(headers)} (the headers "
                f"{headers}); received {cells}"
            )
        lines.append(_row(cells))
    return lines


def markers(name):
    """``("<!-- NAME:start -->", "<!-- NAME:end -->")`` of block ``name`` (``"presets"``, ``"figures:rem-preset"``)."""
    return f"<!-- {name}:start -->", f"<!-- {name}:end -->"


def block(name, body, separator="\n"):
    """``body`` between the markers of block ``name``, each marker set off from it by ``separator``.

    ``separator="\\n"`` puts the markers on the lines next to the body; ``"\\n\\n"`` leaves a blank line between.
    """
    start, end = markers(name)
    return f"{start}{separator}{body}{separator}{end}"


def replace_block(text, name, body, page, separator="\n", append=False):
    """``text`` with block ``name`` (its markers included) replaced by :func:`block` ``(name, body, separator)``.

    Args:
        text: the page's text.
        name: the block's name, prefix included (``"presets"``, ``"figures:rem-preset"``).
        body: the block's new content, without the markers.
        page: how error messages name the page (its path relative to the repository).
        separator: what sets the markers off from the body (see :func:`block`).
        append: when the page holds neither marker, append the block at its end after a blank line (with
            a final newline) instead of raising.

    Raises:
        ValueError: naming the page and the markers when they are missing (unless ``append``), repeated, or
            the end marker comes first.
    """
    start, end = markers(name)
    starts, ends = text.count(start), text.count(end)
    if append and starts == ends == 0:
        return text.rstrip("\n") + "\n\n" + block(name, body, separator) + "\n"
    if starts != 1 or ends != 1 or text.index(start) > text.index(end):
        raise ValueError(
            f"{page} must hold {start} ... {end} once each, in that order; it holds the start marker {starts} "
            f"time(s) and the end marker {ends} time(s)" + (", the end first" if starts == ends == 1 else "")
        )
    before, rest = text.split(start, 1)
    return before + block(name, body, separator) + rest.split(end, 1)[1]
