"""``context``: the block an agent reads once at session start.

Active L4 identity, L3 principles, and active constraints, policies, permissions and
preferences (for one subject when given), most important first, within a character budget.
"""
from __future__ import annotations

from typing import Any, Sequence

from memrepo.agents.recall import CONTEXT_HEADER, DEFAULT_BUDGET, Packed, memory_object, pack
from memrepo.store.vault import Vault

STANDING_KINDS = ("constraint", "policy", "permission", "preference")
_LAYER_RANK = {"L4": 0, "L3": 1, "L2": 2, "L1": 3}
_KIND_RANK = {"identity": 0, "principle": 1, "constraint": 2, "policy": 3, "permission": 4, "preference": 5}


def standing_rows(vault: Vault, subject: str | None = None) -> list[dict[str, Any]]:
    """Catalog rows of the memories that belong in the session-start block."""
    return vault.catalog().standing(("L4", "L3"), STANDING_KINDS, subject)


def _importance(m: dict[str, Any]) -> tuple:
    weight = m.get("weight")
    return (-(weight if isinstance(weight, int | float) else 0.5), _LAYER_RANK.get(m["layer"], 9),
            _KIND_RANK.get(m["kind"], 9), m["id"])


def context(vault: Vault, *, budget: int = DEFAULT_BUDGET, subject: str | None = None,
            also: Sequence[Vault] = ()) -> Packed:
    """The session-start block: standing memories, most important first (weight, then layer).
    ``also`` are more vaults read with it (the acting agent's private vault)."""
    from memrepo.errors import UsageError
    if budget < 1:
        raise UsageError("--budget must be a positive number of characters")
    # ordered by the catalog's rows; only the files that make it into the block are read
    rows = sorted(((v, r) for v in (vault, *also) for r in standing_rows(v, subject)), key=lambda vr: _importance(vr[1]))
    for v in (vault, *also):
        v.warn_skipped()
    found = (memory_object(v, r["path"], shown_from=vault) for v, r in rows)
    return pack((m for m in found if m is not None), budget, CONTEXT_HEADER)
