"""The risk check every write passes before it takes effect: what it may
change at once, and what waits for a person.

High risk (stops for a person): policy constraints, project permission boundaries, state
overrides (anything that would supersede an active memory) and model-inferred conclusions.
Low risk (commits straight away): task checkpoints, low-impact preferences, verified
low-risk knowledge. The classes are configurable in ``[risk]`` of ``.memrepo/config.toml``;
the decision and its reason are written into the memory (``risk``, ``risk_reason``).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

from memrepo.config import Config
from memrepo.store.checks import Row, Rows


@dataclass(frozen=True)
class Decision:
    level: str                 # "low" or "high"
    reason: str
    supersedes: Row | None     # the active memory this write would replace, if any

    @property
    def high(self) -> bool:
        return self.level == "high"


def current_active(meta: Mapping[str, Any], view: Rows) -> Row | None:
    """The active memory for the same (subject, fact), other than this one."""
    if not isinstance(meta.get("fact"), str) or not isinstance(meta.get("subject"), str) or not meta["fact"]:
        return None  # a wrong type is the schema's to report
    rows = [r for r in view.active_for(meta["subject"], meta["fact"]) if r.id != meta.get("id")]
    return rows[0] if rows else None


def assess(meta: Mapping[str, Any], view: Rows, config: Config) -> Decision:
    """Decide low or high for a memory about to be written, with the reason."""
    policy = config.section("risk")
    old = current_active(meta, view)
    reasons = []
    if old is not None and policy.get("supersede_is_high", True):
        reasons.append(f"state override: would supersede active {old.id} for ({old.subject}, {old.fact})")
    if meta.get("source") in policy.get("high_sources", ()):
        reasons.append(f"model-inferred conclusion (source: {meta.get('source')})")
    if meta.get("kind") in policy.get("high_kinds", ()):
        reasons.append(f"{meta.get('kind')} changes what the agent may do (policy constraint / permission boundary)")
    if meta.get("layer") in policy.get("high_layers", ()):
        reasons.append(f"{meta.get('layer')} is core identity and value constraints")
    tags = meta.get("tags")
    hot_tags = set(policy.get("high_tags", ())) & ({t for t in tags if isinstance(t, str)} if isinstance(tags, list) else set())
    if hot_tags:
        reasons.append(f"tagged {', '.join(sorted(hot_tags))}")
    if reasons:
        return Decision("high", "; ".join(reasons), old)
    kind = str(meta.get("kind"))
    why = {"checkpoint": "task checkpoint", "preference": "low-impact preference"}.get(
        kind, f"low-impact {kind} from {meta.get('source')}")
    if old is not None:
        why += f"; supersedes {old.id} (risk policy allows direct overrides)"
    return Decision("low", why, old)
