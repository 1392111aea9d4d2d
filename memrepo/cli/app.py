"""The ``memrepo`` typer app: the command groups, the global options, and :func:`main`.

Each command group is one module under ``memrepo/cli/commands/`` with its own ``typer.Typer``;
:data:`GROUPS` lists them, so a new group is one module plus one name here. A command parses,
calls one function of :mod:`memrepo.api` and renders; :func:`main` turns whatever it raised into
a message and an exit code (:mod:`memrepo.cli.failures`). Typer builds only the command a line
names (building all of them would cost every agent turn ~10 ms).
"""
from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Sequence
from typing import Any, Optional

import typer
from typer.core import TyperGroup

from memrepo.cli import call, failures, options, output, params

GROUPS = ("vault", "review", "search", "lifecycle", "agents", "team", "policy", "check", "install", "ui", "daemon",
          "hooks")  # --help order

EXIT_CODES_HELP = (
    "Exit codes: 0 ok; 1 a check found problems (validate, hooks), a recall check regressed (check run) or git "
    "failed; 2 usage error; "
    "3 not found; 4 conflict (stale proposal, already applied); 5 invalid data "
    "(a memory, import line or file); 75 busy, nothing written, retry later (lock wait: lock_timeout in config.toml "
    "or MEMREPO_LOCK_TIMEOUT; --request-id makes a retry safe); 130 interrupted. Global options (--vault, --agent, --json) may stand "
    "before or after the command; with --json an error is {\"error\": {\"code\", \"message\", \"problems\"}} "
    "on stdout. With --hook every failure is one line on stderr and exit 1."
)

# Commands without --json, and why (a test requires --json of every other command).
NO_JSON = {"mcp": "a stdio server: it speaks JSON-RPC itself", "ui": "a web server: it serves pages"}


def _show_version(value: bool) -> None:
    if value:
        from memrepo import __version__
        typer.echo(f"memrepo {__version__}")
        raise typer.Exit(0)


def _globals_callback(**given: Any) -> None:
    """The root command: what the global options mean for every command."""
    call.set_globals(given["vault"], given["agent"], given["as_json"])


def _global_parameters() -> list[inspect.Parameter]:
    """The root command's parameters, from the one table of global options."""
    found = []
    for flag, option in options.GLOBAL_OPTIONS.items():
        default = None if option.takes_value else False
        annotation = Optional[str] if option.takes_value else bool
        found.append(inspect.Parameter(option.name, inspect.Parameter.KEYWORD_ONLY, annotation=annotation,
                                       default=typer.Option(default, flag, envvar=option.envvar, help=option.help)))
    found.append(inspect.Parameter("version", inspect.Parameter.KEYWORD_ONLY, annotation=bool, default=typer.Option(
        False, "--version", is_eager=True, callback=_show_version, help="Print memrepo's version and exit.")))
    return found


_globals_callback.__signature__ = inspect.Signature(_global_parameters())  # type: ignore[attr-defined]

class _Root(TyperGroup):
    """The app as typer (and ``typer.testing.CliRunner``) runs it: through :func:`main`."""

    def main(self, args: Sequence[str] | None = None, prog_name: str | None = None, complete_var: str | None = None,
             standalone_mode: bool = True, windows_expand_args: bool = True, **extra: Any) -> Any:
        code = main(list(sys.argv[1:] if args is None else args))
        if standalone_mode:
            sys.exit(code)
        return code


_HELP = "memrepo: git-backed long-term memory for AI agents and the people who supervise them."
app = typer.Typer(cls=_Root, add_completion=True, no_args_is_help=True, rich_markup_mode=None, help=_HELP,
                  epilog=EXIT_CODES_HELP)
app.callback()(_globals_callback)
for _name in GROUPS:
    _group = importlib.import_module(f"memrepo.cli.commands.{_name}").app
    app.registered_commands += _group.registered_commands
    app.registered_groups += _group.registered_groups


def _named(name: str | None) -> typer.Typer:
    """The app with only the command or group ``name`` (with all of them when none matches:
    for --help, a typo or shell completion), to run in this process."""
    commands = [c for c in app.registered_commands
                if (c.name or (c.callback.__name__ if c.callback else "").replace("_", "-")) == name]
    groups = [g for g in app.registered_groups if g.name == name]
    whole = (not commands and not groups) or any(k.startswith("_MEMREPO_COMPLETE") for k in os.environ)
    found = typer.Typer(add_completion=whole, no_args_is_help=True, rich_markup_mode=None, help=_HELP,
                        epilog=EXIT_CODES_HELP)
    found.registered_callback = app.registered_callback
    if whole:
        found.registered_commands, found.registered_groups = app.registered_commands, app.registered_groups
    else:
        found.registered_commands, found.registered_groups = commands, groups
    return found


def command_for(name: str | None) -> Any:
    """The click command of the app holding ``name`` (see :func:`_named`)."""
    return typer.main.get_command(_named(name))


def _resolve(group: Any, rest: list[str]) -> tuple[int, Any]:
    """Where the command path ends in ``rest`` and the click command it names (``group`` if none)."""
    end, command = 0, group
    for i, arg in enumerate(rest):
        if arg.startswith("-"):
            continue
        found = getattr(command, "commands", {}).get(arg)
        if found is None:
            break
        end, command = i + 1, found
        if not hasattr(found, "commands"):
            break
    return end, command


def main(argv: list[str] | None = None) -> int:
    """Run one command line in this process and return its exit code; every failure is
    reported as :mod:`memrepo.cli.failures` says (the resident server runs calls through here too)."""
    as_json, front, rest = options.hoist_globals(sys.argv[1:] if argv is None else list(argv))
    hook = "--hook" in rest[:rest.index("--")] if "--" in rest else "--hook" in rest
    call.begin(as_json=as_json, hook=hook)
    root = command_for(options.command_of(rest))
    end, command = _resolve(root, rest)
    takes_json = False
    if command is not root:
        params.strict(command)
        takes_json = any("--json" in getattr(p, "opts", ()) for p in command.params)
    args = front + rest[:end] + (["--json"] if as_json and takes_json else []) + rest[end:]
    output.show_warnings()
    try:
        result = root.main(args=args, prog_name="memrepo", standalone_mode=False)
    except BaseException as e:  # noqa: BLE001 — the one map from a failure to its exit code
        code = failures.exit_code(e, as_json=call.state.json, hook=hook)
        if code is None:
            raise
        return code
    return result if isinstance(result, int) else 0


