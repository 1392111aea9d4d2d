"""Parameters several commands share, how a command's help ends, and the checks every
command's options get (owner of typer with the command modules)."""
from __future__ import annotations

from typing import Any

import typer

from memrepo import model

JSON = typer.Option(False, "--json", help="Print JSON instead of text (errors too: {\"error\": ...} on stdout).")
NOW = typer.Option(None, "--now", help="Pretend today is YYYY-MM-DD (reproducible runs).")
BUDGET = typer.Option(4000, "--budget", min=1, help="Most characters to print (never exceeded).")
HOOK = typer.Option(False, "--hook", help="Read an agent hook's JSON payload on stdin ({prompt, session_id, ...}); "
                                          "every failure is one line on stderr and exit 1.")


def examples(*lines: str) -> str:
    """The end of a command's --help: one or two examples (a test requires them of every command)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


# An option whose parameter has one of these names is checked, in every command: enum values
# against the schema (with "did you mean"), dates as a date or a date-time with a zone.
ENUM_PARAMS = ("layer", "kind", "status", "source")
OTHER_CHOICES = {"intent": model.INTENTS, "mode": model.MERGE_MODES}  # option values that are not schema fields
DATE_PARAMS = ("since", "until", "expires", "now")
CHECKED_PARAMS = (*ENUM_PARAMS, *OTHER_CHOICES, *DATE_PARAMS)


def checked_option(name: str, value: Any) -> Any:
    """``value`` of option ``name`` once checked (a UsageError when it is not accepted);
    ``--expires`` becomes the date-time the front matter keeps."""
    checked = None
    for item in value if isinstance(value, list | tuple) else [value]:
        if name in DATE_PARAMS:
            checked = model.parse_when(name, item)
        else:
            model.check_choice(name, item, OTHER_CHOICES.get(name))
    if name == "expires" and checked is not None:
        return checked.isoformat()
    return value


def strict(command: Any) -> None:
    """Give ``command``'s enum and date options their check (a bad value is a usage error, 2)."""
    for param in command.params:
        if param.name in CHECKED_PARAMS and not getattr(param.callback, "memrepo_checked", False):
            param.callback = _chained(param.callback)


def _chained(before):
    def callback(ctx, param, value):
        value = before(ctx, param, value) if before else value
        return checked_option(param.name, value)  # memrepo's UsageError: one line, exit 2
    callback.memrepo_checked = True  # type: ignore[attr-defined]
    return callback
