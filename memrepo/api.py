"""The Python API: everything the command line and the MCP server do is one of these calls.

::

    from memrepo import api

    vault = api.init("/tmp/v")                 # or api.Vault.find() / api.Vault.find(explicit=path)
    r = api.add(vault, {"subject": "user", "kind": "preference", "summary": "Likes tea"}, "body")
    hits, _ = api.search(vault, "tea", limit=5)
    api.apply(vault, proposal_id)

The command line (:mod:`memrepo.cli`) and the MCP server (:mod:`memrepo.mcp`) import this
module and the value modules (errors, model, text, config) only, so every behaviour they offer
has a name here. The acting agent is an argument (``agent=``) wherever it matters: its private
memories, its proposals, the author of its writes; the library never reads it from the
environment. The library never prints or exits; every failure is an exception from
:mod:`memrepo.errors`.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from memrepo.agents.context import context as _context
from memrepo.agents.evidence import get_evidence, save_evidence
from memrepo.agents.flush import flush, flush_prompt
from memrepo.agents.openclaw import EXPORT_FORMATS, export_jsonl, export_openclaw, import_openclaw
from memrepo.agents.prune import Options as PruneOptions
from memrepo.agents.prune import prune
from memrepo.agents.recall import Packed, Recall
from memrepo.agents.recall import recall as _recall
from memrepo.agents.transcript import hook_payload
from memrepo.errors import UsageError
from memrepo.lifecycle.decay_run import build_graph, cleanup, decay
from memrepo.lifecycle.distill_run import distill, known_patterns
from memrepo.lifecycle.nightly import nightly
from memrepo.lifecycle.schedule import install_schedule, schedule_text
from memrepo.retrieval.search import (
    catch_up,
    make_query,
    mark_useful,
    read_queries,
    rebuild,
    reindex,
    release,
    result_dict,
    search_many,
    unavailable_notice,
    vector_state,
    warm_up,
)
from memrepo.review import hooks as _hooks
from memrepo.review.proposals import apply, card, delete_pushed_branches, list_proposals, push_proposal, reject
from memrepo.review.proposals import get as get_proposal
from memrepo.review.proposals import memories_of as proposal_memories
from memrepo.review.provenance import fact_history, memory_history, rollback, why
from memrepo.review.validate import validate_paths, validate_tree, validate_vault
from memrepo.review.writes import add_files, import_jsonl
from memrepo.store import git as _git
from memrepo.store.vault import Vault, find_root, recover, render_bytes
from memrepo.team.citations import ack, cite, cited_by, notices
from memrepo.team.merge import merge_files
from memrepo.team.propose import policy_for, propose
from memrepo.team.scopes import add, current_agent, get, list_memories, private_vault, search, visible_vaults
from memrepo.team.sync import install_driver, sync

__all__ = [
    "EXPORT_FORMATS", "Packed", "PruneOptions", "Recall", "Vault",
    "ack", "add", "add_files", "apply", "build_graph", "card", "catch_up", "cite", "cited_by", "cleanup", "context",
    "current_agent", "decay", "delete_pushed_branches", "distill", "export_jsonl", "export_openclaw",
    "fact_history", "find_root", "flush", "flush_prompt", "forget_process_caches", "get", "get_evidence", "get_proposal", "hook_payload",
    "import_jsonl", "import_openclaw", "init", "install_driver", "install_hooks", "install_schedule", "known_patterns",
    "list_memories", "list_proposals", "make_query", "mark_useful", "memory_history", "merge_files", "nightly",
    "notices", "policy_for", "private_vault", "propose", "proposal_memories", "prune", "push_proposal",
    "read_queries", "rebuild", "recall", "recover", "reindex", "reject", "release", "render_bytes", "result_dict",
    "rollback", "run_pre_commit", "save_evidence", "schedule_text", "search", "search_many", "sync",
    "unavailable_notice", "validate_paths", "validate_tree", "validate_vault", "vector_state",
    "visible_vaults", "warm_up", "why",
]


def init(path: str | os.PathLike) -> Vault:
    """Create a vault (git repository on ``main``, layout, config) with the review hooks installed."""
    vault = Vault.init(path)
    try:
        _hooks.install(vault.root)
    except UsageError as e:
        vault.close()
        raise UsageError(f"created the vault {vault.root}, but without its hooks: {e}") from None
    return vault


def install_hooks(vault: Vault) -> list[str]:
    """Install the pre-commit and pre-merge-commit hooks (a hook already there is kept as
    ``.legacy`` and run first) and the merge driver for memory files; what was done, per line."""
    return [*_hooks.install(vault.root), *install_driver(vault)]


def run_pre_commit(start: Path, *, agent: str | None = None) -> list:
    """What git's pre-commit hook checks for the vault at ``start``: the problems (none: commit)."""
    return _hooks.run_pre_commit(start, agent=current_agent(agent))


@contextmanager
def _private_of(vault: Vault, agent: str | None) -> Iterator[list[Vault]]:
    """The acting agent's private vault as a list (empty without an agent or before its first
    private write), closed afterwards."""
    found = visible_vaults(vault, agent)[1:] if agent else []
    try:
        yield found
    finally:
        for private in found:
            private.close()


def recall(vault: Vault, text: str, *, agent: str | None = None, also: Sequence[Vault] = (), **options: Any) -> Recall:
    """The memories relevant to this turn as one block (``agents.recall.recall``), read from
    the shared vault and the acting agent's private vault."""
    with _private_of(vault, agent) as private:
        return _recall(vault, text, also=(*also, *private), **options)


def context(vault: Vault, *, agent: str | None = None, also: Sequence[Vault] = (), **options: Any) -> Packed:
    """The session-start block (``agents.context.context``), from the shared vault and the
    acting agent's private vault."""
    with _private_of(vault, agent) as private:
        return _context(vault, also=(*also, *private), **options)


def forget_process_caches() -> None:
    """Forget what this process cached from its environment (git's identity and paths,
    tempfile's folder): a long-lived process calls this before serving a call that comes
    with another environment (the resident server does, per call)."""
    import sys
    for cached in (_git.identity, _git.git_path, _git.common_dir):
        cached.cache_clear()
    tempfile = sys.modules.get("tempfile")
    if tempfile is not None:
        tempfile.tempdir = None  # type: ignore[attr-defined]
