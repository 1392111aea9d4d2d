"""The console entry point: the per-turn commands without typer's start-up, typer for the rest.

An agent runs ``memrepo add``, ``search``, ``recall`` and ``context`` on every turn, and git runs
``memrepo hook pre-commit`` on every commit; importing typer and building its commands costs
more than the work of such a call. For those commands this module parses the command line
itself, from the option table typer's own declarations generate (:mod:`memrepo.cli.spec`,
``make cli-spec``; a test fails when it no longer matches them), and calls the same bodies the
typer commands call (:mod:`memrepo.cli.commands`). Whatever it does not recognise — ``--help``,
``--version``, an unknown or malformed option, a bad value, a missing argument, ``--``, any other
command — goes to the typer app unchanged, so every message, usage error and exit code comes
from one place. ``MEMREPO_CLI_FAST=0`` sends every call to typer.

``search``, ``recall``, ``context`` and ``add`` are first offered to the background server
(:mod:`memrepo.cli.daemon`), which runs this same :func:`run` warm; without one they run here
and then start one.
"""
from __future__ import annotations

import os
import sys

from memrepo.cli.spec import COMMANDS

_GLOBAL_VALUED = tuple(p["opts"][0] for p in COMMANDS[""] if p["kind"] == "option" and not p["flag"])
_INVALID = object()
_DAEMON_COMMANDS = frozenset(("search", "recall", "context", "add"))  # memrepo.cli.daemon.COMMANDS, without importing it


def main(argv: list[str] | None = None) -> int:
    """Console entry point (``memrepo``): the fast path when it applies, else the typer app."""
    argv = sys.argv[1:] if argv is None else list(argv)
    if os.environ.get("MEMREPO_CLI_FAST", "1") != "0":
        served = None
        if _DAEMON_COMMANDS.intersection(argv):
            from memrepo.cli import daemon
            command = daemon.eligible(argv)
            if command:
                if command in daemon.WRITES and "--call-id" not in argv and "--file" not in argv:
                    import uuid
                    argv = [*argv, "--call-id", uuid.uuid4().hex]   # the server's write is named by it
                served = daemon.call(argv, command)
                if isinstance(served, int):
                    return served
                if served == daemon.STOPPED:
                    return _settle(argv)
        code = run(argv)
        if code is not None:
            if served == "absent":
                daemon.start()
            return code
    from memrepo.cli.app import main as typer_main
    return typer_main(argv)


def _settle(argv: list[str]) -> int:
    """The server died during an add: report the write it made, or that nothing was written."""
    from memrepo.cli import commands, output
    from memrepo.errors import MemrepoError
    call = parse(argv)
    if call is None:
        commands.echo(commands.STOPPED_UNWRITTEN, err=True)
        return 75
    _name, glob, params, as_json = call
    try:
        return commands.settle_add(vault_path=glob["vault"], call_id=params["call_id"], push=params["push"],
                                   remote=params["remote"], as_json=as_json or glob["as_json"])
    except MemrepoError as e:
        return output.report_error(e, as_json=as_json)


def run(argv: list[str]) -> int | None:
    """Run ``argv`` on the fast path and return the exit code, or None to leave it to typer."""
    call = parse(argv)
    if call is None:
        return None
    name, glob, params, as_json = call
    from memrepo.cli import commands, output
    from memrepo.errors import MemrepoError
    state = commands.state
    state.json, state.vault_path, state.agent = as_json, None, None
    output.show_warnings()
    try:
        commands.set_globals(glob["vault"], glob["agent"], glob["as_json"])
        rv = getattr(commands, name)(**params)
    except commands.BadParameter:
        return None  # raised before the command did anything: typer shows it with the usage
    except MemrepoError as e:
        return output.report_error(e, as_json=state.json)
    except KeyboardInterrupt:
        return 130
    except EOFError:
        commands.echo(err=True)
        if not state.json:
            commands.echo("aborted", err=True)
        return 130
    except OSError as e:
        import errno
        if e.errno == errno.EPIPE:  # the reader went away (| head): as click does, stop quietly
            sys.stdout = _Pacified(sys.stdout)
            sys.stderr = _Pacified(sys.stderr)
            return 1
        return output.report_os_error(e, as_json=state.json)
    return rv if isinstance(rv, int) else 0


def parse(argv: list[str]):
    """(command body name, global options, the body's keyword arguments, --json) for a command
    line the fast path takes as typer would; None for anything else."""
    if "--" in argv or "--help" in argv or any(k.startswith("_MEMREPO_COMPLETE") for k in os.environ):
        return None
    from memrepo.cli.output import hoist_globals
    as_json, front, rest = hoist_globals(argv, _GLOBAL_VALUED)
    path = next((p for p in COMMANDS if p and rest[:len(p.split())] == p.split()), None)
    if path is None:
        return None
    glob = _options(COMMANDS[""], front)
    params = _options(COMMANDS[path], rest[len(path.split()):])
    if glob is None or params is None:
        return None
    if as_json and "as_json" in params:
        params["as_json"] = True
    return path.replace(" ", "_").replace("-", "_"), glob, params, as_json


def _options(spec: list[dict], args: list[str]) -> dict | None:
    """The values of ``spec``'s parameters given ``args`` (defaults and environment variables
    filled in, enum and date options checked), or None when typer should judge ``args``."""
    by_opt = {o: p for p in spec if p["kind"] == "option" for o in p["opts"] + p["secondary"]}
    given: dict[str, object] = {}
    positional: list[str] = []
    i = 0
    while i < len(args):
        arg = args[i]
        if not arg.startswith("-") or arg == "-":
            positional.append(arg)
            i += 1
            continue
        opt, eq, text = arg.partition("=") if arg.startswith("--") else (arg, "", "")
        p = by_opt.get(opt)
        if p is None or p["acts"]:
            return None
        if p["flag"]:
            if eq:
                return None
            value: object = opt not in p["secondary"]
        else:
            if not eq:
                if i + 1 >= len(args):
                    return None
                i += 1
                text = args[i]
            value = _convert(p, text)
            if value is _INVALID:
                return None
        if p["multiple"]:
            given.setdefault(p["name"], []).append(value)  # type: ignore[union-attr]
        else:
            given[p["name"]] = value
        i += 1
    arguments = [p for p in spec if p["kind"] == "argument"]
    if len(positional) > len(arguments):
        return None
    for p, text in zip(arguments, positional):
        given[p["name"]] = _convert(p, text)
        if given[p["name"]] is _INVALID:
            return None
    values = {}
    for p in spec:
        if p["name"] in given:
            values[p["name"]] = given[p["name"]]
            continue
        env = os.environ.get(p["envvar"]) if p["envvar"] else None
        if env == "" or (p["required"] and env is None):
            return None
        values[p["name"]] = _convert(p, env) if env is not None else (
            list(p["default"]) if p["multiple"] else p["default"])
        if values[p["name"]] is _INVALID:
            return None
    return _checked(values)


def _convert(p: dict, text: str) -> object:
    """``text`` as the parameter's type, or _INVALID when typer would refuse it."""
    kind = p["type"]
    try:
        if kind == "str":
            return text
        if kind == "int":
            value = int(text)
            return _INVALID if p["min"] is not None and value < p["min"] else value
        if kind == "float":
            return float(text)
        if kind == "path":  # typer's Path: refused only when it exists and cannot be read
            from pathlib import Path
            try:
                os.stat(text)
            except OSError:
                return Path(text)
            return Path(text) if os.access(text, os.R_OK) else _INVALID
    except ValueError:
        return _INVALID
    return _INVALID


def _checked(values: dict) -> dict | None:
    """The enum and date options checked as the typer commands check them; a refused value
    is left to typer, which reports it."""
    from memrepo.cli.commands import CHECKED_PARAMS, checked_option
    from memrepo.errors import MemrepoError
    for name in values:
        if name in CHECKED_PARAMS:
            try:
                values[name] = checked_option(name, values[name])
            except MemrepoError:
                return None
    return values


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
