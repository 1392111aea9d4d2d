"""The Python API: everything the command line, the MCP server and the web page do is one of these calls.

::

    from memrepo import api

    vault = api.init("/tmp/v")                 # or api.Vault.find() / api.Vault.find(explicit=path)
    r = api.add(vault, {"subject": "user", "kind": "preference", "summary": "Likes tea"}, "body")
    hits, _ = api.search(vault, "tea", limit=5)
    api.apply(vault, proposal_id)

The command line (:mod:`memrepo.cli`), the MCP server (:mod:`memrepo.mcp`) and the web page
(:mod:`memrepo.ui`) import this module and the value modules (errors, model, text, config) only,
so every behaviour they offer has a name here. The acting agent is an argument (``agent=``)
wherever it matters: its private memories, its proposals, the author of its writes; the library
never reads it from the environment. The library never prints or exits; every failure is an
exception from :mod:`memrepo.errors`.

Every name is a plain import or a function of this module, so tools and the architecture test
see each edge. The command line imports this module on every agent turn, so the names the
per-turn commands use (``add``, ``search``, ``recall``, ``context`` and the vault) are imported
with it, and every other name imports its module when it is first called: a new feature adds
nothing to an agent's turn. (Type checkers read the real functions: the ``TYPE_CHECKING`` block.)

Claude's memory tool for the Anthropic SDK is not here: the SDK is an optional extra, so its class
is imported where it lives, ``from memrepo.agents.claude_memory import MemrepoMemoryTool``.
"""
from __future__ import annotations

import os
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any

from memrepo.agents.context import context as _context
from memrepo.agents.recall import Packed, Recall
from memrepo.agents.recall import recall as _recall
from memrepo.agents.recall import recall_within as _recall_within
from memrepo.agents.transcript import hook_payload
from memrepo.errors import UsageError
from memrepo.retrieval.search import (
    building_notice,
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
from memrepo.store import git as _git
from memrepo.store.vault import Vault, find_root, recover, render_bytes
from memrepo.team.scopes import add, current_agent, get, list_memories, private_vault, search, visible_vaults

if TYPE_CHECKING:  # the names below import their module on first call; these are what they are
    from memrepo.agents.claude_code import install_claude_code, uninstall_claude_code
    from memrepo.agents.claude_imports import import_claude_code, import_mcp_memory
    from memrepo.agents.compaction import compaction_instructions, file_compaction
    from memrepo.agents.evidence import get_evidence, save_evidence
    from memrepo.agents.flush import flush, flush_prompt
    from memrepo.agents.memory_tool import run_memory_command
    from memrepo.agents.openclaw import import_openclaw
    from memrepo.agents.openclaw_export import export_jsonl, export_openclaw
    from memrepo.agents.prune import prune, prune_text
    from memrepo.lifecycle.ci_workflow import workflow_text, write_workflow
    from memrepo.lifecycle.decay_run import build_graph, cleanup, decay
    from memrepo.lifecycle.distill_run import distill, known_patterns
    from memrepo.lifecycle.graph_svg import graph_legend, graph_svg
    from memrepo.lifecycle.graph_view import graph_around, neighbours
    from memrepo.lifecycle.memory_ci import add_check, apply, apply_many, list_checks, proposal_checks, run_checks
    from memrepo.lifecycle.nightly import nightly
    from memrepo.lifecycle.run_history import last_distill, last_nightly
    from memrepo.lifecycle.schedule import install_schedule, schedule_text
    from memrepo.oversight.browse import agents_with_private_memories, browse, get_memory, search_filters, search_visible
    from memrepo.oversight.inbox import inbox
    from memrepo.oversight.memory_view import memory_view
    from memrepo.oversight.review_view import evidence_items, review_markdown, review_view
    from memrepo.retrieval.status import status
    from memrepo.review.bulk import get_proposal, reject_many, reviewer_name, rollback_with_reason
    from memrepo.review.diff import branch_diff, field_diff, proposal_diffs
    from memrepo.review.forge import compare_link, compare_url
    from memrepo.review.policy import accept as accept_policy
    from memrepo.review.policy import pending as pending_policy
    from memrepo.review.policy import report as policy_report
    from memrepo.review.proposals import card, delete_pushed_branches, list_proposals, memories_of, push_proposal, reject
    from memrepo.review.provenance import fact_history, memory_history, rollback, why
    from memrepo.review.requests import find_call
    from memrepo.review.timeline import timeline
    from memrepo.review.validate import validate_paths, validate_tree, validate_vault
    from memrepo.review.writes import add_files, import_jsonl, result_of
    from memrepo.store.processes import start_detached
    from memrepo.team.citations import ack, cite, cited_by, notices
    from memrepo.team.merge import merge_files
    from memrepo.team.propose import policy_for, propose
    from memrepo.team.sync import fetch_records, install_driver, sync


def init(path: str | os.PathLike, *, ci: str | None = None) -> Vault:
    """Create a vault (git repository on ``main``, layout, config) with the review hooks installed;
    ``ci`` ("github" or "gitlab") also commits the forge workflow that runs the recall checks."""
    from memrepo.lifecycle import ci_workflow
    from memrepo.review import hooks

    if ci is not None:
        ci_workflow.workflow_text(ci)  # a bad name is a usage error before anything is created
    vault = Vault.init(path)
    try:
        hooks.install(vault.root)
    except UsageError as e:
        vault.close()
        raise UsageError(f"created the vault {vault.root}, but without its hooks: {e}") from None
    if ci is not None:
        ci_workflow.write_workflow(vault, ci)
    return vault


def install_hooks(vault: Vault) -> list[str]:
    """Install the pre-commit and pre-merge-commit hooks (a hook already there is kept as
    ``.legacy`` and run first) and the merge driver for memory files; what was done, per line."""
    from memrepo.review import hooks
    from memrepo.team.sync import install_driver

    return [*hooks.install(vault.root), *install_driver(vault)]


def run_pre_commit(start: Path, *, agent: str | None = None) -> list:
    """What git's pre-commit hook checks for the vault at ``start``: the problems (none: commit)."""
    from memrepo.review.hooks import run_pre_commit as check

    return check(start, agent=current_agent(agent))


def prune_options(**given: Any) -> Any:
    """The options of :func:`prune` (keep_last_assistants, soft_chars, head, tail, hard_ratio)."""
    from memrepo.agents.prune import Options

    return Options(**given)


def export_formats() -> tuple[str, ...]:
    """What ``memrepo export --to`` accepts."""
    from memrepo.agents.openclaw_export import EXPORT_FORMATS

    return EXPORT_FORMATS


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


def recall_within(vault: Vault, text: str, *, agent: str | None = None, also: Sequence[Vault] = (),
                  **options: Any) -> dict[str, Any]:
    """The recall as one object whose serialized text fits its budget (``agents.recall.recall_within``:
    a tool result an agent reads whole), from the shared vault and the acting agent's private vault."""
    with _private_of(vault, agent) as private:
        return _recall_within(vault, text, also=(*also, *private), **options)


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


if not TYPE_CHECKING:  # each imports its module on its first call (see the module docstring)
    def install_claude_code(*args, **kwargs):
        from memrepo.agents.claude_code import install_claude_code as call
        return call(*args, **kwargs)

    def uninstall_claude_code(*args, **kwargs):
        from memrepo.agents.claude_code import uninstall_claude_code as call
        return call(*args, **kwargs)

    def import_claude_code(*args, **kwargs):
        from memrepo.agents.claude_imports import import_claude_code as call
        return call(*args, **kwargs)

    def import_mcp_memory(*args, **kwargs):
        from memrepo.agents.claude_imports import import_mcp_memory as call
        return call(*args, **kwargs)

    def compaction_instructions(*args, **kwargs):
        from memrepo.agents.compaction import compaction_instructions as call
        return call(*args, **kwargs)

    def file_compaction(*args, **kwargs):
        from memrepo.agents.compaction import file_compaction as call
        return call(*args, **kwargs)

    def get_evidence(*args, **kwargs):
        from memrepo.agents.evidence import get_evidence as call
        return call(*args, **kwargs)

    def save_evidence(*args, **kwargs):
        from memrepo.agents.evidence import save_evidence as call
        return call(*args, **kwargs)

    def flush(*args, **kwargs):
        from memrepo.agents.flush import flush as call
        return call(*args, **kwargs)

    def flush_prompt(*args, **kwargs):
        from memrepo.agents.flush import flush_prompt as call
        return call(*args, **kwargs)

    def run_memory_command(*args, **kwargs):
        from memrepo.agents.memory_tool import run_memory_command as call
        return call(*args, **kwargs)

    def import_openclaw(*args, **kwargs):
        from memrepo.agents.openclaw import import_openclaw as call
        return call(*args, **kwargs)

    def export_jsonl(*args, **kwargs):
        from memrepo.agents.openclaw_export import export_jsonl as call
        return call(*args, **kwargs)

    def export_openclaw(*args, **kwargs):
        from memrepo.agents.openclaw_export import export_openclaw as call
        return call(*args, **kwargs)

    def prune(*args, **kwargs):
        from memrepo.agents.prune import prune as call
        return call(*args, **kwargs)

    def prune_text(*args, **kwargs):
        from memrepo.agents.prune import prune_text as call
        return call(*args, **kwargs)

    def workflow_text(*args, **kwargs):
        from memrepo.lifecycle.ci_workflow import workflow_text as call
        return call(*args, **kwargs)

    def write_workflow(*args, **kwargs):
        from memrepo.lifecycle.ci_workflow import write_workflow as call
        return call(*args, **kwargs)

    def build_graph(*args, **kwargs):
        from memrepo.lifecycle.decay_run import build_graph as call
        return call(*args, **kwargs)

    def cleanup(*args, **kwargs):
        from memrepo.lifecycle.decay_run import cleanup as call
        return call(*args, **kwargs)

    def decay(*args, **kwargs):
        from memrepo.lifecycle.decay_run import decay as call
        return call(*args, **kwargs)

    def distill(*args, **kwargs):
        from memrepo.lifecycle.distill_run import distill as call
        return call(*args, **kwargs)

    def known_patterns(*args, **kwargs):
        from memrepo.lifecycle.distill_run import known_patterns as call
        return call(*args, **kwargs)

    def graph_legend(*args, **kwargs):
        from memrepo.lifecycle.graph_svg import graph_legend as call
        return call(*args, **kwargs)

    def graph_svg(*args, **kwargs):
        from memrepo.lifecycle.graph_svg import graph_svg as call
        return call(*args, **kwargs)

    def graph_around(*args, **kwargs):
        from memrepo.lifecycle.graph_view import graph_around as call
        return call(*args, **kwargs)

    def neighbours(*args, **kwargs):
        from memrepo.lifecycle.graph_view import neighbours as call
        return call(*args, **kwargs)

    def add_check(*args, **kwargs):
        from memrepo.lifecycle.memory_ci import add_check as call
        return call(*args, **kwargs)

    def apply(*args, **kwargs):
        from memrepo.lifecycle.memory_ci import apply as call
        return call(*args, **kwargs)

    def apply_many(*args, **kwargs):
        from memrepo.lifecycle.memory_ci import apply_many as call
        return call(*args, **kwargs)

    def list_checks(*args, **kwargs):
        from memrepo.lifecycle.memory_ci import list_checks as call
        return call(*args, **kwargs)

    def proposal_checks(*args, **kwargs):
        from memrepo.lifecycle.memory_ci import proposal_checks as call
        return call(*args, **kwargs)

    def run_checks(*args, **kwargs):
        from memrepo.lifecycle.memory_ci import run_checks as call
        return call(*args, **kwargs)

    def nightly(*args, **kwargs):
        from memrepo.lifecycle.nightly import nightly as call
        return call(*args, **kwargs)

    def last_distill(*args, **kwargs):
        from memrepo.lifecycle.run_history import last_distill as call
        return call(*args, **kwargs)

    def last_nightly(*args, **kwargs):
        from memrepo.lifecycle.run_history import last_nightly as call
        return call(*args, **kwargs)

    def install_schedule(*args, **kwargs):
        from memrepo.lifecycle.schedule import install_schedule as call
        return call(*args, **kwargs)

    def schedule_text(*args, **kwargs):
        from memrepo.lifecycle.schedule import schedule_text as call
        return call(*args, **kwargs)

    def agents_with_private_memories(*args, **kwargs):
        from memrepo.oversight.browse import agents_with_private_memories as call
        return call(*args, **kwargs)

    def browse(*args, **kwargs):
        from memrepo.oversight.browse import browse as call
        return call(*args, **kwargs)

    def get_memory(*args, **kwargs):
        from memrepo.oversight.browse import get_memory as call
        return call(*args, **kwargs)

    def search_filters(*args, **kwargs):
        from memrepo.oversight.browse import search_filters as call
        return call(*args, **kwargs)

    def search_visible(*args, **kwargs):
        from memrepo.oversight.browse import search_visible as call
        return call(*args, **kwargs)

    def inbox(*args, **kwargs):
        from memrepo.oversight.inbox import inbox as call
        return call(*args, **kwargs)

    def memory_view(*args, **kwargs):
        from memrepo.oversight.memory_view import memory_view as call
        return call(*args, **kwargs)

    def evidence_items(*args, **kwargs):
        from memrepo.oversight.review_view import evidence_items as call
        return call(*args, **kwargs)

    def review_markdown(*args, **kwargs):
        from memrepo.oversight.review_view import review_markdown as call
        return call(*args, **kwargs)

    def review_view(*args, **kwargs):
        from memrepo.oversight.review_view import review_view as call
        return call(*args, **kwargs)

    def get_proposal(*args, **kwargs):
        from memrepo.review.bulk import get_proposal as call
        return call(*args, **kwargs)

    def reject_many(*args, **kwargs):
        from memrepo.review.bulk import reject_many as call
        return call(*args, **kwargs)

    def reviewer_name(*args, **kwargs):
        from memrepo.review.bulk import reviewer_name as call
        return call(*args, **kwargs)

    def rollback_with_reason(*args, **kwargs):
        from memrepo.review.bulk import rollback_with_reason as call
        return call(*args, **kwargs)

    def branch_diff(*args, **kwargs):
        from memrepo.review.diff import branch_diff as call
        return call(*args, **kwargs)

    def field_diff(*args, **kwargs):
        from memrepo.review.diff import field_diff as call
        return call(*args, **kwargs)

    def proposal_diffs(*args, **kwargs):
        from memrepo.review.diff import proposal_diffs as call
        return call(*args, **kwargs)

    def compare_link(*args, **kwargs):
        from memrepo.review.forge import compare_link as call
        return call(*args, **kwargs)

    def compare_url(*args, **kwargs):
        from memrepo.review.forge import compare_url as call
        return call(*args, **kwargs)

    def card(*args, **kwargs):
        from memrepo.review.proposals import card as call
        return call(*args, **kwargs)

    def delete_pushed_branches(*args, **kwargs):
        from memrepo.review.proposals import delete_pushed_branches as call
        return call(*args, **kwargs)

    def list_proposals(*args, **kwargs):
        from memrepo.review.proposals import list_proposals as call
        return call(*args, **kwargs)

    def memories_of(*args, **kwargs):
        from memrepo.review.proposals import memories_of as call
        return call(*args, **kwargs)

    def push_proposal(*args, **kwargs):
        from memrepo.review.proposals import push_proposal as call
        return call(*args, **kwargs)

    def reject(*args, **kwargs):
        from memrepo.review.proposals import reject as call
        return call(*args, **kwargs)

    def fact_history(*args, **kwargs):
        from memrepo.review.provenance import fact_history as call
        return call(*args, **kwargs)

    def memory_history(*args, **kwargs):
        from memrepo.review.provenance import memory_history as call
        return call(*args, **kwargs)

    def rollback(*args, **kwargs):
        from memrepo.review.provenance import rollback as call
        return call(*args, **kwargs)

    def why(*args, **kwargs):
        from memrepo.review.provenance import why as call
        return call(*args, **kwargs)

    def timeline(*args, **kwargs):
        from memrepo.review.timeline import timeline as call
        return call(*args, **kwargs)

    def validate_paths(*args, **kwargs):
        from memrepo.review.validate import validate_paths as call
        return call(*args, **kwargs)

    def validate_tree(*args, **kwargs):
        from memrepo.review.validate import validate_tree as call
        return call(*args, **kwargs)

    def validate_vault(*args, **kwargs):
        from memrepo.review.validate import validate_vault as call
        return call(*args, **kwargs)

    def start_detached(*args, **kwargs):
        from memrepo.store.processes import start_detached as call
        return call(*args, **kwargs)

    def ack(*args, **kwargs):
        from memrepo.team.citations import ack as call
        return call(*args, **kwargs)

    def cite(*args, **kwargs):
        from memrepo.team.citations import cite as call
        return call(*args, **kwargs)

    def cited_by(*args, **kwargs):
        from memrepo.team.citations import cited_by as call
        return call(*args, **kwargs)

    def notices(*args, **kwargs):
        from memrepo.team.citations import notices as call
        return call(*args, **kwargs)

    def merge_files(*args, **kwargs):
        from memrepo.team.merge import merge_files as call
        return call(*args, **kwargs)

    def policy_for(*args, **kwargs):
        from memrepo.team.propose import policy_for as call
        return call(*args, **kwargs)

    def propose(*args, **kwargs):
        from memrepo.team.propose import propose as call
        return call(*args, **kwargs)

    def install_driver(*args, **kwargs):
        from memrepo.team.sync import install_driver as call
        return call(*args, **kwargs)

    def sync(*args, **kwargs):
        from memrepo.team.sync import sync as call
        return call(*args, **kwargs)

    def fetch_records(*args, **kwargs):
        from memrepo.team.sync import fetch_records as call
        return call(*args, **kwargs)

    def policy_report(*args, **kwargs):
        from memrepo.review.policy import report as call
        return call(*args, **kwargs)

    def pending_policy(*args, **kwargs):
        from memrepo.review.policy import pending as call
        return call(*args, **kwargs)

    def accept_policy(*args, **kwargs):
        from memrepo.review.policy import accept as call
        return call(*args, **kwargs)

    def find_call(*args, **kwargs):
        from memrepo.review.requests import find_call as call
        return call(*args, **kwargs)

    def result_of(*args, **kwargs):
        from memrepo.review.writes import result_of as call
        return call(*args, **kwargs)

    def add_files(*args, **kwargs):
        from memrepo.review.writes import add_files as call
        return call(*args, **kwargs)

    def import_jsonl(*args, **kwargs):
        from memrepo.review.writes import import_jsonl as call
        return call(*args, **kwargs)

    def status(*args, **kwargs):
        from memrepo.retrieval.status import status as call
        return call(*args, **kwargs)


__all__ = [
    "Packed", "Recall", "Vault", "accept_policy", "ack", "add", "add_check", "add_files",
    "agents_with_private_memories", "apply", "apply_many", "branch_diff", "browse", "build_graph", "building_notice", "card",
    "catch_up", "cite", "cited_by", "cleanup", "compaction_instructions", "compare_link", "compare_url", "context",
    "current_agent", "decay", "delete_pushed_branches", "distill", "evidence_items", "export_formats",
    "export_jsonl", "export_openclaw", "fact_history", "fetch_records", "field_diff", "file_compaction", "find_call",
    "find_root", "flush", "flush_prompt", "forget_process_caches", "get", "get_evidence", "get_memory",
    "get_proposal", "graph_around", "graph_legend", "graph_svg", "hook_payload", "import_claude_code",
    "import_jsonl", "import_mcp_memory", "import_openclaw", "inbox", "init", "install_claude_code", "install_driver",
    "install_hooks", "install_schedule", "known_patterns", "last_distill", "last_nightly", "list_checks",
    "list_memories", "list_proposals", "make_query", "mark_useful", "memories_of", "memory_history", "memory_view",
    "merge_files", "neighbours", "nightly", "notices", "pending_policy", "policy_for", "policy_report",
    "private_vault", "proposal_checks", "proposal_diffs", "propose", "prune", "prune_options", "prune_text",
    "push_proposal", "read_queries", "rebuild", "recall", "recall_within", "recover", "reindex", "reject",
    "reject_many", "release", "render_bytes", "result_dict", "result_of", "review_markdown", "review_view",
    "reviewer_name", "rollback", "rollback_with_reason", "run_checks", "run_memory_command", "run_pre_commit",
    "save_evidence", "schedule_text", "search", "search_filters", "search_many", "search_visible", "start_detached",
    "status", "sync", "timeline", "unavailable_notice", "uninstall_claude_code", "validate_paths", "validate_tree",
    "validate_vault", "vector_state", "visible_vaults", "warm_up", "why", "workflow_text", "write_workflow",
]
