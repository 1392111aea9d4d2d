"""One command-line call: its global options, the vault it opens, its standard input.

The resident server answers many calls in one process, so nothing here outlives a call but
the vaults the server keeps open (``state.vaults``); everything else is set again by the
root command of each call.
"""
from __future__ import annotations

import sys
from contextlib import AbstractContextManager
from typing import Any

from memrepo import api
from memrepo.errors import UsageError


class State:
    """The global options of this call (``--vault``, ``--agent``, ``--json``)."""

    vault_path: str | None = None
    agent: str | None = None
    json: bool = False
    hook: bool = False  # an agent runtime runs the command (--hook): every failure exits 1
    vaults: Any = None  # the resident server's kept vaults (memrepo.cli.server.Vaults); else opened per call


state = State()


def begin(*, as_json: bool, hook: bool) -> None:
    """Forget the previous call's options (the server runs one call after another)."""
    state.vault_path, state.agent, state.json, state.hook = None, None, as_json, hook


def set_globals(vault: str | None, agent: str | None, as_json: bool) -> None:
    """What the global options mean, for every command (the root command's callback)."""
    state.vault_path = vault
    state.json = state.json or as_json
    state.agent = api.current_agent(agent)


def vault() -> AbstractContextManager[api.Vault]:
    """The vault of this call (``--vault``, ``$MEMREPO_VAULT`` or found as git does), to use
    with ``with``: the server's kept vault stays open afterwards."""
    if state.vaults is not None:
        return state.vaults.open(state.vault_path)
    return api.Vault.find(explicit=state.vault_path)


def stdin_text() -> str:
    """Standard input as UTF-8 text ("" on a terminal); other bytes are a one-line error."""
    if sys.stdin is None or sys.stdin.isatty():
        return ""
    data = sys.stdin.buffer.read()
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise UsageError(f"stdin:line {line}: byte {data[e.start]:#04x} is not UTF-8; send UTF-8 text") from None
