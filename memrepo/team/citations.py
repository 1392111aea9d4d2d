"""Citations: which memories and agent outputs were built on which memories.

A memory cites others in its ``cites`` field. An agent output (an answer, a report, a pull
request) cites memories with :func:`cite`, recorded as one JSON line in
``citations/<agent>.jsonl`` and committed to main, so the record travels with sync and
survives a lost ``.memrepo/state``. ``.gitattributes`` merges these files with git's
``union`` driver: two clones citing at once keep both lines.

When a cited memory is superseded, rolled back, archived, rejected or deleted, every memory
and output citing it becomes a *notice* to re-evaluate, until someone acknowledges it
(``citations/acks.jsonl``, also committed). A notice's number is derived from what it is
about, so it stays the same on every clone.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any, Iterable

from memrepo.errors import NotFound, UsageError
from memrepo.model import MEMORY_ROOTS, Memory, is_valid_id, now_iso
from memrepo.store import git, jsontext
from memrepo.store.vault import Vault
from memrepo.team import scopes

CITATIONS_DIR = "citations"
ACKS = f"{CITATIONS_DIR}/acks.jsonl"
STALE = ("superseded", "rolled_back", "archived", "rejected")


@dataclass(frozen=True)
class Citation:
    kind: str          # "memory" or "output"
    by: str            # the citing memory's id, or the agent of an output
    ref: str           # the citing memory id, or the output reference
    cites: str         # the cited memory id
    agent: str         # who is responsible for re-evaluating it
    at: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {"kind": self.kind, "by": self.by, "ref": self.ref, "cites": self.cites, "agent": self.agent, "at": self.at}

    def label(self) -> str:
        return f"memory {self.ref}" if self.kind == "memory" else f"output {self.ref} of {self.by}"


def _lines(vault: Vault, path: str) -> list[str]:
    if not git.exists(vault.root, f"{vault.main_ref}:{path}"):
        return []
    return git.read_blob(vault.root, f"{vault.main_ref}:{path}").decode("utf-8").splitlines()


def cite(vault: Vault, ids: Iterable[str], *, by: str, ref: str) -> str:
    """Record that output ``ref`` of agent ``by`` cites ``ids``; returns the commit."""
    ids = list(dict.fromkeys(ids))
    by = scopes.require_agent(by, "cite --by")
    if not ref.strip() or "\n" in ref:
        raise UsageError("--ref must name the output on one line (a file, a URL, a message id)")
    if not ids:
        raise UsageError("name at least one memory id to cite")
    for memory_id in ids:
        vault.get(memory_id)  # NotFound / invalid id, with the usual message
    path = f"{CITATIONS_DIR}/{by}.jsonl"
    record = json.dumps({"by": by, "ref": ref, "ids": ids, "at": now_iso()}, ensure_ascii=False)
    with vault.lock():
        vault.require_main_checkout()
        text = "\n".join([*_lines(vault, path), record]) + "\n"
        message = (f"memrepo: cite {', '.join(ids)} by {by} in {ref}"[:100]
                   + f"\n\nMemrepo-Action: cite\nMemrepo-Author: {by}\nMemrepo-Ids: {','.join(ids)}\n")
        return vault.commit(files={path: text.encode("utf-8")}, message=message).commit


def outputs(vault: Vault) -> list[Citation]:
    """Every recorded output citation on main."""
    found = []
    for entry in git.ls_tree(vault.root, vault.main_ref, [CITATIONS_DIR]):
        if not entry.path.endswith(".jsonl") or entry.path == ACKS:
            continue
        for line in _lines(vault, entry.path):
            try:
                rec = jsontext.loads(line, where=entry.path)
                found += [Citation("output", rec["by"], rec["ref"], i, rec["by"], rec.get("at", "")) for i in rec["ids"]]
            except (ValueError, KeyError, TypeError):
                continue  # a hand-mangled line is skipped, never fatal
    return found


def memory_citations(vault: Vault, among: Iterable[Memory] | None = None) -> list[Citation]:
    """Every ``cites`` entry of a memory on main (of the memories ``among``, when given)."""
    found = []
    memories = among if among is not None else (
        vault.read_at(vault.main_ref, path) for path in git.grep_files(vault.root, vault.main_ref, r"^cites:", MEMORY_ROOTS))
    for memory in memories:
        found += [Citation("memory", memory.id, memory.id, c, str(memory.meta.get("author", "")),
                           str(memory.meta.get("updated") or memory.meta.get("created", "")))
                  for c in memory.meta.get("cites", ())]
    return found


def cited_by(vault: Vault, memory_id: str, *, mentioning: Iterable[Memory] | None = None) -> list[Citation]:
    """Memories and recorded outputs that cite ``memory_id`` (``mentioning``: the memories
    whose files mention the id, when the caller has already found them)."""
    if not is_valid_id(memory_id):
        raise UsageError(f"{memory_id!r} is not a valid memory id")
    return [c for c in memory_citations(vault, mentioning) + outputs(vault) if c.cites == memory_id]


def citers(vault: Vault, memory_id: str) -> list[str]:
    """One line per citer, for a review card's Affects."""
    return [c.label() for c in cited_by(vault, memory_id)]


@dataclass(frozen=True)
class Notice:
    number: int
    citation: Citation
    status: str        # what happened to the cited memory: superseded, archived, deleted, ...
    replacement: str | None

    def as_dict(self) -> dict[str, Any]:
        return {"notice": self.number, **self.citation.as_dict(), "status": self.status, "replacement": self.replacement}

    def text(self) -> str:
        then = f" by {self.replacement}" if self.replacement else ""
        return f"#{self.number}: {self.citation.label()} cites {self.citation.cites}, now {self.status}{then}: re-evaluate it"


def _number(c: Citation, status: str) -> int:
    import hashlib  # here: every command line imports this module through memrepo.api
    digest = hashlib.sha1(f"{c.kind}|{c.by}|{c.ref}|{c.cites}|{status}".encode()).hexdigest()
    return int(digest[:8], 16) % 1_000_000


def _acked(vault: Vault) -> set[int]:
    done = set()
    for line in _lines(vault, ACKS):
        try:
            done.add(int(jsontext.loads(line, where=ACKS)["notice"]))
        except (ValueError, KeyError, TypeError):
            continue
    return done


def notices(vault: Vault, *, agent: str | None = None, include_acked: bool = False) -> list[Notice]:
    """Citations of memories that are no longer active, not yet acknowledged."""
    catalog = vault.catalog()
    acked = set() if include_acked else _acked(vault)
    found = []
    for c in memory_citations(vault) + outputs(vault):
        if agent and c.agent != agent:
            continue
        rows = catalog.with_id(c.cites)
        if rows and rows[0].status not in STALE:
            continue
        status = rows[0].status if rows else "deleted"
        n = _number(c, status or "deleted")
        if n not in acked:
            found.append(Notice(n, c, status or "deleted", rows[0].superseded_by if rows else None))
    return sorted(found, key=lambda n: (n.citation.cites, n.number))


def ack(vault: Vault, numbers: Iterable[int], *, agent: str | None = None) -> str:
    """Acknowledge notices (recorded, committed): they stop being listed."""
    numbers = list(dict.fromkeys(int(n) for n in numbers))
    open_ = {n.number for n in notices(vault, include_acked=True)}
    unknown = [n for n in numbers if n not in open_]
    if unknown:
        raise NotFound(f"no notice {', '.join(map(str, unknown))}; 'memrepo notices' lists them")
    who = scopes.current_agent(agent) or git.identity(vault.root)[0]
    with vault.lock():
        vault.require_main_checkout()
        lines = _lines(vault, ACKS) + [json.dumps({"notice": n, "by": who, "at": now_iso()}) for n in numbers]
        message = f"memrepo: acknowledge notice {', '.join(map(str, numbers))}\n\nMemrepo-Action: ack\nMemrepo-Author: {who}\n"
        return vault.commit(files={ACKS: ("\n".join(lines) + "\n").encode()}, message=message).commit
