"""``flush``: the pre-compaction flush. Before a runtime compacts a long session it
asks its model, silently, to write down what must survive; this files that output.

The model's output is JSON (one entry or a list) or markdown in the template
(``## What`` / ``## Decision`` / ``## Why`` / ``## Evidence`` / ``## Next``, entries separated
by ``---``). Each entry becomes an L1 memory of today's daily log (``source: flush``) through
the normal write path: low-risk entries in one commit, high-risk ones (constraints, overrides)
on one proposal. A cycle is flushed at most once: the commit carries a
``Memrepo-Flush-Cycle`` trailer, so the record lives in git, not in derived state. Without a
session, cycle numbers of different sessions look alike, so a repeat is one only when it also
says the same thing (``Memrepo-Flush-Digest``); other text under a known cycle is written, with
a notice to pass ``--session``.
Entries must be short, hard and reusable; a raw dump is refused with a pointer to evidence.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass, field
from typing import Any

from memrepo.errors import InvalidMemory, Problem, UsageError
from memrepo.model import Memory, check_choice, now_iso
from memrepo.resources import resource
from memrepo.store.vault import Vault

SECTIONS = ("what", "decision", "why", "evidence", "next")
TITLES = {"what": "What", "decision": "Decision", "why": "Why", "evidence": "Evidence", "next": "Next"}
_HEADING_WORDS = {
    "what": "what", "事实": "what", "发生了什么": "what",
    "decision": "decision", "决策": "decision", "决定": "decision",
    "why": "why", "原因": "why", "为什么": "why",
    "evidence": "evidence", "证据": "evidence",
    "next": "next", "下一步": "next", "后续": "next",
}
META_KEYS = ("subject", "fact", "kind", "tags", "links")
SILENT = ("", "NO_REPLY")
CYCLE_TRAILER = "Memrepo-Flush-Cycle"
SESSION_TRAILER = "Memrepo-Flush-Session"
DIGEST_TRAILER = "Memrepo-Flush-Digest"
_POINTER_RE = re.compile(r"evidence:[0-9a-f]{6,64}|https?://[^\s)>\]]+|[\w./-]+#L\d+(?:-L?\d+)?|\bmem_\d{8}_[a-z0-9]+\b")
_SEPARATOR_RE = re.compile(r"^\s*---+\s*$", re.MULTILINE)
_HEADING_RE = re.compile(r"^\s*#{1,6}\s*(.+?)\s*$")
_META_RE = re.compile(r"^\s*(subject|fact|kind|tags|links)\s*[:：]\s*(.*?)\s*$", re.IGNORECASE)


@dataclass(frozen=True)
class Entry:
    """One flush entry: template sections plus optional front-matter hints."""

    sections: dict[str, str]
    meta: dict[str, Any]
    number: int

    @property
    def empty(self) -> bool:
        return not any(v.strip() for v in self.sections.values())

    def body(self) -> str:
        return "\n\n".join(f"## {TITLES[s]}\n{self.sections[s].strip()}" for s in SECTIONS
                           if self.sections.get(s, "").strip()) + "\n"

    def summary(self) -> str:
        from memrepo.review.writes import summary_from
        return summary_from(self.sections.get("decision", "")) or summary_from(self.sections.get("what", "")) \
            or summary_from(self.body())


@dataclass(frozen=True)
class FlushResult:
    written: int
    cycle: str
    session: str | None = None
    active: tuple[str, ...] = ()
    pending_review: tuple[str, ...] = ()
    commit: str | None = None
    proposal: str | None = None
    reason: str | None = None
    skipped: tuple[Problem, ...] = field(default_factory=tuple)
    notice: str | None = None

    @property
    def silent(self) -> bool:
        return self.reason == "nothing to flush"

    def as_dict(self) -> dict[str, Any]:
        out: dict[str, Any] = {"written": self.written, "cycle": self.cycle, "session": self.session,
                               "active": list(self.active), "pending_review": list(self.pending_review),
                               "commit": self.commit, "proposal": self.proposal,
                               "skipped": [str(p) for p in self.skipped]}
        if self.reason:
            out["reason"] = self.reason
        if self.notice:
            out["notice"] = self.notice
        return out


# ------------------------------------------------------------------ parsing

def parse(text: str) -> list[Entry]:
    """The entries of a flush output (JSON or the markdown template); silence gives none."""
    stripped = (text or "").strip()
    if stripped in SILENT:
        return []
    if stripped[:1] in "[{":
        from memrepo.store.jsontext import BadJson, loads
        try:
            data = loads(stripped, where="flush input")
        except BadJson as e:
            raise UsageError(f"{e}; send JSON entries or the markdown template "
                             "(## What / ## Decision / ## Why / ## Evidence / ## Next)") from None
        return _from_json(data)
    return _from_markdown(stripped)


def _text(value: Any, where: str) -> str:
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list) and all(isinstance(v, str) for v in value):
        return "\n".join(f"- {v}" for v in value)
    raise UsageError(f"{where}: must be text or a list of texts")


def _from_json(data: Any) -> list[Entry]:
    records = data if isinstance(data, list) else [data]
    entries = []
    for n, record in enumerate(records, start=1):
        where = f"flush entry {n}"
        if not isinstance(record, dict):
            raise UsageError(f"{where}: must be an object with what/decision/why/evidence/next")
        unknown = set(record) - set(SECTIONS) - set(META_KEYS)
        if unknown:
            raise UsageError(f"{where}: unknown key(s) {', '.join(sorted(unknown))}; use "
                             f"{', '.join(SECTIONS + META_KEYS)}")
        sections = {s: _text(record.get(s), f"{where}.{s}") for s in SECTIONS}
        meta = {k: record[k] for k in META_KEYS if record.get(k) not in (None, "", [])}
        if isinstance(record.get("evidence"), list):
            meta["evidence"] = [e for e in record["evidence"] if isinstance(e, str)]
        entries.append(Entry(sections, meta, n))
    return entries


def _from_markdown(text: str) -> list[Entry]:
    entries = []
    for n, chunk in enumerate(_SEPARATOR_RE.split(text), start=1):
        sections: dict[str, list[str]] = {}
        meta: dict[str, Any] = {}
        current: str | None = None
        for line in chunk.splitlines():
            heading = _HEADING_RE.match(line)
            if heading:
                current = section_of(heading.group(1))
                if current is not None:
                    sections.setdefault(current, [])
                    continue
            m = _META_RE.match(line) if not sections else None
            if m:
                key, value = m.group(1).lower(), m.group(2)
                meta[key] = [v.strip() for v in value.split(",") if v.strip()] if key in ("tags", "links") else value
                continue
            if current is not None:
                sections[current].append(line)
            elif line.strip():
                sections.setdefault("what", []).append(line)
        entries.append(Entry({s: "\n".join(lines).strip() for s, lines in sections.items()},
                             {k: v for k, v in meta.items() if v}, n))
    return entries


def section_of(title: str) -> str | None:
    """``What``, ``What（事实）``, ``事实``, ``Decision (决策)`` ... -> the section name."""
    word = re.split(r"[\s(（:：]", title.strip(), maxsplit=1)[0].lower()
    return _HEADING_WORDS.get(word) or _HEADING_WORDS.get(title.strip().lower())


# ------------------------------------------------------------------ checking

def check(entry: Entry, limits: dict[str, Any]) -> list[Problem]:
    """Problems that make an entry a raw dump rather than a short, hard, reusable note."""
    where = f"flush entry {entry.number}"
    hint = ("keep it short, hard and reusable: save the raw text as evidence "
            "('memrepo prune' keeps tool output as evidence:<sha>) and cite the pointer instead")
    problems = []
    cap, lines_cap = int(limits["section_chars"]), int(limits["section_lines"])
    for name in SECTIONS:
        value = entry.sections.get(name, "").strip()
        if len(value) > cap:
            problems.append(Problem(where, name, f"{len(value):,} characters (cap {cap:,}); {hint}"))
        elif value.count("\n") + 1 > lines_cap:
            problems.append(Problem(where, name, f"{value.count(chr(10)) + 1} lines (cap {lines_cap}): a raw dump; {hint}"))
        elif value[:1] in "[{" and _is_json_document(value):
            problems.append(Problem(where, name, f"is a JSON document: a raw dump; {hint}"))
    total = len(entry.body())
    if total > int(limits["entry_chars"]):
        problems.append(Problem(where, "(entry)", f"{total:,} characters (cap {int(limits['entry_chars']):,}); {hint}"))
    return problems


def _is_json_document(value: str) -> bool:
    from memrepo.store.jsontext import BadJson, loads
    try:
        return isinstance(loads(value, where="value"), dict | list)
    except BadJson:  # not JSON (or none memrepo would load): text
        return False


def pointers(entry: Entry) -> list[str]:
    """Evidence pointers named in the entry (``evidence:<sha>``, path#Lx-Ly, URLs, memory ids)."""
    given = [e.strip() for e in entry.meta.get("evidence", []) if e.strip() and "\n" not in e and len(e) <= 500]
    found = _POINTER_RE.findall(entry.sections.get("evidence", ""))
    return list(dict.fromkeys(given + [p for p in found if len(p) <= 500]))


# ------------------------------------------------------------------ writing

def _memory(entry: Entry, *, session: str | None, author: str, created: str) -> Memory:
    from memrepo.review.writes import build
    fields: dict[str, Any] = {
        "layer": "L1", "source": "flush", "session": session, "created": created,
        "summary": entry.summary(), "evidence": pointers(entry),
        "kind": entry.meta.get("kind") or ("decision" if entry.sections.get("decision", "").strip() else "event"),
    }
    for key in ("subject", "fact", "tags", "links"):
        if entry.meta.get(key):
            value = entry.meta[key]
            fields[key] = [value] if key in ("tags", "links") and isinstance(value, str) else value
    return build(fields, entry.body(), author=author, source="flush")


def digest(entries: list[Entry]) -> str:
    """What a flush says, as a short hash: tells a repeat from another session's same cycle number."""
    import hashlib
    return hashlib.sha256("\n---\n".join(e.body() for e in entries).encode("utf-8")).hexdigest()[:16]


def flushed_commit(vault: Vault, cycle: str, session: str | None, said: str | None = None) -> str | None:
    """The commit on main that recorded this (session, cycle), if any (read from git). Without
    a session, the commit must also have said the same (``said``: its digest) when one is given."""
    from memrepo.review.proposals import trailers
    from memrepo.store import git
    entries = git.log(vault.root, vault.main_ref, extra=["--fixed-strings", f"--grep={CYCLE_TRAILER}: {cycle}"])
    for e in entries:
        t = trailers(e.body)
        if t.get(CYCLE_TRAILER) == cycle and t.get(SESSION_TRAILER, "") == (session or ""):
            if session or said is None or t.get(DIGEST_TRAILER) == said:
                return e.commit
    return None


def flush(vault: Vault, text: str, *, cycle: str, session: str | None = None, author: str | None = None,
          skip_invalid: bool = False) -> FlushResult:
    """File a flush output as L1 entries of today's daily log, once per (session, cycle)."""
    from memrepo.review import risk
    from memrepo.review.writes import default_author
    from memrepo.store.checks import check_memory
    from memrepo.store.vault import render_bytes

    if not cycle or "\n" in cycle:
        raise UsageError("--cycle must name the compaction cycle (one line), e.g. the runtime's compaction count")
    entries = [e for e in parse(text) if not e.empty]
    said = digest(entries)
    done = flushed_commit(vault, cycle, session, said) if entries else None
    if done:  # checked again under the lock; answering early spares the checks of a repeat
        return FlushResult(0, cycle, session, commit=done, reason="cycle already flushed")
    if not entries:
        return FlushResult(0, cycle, session, reason="nothing to flush")
    limits = vault.config.section("flush")
    who = author or default_author(vault)
    created = now_iso()
    problems: list[Problem] = []
    memories: list[Memory] = []
    for entry in entries:
        found = check(entry, limits)
        if not found:
            memory = _memory(entry, session=session, author=who, created=created)
            found = [Problem(f"flush entry {entry.number}", p.field, p.message)
                     for p in check_memory(memory, text=render_bytes(memory).decode("utf-8"))]
            if not found:
                memories.append(memory)
        problems += found
    if problems and not skip_invalid:
        raise InvalidMemory(problems, "nothing was flushed; fix these entries or pass --skip-invalid")
    with vault.lock():
        vault.require_main_checkout()
        done = flushed_commit(vault, cycle, session, said)
        if done:
            return FlushResult(0, cycle, session, commit=done, reason="cycle already flushed", skipped=tuple(problems))
        earlier = None if session else flushed_commit(vault, cycle, None)
        notice = (f"cycle {cycle} was flushed before without a session ({earlier[:12]}) and this text differs, so it "
                  "was written too: pass --session so each session's cycles are told apart") if earlier else None
        if not memories:
            return FlushResult(0, cycle, session, reason="no valid entries", skipped=tuple(problems))
        catalog = vault.catalog()
        low: list[tuple[Memory, Any]] = []
        high: list[tuple[Memory, Any]] = []
        reasons: list[str] = []
        for memory in memories:
            decision = risk.assess(memory.meta, catalog, vault.config)
            routed = memory.evolve(status="pending_review" if decision.high else "active", risk=decision.level,
                                   risk_reason=decision.reason,
                                   supersedes=decision.supersedes.id if decision.supersedes else None)
            (high if decision.high else low).append((routed, decision))
            if decision.high:
                reasons.append(decision.reason)
        proposal = None
        if high:
            from memrepo.review import proposals
            proposal = proposals.create(vault, [m for m, _ in high],
                                        reason=f"pre-compaction flush (cycle {cycle}): " + "; ".join(dict.fromkeys(reasons))).id
        writes = [m for m, _ in low]
        for m, d in low:
            if d.supersedes is not None:
                previous = vault.read_at(vault.main_ref, d.supersedes.path)
                writes.append(previous.evolve(status="superseded", superseded_by=m.id, updated=created))
        vault.check_new(writes)
        result = vault.commit(writes=writes, message=_message(cycle, session, who, [m for m, _ in low], proposal,
                                                              len(high), said))
    return FlushResult(len(low) + len(high), cycle, session, tuple(m.id for m, _ in low), tuple(m.id for m, _ in high),
                       result.commit, proposal, skipped=tuple(problems), notice=notice)


def _message(cycle: str, session: str | None, author: str, written: list[Memory], proposal: str | None,
             pending: int, said: str) -> str:
    title = f"memrepo: flush cycle {cycle}{f' of session {session}' if session else ''}: {len(written)} entr" \
            f"{'y' if len(written) == 1 else 'ies'}" + (f", {pending} sent to review" if pending else "")
    lines = [title[:100], ""] + [f"- {m.id}: {m.meta['summary']}" for m in written]
    if proposal:
        lines.append(f"- review: memrepo review {proposal}")
    lines += ["", "Memrepo-Action: flush", f"{CYCLE_TRAILER}: {cycle}"]
    if session:
        lines.append(f"{SESSION_TRAILER}: {session}")
    lines.append(f"{DIGEST_TRAILER}: {said}")
    lines.append(f"Memrepo-Author: {author}")
    if proposal:
        lines.append(f"Memrepo-Proposal: {proposal}")
    return "\n".join(lines) + "\n"


# ------------------------------------------------------------------ the prompt

PROMPT_LANGS = ("en", "zh")


def flush_prompt(lang: str = "en", vault: Vault | None = None) -> str:
    """The flush prompt a runtime injects before compaction (the vault's own copy when it has one)."""
    check_choice("lang", lang, PROMPT_LANGS)
    name = f"prompts/flush.{lang}.md"
    if vault is not None and os.path.lexists(vault.root / name):
        from memrepo.store.files import read_inside
        vault.ensure_trusted()
        return read_inside(vault.root, name).decode("utf-8", "replace")
    return (resource("template-vault") / name).read_text(encoding="utf-8")
