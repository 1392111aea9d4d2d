"""Claude Code's side of the command line: ``flush --hook`` (compaction), ``install claude-code``
and ``uninstall claude-code``. The work is the library's (:mod:`memrepo.agents.compaction`,
:mod:`memrepo.agents.claude_code`); this module parses, calls, prints.
"""
from __future__ import annotations

import typer

from memrepo.cli import commands


def flush_hook(show_prompt: bool, lang: str, as_json: bool) -> None:
    """``flush --hook``: the payload of a Claude Code hook on stdin. With ``--prompt`` (a
    SessionStart hook) print the compaction instructions, which Claude Code adds to the context
    the compactor reads; without it (PostCompact) file the compaction summary. Silent when there
    is nothing to do; a failure is one line on stderr and exit 1 (never 2, which would block)."""
    from memrepo.agents import compaction
    from memrepo.agents.transcript import hook_payload
    from memrepo.errors import MemrepoError, VaultNotFound
    try:
        payload = hook_payload(commands.stdin_text())
        if show_prompt:
            try:
                vault = commands.vault()
            except VaultNotFound:
                vault = None
            commands.echo(compaction.instructions(lang, vault), nl=False)
            return
        with commands.vault() as vault:
            result = compaction.file_from_hook(vault, payload, author=commands.state.agent)
    except MemrepoError as e:
        commands.echo(f"memrepo: {' '.join(str(e).split())}", err=True)
        raise typer.Exit(1) from None
    if as_json and not result.silent:
        commands.out(result.as_dict(), True)
