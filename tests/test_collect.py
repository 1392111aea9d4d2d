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

from memrepo.retrieval import collect
from memrepo.retrieval.collect import Work, scores_of, top_docs
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


# the three ways top_docs scores: (postings in all up to which they are scored one by one, how
# many times the other terms' postings the commonest needs for bounds, else numpy); by default
# a few hundred postings (this small index) are scored one by one
WAYS = {"default": (collect._SMALL, collect._SKEW), "bounded": (0, 0), "arrays": (0, 10**9)}


def _score_by(monkeypatch, way: str) -> None:
    small, skew = WAYS[way]
    monkeypatch.setattr(collect, "_SMALL", small)
    monkeypatch.setattr(collect, "_SKEW", skew)


@pytest.mark.parametrize("way", list(WAYS))
@settings(max_examples=70, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=terms_st, limit=st.integers(1, 40), allow_mod=st.integers(0, 3), deny_mod=st.integers(0, 5))
def test_top_docs_are_whooshs_top_docs(searcher, monkeypatch, way, terms, limit, allow_mod, deny_mod):
    _score_by(monkeypatch, way)
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


# ---- skipping postings (MaxScore / block-max) on an index big enough to skip ------------
# Whoosh writes postings in blocks of 128, so the terms here hold thousands of postings: one
# in most memories, some in a third or a tenth, rare ones in a few dozen, the subjects in half
# (the exact-key field), tags weighted x3 (fractional weights), many memories written twice
# (equal scores: ties by document number), three segments, deletions in the first two.
BIG_VOCAB = {"common": 0.7, "often": 0.35, "kafka": 0.1, "rare": 0.01, "zebra": 0.004, "延迟": 0.3, "quartz": 0.05}


def _big_doc(rng: random.Random, i: int) -> IndexDoc:
    if i % 7 == 0:  # the same text as another memory: the same score for any query
        rng = random.Random(i // 70)
    words = []
    for word, share in BIG_VOCAB.items():
        if rng.random() < share:
            words += [word] * rng.choice((1, 1, 1, 2, 3, 5))
    words += ["filler"] * rng.choice((0, 1, 3, 8, 20, 60))
    rng.shuffle(words)
    tags = ("#" + rng.choice(("common", "often", "延迟")),) if rng.random() < 0.2 else ()
    return IndexDoc(id=f"b{i}", path=f"memories/L1/b{i}.md", layer="L1", kind="event",
                    subject=rng.choice(("proj", "ops")), fact=None, status="active",
                    summary=" ".join(words[:3]), body=" ".join(words), tags=tags, created=None, updated=None)


@pytest.fixture(scope="module")
def big_index(tmp_path_factory):
    rng = random.Random(11)
    ix = MemoryIndex(Path(tmp_path_factory.mktemp("collect-big")) / "index")
    ix.rebuild([_big_doc(rng, i) for i in range(3000)], commit="c1", procs=1)
    ix.update(upserts=[_big_doc(rng, i) for i in range(3000, 3800)],
              deletes=[f"b{i}" for i in range(5, 3000, 9)], commit="c2")
    ix.update(upserts=[_big_doc(rng, i) for i in range(3800, 4000)],
              deletes=[f"b{i}" for i in range(3001, 3800, 13)], commit="c3")
    ix.search(SearchQuery("common"))
    s = ix._cached_searcher()
    assert len(s.leaf_searchers()) == 3
    assert s.doc_frequency("text", "common") > 2000
    yield s
    ix.close()


@pytest.fixture(params=["bounded", "arrays"])
def big(request, big_index, monkeypatch):
    """The big index, scored with bounds or with numpy at any size (by default a few thousand
    postings are simply all scored in Python)."""
    _score_by(monkeypatch, request.param)
    return big_index


@pytest.fixture
def bounded(big_index, monkeypatch):
    _score_by(monkeypatch, "bounded")
    return big_index


def _exhaustive(searcher, terms, allow, deny, limit):
    """Every matching document scored (scores_of sums the terms in order, as top_docs must),
    ranked best first, ties by document number."""
    scores = scores_of(searcher, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, range(searcher.doc_count_all()))
    kept = [(d, s) for d, s in scores.items() if (allow is None or d in allow) and not (deny and d in deny)]
    return sorted(kept, key=lambda h: (-h[1], h[0]))[:limit]


big_terms_st = st.lists(st.tuples(st.sampled_from(("text",) * 6 + ("keys",)),
                                  st.sampled_from([*BIG_VOCAB, "proj", "ops", "filler", "absent"]),
                                  st.sampled_from((1.0, 1.0, 0.3, 1.693, 6.0))), min_size=1, max_size=5)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=big_terms_st, limit=st.sampled_from((1, 3, 10, 30, 100)), allow_mod=st.integers(0, 3),
       deny_mod=st.integers(0, 5))
def test_top_docs_are_exactly_the_exhaustive_top_docs(big, terms, limit, allow_mod, deny_mod):
    n = big.doc_count_all()
    allow = None if not allow_mod else {d for d in range(n) if d % (allow_mod + 1)}
    deny = None if not deny_mod else {d for d in range(n) if d % (deny_mod + 3) == 0}
    got = top_docs(big, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, limit, allow, deny)
    assert got == _exhaustive(big, terms, allow, deny, limit)  # same documents, order and floats


@pytest.mark.parametrize("terms", [
    [("text", "rare", 1.0), ("text", "common", 1.0)],
    [("text", "zebra", 1.0), ("text", "often", 1.0), ("text", "common", 1.0)],
    [("text", "common", 1.0), ("keys", "proj", 6.0), ("text", "zebra", 1.693)],
])
def test_a_rare_term_spares_reading_most_of_a_common_one(bounded, terms):
    work = Work()
    got = top_docs(bounded, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, 3, work=work)
    assert got == _exhaustive(bounded, terms, None, None, 3)
    assert work.blocks_skipped > work.blocks_read
    assert work.postings_read + work.postings_skipped == sum(bounded.doc_frequency(f, t) for f, t, _ in terms)


def test_common_terms_only_are_scored_in_bulk(big_index, monkeypatch):
    # the choice (past a few postings, fewer here than at scale): a common term next to rare
    # ones is bounded, two common terms are all read
    monkeypatch.setattr(collect, "_SMALL", 1000)
    rare, common = Work(), Work()
    top_docs(big_index, [("text", "zebra", 1.0), ("text", "common", 1.0)],
             field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, 3, work=rare)
    assert rare.way == "bounded" and rare.blocks_skipped
    terms = [("text", "common", 1.0), ("text", "often", 1.0)]
    got = top_docs(big_index, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, 30, work=common)
    assert got == _exhaustive(big_index, terms, None, None, 30)
    assert common.way == "arrays"
    assert (common.blocks_skipped, common.postings_read) == (0, sum(big_index.doc_frequency(f, t) for f, t, _ in terms))


def test_ties_at_the_last_place_go_to_the_lower_document_number(big):
    terms = [("text", "common", 1.0), ("text", "often", 1.0)]
    full = _exhaustive(big, terms, None, None, 10_000)
    # a limit that cuts through a run of equal scores
    for limit, ((_, a), (_, b)) in enumerate(zip(full, full[1:]), start=1):
        if a == b and limit >= 5:
            break
    else:
        pytest.fail("no tie in the fixture")
    assert top_docs(big, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, limit) == full[:limit]


def test_common_terms_agree_with_whoosh(big):
    terms = [("text", "common", 1.0), ("text", "延迟", 1.693), ("keys", "ops", 6.0)]
    deny = {d for d in range(big.doc_count_all()) if d % 4 == 0}
    got = top_docs(big, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, 30, None, deny)
    expected = _reference(big, terms, None, deny, 30)
    assert [d for d, _ in got] == [d for d, _ in expected] or _same_up_to_ties(got, expected)
    for (_, a), (_, b) in zip(got, expected):
        assert a == pytest.approx(b, rel=1e-12)


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(terms=big_terms_st, picks=st.lists(st.integers(0, 3999), max_size=40))
def test_scores_of_reads_only_the_blocks_of_the_given_documents(big, terms, picks):
    docs = set(picks)
    expected = dict(top_docs(big, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, len(docs) or 1, allow=docs))
    work = Work()
    assert scores_of(big, terms, field_b(DEFAULT_TUNING), DEFAULT_TUNING.k1, picks, work=work) == expected
    # each document is in one block of each term at most (the others are not decoded)
    assert work.blocks_read <= len(docs) * len(terms)


def test_field_lengths_are_the_searchers_own(searcher, big_index):
    # several segments, deletions, rewritten documents; every document of both indexes
    for s in (searcher, big_index):
        docs = range(s.doc_count_all())
        lengths = collect.field_lengths(s, "text", docs)
        assert lengths == {d: s.doc_field_length(d, "text") or 0 for d in docs}
        assert len(set(lengths.values())) > 5
