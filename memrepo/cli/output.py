"""What the command line prints: a command's result (text or ``--json``), tables for people,
progress bars, memrepo's warnings. Errors are :mod:`memrepo.cli.failures`'.

Output goes through :func:`echo`, which writes and flushes as ``typer.echo`` does, so stdout
and stderr keep their order whoever reads them.
"""
from __future__ import annotations

import json
import sys
from typing import Any


def echo(text: str = "", *, err: bool = False, nl: bool = True) -> None:
    """Write ``text`` and flush (stdout, or stderr with ``err``)."""
    stream = sys.stderr if err else sys.stdout
    if stream is None:
        return
    stream.write(text + ("\n" if nl else ""))
    stream.flush()


def out(data: Any, as_json: bool, text: str | None = None) -> None:
    """A command's result: ``data`` as one JSON line with ``--json``, else ``text`` (if any)."""
    if as_json:
        echo(json.dumps(data, ensure_ascii=False, indent=None))
    elif text is not None:
        echo(text)


def progress(label: str):
    """A progress callback drawing a bar on a terminal (stderr), None elsewhere."""
    if not sys.stderr.isatty():
        return None

    def show(done: int, total: int) -> None:
        width = 30
        filled = int(width * done / max(total, 1))
        sys.stderr.write(f"\r{label} [{'#' * filled}{'.' * (width - filled)}] {done}/{total}")
        if done >= total:
            sys.stderr.write("\n")
        sys.stderr.flush()
    return show


def show_warnings() -> None:
    """Print memrepo's own warnings (an unknown config key, ...) as one ``warning:`` line each
    on stderr, once per message; other warnings go where Python sends them."""
    import warnings

    from memrepo.errors import MemrepoWarning
    seen: set[str] = set()
    original = getattr(warnings.showwarning, "memrepo_original", warnings.showwarning)

    def show(message, category, filename, lineno, file=None, line=None):
        if not issubclass(category, MemrepoWarning):
            return original(message, category, filename, lineno, file, line)
        if str(message) not in seen:
            seen.add(str(message))
            print(f"warning: {message}", file=sys.stderr)
    show.memrepo_original = original  # type: ignore[attr-defined]
    warnings.showwarning = show
    warnings.simplefilter("always", MemrepoWarning)


# ------------------------------------------------------------------ output for people

def on_terminal() -> bool:
    return sys.stdout.isatty()


def colour_allowed() -> bool:
    """Emphasis only on a terminal, and never with NO_COLOR set (https://no-color.org)."""
    import os
    return on_terminal() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb"


def display_width(text: str) -> int:
    """Terminal cells ``text`` takes: wide (CJK) characters take two, combining marks none."""
    import unicodedata
    width = 0
    for ch in text:
        if unicodedata.combining(ch):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def truncate(text: str, cells: int) -> str:
    """``text`` cut to at most ``cells`` terminal cells, ending with ``…`` when cut."""
    if display_width(text) <= cells:
        return text
    import unicodedata
    out, used = [], 0
    for ch in text:
        w = 0 if unicodedata.combining(ch) else (2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1)
        if used + w > cells - 1:
            break
        out.append(ch)
        used += w
    return "".join(out) + "…"


def pad(text: str, cells: int) -> str:
    return text + " " * max(cells - display_width(text), 0)


def table(headers: list[str], rows: list[list[str]], *, width: int | None = None) -> str:
    """Aligned columns under a header, measured in terminal cells; on a terminal every line,
    the header included, is cut with ``…`` to its width, the last column first (piped output
    keeps every character)."""
    import shutil
    cells = [[str(c).replace("\n", " ") for c in row] for row in rows]
    widths = [max([display_width(headers[i])] + [display_width(r[i]) for r in cells]) for i in range(len(headers))]
    if width is None and on_terminal():
        width = shutil.get_terminal_size((100, 24)).columns
    lines = []
    for row in [headers, *cells]:
        line = "  ".join(pad(c, widths[i]) for i, c in enumerate(row[:-1]))
        last = row[-1]
        if width is not None:
            room = max(width - display_width(line) - (2 if line else 0), 8)
            last = truncate(last, room)
        joined = f"{line}  {last}".rstrip() if line else last
        lines.append(truncate(joined, width) if width is not None else joined)
    if colour_allowed():
        lines[0] = f"\033[1m{lines[0]}\033[0m"
    return "\n".join(lines)


_MARKUP = None


def plain(text: str) -> str:
    """Markdown markup taken out of a snippet: headings, emphasis, code ticks, links, list bullets."""
    global _MARKUP
    import re
    if _MARKUP is None:
        _MARKUP = [(re.compile(r"\[([^\]]*)\]\([^)]*\)"), r"\1"), (re.compile(r"\[\[([^\]|]*)(\|[^\]]*)?\]\]"), r"\1"),
                   (re.compile(r"(^|\s)#{1,6}\s+"), r"\1"), (re.compile(r"(\*\*|__|\*|`+|~~)"), ""),
                   (re.compile(r"(^|\s)[-*+>]\s+"), r"\1"), (re.compile(r"\s+"), " ")]
    for pattern, repl in _MARKUP:
        text = pattern.sub(repl, text)
    return text.strip()
