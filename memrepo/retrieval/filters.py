"""Search filters: parsed once from a query, then asked of the keyword index and of the vectors.

A search returns memories of some statuses (active; archived too with ``deep``; superseded and
rolled back too with ``history``), optionally of one value of each ``EXACT`` field (subject,
layer, kind), carrying a tag, created since a date. :class:`Filters` holds that, parsed once;
:func:`whoosh_queries` asks the Whoosh index for it, and the vectors keep each memory's
:class:`Facets` and mask their rows with them
(:meth:`memrepo.retrieval.vector_snapshot.Snapshot.top`).

A filterable field is added here (``EXACT``, ``CODED`` and :class:`Facets`), plus the index
schema (:func:`memrepo.retrieval.fields.schema`), the memory schema and the query's options.
"""
from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from memrepo.retrieval.fields import epoch

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.fields import IndexDoc

ALL_STATUSES = ("active", "pending_review", "superseded", "rejected", "archived", "rolled_back")
EXACT = ("subject", "layer", "kind")             # fields a filter matches exactly (ID fields of the index)
CODED = ("subject", "status", "layer", "kind")   # Facets' one-value fields (the vectors keep them as codes)


@dataclass(frozen=True)
class Filters:
    """Which memories a search may return. ``statuses``: allowed statuses (None: any);
    ``exact``: (field, value) of the ``EXACT`` fields asked for, in that order; ``tag``: a
    term of the tag field; ``since``: created at or after these epoch seconds."""
    statuses: frozenset[str] | None = None
    exact: tuple[tuple[str, str], ...] = ()
    tag: str | None = None
    since: int | None = None

    @classmethod
    def where(cls, *, statuses: Iterable[str] | None = None, tag: str | None = None, since: int | None = None,
              **exact: str | None) -> Filters:
        """Filters of values already as they are matched (a tag term, epoch seconds); an
        empty value asks for nothing."""
        unknown = set(exact) - set(EXACT)
        if unknown:
            raise TypeError(f"not a filtered field: {', '.join(sorted(unknown))}")
        return cls(None if statuses is None else frozenset(statuses),
                   tuple((f, str(exact[f])) for f in EXACT if exact.get(f)), tag or None, since)

    @classmethod
    def of(cls, query: Any, history: bool) -> Filters:
        """A query's filters (a :class:`memrepo.retrieval.ranking.SearchQuery`); ``history``:
        the versions of a fact too (asked, or the history intent)."""
        statuses = {"active"} | ({"archived"} if query.deep else set()) \
            | ({"superseded", "rolled_back"} if history else set())
        return cls.where(statuses=statuses, tag=tag_term(query.tag), since=epoch(query.since),
                         **{f: getattr(query, f) for f in EXACT})


def tag_term(tag: str | None) -> str | None:
    """The ``tag`` field's term a tag filter asks for."""
    return tag.lower().lstrip("#") if tag else None


def tag_terms(tags: Iterable[str]) -> tuple[str, ...]:
    """The terms of a memory's tags as the ``tag`` field indexes them (the filter's terms):
    lower case, without the '#', split at commas and stripped."""
    return tuple(sorted({part.strip() for t in tags for part in t.lower().lstrip("#").split(",") if part.strip()}))


@dataclass(frozen=True)
class Facets:
    """A memory's values of the filtered fields, as filters test them (``tags``: its tag
    terms; ``created``: epoch seconds). The vectors keep them beside each vector."""
    subject: str
    status: str
    layer: str
    kind: str
    tags: tuple[str, ...] = ()
    created: int | None = None

    @classmethod
    def of(cls, doc: IndexDoc) -> Facets:
        return cls(doc.subject, doc.status, doc.layer, doc.kind, tag_terms(doc.tags), epoch(doc.created))

    def as_json(self) -> dict[str, Any]:
        """The facets as a JSON object (a line of the vectors' delta)."""
        return {**{f: getattr(self, f) for f in CODED}, "tags": list(self.tags), "created": self.created}

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> Facets:
        return cls(**{f: data[f] for f in CODED}, tags=tuple(data.get("tags", ())), created=data.get("created"))


def whoosh_queries(filters: Filters) -> tuple[Any, Any]:
    """(filter, mask) of the Whoosh index: the filter the memories must match (None: every
    one), the mask the statuses not allowed (every known status the filters do not allow)."""
    from whoosh import query as wq
    allowed = filters.statuses if filters.statuses is not None else ALL_STATUSES
    mask = wq.Or([wq.Term("status", s) for s in ALL_STATUSES if s not in allowed])
    parts: list[wq.Query] = [wq.Term(field, value) for field, value in filters.exact]
    if filters.tag:
        parts.append(wq.Term("tag", filters.tag))
    if filters.since is not None:
        parts.append(wq.NumericRange("created_ts", filters.since, None))
    flt = wq.And(parts) if len(parts) > 1 else (parts[0] if parts else None)
    return flt, mask
