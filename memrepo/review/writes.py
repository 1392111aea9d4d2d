"""Writing memories: ``add`` (one memory, one commit) and ``import`` (many, one commit).

Every write passes the same pipeline: build the front matter with defaults -> check the file
and the cross-file invariants -> risk check -> commit to main (low risk) or open a proposal
(high risk). Nothing is written unless every check passed.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from memrepo.errors import InvalidMemory, Problem, UsageError
from memrepo.model import Memory, new_id, normalise_timestamp, now_iso
from memrepo.review import risk
from memrepo.store import faults, git, jsontext
from memrepo.store.checks import Overlay, Row, check_memory, check_new_ids, check_rows, check_scope, text_problems
from memrepo.store.vault import Vault, render_bytes

DEFAULT_SUBJECT = "general"
DEFAULT_KIND = {"L1": "event", "L2": "pattern", "L3": "principle", "L4": "identity"}
SUMMARY_CHARS = 120


def import_record() -> git.RefChange:
    """The record of an import commit (for its own ref transaction): the audit knows a bulk
    import by it (memrepo.review.gate), not by the commit message's trailer."""
    from memrepo.review.records import IMPORTED_PREFIX
    return git.RefChange(IMPORTED_PREFIX + new_id().replace("mem_", "imp_", 1), git.NEW_COMMIT, None)


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


def default_author(vault: Vault, agent: str | None = None) -> str:
    """``$MEMREPO_AUTHOR``, else the acting ``agent``, else git's user."""
    return os.environ.get("MEMREPO_AUTHOR") or agent or git.identity(vault.root)[0]


def refuse_foreign_scope(vault: Vault, memory: Memory, agent: str | None) -> None:
    """A private memory is written only into its own agent's private vault, by that agent."""
    problems = check_scope(memory, owner=vault.owner, agent=agent)
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


def add(vault: Vault, fields: dict[str, Any], body: str = "", *, author: str | None = None, agent: str | None = None,
        push: bool = False, remote: str = "origin", review: str | None = None,
        request_id: str | None = None, call_id: str | None = None) -> WriteResult:
    """Write one memory: low risk commits to main as active, high risk opens a proposal.

    ``agent`` is the agent acting (the default author; only it may write its private scope).
    ``review`` (a reason) sends the write to review whatever the risk policy says: an agent's
    ``agent`` is the agent acting: the default author and the commit's author (with the email of
    the person whose git identity runs it), and the only one who may write its private scope.
    ``review`` (a reason) sends the write to review whatever the risk policy says: an agent's
    write into a long-term layer, for instance. ``request_id`` (an idempotency key): a retry with
    the same key returns the first write's result. ``call_id`` is only named in the commit (how a
    caller that lost the answer finds out what was written)."""
    from memrepo.review import requests
    request_id = requests.checked(request_id)
    memory = build(fields, body, author=author or fields.get("author") or default_author(vault, agent))
    _refuse_given_status(fields)
    unwritable = text_problems(memory)
    if unwritable:
        raise InvalidMemory(unwritable, "nothing was written")
    refuse_foreign_scope(vault, memory, agent)
    with vault.lock():
        vault.require_main_checkout()
        done = requests.recorded(vault, request_id)
        if done:
            return result_of(vault, done)
        return write_locked(vault, memory, push=push, remote=remote, review=review, given_id=bool(fields.get("id")),
                            agent=agent, request_id=request_id, call_id=call_id)


def result_of(vault: Vault, commit: str) -> WriteResult:
    """The result a write that made ``commit`` returned (a retried request answers with it)."""
    from memrepo.review.proposals import trailers
    t = trailers(git.commits(vault.root, [commit])[commit].body)
    memory_id = t.get("Memrepo-Id") or t.get("Memrepo-Ids", "").split(",")[0]
    path = vault.find_path(memory_id, commit)
    if path is None:
        raise InvalidMemory([], f"the commit {commit[:12]} recorded for this request holds no memory {memory_id!r}")
    m = vault.read_at(commit, path).meta
    proposal = t.get("Memrepo-Proposal") if t.get("Memrepo-Action") == "propose" else None
    return WriteResult(memory_id, path, str(m.get("status")), None if proposal else commit, proposal,
                       m.get("risk"), m.get("risk_reason"), m.get("supersedes"))


def write_locked(vault: Vault, memory: Memory, *, push: bool = False, remote: str = "origin",
                 review: str | None = None, given_id: bool = True, agent: str | None = None,
                 request_id: str | None = None, call_id: str | None = None) -> WriteResult:
    """The rest of :func:`add` for a caller that already holds the vault lock on main.

    ``given_id`` False says the id was just generated: no open proposal can carry it, so the
    proposal branches are not read."""
    catalog = vault.catalog()
    taken = check_new_ids([Row.of(memory)], catalog)
    if given_id and not taken:
        taken = pending_elsewhere(vault, [Row.of(memory)])
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
        proposal = proposals.create(vault, [memory], reason=decision.reason, push=push, remote=remote, checked=True,
                                    agent=agent, request_id=request_id, call_id=call_id)
        return WriteResult(memory.id, memory.path, memory.status, None, proposal.id,
                           decision.level, decision.reason, memory.supersedes)
    writes = [memory] + _superseded(vault, decision.supersedes, memory)
    vault.check_new(writes)
    faults.point("add-checked")
    from memrepo.review import requests
    message = message_for("add", memory, extra=requests.trailers(request_id, call_id))
    result = vault.commit(writes=writes, message=message, agent=agent, also=requests.record(request_id))
    return WriteResult(memory.id, memory.path, memory.status, result.commit, None,
                       decision.level, decision.reason, memory.supersedes)


def pending_elsewhere(vault: Vault, rows: list[Row]) -> list[Problem]:
    """A new memory must not take an id an open proposal carries: applying that proposal
    would then overwrite it (or it would overwrite the reviewed one)."""
    from memrepo.review import proposals
    pending = proposals.open_ids(vault) if rows else {}
    return [Problem(r.path, "id", (
        f"{r.id!r} is already pending in proposal {pending[r.id]} (see 'memrepo review {pending[r.id]}'); "
        "a new memory needs a new id: leave the id out to get a fresh one, or apply or reject that proposal first"))
        for r in rows if r.id in pending]


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
            record = jsontext.loads(line, where="the line")
        except jsontext.BadJson as e:
            problems.append(Problem(where, "(line)", f"not a JSON object memrepo can take: {e}"))
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


def checked(memory: Memory) -> tuple[list[Problem], bytes | None]:
    """Every per-file problem of ``memory`` and, when there is none, its file's bytes (rendered
    once: the check reads them). A memory with text that cannot be written (a lone surrogate)
    has no bytes: only its text problems are reported."""
    try:
        data = render_bytes(memory)
    except UnicodeEncodeError as e:   # text_problems names the field; never a line dropped unsaid
        return text_problems(memory) or [Problem(memory.path, "(file)", (
            f"cannot be written as UTF-8 ({e.reason}: {e.object[e.start:e.end]!r}); fix the encoding of the input"))], None
    found = check_memory(memory, text=data.decode("utf-8"))
    return found, None if found else data


def import_jsonl(vault: Vault, path: Path, *, skip_invalid: bool = False, propose: bool = False,
                 author: str | None = None, agent: str | None = None,
                 progress: Callable[[int, int], None] | None = None) -> ImportResult:
    """Import a JSONL file as one commit (or one proposal with ``propose``); ``agent``: the
    agent acting (the default author; only it may write its private scope)."""
    from memrepo.review import proposals

    vault.require_main_checkout()
    items, problems = parse_jsonl(Path(path), author=author or default_author(vault, agent))
    name = str(path)
    line_of: dict[str, int] = {}
    good: list[Memory] = []
    rendered: dict[str, bytes] = {}  # each good memory's file, written as checked
    for i, (n, memory) in enumerate(items, start=1):
        found, data = checked(memory)
        found += check_scope(memory, owner=vault.owner, agent=agent)
        if memory.path in line_of:
            # The same id (and so the same file) twice in one file: the cross-file check keys
            # rows by path and would never see it, and the second line would overwrite the first.
            found.append(Problem(memory.path, "id", f"{memory.id!r} is also given on line {line_of[memory.path]}; ids must be unique"))
        problems += [Problem(f"{name}:line {n}", p.field, p.message) for p in found]
        if not found and data is not None:  # (no problem: rendered)
            good.append(memory)
            line_of[memory.path] = n
            rendered[memory.path] = data
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
        result = vault.commit(files={m.path: rendered[m.path] for m in good}, parsed=good, message=message,
                              also=[import_record()])  # the record, not the message, tells the audit
    if progress:
        progress(len(items), len(items))
    return ImportResult(len(good), result.commit, None, tuple(problems))


def _cross_check(vault: Vault, memories: list[Memory], name: str, line_of: dict[str, int]) -> tuple[list[Memory], list[Problem]]:
    """Invariants across the batch and against the vault; drops the memories that fail."""
    rows = [Row.of(m) for m in memories]
    found = check_new_ids(rows, vault.catalog()) + check_rows(rows, Overlay(vault.catalog(), rows))
    found += pending_elsewhere(vault, [r for r in rows if r.path not in {p.path for p in found}])
    bad_paths = {p.path for p in found}
    problems = [Problem(f"{name}:line {line_of.get(p.path, '?')}", p.field, p.message) for p in found]
    return [m for m in memories if m.path not in bad_paths], problems


# ------------------------------------------------------------------ hand-written files

HAND_STATUSES = (None, "active", "pending_review")
_DECIDED_HERE = ("risk", "risk_reason", "proposal", "rollback_point")  # memrepo's bookkeeping, not the writer's


@dataclass(frozen=True)
class FilesResult:
    written: tuple[WriteResult, ...]
    skipped: tuple[Problem, ...] = ()
    taken: tuple[str, ...] = ()    # hand files inside the vault now held by memrepo (removed from the checkout)

    def as_dict(self) -> dict[str, Any]:
        return {"written": [w.as_dict() for w in self.written], "skipped": [str(p) for p in self.skipped],
                "taken": list(self.taken)}


@dataclass(frozen=True)
class _HandFile:
    shown: str           # the path as the person gave it (problems name it)
    source: Path
    memory: Memory
    review: str | None   # the file asked for review (status: pending_review)


def hand_files(paths: list[Path]) -> list[Path]:
    """The files to read: each given file, and every ``*.md`` file under a given folder."""
    found: list[Path] = []
    for p in paths:
        if p.is_dir():
            found += sorted(q for q in p.rglob("*.md") if q.is_file() and not q.name.startswith("."))
        elif p.is_file():
            found.append(p)
        else:
            from memrepo.errors import NotFound
            raise NotFound(f"{p}: no such file or folder (nothing was written)")
    if not found:
        raise UsageError(f"no memory files (*.md) in {', '.join(map(str, paths))} (nothing was written)")
    return list(dict.fromkeys(found))


def _read_hand_file(vault: Vault, source: Path, *, author: str | None,
                    agent: str | None) -> tuple[_HandFile | None, list[Problem]]:
    from memrepo.store import document
    shown = str(source)
    try:
        parsed = document.load_bytes(source.read_bytes(), shown)
    except OSError as e:
        return None, [Problem(shown, "(file)", f"cannot be read: {e.strerror}")]
    except document.DocumentError as e:
        return None, [e.problem]
    meta = dict(parsed.meta)
    status = meta.pop("status", None)
    if status not in HAND_STATUSES:
        return None, [Problem(shown, "status", (
            f"{status!r}: a hand-written memory comes in as 'active' (the risk check decides) or 'pending_review' "
            "(it goes to review); other statuses are set by memrepo's own commands"))]
    for key in _DECIDED_HERE:
        meta.pop(key, None)
    memory = build(meta, parsed.body, author=author or meta.get("author") or default_author(vault, agent))
    review = f"hand-written file {source.name} asks for review (status: pending_review)" if status == "pending_review" else None
    found = checked(memory)[0]
    found += check_scope(memory, owner=vault.owner, agent=agent)
    return _HandFile(shown, source, memory, review), [_named(p, shown) for p in found]


def _named(problem: Problem, shown: str) -> Problem:
    """A problem found on the memory's vault path, said of the file the person gave."""
    return Problem(shown, problem.field, problem.message, problem.line)


def add_files(vault: Vault, paths: Sequence[str | os.PathLike], *, skip_invalid: bool = False,
              author: str | None = None, agent: str | None = None, push: bool = False,
              remote: str = "origin") -> FilesResult:
    """Write hand-written memory files (front matter + body) through the normal write path.

    Each file is what ``add`` would write: the same checks, the id refused when the vault or an
    open proposal has it, low risk committed to main, high risk (or ``status: pending_review``)
    opened as a proposal. Every file is checked before anything is written: one bad file and
    nothing is written (``skip_invalid`` writes the others). A file inside the vault's memory
    folders that main does not hold is taken over: memrepo removes it from the checkout, as its
    memory is now on main (at its canonical place) or in a proposal.
    """
    sources = hand_files([Path(p) for p in paths])
    items: list[_HandFile] = []
    problems: list[Problem] = []
    first_of: dict[str, str] = {}
    for source in sources:
        item, found = _read_hand_file(vault, source, author=author, agent=agent)
        if item is not None and item.memory.id in first_of:
            found.append(Problem(item.shown, "id", f"{item.memory.id!r} is also the id in {first_of[item.memory.id]}; ids must be unique"))
        problems += found
        if item is not None and not found:
            items.append(item)
            first_of[item.memory.id] = item.shown
    with vault.lock():
        vault.require_main_checkout()
        rows = [Row.of(i.memory) for i in items]
        shown = {i.memory.path: i.shown for i in items}
        found = check_new_ids(rows, vault.catalog())
        found += pending_elsewhere(vault, [r for r in rows if r.path not in {p.path for p in found}])
        pending = [Row.of(i.memory.evolve(status="pending_review")) for i in items]
        found += [p for p in check_rows(pending, Overlay(vault.catalog(), pending)) if p.field != "status"]
        problems += [_named(p, shown.get(p.path, p.path)) for p in found]
        bad = {p.path for p in found}
        items = [i for i in items if i.memory.path not in bad]
        if problems and not skip_invalid:
            raise InvalidMemory(sorted(set(problems)), "nothing was written; fix these files, or pass --skip-invalid to write the others")
        taken = _take_over(vault, items)
        written: list[WriteResult] = []
        try:
            for item in items:
                written.append(write_locked(vault, item.memory, push=push, remote=remote, review=item.review))
        except BaseException:
            _give_back(vault, taken, done={w.id for w in written})
            raise
    return FilesResult(tuple(written), tuple(sorted(set(problems))), tuple(sorted(taken)))


def _take_over(vault: Vault, items: list[_HandFile]) -> dict[str, tuple[str, bytes]]:
    """Remove from the checkout (and the index) the hand files inside the vault that main does not
    hold: memrepo writes their memory now, and an untracked copy would stand in its way."""
    from memrepo.model import MEMORY_ROOTS
    taken: dict[str, tuple[str, bytes]] = {}
    for item in items:
        try:
            rel = item.source.resolve().relative_to(vault.root).as_posix()
        except ValueError:
            continue  # outside the vault: the person's file stays where it is
        if rel.split("/", 1)[0] not in MEMORY_ROOTS or git.exists(vault.root, f"{vault.main_ref}:{rel}"):
            continue
        taken[rel] = (item.memory.id, item.source.read_bytes())
    for rel in taken:
        (vault.root / rel).unlink()
    git.update_index(vault.root, list(taken))
    return taken


def _give_back(vault: Vault, taken: dict[str, tuple[str, bytes]], *, done: set[str]) -> None:
    """Put back the hand files whose memory was not written (a write failed half-way)."""
    for rel, (memory_id, data) in taken.items():
        target = vault.root / rel
        if memory_id not in done and not target.exists():
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(data)
