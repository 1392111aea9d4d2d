"""What the command line prints: errors (text or JSON) and the global options' hoisting.

One place turns every failure into a message and an exit code (``memrepo.errors`` names the
codes), so a command only raises; ``--json`` makes the error a JSON object on stdout instead.
"""
from __future__ import annotations

import json
import sys
from typing import Any

from memrepo.errors import MemrepoError


def hoist_globals(args: list[str], valued: tuple[str, ...]) -> tuple[bool, list[str], list[str]]:
    """Global options wherever they stand (before ``--``), as in git and gh: returns whether
    ``--json`` was given, the ``valued`` options (``--vault X``, ``--vault=X``) to put before
    the sub-command, and the remaining arguments."""
    as_json, front, rest = False, [], []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "--":
            rest += args[i:]
            break
        if arg == "--json":
            as_json = True
        elif arg in valued and i + 1 < len(args):
            front += [arg, args[i + 1]]
            i += 1
        elif arg.startswith(tuple(f"{v}=" for v in valued)):
            front.append(arg)
        else:
            rest.append(arg)
        i += 1
    return as_json, front, rest


def error_payload(code: str, message: str, problems: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "problems": problems or []}}


def report_error(error: MemrepoError, *, as_json: bool) -> int:
    """Print ``error`` (one line, or one ``path:field: message`` line per problem) and return
    its exit code; with ``as_json`` the error object goes to stdout and nothing to stderr."""
    problems = list(getattr(error, "problems", ()) or ())
    message = str(error)
    if as_json:
        if problems:  # the message is the summary line; the problems are listed apart
            lines = message.splitlines()
            message = lines[-1] if len(lines) > len(problems) else f"{len(problems)} problem(s)"
        emit_json(error_payload(error.code, message, [p.as_dict() for p in problems]))
    elif problems:
        for line in message.splitlines():
            print(line, file=sys.stderr)
    else:  # one line, even when git's own words (a GitError) run over several
        print(f"error: {' '.join(line.strip() for line in message.splitlines() if line.strip())}", file=sys.stderr)
    return error.exit_code


def report_usage(error: Exception, *, as_json: bool) -> int:
    """A command-line usage error (typer's parsing): exit 2 (or the error's own code)."""
    code = int(getattr(error, "exit_code", 2))
    if as_json:
        message = error.format_message()  # type: ignore[attr-defined]
        if type(error).__name__ == "NoArgsIsHelpError":  # the message would be the whole help text
            message = "no command given; 'memrepo --help' lists the commands"
        emit_json(error_payload("usage" if code == 2 else "failed", message))
    else:
        error.show()  # type: ignore[attr-defined]
    return code


def report_os_error(error: OSError, *, as_json: bool) -> int:
    """A file the user named (or the disk) failed us: 3 when it is missing, else 1."""
    missing = isinstance(error, FileNotFoundError)
    message = f"{error.strerror or error}{f': {error.filename}' if error.filename else ''}"
    if as_json:
        emit_json(error_payload("not_found" if missing else "failed", message))
    else:
        print(f"error: {message}", file=sys.stderr)
    return 3 if missing else 1


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


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    sys.stdout.flush()


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
    """Aligned columns under a header, measured in terminal cells; on a terminal the last
    column is cut with ``…`` to fit its width (piped output keeps every character)."""
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
        lines.append(f"{line}  {last}".rstrip() if line else last)
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
