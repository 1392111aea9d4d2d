"""Search filters are parsed once (memrepo.retrieval.filters.Filters) and asked of two backends:
the Whoosh index (filter and mask queries) and the vectors (a numpy mask over the snapshot's
rows and its delta). Both must admit exactly the same memories."""
from __future__ import annotations

import itertools
from datetime import UTC, datetime

import numpy as np
import pytest

from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.filters import ALL_STATUSES, CODED, EXACT, Facets, Filters, whoosh_queries
from memrepo.retrieval.index import MemoryIndex
from memrepo.retrieval.ranking import SearchQuery
from memrepo.retrieval.vectors import VectorStore

DAY = 86_400
START = int(datetime(2026, 1, 1, tzinfo=UTC).timestamp())
TAGS = [(), ("#Billing",), ("session-3",), ("#billing, urgent",), ("URGENT", "#ops")]


def docs(n: int = 60, *, salt: str = "") -> list[IndexDoc]:
    out = []
    for i in range(n):
        created = None if i % 11 == 0 else datetime.fromtimestamp(START + (i % 9) * DAY, UTC).isoformat()
        out.append(IndexDoc(id=f"m{i:03d}", path=f"memories/L1/m{i:03d}.md", layer=("L1", "L2", "L3")[i % 3],
                            kind=("event", "fact")[i % 2], subject=f"s{i % 4}", fact=None,
                            status=ALL_STATUSES[i % len(ALL_STATUSES)], summary=f"memory {i} {salt}",
                            body=f"body of memory {i} {salt}", tags=TAGS[i % len(TAGS)], created=created, updated=None))
    return out


class Random:
    """An encoder of random unit vectors (the filters do not look at them)."""

    def __init__(self) -> None:
        self.rng = np.random.default_rng(4)

    def batches(self, texts, progress=None):
        yield self.rng.standard_normal((len(texts), 512)).astype(np.float32)


GRID = [Filters.where(statuses=statuses, tag=tag, since=since, **dict(exact))
        for statuses, tag, since, exact in itertools.product(
            [{"active"}, {"active", "archived"}, {"superseded", "rolled_back", "active"}, set(ALL_STATUSES), None],
            [None, "billing", "urgent", "ops", "nothing"],
            [None, START + 4 * DAY],
            [(), (("subject", "s1"),), (("layer", "L2"), ("kind", "fact")), (("subject", "s9"),)])]


@pytest.fixture
def both(tmp_path):
    """The same memories in a keyword index and in vectors (part of them changed since the
    snapshot: the delta answers for those)."""
    first, changed = docs(), docs(salt="edited")
    index = MemoryIndex(tmp_path / "index")
    index.rebuild(first[:40] + changed[40:], commit=None)
    store = VectorStore(tmp_path / "vectors")
    store.rebuild(first, Random(), commit=None)
    moved = [IndexDoc(**{**d.__dict__, "subject": "s1", "status": "active"}) for d in changed[40:50]]
    store.apply(moved + changed[50:], [], Random(), commit=None)
    index.update(upserts=moved, deletes=[], commit=None)
    return index, store.load()


def _whoosh_ids(index: MemoryIndex, filters: Filters) -> set[str]:
    flt, mask = whoosh_queries(filters)
    with index._open_ix().searcher() as s:
        allow = set(s.docs_for_query(flt)) if flt is not None else set(s.reader().all_doc_ids())
        deny = set(s.docs_for_query(mask))
        return {s.stored_fields(d)["id"] for d in allow - deny}


def _vector_ids(snap, filters: Filters) -> set[str]:
    rows = {str(snap.ids[i]) for i in np.flatnonzero(snap.mask(filters))}
    ids, _block, fields = snap._delta_rows()
    return rows | {ids[i] for i in np.flatnonzero(snap._delta_mask(filters, fields))}


def test_the_index_and_the_vectors_admit_the_same_memories(both):
    index, snap = both
    assert len(snap.delta) == 20
    admitted = 0
    for filters in GRID:
        want = _whoosh_ids(index, filters)
        assert _vector_ids(snap, filters) == want, filters
        admitted += bool(want)
    assert admitted > len(GRID) / 3   # the grid is not vacuous


def test_a_query_is_parsed_once_into_its_filters():
    q = SearchQuery("x", subject="s1", layer="", kind=None, tag="#Billing", since="2026-01-05T00:00:00+00:00", deep=True)
    f = Filters.of(q, history=False)
    assert f == Filters(frozenset({"active", "archived"}), (("subject", "s1"),), "billing", START + 4 * DAY)
    assert Filters.of(SearchQuery("x"), history=True).statuses == {"active", "superseded", "rolled_back"}
    with pytest.raises(TypeError):
        Filters.where(colour="red")


def test_a_filterable_field_is_declared_once():
    assert set(EXACT) < set(CODED) == {f for f in Facets.__dataclass_fields__ if f not in ("tags", "created")}
    doc = docs(1)[0]
    assert Facets.of(doc) == Facets.from_json(Facets.of(doc).as_json())
