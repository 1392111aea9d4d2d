"""The decay and clean-up runners: the memory graph of main, influence decay, expiry.

* ``decay`` archives cold memories in one commit on main (reversible with ``git revert``) and
  puts the cold, isolated, unweighted ones on a deletion proposal (``cleanup_<date>``).
* ``cleanup`` handles expired memories: demoted to L1 or archived, per ``[cleanup] policy``.

The algorithms are pure (:mod:`memrepo.lifecycle.graph`, :mod:`memrepo.lifecycle.decay`); their
parameters come from the vault's ``[decay]`` / ``[cleanup]`` tables over ``memrepo.config.DEFAULTS``.
"""
from __future__ import annotations

import datetime as dt
from dataclasses import asdict, dataclass
from typing import Any, Callable, Iterable

from memrepo.errors import UsageError
from memrepo.lifecycle.runs import free_proposal_id, read_main, removed_rows, resolve_now, run_log
from memrepo.model import Memory, parse_timestamp
from memrepo.store.vault import Vault


def _nodes(memories: Iterable[Memory]):
    from memrepo.lifecycle.graph import Node
    for m in memories:
        g = m.meta.get
        weight = g("weight")
        yield Node(id=m.id, status=str(g("status", "")), links=tuple(g("links", ())), body=m.body,
                   supersedes=(str(g("supersedes")),) if g("supersedes") else (),
                   superseded_by=(str(g("superseded_by")),) if g("superseded_by") else (),
                   weight=float(weight) if isinstance(weight, int | float) else 0.0, layer=g("layer"),
                   created=g("created"), expires=g("expires"))


def _stats(vault: Vault):
    from memrepo.retrieval.warm import stats
    return stats(vault)


def build_graph(vault: Vault, *, progress: Callable[[int, int], None] | None = None):
    """The memory graph of main, with co-occurrence edges from the search statistics;
    ``progress(done, total)`` follows the reading of the memories."""
    from memrepo.lifecycle import graph
    memories, _ = read_main(vault, vault.list(), progress=progress)
    return graph.build_graph(_nodes(memories), _stats(vault).cooccurrences()), memories


def decay_params(vault: Vault):
    """The vault's ``[decay]`` table over the defaults, as :class:`~memrepo.lifecycle.decay.DecayParams`."""
    from memrepo.lifecycle.decay import DecayParams
    try:
        return DecayParams.from_section(vault.config.data.get("decay", {}))
    except TypeError as e:
        raise UsageError(f".memrepo/config.toml [decay]: {e}; see the README for the parameters") from None


def _with_writes(recall: dict[str, tuple[int, str | None]], memories: list[Memory]) -> dict[str, tuple[int, str | None]]:
    """Writing or updating a memory counts as one use of it.

    Without this, a vault whose agents never log recalls would see every memory go cold
    after the grace period; with it, a memory nobody touched fades over months instead.
    """
    out = dict(recall)
    for m in memories:
        touched = str(m.meta.get("updated") or m.meta.get("created") or "")
        count, last = out.get(m.id, (0, None))
        out[m.id] = (count + 1, max(filter(None, (last, touched)), default=None, key=_instant))
    return out


def _instant(value: str) -> dt.datetime:
    try:
        return parse_timestamp(value)
    except ValueError:
        return dt.datetime.min.replace(tzinfo=dt.UTC)


@dataclass(frozen=True)
class DecayReport:
    now: str
    decisions: tuple[dict, ...]
    archived: tuple[str, ...]
    deletion_candidates: tuple[str, ...]
    commit: str | None = None
    proposal: str | None = None
    dry_run: bool = True
    log: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def decay(vault: Vault, *, now: str | dt.datetime | None = None, dry_run: bool = False,
          progress: Callable[[int, int], None] | None = None) -> DecayReport:
    """Compute influence activity; archive the cold (one commit), propose deleting the dead.
    ``progress(done, total)`` follows the reading of main's memories, the long part."""
    from memrepo.lifecycle import decay as algo
    from memrepo.review import proposals
    when = resolve_now(now)
    params = decay_params(vault)
    if not dry_run:
        vault.require_main_checkout()
    with vault.lock():
        graph, memories = build_graph(vault, progress=progress)
        recall = _with_writes(_stats(vault).recall_summary(), memories)
        activity = algo.compute_activity(graph, recall=recall, now=when, params=params)
        plan = algo.plan_archive(activity, graph, now=when, params=params)
        decisions = tuple({"id": d.id, "action": d.action, "delete_candidate": d.delete_candidate,
                           "reason": d.reason, "score": d.score,
                           "own": activity[d.id].own, "linked": activity[d.id].linked, "base": activity[d.id].base}
                          for d in plan.decisions)
        report = DecayReport(when.isoformat(), decisions, plan.archived, plan.deletion_candidates, dry_run=dry_run)
        if dry_run or not plan.archived:
            return report
        by_id = {m.id: m for m in memories}
        moved = [by_id[i].evolve(status="archived", updated=when.isoformat()) for i in plan.archived]
        reasons = {d.id: d.reason for d in plan.decisions}
        message = (f"memrepo: archive {len(moved)} cold memor{'y' if len(moved) == 1 else 'ies'} (influence decay)\n\n"
                   + "\n".join(f"- {m.id}: {reasons[m.id]}" for m in moved)
                   + f"\n\nRevert this commit to bring them back.\n\nMemrepo-Action: archive\nMemrepo-Ids: {','.join(plan.archived)}\n")
        old = [by_id[i] for i in plan.archived]
        vault.check_new(moved, deleted=removed_rows(old))  # a move: the old file goes in the same commit
        commit = vault.commit(writes=moved, deletes=[m.path for m in old], message=message).commit
        proposal = None
        doomed = [m for m in moved if m.id in set(plan.deletion_candidates)]
        if doomed:
            pid = free_proposal_id(vault, f"cleanup_{when:%Y%m%d}")
            proposal = proposals.create(vault, [], deletes=doomed, proposal_id=pid,
                                        reason="cold, isolated and unweighted: delete (git history keeps them)").id
    report = DecayReport(report.now, report.decisions, report.archived, report.deletion_candidates,
                         commit, proposal, False)
    log = run_log(vault, "decay", report.as_dict())
    return DecayReport(**{**report.as_dict(), "log": str(log)})


@dataclass(frozen=True)
class CleanupReport:
    now: str
    actions: tuple[dict, ...]
    skipped: tuple[dict, ...]
    commit: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def cleanup(vault: Vault, *, now: str | dt.datetime | None = None, dry_run: bool = False) -> CleanupReport:
    """Monthly clean-up: expired memories are demoted to L1 or archived (``[cleanup] policy``)."""
    from memrepo.lifecycle import decay as algo
    when = resolve_now(now)
    policy = str(vault.config.get("cleanup", "policy"))
    with vault.lock():
        rows = [r for r in vault.list(status="active")]
        memories, _ = read_main(vault, rows)
        expiring = [m for m in memories if m.meta.get("expires")]
        plan = algo.plan_expiry(list(_nodes(expiring)), now=when, policy=policy)
        actions = tuple(asdict(a) for a in plan.actions)
        skipped = tuple({"id": i, "reason": r} for i, r in plan.skipped)
        if dry_run or not plan.actions:
            return CleanupReport(when.isoformat(), actions, skipped)
        by_id = {m.id: m for m in expiring}
        writes, moved = [], []
        for a in plan.actions:
            old = by_id[a.id]
            new = (old.evolve(layer="L1", updated=when.isoformat()) if a.action == "demote"
                   else old.evolve(status="archived", updated=when.isoformat()))
            writes.append(new)
            if new.path != old.path:
                moved.append(old)
        vault.check_new(writes, deleted=removed_rows(moved))
        deletes = [m.path for m in moved]
        message = (f"memrepo: clean up {len(writes)} expired memor{'y' if len(writes) == 1 else 'ies'}\n\n"
                   + "\n".join(f"- {a.id}: {a.reason}" for a in plan.actions)
                   + "\n\nMemrepo-Action: cleanup\n")
        commit = vault.commit(writes=writes, deletes=deletes, message=message).commit
    return CleanupReport(when.isoformat(), actions, skipped, commit)
