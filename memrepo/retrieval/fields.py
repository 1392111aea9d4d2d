"""What the index stores of a memory: the index document, the Whoosh schema and the fields.

The one scored field (``text``) carries business tags, keys, summary and body with their
weights folded in at index time (see :class:`memrepo.retrieval.analysis.ScoredText`), so a
query term is one posting list instead of four.
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from memrepo import text
from memrepo.model import epoch_seconds

SCORED = "text"  # the one scored field
TERMS = "terms"  # stored: what the re-rank counts the query's terms in (text.pack_terms)


@dataclass(frozen=True)
class IndexDoc:
    """One memory as the index sees it."""
    id: str
    path: str
    layer: str
    kind: str
    subject: str
    fact: str | None
    status: str
    summary: str
    body: str
    tags: tuple[str, ...]
    created: str | None
    updated: str | None
    links: tuple[str, ...] = ()
    weight: float | None = None
    scope: str | None = None



def schema():
    from whoosh import fields

    from memrepo.retrieval.analysis import ScoredText
    return fields.Schema(
        id=fields.ID(stored=True, unique=True),
        path=fields.STORED(),
        layer=fields.ID(stored=True),
        kind=fields.ID(stored=True),
        subject=fields.ID(stored=True),
        fact=fields.ID(stored=True),
        status=fields.ID(stored=True),
        tag=fields.KEYWORD(lowercase=True, commas=True),  # filter; without the '#'

        group=fields.ID(stored=True),
        # the one scored field: business tags, keys, summary and body with their weights
        # folded in at index time (one posting list per term instead of four)
        text=ScoredText(),
        keys=ScoredText(),                   # whole identifiers, for exact fact lookups
        summary=ScoredText(stored=True),     # searchable on its own in advanced syntax
        body=fields.STORED(),
        created=fields.STORED(),
        created_ts=fields.NUMERIC(int, bits=64, signed=True),
        meta=fields.STORED(),
        terms=fields.STORED(),
    )


def rerank_texts(summary: str, body: str, tags: Iterable[str], subject: str, fact: str) -> tuple[str, str]:
    """What the re-rank counts a query's terms in: the memory's prose (its summary once when
    the body repeats it, as it usually does, and its tags) and its keys (subject, fact, tags)."""
    tag_text = " ".join(tags)
    if summary and summary in body:
        summary = ""
    return f"{summary} {body} {tag_text}", f"{subject} {fact} {tag_text}"


def epoch(iso: str | None) -> int | None:
    seconds = epoch_seconds(iso)
    return None if seconds is None else int(seconds)


_SESSION_TAG = re.compile(r"^session[-_:]?\w+$", re.IGNORECASE)


def _group(doc: IndexDoc) -> str:
    """Memories of one conversation session (a ``session-N`` tag) form a neighbourhood."""
    for tag in doc.tags:
        if _SESSION_TAG.match(tag):
            return f"{doc.subject}\x1f{tag.lower()}"
    return ""


def doc_fields(doc: IndexDoc, weights: dict[str, float]) -> dict:
    from memrepo.retrieval.analysis import EXACT, KEYS, LEAD, PROSE, find_keys, key_terms
    # '#'-tags are business tags (ranked highest); other tags are facets such
    # as ``session-3`` or ``speaker-ann`` and rank like identifiers.
    business = [t.lstrip("#") for t in doc.tags if t.startswith("#")]
    facets = [t for t in doc.tags if not t.startswith("#")]
    # identifiers written in the text (INC-88814, release.auto_publish) are exact keys too
    ids = dict.fromkeys(k.lower().strip(".-_") for k in find_keys(f"{doc.summary} {doc.body}"))
    keys = " ".join(x for x in (doc.subject, doc.fact, *facets, *ids) if x)
    out: dict[str, Any] = dict(
        id=doc.id, path=doc.path, layer=doc.layer, kind=doc.kind, subject=doc.subject,
        fact=doc.fact or "", status=doc.status, tag=",".join(t.lower().lstrip("#") for t in doc.tags),
        group=_group(doc),
        text=((PROSE, " ".join(business), weights["tagtext"]), (KEYS, keys, weights["keys"]),
              (LEAD, doc.summary, weights["summary"]), (PROSE, doc.body, weights["body"])),
        keys=((EXACT, keys, 1.0),),
        summary=doc.summary, body=doc.body, created=doc.created,
        meta=dict(tags=tuple(doc.tags), updated=doc.updated, links=tuple(doc.links),
                  weight=doc.weight, scope=doc.scope),
    )
    prose, key_text = rerank_texts(doc.summary, doc.body, doc.tags, doc.subject, doc.fact or "")
    packed = text.pack_terms(prose, key_terms(key_text))
    if packed is not None:
        out[TERMS] = packed
    ts = epoch(doc.created)
    if ts is not None:
        out["created_ts"] = ts
    return out

