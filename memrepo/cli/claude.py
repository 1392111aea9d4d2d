"""Claude Code's side of the command line: ``flush --hook`` (compaction), ``install claude-code``
and ``uninstall claude-code``. The work is the library's (:mod:`memrepo.agents.compaction`,
:mod:`memrepo.agents.claude_code`); this module parses, calls, prints.
"""
from __future__ import annotations

import os

import typer

from memrepo.cli import commands


def flush_hook(show_prompt: bool, lang: str, as_json: bool) -> None:
    """``flush --hook``: the payload of a Claude Code hook on stdin. With ``--prompt`` (a
    SessionStart hook) print the compaction instructions, which Claude Code adds to the context
    the compactor reads; without it (PostCompact) file the compaction summary. Silent when there
    is nothing to do; a failure is one line on stderr and exit 1 (never 2, which would block)."""
    from memrepo import api
    from memrepo.errors import MemrepoError, VaultNotFound
    try:
        payload = api.hook_payload(commands.stdin_text())
        if show_prompt:
            try:
                vault = commands.vault()
            except VaultNotFound:
                vault = None
            commands.echo(api.compaction_instructions(lang, vault), nl=False)
            return
        with commands.vault() as vault:
            result = api.file_compaction(vault, payload, author=commands.state.agent)
    except MemrepoError as e:
        commands.echo(f"memrepo: {' '.join(str(e).split())}", err=True)
        raise typer.Exit(1) from None
    if as_json and not result.silent:
        commands.out(result.as_dict(), True)


install_app = typer.Typer(help="Install memrepo into an agent runtime (claude-code).", rich_markup_mode=None,
                          no_args_is_help=True)
uninstall_app = typer.Typer(help="Take memrepo out of an agent runtime (claude-code).", rich_markup_mode=None,
                            no_args_is_help=True)
ScopeOpt = typer.Option(True, "--project/--user", help="Write the project's .claude/settings.json and .mcp.json "
                                                       "(default), or your user's ~/.claude/settings.json and ~/.claude.json.")
JsonOpt = typer.Option(False, "--json", help="Print JSON instead of text (errors too: {\"error\": ...} on stdout).")


def program() -> list[str]:
    """The absolute command that runs this memrepo: its console script beside the Python running
    it, else that Python with ``-m memrepo``."""
    import sys
    from pathlib import Path
    script = Path(sys.executable).with_name("memrepo")
    return [str(script.absolute())] if script.is_file() and os.access(script, os.X_OK) \
        else [str(Path(sys.executable).absolute()), "-m", "memrepo"]


def _report(change, as_json: bool, verb: str) -> None:
    if as_json:
        commands.out(change.as_dict(), True)
        return
    what = ", ".join(change.hooks) or "no hooks"
    lines = [f"{verb} for Claude Code ({change.scope}): hooks {what}; MCP server "
             f"{'memrepo' if change.server else 'none'}"]
    lines += [f"  wrote {path}" for path in change.changed] or ["  nothing to change"]
    commands.echo("\n".join(lines))


@install_app.command("claude-code")
def install_claude_code(project: bool = ScopeOpt, as_json: bool = JsonOpt):
    """Write memrepo's hooks (SessionStart, UserPromptSubmit, PostCompact) and MCP server into
    Claude Code's settings, merged with what is there; running it again changes nothing."""
    from memrepo import api
    with commands.vault() as vault:
        root = vault.root
    change = api.install_claude_code(program=program(), vault=root, scope="project" if project else "user")
    _report(change, as_json, "installed")


@uninstall_app.command("claude-code")
def uninstall_claude_code(project: bool = ScopeOpt, as_json: bool = JsonOpt):
    """Take out exactly the hooks and the MCP server 'memrepo install claude-code' put in."""
    from memrepo import api
    change = api.uninstall_claude_code(scope="project" if project else "user")
    _report(change, as_json, "removed")


def register(app: typer.Typer) -> None:
    """Add ``install`` and ``uninstall`` to the command line."""
    app.add_typer(install_app, name="install")
    app.add_typer(uninstall_app, name="uninstall")


def import_from(source: str, path, *, author, skip_invalid: bool, no_index: bool, as_json: bool, catch_up) -> None:
    """``import --from claude-code [DIR]`` and ``import --from mcp-memory FILE``."""
    from memrepo import api
    from memrepo.errors import UsageError
    if source == "mcp-memory" and path is None:
        raise UsageError("give the knowledge graph file: memrepo import --from mcp-memory memory.jsonl")
    with commands.vault() as vault:
        if source == "claude-code":
            result = api.import_claude_code(vault, path, author=author, skip_invalid=skip_invalid)
        else:
            result = api.import_mcp_memory(vault, path, author=author, skip_invalid=skip_invalid)
        ready = catch_up(vault) if result.commit and not no_index else {}
    for p in result.skipped:
        commands.echo(f"skipped {p}", err=True)
    commands.out({**result.as_dict(), **ready}, as_json,
                 f"imported {len(result.imported)} new and {len(result.updated)} updated memories from {source} "
                 f"({result.unchanged} already imported)" + (f" -> commit {result.commit[:12]}" if result.commit else ""))
    raise typer.Exit(130 if ready.get("interrupted") else 0)
