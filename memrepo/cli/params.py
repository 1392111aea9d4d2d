"""Parameters several commands share, how a command's help ends, and the checks every
command's options get (owner of typer with the command modules)."""
from __future__ import annotations

import functools
import inspect
import typing
from typing import Any, Callable, List, Optional

import typer

from memrepo import model

JSON = typer.Option(False, "--json", help="Print JSON instead of text (errors too: {\"error\": ...} on stdout).")
REQUEST_ID = typer.Option(None, "--request-id", help="Idempotency key (a job or turn id): run again with the same key, "
                          "the first write's result is returned and nothing is written twice.")
NOW = typer.Option(None, "--now", help="Pretend today is YYYY-MM-DD (reproducible runs).")
BUDGET = typer.Option(4000, "--budget", min=1, help="Most characters to print (never exceeded).")
HOOK = typer.Option(False, "--hook", help="Read an agent hook's JSON payload on stdin ({prompt, session_id, ...}); "
                                          "every failure is one line on stderr and exit 1.")


def examples(*lines: str) -> str:
    """The end of a command's --help: one or two examples (a test requires them of every command)."""
    return "Examples:\n\n\b\n" + "\n".join(f"  {line}" for line in lines)


def takes_fields(writer: str) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """Give a command the options of the memory fields ``writer``'s callers give (the field
    table, ``memrepo.model.FIELDS``), first in its --help; it receives them as ``fields``, a
    dict by field name, and ``given``, the options given on the line (``--tag``, ...)."""
    def decorate(command: Callable[..., Any]) -> Callable[..., Any]:
        own = inspect.signature(command).parameters
        hints = typing.get_type_hints(command)
        table = model.given_by(writer)

        @functools.wraps(command)
        def with_fields(**options: Any) -> Any:
            fields = {f.name: options.pop(f.name) for f in table}
            given = [f.flag for f in table if fields[f.name] not in (None, [])]
            return command(fields=fields, given=given, **options)

        kept = [p.replace(kind=inspect.Parameter.KEYWORD_ONLY, annotation=hints.get(name, p.annotation))
                for name, p in own.items() if name not in ("fields", "given")]
        with_fields.__signature__ = inspect.Signature([*map(_field_parameter, table), *kept])  # type: ignore[attr-defined]
        with_fields.__annotations__ = {}
        return with_fields
    return decorate


def _field_parameter(f: model.Field) -> inspect.Parameter:
    """A field's command-line option: repeatable for a list, bounded for a number."""
    if f.many:
        annotation: Any = List[str]
        option = typer.Option([], f.flag, help=f.help)
    elif f.type == "number":
        annotation = Optional[float]
        option = typer.Option(None, f.flag, min=f.minimum, max=f.maximum, help=f.help)
    else:
        annotation = Optional[str]
        option = typer.Option(None, f.flag, help=f.help)
    return inspect.Parameter(f.name, inspect.Parameter.KEYWORD_ONLY, default=option, annotation=annotation)


# An option whose parameter has one of these names is checked, in every command: enum values
# against the schema (with "did you mean"), dates as a date or a date-time with a zone.
ENUM_PARAMS = tuple(model.CHOICES)
OTHER_CHOICES = {"intent": model.INTENTS, "mode": model.MERGE_MODES}  # option values that are not schema fields
DATE_PARAMS = (*(f.name for f in model.FIELDS if f.type == "time"), "since", "until", "now")
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
