"""A proposal as a reviewer sees it: the card's answers as data, the diff, and the card as markdown.

The plain-text review card (:func:`memrepo.review.proposals.card`) is written into the proposal's
commit when it is made. A person reviewing in a browser or on a forge needs the same answers
as values they can lay out: who triggered each memory and why it needs review, what it
supersedes (both values and both authors' evidence), its evidence (a pruned tool result's
pointer resolved to the text it stands for), what it affects (including the memories and
outputs that cite the value being replaced), and the rollback point; next to the field-aware
diff. :func:`review_markdown` renders the same for a pull request description
(``memrepo review N --markdown``).
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field
from typing import Any

from memrepo.errors import MemrepoError, NotFound
from memrepo.review import diff as diffs
from memrepo.review import forge, proposals
from memrepo.review.diff import MemoryDiff
from memrepo.store.vault import Vault

EVIDENCE_PREVIEW = 4000   # characters of a stored tool result shown on the card


@dataclass(frozen=True)
class EvidenceItem:
    """One evidence pointer: ``kind`` is stored (a pruned tool result, ``text`` holds it),
    memory (an id on main, ``text`` its summary), url, or pointer (a path or anything else)."""
    pointer: str
    kind: str
    text: str | None = None
    truncated: bool = False


@dataclass(frozen=True)
class CardEntry:
    """The five answers for one proposed memory (or one deletion)."""
    id: str
    action: str                 # write or delete
    summary: str
    layer: str
    kind: str
    subject: str
    fact: str | None
    author: str
    source: str
    session: str | None
    risk_reason: str
    supersedes: dict[str, Any] | None       # id, summary, author, evidence of the replaced value
    evidence: tuple[EvidenceItem, ...]
    affects: tuple[str, ...]
    cited_by: tuple[str, ...]
    links: tuple[str, ...]


@dataclass(frozen=True)
class ReviewView:
    proposal: proposals.Proposal
    entries: tuple[CardEntry, ...]
    diffs: tuple[MemoryDiff, ...]
    rollback_point: str | None
    compare_url: str | None
    card_text: str
    notes: tuple[str, ...] = field(default=())   # what could not be read (an evidence file gone, ...)
    checks: Any = None   # an open proposal's recall-check delta (memrepo.lifecycle.memory_ci.CheckRun)


def review_view(vault: Vault, ref: str) -> ReviewView:
    """Everything a reviewer reads about proposal ``ref`` (open or closed)."""
    p = proposals.get(vault, ref)
    memories = proposals.memories_of(vault, p)
    notes: list[str] = []
    entries = [_entry(vault, p, m.meta, "write", notes) for m in memories]
    all_diffs = diffs.proposal_diffs(vault, p.id)
    entries += [_deletion(d, p) for d in all_diffs if d.kind == "delete"]
    from memrepo.lifecycle.memory_ci import proposal_checks
    return ReviewView(p, tuple(entries), tuple(all_diffs), p.base or None,
                      forge.compare_url(vault, p.id) if p.status == "open" else None,
                      proposals.card(vault, p.id), tuple(notes),
                      proposal_checks(vault, p.id) if p.status == "open" else None)


def _entry(vault: Vault, p: proposals.Proposal, meta, action: str, notes: list[str]) -> CardEntry:
    from memrepo.team import citations
    target = meta.get("supersedes")
    replaced = None
    if target:
        try:
            old = vault.get(target, rev=p.base) if p.base else vault.get(target)
            replaced = {"id": old.id, "summary": old.meta.get("summary"), "author": old.meta.get("author", "unknown"),
                        "evidence": list(old.meta.get("evidence", ()))}
        except NotFound:
            replaced = {"id": target, "summary": None, "author": None, "evidence": []}
    cited = tuple(citations.citers(vault, target)) if target else ()
    return CardEntry(id=meta["id"], action=action, summary=str(meta.get("summary", "")), layer=str(meta.get("layer", "")),
                     kind=str(meta.get("kind", "")), subject=str(meta.get("subject", "")), fact=meta.get("fact"),
                     author=str(meta.get("author") or "unknown"), source=str(meta.get("source", "")),
                     session=meta.get("session"), risk_reason=str(meta.get("risk_reason") or p.reason),
                     supersedes=replaced, evidence=tuple(evidence_items(vault, meta.get("evidence", ()), notes)),
                     affects=tuple(meta.get("affects", ())), cited_by=cited, links=tuple(meta.get("links", ())))


def _deletion(d: MemoryDiff, p: proposals.Proposal) -> CardEntry:
    old = {f.name: f.old for f in d.fields}
    return CardEntry(id=d.id, action="delete", summary=d.summary, layer=str(old.get("layer", "")),
                     kind=str(old.get("kind", "")), subject=str(old.get("subject", "")), fact=old.get("fact"),
                     author=str(p.author or "unknown"), source=str(old.get("source", "")), session=None,
                     risk_reason=p.reason, supersedes=None, evidence=(), affects=(), cited_by=(), links=())


def evidence_items(vault: Vault, pointers, notes: list[str] | None = None) -> list[EvidenceItem]:
    """Each pointer with what it names: a stored tool result's text, a memory's summary."""
    from memrepo.agents.evidence import POINTER_PREFIX, get_evidence
    from memrepo.model import is_valid_id
    out = []
    for pointer in pointers:
        pointer = str(pointer)
        if pointer.startswith(POINTER_PREFIX):
            try:
                text = get_evidence(vault, pointer).text
                out.append(EvidenceItem(pointer, "stored", text[:EVIDENCE_PREVIEW], len(text) > EVIDENCE_PREVIEW))
            except MemrepoError as e:
                out.append(EvidenceItem(pointer, "pointer"))
                if notes is not None:
                    notes.append(str(e))
        elif pointer.startswith(("http://", "https://")):
            out.append(EvidenceItem(pointer, "url"))
        elif is_valid_id(pointer) and vault.catalog().with_id(pointer):
            out.append(EvidenceItem(pointer, "memory", vault.get(pointer).meta.get("summary")))
        else:
            out.append(EvidenceItem(pointer, "pointer"))
    return out


# ------------------------------------------------------------------ markdown for a pull request

def review_markdown(vault: Vault, ref: str) -> str:
    """The review card and the field-aware diff as GitHub/GitLab/Gitea markdown."""
    view = review_view(vault, ref)
    p = view.proposal
    lines = [f"## memrepo proposal `{p.id}` ({p.status})", "", f"> {_md(p.reason)}", ""]
    lines += checks_markdown(view.checks) if view.checks is not None else []
    by_id = {d.id: d for d in view.diffs}
    for entry in view.entries:
        lines += _entry_markdown(entry, view.rollback_point)
        if entry.id in by_id:
            lines += diff_markdown(by_id[entry.id])
    lines += [f"Apply it with `memrepo apply {p.id}` (or merge this pull request); "
              f"reject it with `memrepo reject {p.id} --why \"...\"`.", ""]
    return "\n".join(lines)


def checks_markdown(run) -> list[str]:
    """The recall-check delta: the summary, and a row per check that regressed, fails or was fixed."""
    if run.skipped:
        return ["### Recall checks", "", f"Not run: {_md(run.skipped)}", ""]
    if not run.results:
        return []
    shown = [r for r in run.results if r.status != "pass"]
    out = ["### Recall checks", "", f"**{run.summary()}** passed ({_md(run.against or '')} → after apply)"
           + (f", **{len(run.regressions)} regressed**" if run.regressions else ""), ""]
    if shown:
        out += ["| check | result | before | after | question |", "|---|---|---|---|---|"]
        out += [f"| `{r.check.name}` | {'**regressed**' if r.status == 'regressed' else r.status} | "
                f"{_md(r.before.text(expects=_expects(r)) if r.before else '')} | {_md(r.after.text(expects=_expects(r)))} | "
                f"{_md(r.check.question)} |" for r in shown] + [""]
    return out


def _expects(result) -> bool:
    return bool(result.check.expect_id or result.check.expect_fact)


def _entry_markdown(e: CardEntry, rollback: str | None) -> list[str]:
    key = f", fact {_code(e.fact)}" if e.fact else ""
    head = "Delete" if e.action == "delete" else "Memory"
    rows = [("Why it needs review", _md(e.risk_reason)),
            ("1. Triggered by", f"{_md(e.author)} (source: {_md(e.source)}" + (f", session {_md(e.session)}" if e.session else "") + ")")]
    if e.supersedes:
        s = e.supersedes
        rows.append(("2. Supersedes", f"{_code(s['id'])}: {_md(s['summary'] or '(not found on main)')} by {_md(s['author'] or 'unknown')}"
                     + (f" (evidence: {_md('; '.join(s['evidence']))})" if s["evidence"] else "")))
    else:
        rows.append(("2. Supersedes", "nothing"))
    rows.append(("3. Evidence", "<br>".join(_evidence_md(i) for i in e.evidence) or "none given"))
    rows.append(("4. Affects", "<br>".join([_md(a) for a in e.affects] + [f"cited by {_md(c)}" for c in e.cited_by]) or "—"))
    rows.append(("5. Rollback point", f"`{rollback}`" if rollback else "the empty vault"))
    out = [f"### {head} {_code(e.id)}: {_md(e.summary)}", "", f"{_md(e.layer)} {_md(e.kind)}, subject {_code(e.subject)}{key}", "",
           "| | |", "|---|---|"]
    return out + [f"| {k} | {v} |" for k, v in rows] + [""]


def _evidence_md(item: EvidenceItem) -> str:
    if item.kind == "stored" and item.text is not None:
        first = " ".join(item.text.split())[:200]
        return f"{_code(item.pointer)}: {_md(first)}{'…' if item.truncated or len(item.text) > 200 else ''}"
    if item.kind == "memory":
        return f"{_code(item.pointer)}: {_md(item.text or '')}"
    return _code(item.pointer)


def diff_markdown(d: MemoryDiff) -> list[str]:
    """A memory's field changes as a table and its body as a word diff (``<del>``/``<ins>``)."""
    against = f" against `{d.old_id}`" if d.old_id and d.old_id != d.id else ""
    out = [f"**Changes{against}**", ""]
    content = [f for f in d.fields if not f.bookkeeping]
    kept = [f for f in d.fields if f.bookkeeping]
    if content:
        out += ["| field | before | after |", "|---|---|---|"] + [_field_row(f) for f in content] + [""]
    if kept:
        out += [f"<details><summary>record-keeping fields ({len(kept)})</summary>", "",
                "| field | before | after |", "|---|---|---|"] + [_field_row(f) for f in kept] + ["", "</details>", ""]
    if d.body_changed:
        out += ["Body:", "", "<pre>" + "".join(_segment_html(s) for s in d.body) + "</pre>", ""]
    return out


def _field_row(f: diffs.FieldChange) -> str:
    if f.added or f.removed:
        after = " ".join([f"<del>{_cell(v)}</del>" for v in f.removed] + [f"<ins>{_cell(v)}</ins>" for v in f.added])
        return f"| {f.name} | {_cell(f.old) if f.old is not None else '—'} | {after} |"
    return f"| {f.name} | {_cell(f.old) if f.old is not None else '—'} | {_cell(f.new) if f.new is not None else '—'} |"


def _segment_html(s: diffs.Segment) -> str:
    text = html.escape(s.text, quote=False)
    if s.op == "fold":
        return f"\n… {s.text} unchanged lines …\n"
    return {"del": f"<del>{text}</del>", "ins": f"<ins>{text}</ins>"}.get(s.op, text)


def _cell(value: Any) -> str:
    if isinstance(value, list | tuple):
        value = ", ".join(str(v) for v in value)
    return _md(str(value)).replace("\n", "<br>")


def _code(text: str) -> str:
    """A value shown as code whatever it holds. A code span shows its text as written, but ends
    at a backtick (and, in a table, at a ``|``), letting the rest through as markdown or HTML:
    such a value is an HTML ``<code>`` element around escaped text instead."""
    text = str(text)
    return f"`{text}`" if not any(c in text for c in "`|\n") else f"<code>{_md(text)}</code>"


def _md(text: str) -> str:
    """Plain text safe inside markdown: HTML escaped, markdown's emphasis and link marks
    escaped so a value is shown as written."""
    escaped = html.escape(str(text), quote=False)
    return "".join("\\" + c if c in "\\`*_[]<>#|~" else c for c in escaped)
