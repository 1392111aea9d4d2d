"""Putting memrepo into an agent runtime: ``install claude-code``, ``uninstall claude-code``.
The work is the library's (:mod:`memrepo.agents.claude_code`): this module parses, calls, prints."""
from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Any

import typer

from memrepo import api
from memrepo.cli import call, params
from memrepo.cli.output import echo, out

app = typer.Typer()
install_app = typer.Typer(help="Install memrepo into an agent runtime (claude-code).", rich_markup_mode=None,
                          no_args_is_help=True, epilog=params.examples(
                              "memrepo install claude-code", "memrepo --vault ~/agent-memory install claude-code --user"))
uninstall_app = typer.Typer(help="Take memrepo out of an agent runtime (claude-code).", rich_markup_mode=None,
                            no_args_is_help=True, epilog=params.examples("memrepo uninstall claude-code"))
app.add_typer(install_app, name="install")
app.add_typer(uninstall_app, name="uninstall")
SCOPE = typer.Option(True, "--project/--user", help="Write the project's .claude/settings.json and .mcp.json "
                                                    "(default), or your user's ~/.claude/settings.json and ~/.claude.json.")


def program() -> list[str]:
    """The absolute command that runs this memrepo: its console script beside the Python running
    it, else that Python with ``-m memrepo``."""
    script = Path(sys.executable).with_name("memrepo")
    return [str(script.absolute())] if script.is_file() and os.access(script, os.X_OK) \
        else [str(Path(sys.executable).absolute()), "-m", "memrepo"]


def _report(change: Any, as_json: bool, verb: str) -> None:
    if as_json:
        out(change.as_dict(), True)
        return
    what = ", ".join(change.hooks) or "no hooks"
    lines = [f"{verb} for Claude Code ({change.scope}): hooks {what}; MCP server "
             f"{'memrepo' if change.server else 'none'}"]
    lines += [f"  wrote {path}" for path in change.changed] or ["  nothing to change"]
    echo("\n".join(lines))


@install_app.command("claude-code", epilog=params.examples(
    "memrepo install claude-code", "memrepo --vault ~/agent-memory install claude-code --user --json"))
def install_claude_code(project: bool = SCOPE, as_json: bool = params.JSON):
    """Write memrepo's hooks (SessionStart, UserPromptSubmit, PostCompact) and MCP server into
    Claude Code's settings, merged with what is there; running it again changes nothing."""
    with call.vault() as vault:
        root = vault.root
    change = api.install_claude_code(program=program(), vault=root, scope="project" if project else "user")
    _report(change, as_json, "installed")


@uninstall_app.command("claude-code", epilog=params.examples(
    "memrepo uninstall claude-code", "memrepo uninstall claude-code --user"))
def uninstall_claude_code(project: bool = SCOPE, as_json: bool = params.JSON):
    """Take out exactly the hooks and the MCP server 'memrepo install claude-code' put in."""
    change = api.uninstall_claude_code(scope="project" if project else "user")
    _report(change, as_json, "removed")
