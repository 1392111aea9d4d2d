"""Writing memories: ``add`` (one memory, one commit) and ``import`` (many, one commit).

Every write passes the same pipeline: build the front matter with defaults -> check the file
and the cross-file invariants -> risk check -> commit to main (low risk) or open a proposal
(high risk). Nothing is written unless every check passed.
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from memrepo.errors import InvalidMemory, Problem, UsageError
from memrepo.model import Memory, new_id, normalise_timestamp, now_iso
from memrepo.review import risk
from memrepo.store import faults, git
from memrepo.store.checks import Overlay, Row, check_memory, check_new_ids, check_rows, check_scope, text_problems
from memrepo.store.vault import Vault, render_bytes

DEFAULT_SUBJECT = "general"
DEFAULT_KIND = {"L1": "event", "L2": "pattern", "L3": "principle", "L4": "identity"}
SUMMARY_CHARS = 120


@dataclass(frozen=True)
class WriteResult:
    id: str
    path: str
    status: str
    commit: str | None = None
    proposal: str | None = None
    risk: str | None = None
    risk_reason: str | None = None
    supersedes: str | None = None

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"id": self.id, "path": self.path, "status": self.status}
        out["commit" if self.commit else "proposal"] = self.commit or self.proposal
        if self.commit and self.proposal:
            out["proposal"] = self.proposal
        out.update(risk=self.risk, risk_reason=self.risk_reason, supersedes=self.supersedes)
        return out


def summary_from(body: str) -> str:
    """First non-empty line of the body, without markdown markers, as a one-line summary."""
    for line in body.splitlines():
        line = line.strip().lstrip("#>-* ").strip()
        if line:
            return line[:SUMMARY_CHARS].rstrip()
    return ""


AGENT_ENV = "MEMREPO_AGENT"


def default_author(vault: Vault) -> str:
    """``$MEMREPO_AUTHOR``, else the agent named by ``--agent`` / ``$MEMREPO_AGENT``, else git's user."""
    return os.environ.get("MEMREPO_AUTHOR") or os.environ.get(AGENT_ENV) or git.identity(vault.root)[0]


def refuse_foreign_scope(vault: Vault, memory: Memory) -> None:
    """A private memory is written only into its own agent's private vault, by that agent."""
    problems = check_scope(memory, owner=vault.owner, agent=os.environ.get(AGENT_ENV) or None)
    if problems:
        raise InvalidMemory(problems, "nothing was written")


def build(fields: dict[str, Any], body: str, *, author: str, source: str = "user") -> Memory:
    """A memory from user fields plus the documented defaults (id, layer, kind, status, ...)."""
    meta = {k: normalise_timestamp(v) for k, v in fields.items() if v not in (None, (), [])}
    layer = meta.setdefault("layer", "L1")
    meta.setdefault("id", new_id())
    meta.setdefault("kind", DEFAULT_KIND.get(layer, "event") if isinstance(layer, str) else "event")
    meta.setdefault("subject", DEFAULT_SUBJECT)
    if not meta.get("summary"):
        meta["summary"] = summary_from(body)
    meta.setdefault("status", "active")
    meta.setdefault("source", source)
    meta.setdefault("author", author)
    meta.setdefault("scope", "shared")
    meta.setdefault("created", now_iso())
    for key in ("tags", "links", "cites", "evidence", "affects"):
        if key in meta and isinstance(meta[key], list | tuple) and all(isinstance(v, str) for v in meta[key]):
            meta[key] = list(dict.fromkeys(meta[key]))  # other items: the schema refuses them
    return Memory(meta, body)


def add(vault: Vault, fields: dict[str, Any], body: str = "", *, author: str | None = None,
        push: bool = False, remote: str = "origin", review: str | None = None) -> WriteResult:
    """Write one memory: low risk commits to main as active, high risk opens a proposal.

    ``review`` (a reason) sends the write to review whatever the risk policy says: an agent's
    write into a long-term layer, for instance."""
    memory = build(fields, body, author=author or fields.get("author") or default_author(vault))
    _refuse_given_status(fields)
    unwritable = text_problems(memory)
    if unwritable:
        raise InvalidMemory(unwritable, "nothing was written")
    refuse_foreign_scope(vault, memory)
    with vault.lock():
        vault.require_main_checkout()
        return write_locked(vault, memory, push=push, remote=remote, review=review)


def write_locked(vault: Vault, memory: Memory, *, push: bool = False, remote: str = "origin",
                 review: str | None = None) -> WriteResult:
    """The rest of :func:`add` for a caller that already holds the vault lock on main."""
    catalog = vault.catalog()
    taken = check_new_ids([Row.of(memory)], catalog)
    if taken:
        raise InvalidMemory(taken, "nothing was written")
    decision = risk.assess(memory.meta, catalog, vault.config)
    if review:
        decision = risk.Decision("high", "; ".join(r for r in (review, decision.reason if decision.high else "") if r),
                                 decision.supersedes)
    status = "pending_review" if decision.high else "active"
    memory = memory.evolve(status=status, risk=decision.level, risk_reason=decision.reason,
                           supersedes=decision.supersedes.id if decision.supersedes else None)
    if decision.high:
        from memrepo.review import proposals
        _check_alone(vault, memory)
        faults.point("add-checked")
        proposal = proposals.create(vault, [memory], reason=decision.reason, push=push, remote=remote, checked=True)
        return WriteResult(memory.id, memory.path, memory.status, None, proposal.id,
                           decision.level, decision.reason, memory.supersedes)
    writes = [memory] + _superseded(vault, decision.supersedes, memory)
    vault.check_new(writes)
    faults.point("add-checked")
    result = vault.commit(writes=writes, message=message_for("add", memory))
    return WriteResult(memory.id, memory.path, memory.status, result.commit, None,
                       decision.level, decision.reason, memory.supersedes)


def _refuse_given_status(fields: dict[str, Any]) -> None:
    if fields.get("status") not in (None, "active"):
        raise UsageError("'status' is decided by the risk check on add; edit the file by hand for other statuses")


def _check_alone(vault: Vault, memory: Memory) -> None:
    """A proposal's memory must be valid on its own (schema, secrets, unique id)."""
    problems = check_memory(memory, text=render_bytes(memory).decode("utf-8"))
    row = Row.of(memory)
    problems += [p for p in check_rows([row], Overlay(vault.catalog(), [row])) if p.field == "id"]
    if problems:
        raise InvalidMemory(problems, "nothing was written")


def _superseded(vault: Vault, old: Row | None, new: Memory) -> list[Memory]:
    if old is None:
        return []
    previous = vault.read_at(vault.main_ref, old.path)
    return [previous.evolve(status="superseded", superseded_by=new.id, updated=now_iso())]


def message_for(action: str, memory: Memory, *, extra: dict[str, str] | None = None, body: str = "") -> str:
    """A commit message that says what changed, plus machine-readable trailers."""
    m = memory.meta
    key = f" [{m['subject']} {m['fact']}]" if m.get("fact") else f" [{m['subject']}]"
    title = f"memrepo: {action} {m['id']}{key} {m['summary']}"
    title = title if len(title) <= 100 else title[:99] + "…"
    trailers = {"Memrepo-Action": action, "Memrepo-Id": m["id"], "Memrepo-Author": str(m.get("author", "")),
                "Memrepo-Risk": f"{m.get('risk', 'low')}: {m.get('risk_reason', '')}".strip()}
    trailers.update(extra or {})
    lines = [title, ""] + ([body.rstrip(), ""] if body else [])
    lines += [f"{k}: {v}" for k, v in trailers.items() if v]
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ import

@dataclass(frozen=True)
class ImportResult:
    count: int
    commit: str | None
    proposal: str | None = None
    skipped: tuple[Problem, ...] = field(default_factory=tuple)

    def as_dict(self) -> dict[str, Any]:
        return {"imported": self.count, "commit": self.commit, "proposal": self.proposal,
                "skipped": [str(p) for p in self.skipped]}


def parse_notes(path: Path, *, author: str) -> tuple[list[tuple[int, Memory]], list[Problem]]:
    """Memories from a folder (or file) of markdown notes written by other tools."""
    from memrepo.store.foreign import read_notes
    items, problems = [], []
    for n, (where, record, problem) in enumerate(read_notes(path), start=1):
        if record is None:
            problems.append(Problem(where, "(file)", problem))
            continue
        body = record.pop("body", "")
        items.append((n, _import_memory(record, str(body), author)))
    return items, problems


def parse_jsonl(path: Path, *, author: str) -> tuple[list[tuple[int, Memory]], list[Problem]]:
    """Memories of an import file with their line numbers, and the problems of bad lines."""
    if path.is_dir() or path.suffix == ".md":
        return parse_notes(path, author=author)
    items, problems = [], []
    name = str(path)
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}") from None
    for n, line in enumerate(raw.split(b"\n"), start=1):
        if not line.strip():
            continue
        where = f"{name}:line {n}"
        try:
            record = json.loads(line.decode("utf-8"))
        except (UnicodeDecodeError, json.JSONDecodeError) as e:
            problems.append(Problem(where, "(line)", f"not a JSON object: {e}"))
            continue
        if not isinstance(record, dict):
            problems.append(Problem(where, "(line)", "must be a JSON object of front-matter fields plus 'body'"))
            continue
        body = record.pop("body", "")
        if not isinstance(body, str):
            problems.append(Problem(where, "body", "must be a string"))
            continue
        items.append((n, _import_memory(record, body, author)))
    return items, problems


def _import_memory(record: dict[str, Any], body: str, author: str) -> Memory:
    given = record.get("source")
    record["source"] = "import"
    if given not in (None, "import"):
        record["x-original-source"] = given
    record.setdefault("risk", "low")
    record.setdefault("risk_reason", "bulk import by a person")
    return build(record, body, author=author, source="import")


def import_jsonl(vault: Vault, path: Path, *, skip_invalid: bool = False, propose: bool = False,
                 author: str | None = None, progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Import a JSONL file as one commit (or one proposal with ``propose``)."""
    from memrepo.review import proposals

    vault.require_main_checkout()
    items, problems = parse_jsonl(Path(path), author=author or default_author(vault))
    name = str(path)
    line_of: dict[str, int] = {}
    good: list[Memory] = []
    for i, (n, memory) in enumerate(items, start=1):
        found = text_problems(memory) or check_memory(memory, text=render_bytes(memory).decode("utf-8"))
        found += check_scope(memory, owner=vault.owner, agent=os.environ.get(AGENT_ENV) or None)
        if memory.path in line_of:
            # The same id (and so the same file) twice in one file: the cross-file check keys
            # rows by path and would never see it, and the second line would overwrite the first.
            found.append(Problem(memory.path, "id", f"{memory.id!r} is also given on line {line_of[memory.path]}; ids must be unique"))
        problems += [Problem(f"{name}:line {n}", p.field, p.message) for p in found]
        if not found:
            good.append(memory)
            line_of[memory.path] = n
        if progress and i % 500 == 0:
            progress(i, len(items))
    with vault.lock():
        good, cross = _cross_check(vault, good, name, line_of)
        problems += cross
        problems.sort(key=lambda p: p.as_dict()["line"] or 0)  # in line order, whichever check found them
        if problems and not skip_invalid:
            raise InvalidMemory(problems, "nothing was imported; fix these lines or pass --skip-invalid")
        if not good:
            return ImportResult(0, None, None, tuple(problems))
        if propose:
            pending = [m.evolve(status="pending_review") if m.meta["status"] == "active" else m for m in good]
            proposal = proposals.create(vault, pending, reason=f"bulk import of {len(good)} memories from {Path(path).name}",
                                        checked=True)
            return ImportResult(len(good), None, proposal.id, tuple(problems))
        faults.point("import-checked")
        message = (f"memrepo: import {len(good)} memories from {Path(path).name}\n\n"
                   f"Memrepo-Action: import\nMemrepo-Count: {len(good)}\n")
        result = vault.commit(writes=good, message=message)
    if progress:
        progress(len(items), len(items))
    return ImportResult(len(good), result.commit, None, tuple(problems))


def _cross_check(vault: Vault, memories: list[Memory], name: str, line_of: dict[str, int]) -> tuple[list[Memory], list[Problem]]:
    """Invariants across the batch and against the vault; drops the memories that fail."""
    rows = [Row.of(m) for m in memories]
    found = check_new_ids(rows, vault.catalog()) + check_rows(rows, Overlay(vault.catalog(), rows))
    bad_paths = {p.path for p in found}
    problems = [Problem(f"{name}:line {line_of.get(p.path, '?')}", p.field, p.message) for p in found]
    return [m for m in memories if m.path not in bad_paths], problems
