"""The one place a failure becomes what the user sees and an exit code.

Every command only raises; :func:`exit_code` turns what it raised into a message (one line on
stderr, or with ``--json`` an ``{"error": ...}`` object on stdout) and the exit code the
command line documents:

====================================  =====================================================
raised                                exit code
====================================  =====================================================
``memrepo.errors.MemrepoError``        its family's code (1 failed, 3 not found, 4 conflict,
                                      5 invalid, 75 busy; ``memrepo.errors.EXIT_CODES``)
a usage error of the parser           2 (an unknown option, a missing argument, a bad value)
``typer.Exit``                        the code it carries (a check that found problems: 1)
Ctrl-C, end of input at a prompt      130
``FileNotFoundError``                 3
the reader of stdout went away        1, quietly (``memrepo search ... | head``)
any other ``OSError``                 1
====================================  =====================================================

In hook mode (``--hook``: an agent runtime runs the command) every failure is one line on
stderr and exit 1, usage errors included: Claude Code reads exit 2 from a prompt hook as
"block the prompt", so a typo in a hook's settings would block every prompt.

Typer-free: git's hook entry point (:mod:`memrepo.cli.hook_entry`) uses it too.
"""
from __future__ import annotations

import errno
import json
import sys
from typing import Any

from memrepo.errors import MemrepoError

USAGE, INTERRUPTED, HOOK_FAILED = 2, 130, 1


def exit_code(error: BaseException, *, as_json: bool = False, hook: bool = False) -> int | None:
    """Report ``error`` and return its exit code; None for an error the command line does not
    know (a bug: the caller lets it rise with its traceback)."""
    if _is_exit(error):
        return int(getattr(error, "exit_code", 0))
    if isinstance(error, KeyboardInterrupt | EOFError) or type(error).__name__ == "Abort":
        if not as_json and not hook:
            print("aborted", file=sys.stderr)
        return INTERRUPTED
    if isinstance(error, OSError) and error.errno == errno.EPIPE:
        pacify_streams()
        return 1
    if hook and isinstance(error, MemrepoError | OSError) or hook and _is_usage(error):
        print(f"memrepo: {one_line(error)}", file=sys.stderr)
        return HOOK_FAILED
    if isinstance(error, MemrepoError):
        return report_error(error, as_json=as_json)
    if isinstance(error, OSError):
        return report_os_error(error, as_json=as_json)
    if _is_usage(error):
        return report_usage(error, as_json=as_json)
    return None


def _is_exit(error: BaseException) -> bool:
    """``typer.Exit`` (click's Exit), recognised without importing typer."""
    typer = sys.modules.get("typer")
    return typer is not None and isinstance(error, typer.Exit)


def _is_usage(error: BaseException) -> bool:
    """A usage error of the parser (click's UsageError family), without importing typer."""
    return hasattr(error, "format_message") and hasattr(error, "exit_code") and hasattr(error, "show")


def one_line(error: BaseException) -> str:
    """The error's message on one line (git's own words, a usage error's hint, run together)."""
    text = error.format_message() if _is_usage(error) else str(error)  # type: ignore[attr-defined]
    if isinstance(error, OSError) and not isinstance(error, MemrepoError):
        text = f"{error.strerror or error}{f': {error.filename}' if error.filename else ''}"
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


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
        print(f"error: {one_line(error)}", file=sys.stderr)
    return error.exit_code


def report_usage(error: BaseException, *, as_json: bool) -> int:
    """A usage error of the parser: its message with the command's usage, exit 2."""
    code = int(getattr(error, "exit_code", USAGE))
    if as_json:
        message = error.format_message()  # type: ignore[attr-defined]
        if type(error).__name__ == "NoArgsIsHelpError":  # the message would be the whole help text
            message = "no command given; 'memrepo --help' lists the commands"
        emit_json(error_payload("usage" if code == USAGE else "failed", message))
    else:
        error.show()  # type: ignore[attr-defined]
    return code


def report_os_error(error: OSError, *, as_json: bool) -> int:
    """A file the user named (or the disk) failed us: 3 when it is missing, else 1."""
    missing = isinstance(error, FileNotFoundError)
    if as_json:
        emit_json(error_payload("not_found" if missing else "failed", one_line(error)))
    else:
        print(f"error: {one_line(error)}", file=sys.stderr)
    return 3 if missing else 1


def emit_json(data: Any) -> None:
    sys.stdout.write(json.dumps(data, ensure_ascii=False) + "\n")
    sys.stdout.flush()


def pacify_streams() -> None:
    """The reader of our output went away (``| head``): as click does, stop quietly, and let
    the interpreter's last flush fail silently too."""
    sys.stdout = _Pacified(sys.stdout)
    sys.stderr = _Pacified(sys.stderr)


class _Pacified:
    """A stream whose flush no longer fails once its reader is gone (click's PacifyFlushWrapper)."""

    def __init__(self, stream):
        self.stream = stream

    def flush(self) -> None:
        try:
            self.stream.flush()
        except OSError:
            pass

    def __getattr__(self, name):
        return getattr(self.stream, name)
