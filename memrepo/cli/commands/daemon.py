"""The resident server's controls: daemon start, stop, status."""
from __future__ import annotations

import typer

from memrepo.cli import client, params
from memrepo.cli.output import echo, out
from memrepo.errors import UsageError

app = typer.Typer()
daemon_app = typer.Typer(help="The background server that answers search, recall, context and add warm "
                              "(started by those commands; MEMREPO_DAEMON=0 turns it off).",
                         rich_markup_mode=None, no_args_is_help=True,
                         epilog=params.examples("memrepo daemon status", "memrepo daemon stop"))
app.add_typer(daemon_app, name="daemon")


def _line(s: dict) -> str:
    env = s.get("environment") or {}
    flags = " ".join(f"{k}={v}" for k, v in (env.get("flags") or {}).items())
    where = "this install" if s.get("this_install") else "another install"
    return (f"pid {s['pid']}: {s['requests']} calls answered, idle {s['idle_seconds']:.0f} s (exits after "
            f"{s['idle_exit']:.0f} s idle), {len(s.get('vaults') or [])} vault(s) kept\n"
            f"  install {s.get('package')} ({where})\n"
            f"  environment {env.get('python', s.get('python'))}{' ' + flags if flags else ''}, "
            f"encodings {env.get('filesystem_encoding')}/{env.get('locale_encoding')}\n"
            f"  socket {s['socket']}")


@daemon_app.command("start", epilog=params.examples("memrepo daemon start --json"))
def daemon_start(as_json: bool = params.JSON):
    """Start the server for this installation now (search, recall, context and add also start it)."""
    if not client.enabled():
        raise UsageError(f"the background server is turned off ({client.ENV}=0)")
    path = client.start(wait=30.0)
    if path is None:
        raise UsageError("no background server can run here: its runtime folder is not a private folder of this "
                         f"user or its path is too long (set {client.RUNTIME_ENV})")
    found = client.ask("status", path)
    if as_json:
        out({"running": found is not None, **(found or {})}, True)
    else:
        echo("the server did not start; commands run in-process" if found is None
             else "running: " + _line({**found, "this_install": True}))


@daemon_app.command("stop", epilog=params.examples("memrepo daemon stop", "memrepo daemon stop --all"))
def daemon_stop(every_install: bool = typer.Option(False, "--all", help="Stop every server of this user, "
                                                                        "other installs' too."),
                as_json: bool = params.JSON):
    """Stop this installation's background servers (the next search starts one again)."""
    stopped = client.stop(every_install=every_install)
    out({"stopped": [s["pid"] for s in stopped]}, as_json,
        f"stopped {len(stopped)} server(s)" + (f": pid {', '.join(str(s['pid']) for s in stopped)}" if stopped else ""))


@daemon_app.command("status", epilog=params.examples("memrepo daemon status", "memrepo daemon status --json"))
def daemon_status(as_json: bool = params.JSON):
    """Every background server of this user: install, environment, calls answered, idle time.

    Asking is not a call: it does not keep a server from exiting when idle."""
    found = client.servers()
    path = client.socket_path()
    mine = next((s for s in found if s["socket"] == path), None)
    if as_json:
        out({"running": mine is not None, **(mine or {}), "servers": found}, True)
        return
    if not found:
        echo("not running" + ("" if client.enabled() else f" (turned off: {client.ENV}=0)"))
        return
    if mine is None:
        echo("not running for this install and environment; other servers of this user:")
    echo("\n".join(_line(s) for s in found))
