"""The Python API: everything the command line and the MCP server do is one of these calls.

Names load on first use (PEP 562), so ``from memrepo import api`` costs nothing at start-up and a
command pays only for the service it calls::

    from memrepo import api

    vault = api.init("/tmp/v")                 # or api.Vault.find() / api.Vault.find(explicit=path)
    r = api.add(vault, {"subject": "user", "kind": "preference", "summary": "Likes tea"}, "body")
    hits, _ = api.search(vault, "tea", limit=5)
    api.apply(vault, proposal_id)

The library never prints or exits; every failure is an exception from :mod:`memrepo.errors`.
"""
from __future__ import annotations

import importlib
import os
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # what the lazy names below resolve to, for readers and type checkers
    from memrepo.store.vault import Vault

# name -> module that owns it
_OWNERS = {
    "Vault": "memrepo.store.vault", "recover": "memrepo.store.vault",
    "add": "memrepo.review.writes", "import_jsonl": "memrepo.review.writes", "add_files": "memrepo.review.writes",
    "list_proposals": "memrepo.review.proposals", "card": "memrepo.review.proposals",
    "apply": "memrepo.lifecycle.memory_ci", "reject": "memrepo.review.proposals",
    "push_proposal": "memrepo.review.proposals",
    "why": "memrepo.review.provenance", "rollback": "memrepo.review.provenance",
    "fact_history": "memrepo.review.provenance",
    "get_proposal": "memrepo.review.bulk", "memories_of": "memrepo.review.proposals",
    "apply_many": "memrepo.lifecycle.memory_ci", "reject_many": "memrepo.review.bulk",
    "reviewer_name": "memrepo.review.bulk", "rollback_with_reason": "memrepo.review.bulk",
    "compare_url": "memrepo.review.forge", "compare_link": "memrepo.review.forge",
    "review_view": "memrepo.oversight.review_view", "review_markdown": "memrepo.oversight.review_view",
    "evidence_items": "memrepo.oversight.review_view",
    "timeline": "memrepo.review.timeline", "inbox": "memrepo.oversight.inbox",
    "browse": "memrepo.oversight.browse", "agents_with_private_memories": "memrepo.oversight.browse",
    "get_memory": "memrepo.oversight.browse", "search_visible": "memrepo.oversight.browse",
    "search_filters": "memrepo.oversight.browse", "memory_view": "memrepo.oversight.memory_view",
    "graph_around": "memrepo.lifecycle.graph_view", "neighbours": "memrepo.lifecycle.graph_view",
    "graph_svg": "memrepo.lifecycle.graph_svg", "graph_legend": "memrepo.lifecycle.graph_svg",
    "last_nightly": "memrepo.lifecycle.run_history", "last_distill": "memrepo.lifecycle.run_history",
    "field_diff": "memrepo.review.diff", "proposal_diffs": "memrepo.review.diff", "branch_diff": "memrepo.review.diff",
    "validate_tree": "memrepo.review.validate", "validate_paths": "memrepo.review.validate",
    "validate_vault": "memrepo.review.validate",
    "search": "memrepo.retrieval.search", "search_many": "memrepo.retrieval.search",
    "make_query": "memrepo.retrieval.queries", "mark_useful": "memrepo.retrieval.search",
    "rebuild": "memrepo.retrieval.sync",
    "reindex": "memrepo.retrieval.search", "catch_up": "memrepo.retrieval.search",
    "distill": "memrepo.lifecycle.distill_run", "known_patterns": "memrepo.lifecycle.distill_run",
    "decay": "memrepo.lifecycle.decay_run", "cleanup": "memrepo.lifecycle.decay_run",
    "build_graph": "memrepo.lifecycle.decay_run",
    "nightly": "memrepo.lifecycle.nightly",
    "run_checks": "memrepo.lifecycle.memory_ci", "proposal_checks": "memrepo.lifecycle.memory_ci",
    "add_check": "memrepo.lifecycle.memory_ci", "list_checks": "memrepo.lifecycle.memory_ci",
    "workflow_text": "memrepo.lifecycle.ci_workflow", "write_workflow": "memrepo.lifecycle.ci_workflow",
    "schedule_text": "memrepo.lifecycle.schedule", "install_schedule": "memrepo.lifecycle.schedule",
    "recall": "memrepo.agents.recall", "recall_within": "memrepo.agents.recall", "context": "memrepo.agents.context",
    "flush": "memrepo.agents.flush", "flush_prompt": "memrepo.agents.flush",
    "import_openclaw": "memrepo.agents.openclaw", "export_openclaw": "memrepo.agents.openclaw_export",
    "export_jsonl": "memrepo.agents.openclaw_export",
    "MemoryTool": "memrepo.agents.memory_tool", "run_memory_command": "memrepo.agents.memory_tool",
    "MemrepoMemoryTool": "memrepo.agents.claude_memory", "AsyncMemrepoMemoryTool": "memrepo.agents.claude_memory",
    "install_claude_code": "memrepo.agents.claude_code", "uninstall_claude_code": "memrepo.agents.claude_code",
    "compaction_instructions": "memrepo.agents.compaction", "file_compaction": "memrepo.agents.compaction",
    "import_claude_code": "memrepo.agents.claude_imports", "import_mcp_memory": "memrepo.agents.claude_imports",
    "hook_payload": "memrepo.agents.transcript", "prune_text": "memrepo.agents.prune",
    "prune": "memrepo.agents.prune", "save_evidence": "memrepo.agents.evidence", "get_evidence": "memrepo.agents.evidence",
    "policy_report": "memrepo.review.policy", "accept_policy": "memrepo.review.policy",
    "pending_policy": "memrepo.review.policy",
    "current_agent": "memrepo.team.scopes", "private_vault": "memrepo.team.scopes",
    "visible_vaults": "memrepo.team.scopes", "list_memories": "memrepo.team.scopes",
    "propose": "memrepo.team.propose", "policy_for": "memrepo.team.propose",
    "cite": "memrepo.team.citations", "cited_by": "memrepo.team.citations",
    "notices": "memrepo.team.citations", "ack": "memrepo.team.citations",
}

__all__ = sorted([*_OWNERS, "init"])


def init(path: str | os.PathLike, *, ci: str | None = None) -> Vault:
    """Create a vault (git repository on ``main``, layout, config) with the review hooks installed;
    ``ci`` ("github" or "gitlab") also commits the forge workflow that runs the recall checks."""
    from memrepo.errors import UsageError
    from memrepo.review import hooks
    from memrepo.store.vault import Vault

    if ci is not None:
        from memrepo.lifecycle import ci_workflow
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


def __getattr__(name: str) -> Any:
    owner = _OWNERS.get(name)
    if owner is None:
        raise AttributeError(f"module 'memrepo.api' has no attribute {name!r}")
    value = getattr(importlib.import_module(owner), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return __all__
