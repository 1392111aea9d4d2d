"""The memory lifecycle on a vault: nightly distill, influence decay, clean-up, scheduling.

The algorithms are pure (:mod:`memrepo.lifecycle.distill`, :mod:`memrepo.lifecycle.graph`, :mod:`memrepo.lifecycle.decay`);
this module feeds them from the vault and turns their results into git changes:

* ``distill`` never touches main: its candidates land on one proposal branch per run
  (``distill_<date>``), and its run log goes to the git-ignored ``.memrepo/state/runs/``.
* ``decay`` archives cold memories in one commit on main (reversible with ``git revert``) and
  puts the cold, isolated, unweighted ones on a deletion proposal (``cleanup_<date>``).
* ``cleanup`` handles expired memories: demoted to L1 or archived, per ``[cleanup] policy``.
* ``nightly`` runs all three plus index maintenance under a run lock, and logs what it did.
"""
from __future__ import annotations

import datetime as dt
import json
import os
import shlex
import sys
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, Iterable

from memrepo.errors import Busy, Conflict, UsageError
from memrepo.model import Memory, parse_timestamp
from memrepo.store import faults, git
from memrepo.store.lock import locked
from memrepo.store.vault import Vault

DISTILL_DEFAULTS = {"window_days": 30, "min_occurrences": 3, "count_by": "day", "similarity": 0.3}
PROMOTE_DEFAULTS = {"window_days": 90, "min_occurrences": 5, "count_by": "day_or_session", "similarity": 0.3}
DISTILL_AUTHOR = "memrepo distill"


def resolve_now(now: str | dt.datetime | None) -> dt.datetime:
    """``--now YYYY-MM-DD`` (end of that day, UTC) or a datetime; default: the current time."""
    if now is None:
        return dt.datetime.now(dt.UTC).replace(microsecond=0)
    if isinstance(now, dt.datetime):
        return now if now.tzinfo else now.replace(tzinfo=dt.UTC)
    try:
        if len(now) == 10:
            day = dt.date.fromisoformat(now)
            return dt.datetime(day.year, day.month, day.day, 23, 59, 59, tzinfo=dt.UTC)
        return parse_timestamp(now)
    except ValueError:
        raise UsageError(f"--now {now!r} is not a date: use YYYY-MM-DD or an ISO-8601 date-time") from None


def _section(vault: Vault, name: str, defaults: dict[str, Any]) -> dict[str, Any]:
    merged = dict(defaults)
    merged.update(vault.config.data.get(name, {}))
    return merged


def _read_main(vault: Vault, rows: list[dict]) -> tuple[list[Memory], list[tuple[str, str]]]:
    """Memories of the given catalog rows as main holds them; unreadable ones with a reason."""
    from memrepo.store.checks import check_bytes
    out, bad = [], []
    with git.BlobReader(vault.root) as reader:
        for row in rows:
            try:
                memory, problems = check_bytes(row["path"], reader.read(f"{vault.main_ref}:{row['path']}"))
            except Exception as e:  # a damaged file must not stop the nightly run
                memory, problems = None, [str(e)]
            if memory is None:
                bad.append((row["id"], "; ".join(map(str, problems)) or "unreadable"))
            else:
                out.append(memory)
    return out, bad


def _run_log(vault: Vault, kind: str, data: dict[str, Any]) -> Path:
    runs = vault.state_dir / "runs"
    runs.mkdir(parents=True, exist_ok=True)
    stamp = dt.datetime.now(dt.UTC).strftime("%Y%m%dT%H%M%S%f")
    path = runs / f"{kind}-{stamp}.json"
    path.write_text(json.dumps(data, ensure_ascii=False, indent=1, default=str), encoding="utf-8")
    return path


# ------------------------------------------------------------------ distill

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

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _entries(vault: Vault, layer: str, now: dt.datetime, window_days: int):
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
    memories, bad = _read_main(vault, rows)
    entries = [Entry(id=m.id, created=str(m.meta.get("created", "")), session=m.meta.get("session"),
                     subject=str(m.meta.get("subject", "")), fact=m.meta.get("fact"), kind=str(m.meta.get("kind", "")),
                     summary=str(m.meta.get("summary", "")), body=m.body, tags=tuple(m.meta.get("tags", ())),
                     links=tuple(m.meta.get("links", ()))) for m in memories]
    skipped = [{"id": i, "reason": r} for i, r in bad]
    skipped += [{"id": p.path, "reason": p.message} for p in vault.catalog().errors() if f"/{layer}/" in p.path]
    return entries, skipped


def known_patterns(vault: Vault):
    """Every pattern distill proposed before, with what became of it (for idempotence)."""
    from memrepo.lifecycle.distill import KnownPattern
    from memrepo.review import proposals
    found: dict[str, KnownPattern] = {}

    def note(memory: Memory, status: str) -> None:
        if memory.meta.get("source") != "distill":
            return
        found[memory.id] = KnownPattern(memory.id, tuple(memory.meta.get("links", ())), status,
                                        tuple(memory.meta.get("x-distill-terms", ()) or ()))
    on_main = [r for r in vault.list() if str(r["id"]).startswith("pat_")]
    for memory in _read_main(vault, on_main)[0]:
        note(memory, "rejected" if memory.meta.get("status") == "rolled_back" else "applied")
    for p in proposals.list_proposals(vault, include_closed=True):
        if all(i in found for i in p.ids if i.startswith("pat_")):
            continue  # no pattern, or every one is on main (applied) and noted above
        for memory in proposals.memories_of(vault, p):
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


def distill(vault: Vault, *, now: str | dt.datetime | None = None, promote: bool = False,
            dry_run: bool = False) -> DistillReport:
    """Find recurring L1 patterns (or L2 for ``promote``) and propose them on one branch."""
    from memrepo.lifecycle import distill as algo
    from memrepo.review import proposals
    when = resolve_now(now)
    params = _section(vault, "promote" if promote else "distill", PROMOTE_DEFAULTS if promote else DISTILL_DEFAULTS)
    layer, target = ("L2", "L3") if promote else ("L1", "L2")
    with vault.lock():
        entries, skipped = _entries(vault, layer, when, int(params["window_days"]))
        known = known_patterns(vault)
        result = algo.find_patterns(entries, now=when, window_days=int(params["window_days"]),
                                    min_occurrences=int(params["min_occurrences"]), count_by=params["count_by"],
                                    similarity=float(params["similarity"]), known=known, layer=target)
        proposal_id = None
        if result.candidates and not dry_run:
            memories = [_candidate_memory(c, when) for c in result.candidates]
            pid = _free_proposal_id(vault, f"{'promote' if promote else 'distill'}_{when:%Y%m%d}")
            reason = (f"nightly {'promotion' if promote else 'distill'}: {len(memories)} pattern(s) recurring on "
                      f">= {params['min_occurrences']} distinct {params['count_by'].replace('_', ' ')}s")
            faults.point("distill-proposed")
            proposal_id = proposals.create(vault, memories, reason=reason, proposal_id=pid).id
    report = DistillReport(
        now=when.isoformat(), layer=target, considered=result.considered,
        candidates=tuple({"id": c.id, "summary": c.summary, "members": list(c.members), "days": list(c.days),
                          "sessions": list(c.sessions), "occurrences": c.occurrences, "explain": c.explain}
                         for c in result.candidates),
        reinforcements=tuple({"pattern": r.key, "new_members": list(r.new_members)} for r in result.reinforcements),
        suppressed=tuple({"pattern": s.key, "status": s.status, "members": list(s.members)} for s in result.suppressed),
        skipped=tuple(skipped + [{"id": s.id, "reason": s.reason} for s in result.skipped]),
        proposal=proposal_id)
    if dry_run:
        return report
    if report.reinforcements:
        _record_reinforcements(vault, report)
    log = _run_log(vault, "promote" if promote else "distill", report.as_dict())
    return DistillReport(**{**report.as_dict(), "log": str(log)})


def _record_reinforcements(vault: Vault, report: DistillReport) -> None:
    path = vault.state_dir / "reinforcements.jsonl"
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a", encoding="utf-8") as fh:
        for r in report.reinforcements:
            fh.write(json.dumps({"at": report.now, **r}, ensure_ascii=False) + "\n")


def _free_proposal_id(vault: Vault, base: str) -> str:
    from memrepo.review.proposals import APPLIED_PREFIX, BRANCH_PREFIX, REJECTED_PREFIX
    n = 1
    while True:
        pid = base if n == 1 else f"{base}_{n}"
        refs = (f"refs/heads/{BRANCH_PREFIX}{pid}", APPLIED_PREFIX + pid, REJECTED_PREFIX + pid)
        if not any(git.rev_parse(vault.root, r) for r in refs):
            return pid
        n += 1


def _rows(memories: Iterable[Memory]) -> list:
    """Check rows of files a commit removes (moves to ``archive/`` or another layer)."""
    from memrepo.store.checks import Row
    return [Row.of(m) for m in memories]


# ------------------------------------------------------------------ graph & decay

def _nodes(memories: Iterable[Memory]):
    from memrepo.lifecycle.graph import Node
    for m in memories:
        g = m.meta.get
        weight = g("weight")
        yield Node(id=m.id, status=str(g("status", "")), links=tuple(g("links", ())), body=m.body,
                   supersedes=(g("supersedes"),) if g("supersedes") else (),
                   superseded_by=(g("superseded_by"),) if g("superseded_by") else (),
                   weight=float(weight) if isinstance(weight, int | float) else 0.0, layer=g("layer"),
                   created=g("created"), expires=g("expires"))


def _stats(vault: Vault):
    from memrepo.retrieval.search import stats
    return stats(vault)


def build_graph(vault: Vault):
    """The memory graph of main, with co-occurrence edges from the search statistics."""
    from memrepo.lifecycle import graph
    memories, _ = _read_main(vault, vault.list())
    return graph.build_graph(_nodes(memories), _stats(vault).cooccurrences()), memories


def decay_params(vault: Vault):
    from memrepo.lifecycle.decay import DecayParams
    given = dict(vault.config.data.get("decay", {}))
    if "protected_layers" in given:
        given["protected_layers"] = tuple(given["protected_layers"])
    try:
        return DecayParams(**given)
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


def decay(vault: Vault, *, now: str | dt.datetime | None = None, dry_run: bool = False) -> DecayReport:
    """Compute influence activity; archive the cold (one commit), propose deleting the dead."""
    from memrepo.lifecycle import decay as algo
    from memrepo.review import proposals
    when = resolve_now(now)
    params = decay_params(vault)
    if not dry_run:
        vault.require_main_checkout()
    with vault.lock():
        graph, memories = build_graph(vault)
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
        vault.check_new(moved, deleted=_rows(old))  # a move: the old file goes in the same commit
        commit = vault.commit(writes=moved, deletes=[m.path for m in old], message=message).commit
        proposal = None
        doomed = [m for m in moved if m.id in set(plan.deletion_candidates)]
        if doomed:
            pid = _free_proposal_id(vault, f"cleanup_{when:%Y%m%d}")
            proposal = proposals.create(vault, [], deletes=doomed, proposal_id=pid,
                                        reason="cold, isolated and unweighted: delete (git history keeps them)").id
    report = DecayReport(report.now, report.decisions, report.archived, report.deletion_candidates,
                         commit, proposal, False)
    log = _run_log(vault, "decay", report.as_dict())
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
    policy = str(vault.config.data.get("cleanup", {}).get("policy", "demote"))
    with vault.lock():
        rows = [r for r in vault.list(status="active")]
        memories, _ = _read_main(vault, rows)
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
        vault.check_new(writes, deleted=_rows(moved))
        deletes = [m.path for m in moved]
        message = (f"memrepo: clean up {len(writes)} expired memor{'y' if len(writes) == 1 else 'ies'}\n\n"
                   + "\n".join(f"- {a.id}: {a.reason}" for a in plan.actions)
                   + "\n\nMemrepo-Action: cleanup\n")
        commit = vault.commit(writes=writes, deletes=deletes, message=message).commit
    return CleanupReport(when.isoformat(), actions, skipped, commit)


# ------------------------------------------------------------------ nightly & schedule

def nightly(vault: Vault, *, now: str | dt.datetime | None = None) -> dict[str, Any]:
    """Distill, promote, decay, clean-up and index maintenance, never two runs at once."""
    from memrepo.retrieval import search
    lock_path = git.git_path(vault.root, "memrepo-nightly.lock")
    try:
        with locked(lock_path, timeout=0, what="the nightly run"):
            result = {"now": resolve_now(now).isoformat(),
                      "distill": _summary(distill(vault, now=now)),
                      "promote": _summary(distill(vault, now=now, promote=True))}
            try:
                vault.require_main_checkout()
                result["decay"] = _summary(decay(vault, now=now))
                result["cleanup"] = _summary(cleanup(vault, now=now))
            except Conflict as e:  # proposals never need the checkout; main's commits do
                result["decay"] = result["cleanup"] = {"skipped": str(e), "changed": False}
            result["index"] = asdict(search.sync(vault))
    except Busy:
        raise Busy("another nightly run is still in progress on this vault; this one did nothing") from None
    result["changed"] = any(v.get("changed") for v in result.values() if isinstance(v, dict))
    with (vault.state_dir / "nightly.log").open("a", encoding="utf-8") as fh:
        fh.write(json.dumps(result, ensure_ascii=False, default=str) + "\n")
    return result


def _summary(report) -> dict[str, Any]:
    d = report.as_dict()
    out = {k: d[k] for k in ("proposal", "commit") if d.get(k)}
    for key in ("candidates", "reinforcements", "archived", "deletion_candidates", "actions", "skipped"):
        if d.get(key):
            out[key] = len(d[key])
    out["changed"] = bool(d.get("proposal") or d.get("commit"))
    return out


def schedule_text(vault: Vault, *, kind: str = "cron", at: str = "03:17") -> dict[str, str]:
    """The cron line or systemd user units that run ``memrepo nightly`` on this vault."""
    try:
        hour, minute = (int(x) for x in at.split(":"))
        assert 0 <= hour < 24 and 0 <= minute < 60
    except (ValueError, AssertionError):
        raise UsageError(f"--at {at!r}: use HH:MM (24-hour)") from None
    command = f"{shlex.quote(sys.executable)} -m memrepo --vault {shlex.quote(str(vault.root))} nightly --quiet"
    log = shlex.quote(str(vault.state_dir / "nightly.out"))
    if kind == "cron":
        return {"crontab": f"{minute} {hour} * * * {command} >> {log} 2>&1  # memrepo nightly {vault.root}"}
    if kind == "systemd":
        name = _unit_name(vault)
        service = (f"[Unit]\nDescription=memrepo nightly maintenance of {vault.root}\n\n[Service]\nType=oneshot\n"
                   f"ExecStart={command}\n")
        timer = (f"[Unit]\nDescription=Run {name}.service every night\n\n[Timer]\nOnCalendar=*-*-* {hour:02d}:{minute:02d}:00\n"
                 f"Persistent=true\n\n[Install]\nWantedBy=timers.target\n")
        return {f"{name}.service": service, f"{name}.timer": timer}
    raise UsageError(f"--kind must be cron or systemd, not {kind!r}")


def _unit_name(vault: Vault) -> str:
    import hashlib
    return "memrepo-nightly-" + hashlib.sha1(str(vault.root).encode()).hexdigest()[:8]


def install_schedule(vault: Vault, *, kind: str = "cron", at: str = "03:17") -> list[str]:
    """Install for the current user: a crontab line (kept once) or systemd user units."""
    import subprocess
    files = schedule_text(vault, kind=kind, at=at)
    if kind == "systemd":
        base = Path(os.environ.get("XDG_CONFIG_HOME") or Path.home() / ".config") / "systemd" / "user"
        base.mkdir(parents=True, exist_ok=True)
        written = []
        for name, text in files.items():
            (base / name).write_text(text, encoding="utf-8")
            written.append(str(base / name))
        unit = _unit_name(vault)
        return written + [f"enable it with: systemctl --user daemon-reload && systemctl --user enable --now {unit}.timer"]
    line = files["crontab"]
    try:
        current = subprocess.run(["crontab", "-l"], capture_output=True, text=True)
    except FileNotFoundError:
        raise UsageError("no 'crontab' command on this machine; use --kind systemd") from None
    existing = current.stdout if current.returncode == 0 else ""
    marker = f"# memrepo nightly {vault.root}"
    kept = [ln for ln in existing.splitlines() if not ln.endswith(marker)]
    new = "\n".join(kept + [line]) + "\n"
    proc = subprocess.run(["crontab", "-"], input=new, capture_output=True, text=True)
    if proc.returncode != 0:
        raise UsageError(f"crontab refused the entry: {proc.stderr.strip()}")
    return [f"installed in your crontab: {line}"]
