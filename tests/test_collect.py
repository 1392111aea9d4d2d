"""Candidate collection (memrepo.retrieval.collect) against Whoosh's own scoring.

The collector reads postings a block at a time and scores them with the searcher's BM25F;
every document it returns must carry the score Whoosh gives it, and the top k must be Whoosh's
top k of all matching documents (best score first, ties by document number) — over several
segments, deleted documents, boosts, the exact-key field, a filter and a mask.
"""
from __future__ import annotations

import random
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo.retrieval.collect import scores_of, top_docs
from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.index import MemoryIndex
from memrepo.retrieval.ranking import DEFAULT_TUNING, SearchQuery, field_b

VOCAB = ("deploy service restart database migration backup schedule invoice release budget "
         "rollback incident cache latency review 数据库 连接池 超时 验收 标准").split()


def _doc(rng: random.Random, i: int) -> IndexDoc:
    words = [rng.choice(VOCAB) for _ in range(rng.randint(1, 40))]
    return IndexDoc(id=f"m{i}", path=f"memories/L1/m{i}.md", layer="L1", kind="event",
                    subject=rng.choice(("proj", "ops")), fact=None, status="active",
                    summary=" ".join(words[:4]), body=" ".join(words), tags=(), created=None, updated=None)


@pytest.fixture(scope="module")
def searcher(tmp_path_factory):
    rng = random.Random(7)
    ix = MemoryIndex(Path(tmp_path_factory.mktemp("collect")) / "index")
    ix.rebuild([_doc(rng, i) for i in range(200)], commit="c1")
    # later commits add segments and delete documents from the first one
    ix.update(upserts=[_doc(rng, i) for i in range(200, 240)], deletes=["m3", "m50", "m51"], commit="c2")
    ix.update(upserts=[_doc(rng, 10), _doc(rng, 240)], deletes=["m7"], commit="c3")
    ix.search(SearchQuery("deploy"))
    s = ix._cached_searcher()
    assert len(s.leaf_searchers()) > 1 and any(leaf.reader().has_deletions() for leaf, _ in s.leaf_searchers())
    yield s
    ix.close()


def _reference(searcher, terms, allow, deny, limit):
    """Whoosh's scores of every matching document, ranked as its top-k collector ranks."""
    from whoosh import query as wq
    q = wq.Or([wq.Term(f, t, boost=b) for f, t, b in terms])
    hits = [(h.docnum, h.score) for h in searcher.search(q, limit=None, filter=allow, mask=deny)]
    return sorted(hits, key=lambda h: (-h[1], h[0]))[:limit]


terms_st = st.lists(st.tuples(st.sampled_from(("text", "text", "keys")), st.sampled_from(VOCAB + ["absent"]),
                              st.sampled_from((1.0, 0.3, 1.693, 6.0))), min_size=1, max_size=6)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=terms_st, limit=st.integers(1, 40), allow_mod=st.integers(0, 3), deny_mod=st.integers(0, 5))
def test_top_docs_are_whooshs_top_docs(searcher, terms, limit, allow_mod, deny_mod):
    n = searcher.doc_count_all()
    allow = None if not allow_mod else {d for d in range(n) if d % (allow_mod + 1)}
    deny = None if not deny_mod else {d for d in range(n) if d % (deny_mod + 3) == 0}
    expected = _reference(searcher, terms, allow, deny, limit)
    got = top_docs(searcher, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, limit, allow, deny)
    assert [d for d, _ in got] == [d for d, _ in expected] or _same_up_to_ties(got, expected)
    for (_, a), (_, b) in zip(got, expected):
        assert a == pytest.approx(b, rel=1e-12)


def _same_up_to_ties(got, expected) -> bool:
    """Summing a document's per-term scores in another order can move the last bit: equal
    scores may then swap places (and the last place may go to the other tied document)."""
    return len(got) == len(expected) and all(abs(a[1] - b[1]) <= 1e-9 * max(1.0, abs(b[1]))
                                             for a, b in zip(got, expected))


def test_deleted_documents_are_never_returned(searcher):
    ids = {searcher.stored_fields(d)["id"] for d, _ in top_docs(searcher, [("text", w, 1.0) for w in VOCAB],
                                                                 field_b(DEFAULT_TUNING), 1.2, 10_000)}
    assert not ids & {"m3", "m50", "m51", "m7"}
    # m10 was rewritten: it is found once, in its new version
    live = [d for d in range(searcher.doc_count_all()) if searcher.reader().is_deleted(d) is False]
    assert sum(1 for d in live if searcher.stored_fields(d)["id"] == "m10") == 1


def test_unknown_terms_and_empty_filters_give_nothing(searcher):
    assert top_docs(searcher, [("text", "absent", 1.0)], field_b(DEFAULT_TUNING), 1.2, 10) == []
    assert top_docs(searcher, [("text", "deploy", 1.0)], field_b(DEFAULT_TUNING), 1.2, 10, allow=set()) == []


@settings(max_examples=100, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=terms_st, picks=st.lists(st.integers(0, 241), max_size=40))
def test_scores_of_given_documents_are_top_docs_scores(searcher, terms, picks):
    # the hybrid ranking scores the memories it adds by vector this way (deleted ones included
    # here: they must come back without a score, as top_docs never returns them)
    docs = set(picks)
    expected = dict(top_docs(searcher, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, len(docs) or 1, allow=docs))
    assert scores_of(searcher, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, picks) == expected
