"""The distill runner: feeds :mod:`memrepo.lifecycle.distill` from the vault, proposes its candidates.

Distill never touches main: its candidates land on one proposal branch per run
(``distill_<date>``, or ``promote_<date>`` for L2 → L3), and its run log goes to the git-ignored
``.memrepo/state/runs/``. Parameters come from the vault's ``[distill]`` / ``[promote]`` tables
over ``memrepo.config.DEFAULTS``.
"""
from __future__ import annotations

import datetime as dt
import json
from dataclasses import asdict, dataclass
from typing import Any, Callable, Literal

from memrepo.lifecycle import check_candidates
from memrepo.lifecycle.runs import free_proposal_id, read_main, resolve_now, run_log
from memrepo.model import Memory, parse_timestamp
from memrepo.store import faults
from memrepo.store.vault import Vault

DISTILL_AUTHOR = "memrepo distill"


@dataclass(frozen=True)
class DistillReport:
    now: str
    layer: str
    considered: int
    candidates: tuple[dict, ...]
    reinforcements: tuple[dict, ...]
    suppressed: tuple[dict, ...]
    skipped: tuple[dict, ...]
    proposal: str | None
    log: str | None = None
    small_talk: int = 0
    capped: tuple[dict, ...] = ()
    near_misses: tuple[dict, ...] = ()
    check_candidates: tuple[dict, ...] = ()   # questions that recalled a memory usefully, as recall checks
    check_proposal: str | None = None

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _entries(vault: Vault, layer: str, now: dt.datetime, window_days: int, progress=None):
    from memrepo.lifecycle.distill import Entry
    since = now - dt.timedelta(days=window_days)
    rows = []
    for row in vault.list(layer=layer, status="active"):
        try:
            created = parse_timestamp(row["created"])
        except (TypeError, ValueError):
            rows.append(row)  # reported as skipped by distill itself
            continue
        if since < created <= now:
            rows.append(row)
    memories, bad = read_main(vault, rows, progress=progress)
    entries = [Entry(id=m.id, created=str(m.meta.get("created", "")), session=m.meta.get("session"),
                     subject=str(m.meta.get("subject", "")), fact=m.meta.get("fact"), kind=str(m.meta.get("kind", "")),
                     summary=str(m.meta.get("summary", "")), body=m.body, tags=tuple(m.meta.get("tags", ())),
                     links=tuple(m.meta.get("links", ())), author=m.meta.get("author")) for m in memories]
    skipped = [{"id": i, "reason": r} for i, r in bad]
    skipped += [{"id": p.path, "reason": p.message} for p in vault.catalog().errors() if f"/{layer}/" in p.path]
    return entries, skipped


def known_patterns(vault: Vault):
    """Every pattern distill proposed before, with what became of it (for idempotence)."""
    from memrepo.lifecycle.distill import KnownPattern
    from memrepo.review import proposals
    found: dict[str, KnownPattern] = {}

    def note(memory: Memory, status: Literal["proposed", "applied", "rejected"]) -> None:
        if memory.meta.get("source") != "distill":
            return
        found[memory.id] = KnownPattern(memory.id, tuple(memory.meta.get("links", ())), status,
                                        tuple(memory.meta.get("x-distill-terms", ()) or ()))
    on_main = [r for r in vault.list() if str(r["id"]).startswith("pat_")]
    for memory in read_main(vault, on_main)[0]:
        note(memory, "rejected" if memory.meta.get("status") == "rolled_back" else "applied")
    # no pattern, or every one is on main (applied) and noted above: nothing to read
    unread = [p for p in proposals.list_proposals(vault, include_closed=True)
              if not all(i in found for i in p.ids if i.startswith("pat_"))]
    held = proposals.memories_of_all(vault, unread)
    for p in unread:
        for memory in held[p.id]:
            if memory.id not in found:
                # closed but not on main: rejected, declined by 'apply --only', or applied and
                # then taken back by a person ('git revert' of the apply): not proposed again
                note(memory, "proposed" if p.status == "open" else "rejected")
    return sorted(found.values(), key=lambda k: k.key)


def _candidate_memory(c, now: dt.datetime) -> Memory:
    meta = {"id": c.id, "layer": c.layer, "kind": "pattern" if c.layer == "L2" else "principle",
            "subject": c.subject, "summary": c.summary, "status": "pending_review", "risk": "high",
            "risk_reason": f"distilled {c.layer} candidate: long-term memory changes only through review",
            "source": "distill", "author": DISTILL_AUTHOR, "scope": "shared",
            "evidence": list(c.members), "links": list(c.members),
            "affects": [f"{c.layer} behaviour pattern for {c.subject}: seen {c.occurrences} times "
                        f"({', '.join(c.days)})"],
            "tags": list(c.shared_tags), "created": now.isoformat(), "x-distill-terms": list(c.shared_terms),
            "x-distill-occurrences": c.occurrences}
    return Memory(meta, c.body)


def _learned_stopwords(vault: Vault) -> frozenset[str]:
    """Search's learned stopwords (terms of failed recalls): no content for distill either."""
    from memrepo.retrieval.warm import stats
    try:
        return stats(vault).learned_stopwords()
    except Exception:  # statistics are derived and optional: never stop the nightly run for them
        return frozenset()


def _candidate_row(c) -> dict[str, Any]:
    return {"id": c.id, "summary": c.summary, "speaker": c.speaker, "members": list(c.members),
            "days": list(c.days), "sessions": list(c.sessions), "occurrences": c.occurrences,
            "score": c.score, "why": c.why, "explain": c.explain}


def distill(vault: Vault, *, now: str | dt.datetime | None = None, promote: bool = False,
            dry_run: bool = False, explain: bool = False,
            progress: Callable[[int, int], None] | None = None) -> DistillReport:
    """Find recurring L1 patterns (or L2 for ``promote``) and propose them on one branch.

    At most ``max_per_subject`` candidates per subject and ``max_per_run`` in all are proposed,
    best evidence first; the others are reported as ``capped`` and come back on the next run.
    ``explain`` adds the near misses: groups dropped as small talk, for mixed speakers, too few
    days or a similarity below the bar. ``progress(done, total)`` follows the reading of the
    window's entries.
    """
    from memrepo.lifecycle import distill as algo
    from memrepo.review import proposals
    when = resolve_now(now)
    params = vault.config.section("promote" if promote else "distill")
    layer, target = ("L2", "L3") if promote else ("L1", "L2")
    with vault.lock():
        entries, skipped = _entries(vault, layer, when, int(params["window_days"]), progress)
        known = known_patterns(vault)
        result = algo.find_patterns(entries, now=when, window_days=int(params["window_days"]),
                                    min_occurrences=int(params["min_occurrences"]), count_by=params["count_by"],
                                    similarity=float(params["similarity"]), known=known, layer=target,
                                    common_day_share=float(params["common_day_share"]),
                                    max_per_subject=int(params["max_per_subject"]),
                                    max_per_run=int(params["max_per_run"]),
                                    stopwords=_learned_stopwords(vault), explain=explain)
        proposal_id = None
        if result.candidates and not dry_run:
            memories = [_candidate_memory(c, when) for c in result.candidates]
            pid = free_proposal_id(vault, f"{'promote' if promote else 'distill'}_{when:%Y%m%d}")
            reason = (f"nightly {'promotion' if promote else 'distill'}: {len(memories)} pattern(s) recurring on "
                      f">= {params['min_occurrences']} distinct {params['count_by'].replace('_', ' ')}s")
            faults.point("distill-proposed")
            proposal_id = proposals.create(vault, memories, reason=reason, proposal_id=pid).id
        checks = None if promote else check_candidates.propose_checks(vault, now=when, dry_run=dry_run)
    report = DistillReport(
        now=when.isoformat(), layer=target, considered=result.considered,
        candidates=tuple(_candidate_row(c) for c in sorted(result.candidates, key=lambda c: (-c.score, c.id))),
        reinforcements=tuple({"pattern": r.key, "new_members": list(r.new_members)} for r in result.reinforcements),
        suppressed=tuple({"pattern": s.key, "status": s.status, "members": list(s.members)} for s in result.suppressed),
        skipped=tuple(skipped + [{"id": s.id, "reason": s.reason} for s in result.skipped]),
        proposal=proposal_id, small_talk=result.small_talk,
        capped=tuple({"id": c.id, "summary": c.summary, "members": list(c.members), "score": c.score}
                     for c in result.capped),
        near_misses=result.near_misses,
        check_candidates=tuple(c.as_dict() for c in checks.candidates) if checks else (),
        check_proposal=checks.proposal if checks else None)
    if dry_run:
        return report
    if report.reinforcements:
        _record_reinforcements(vault, report)
    log = run_log(vault, "promote" if promote else "distill", report.as_dict())
    return DistillReport(**{**report.as_dict(), "log": str(log)})


def _record_reinforcements(vault: Vault, report: DistillReport) -> None:
    """Append each (pattern, new member) once: every later nightly run sees the same member
    again until the pattern's memory absorbs it, and must not record it again."""
    path = vault.state_dir / "reinforcements.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    seen: set[tuple[str, str]] = set()
    if path.exists():
        for line in path.read_text(encoding="utf-8", errors="replace").splitlines():
            try:
                record = json.loads(line)
                seen.update((record["pattern"], m) for m in record["new_members"])
            except (ValueError, KeyError, TypeError):
                continue  # a damaged line records nothing
    with path.open("a", encoding="utf-8") as fh:
        for r in report.reinforcements:
            new = [m for m in r["new_members"] if (r["pattern"], m) not in seen]
            if new:
                fh.write(json.dumps({"at": report.now, **r, "new_members": new}, ensure_ascii=False) + "\n")
