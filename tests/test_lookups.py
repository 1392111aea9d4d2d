"""Direct reads of an open searcher's segments (memrepo.retrieval.lookups) against Whoosh's own.

``lookups.docnum_of`` must name the document ``searcher.document_number(id=...)`` names and
``lookups.stored_fields`` return what ``searcher.stored_fields`` returns, for every id and document of
an index with several segments (a plain one and compound ones), deleted documents, an id deleted
and added again in a later segment, and an id written twice by one writer.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from memrepo.retrieval import lookups
from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.index import MemoryIndex
from memrepo.retrieval.ranking import SearchQuery


def _doc(i: int, body: str = "alpha beta") -> IndexDoc:
    return IndexDoc(id=f"m{i}", path=f"memories/L1/m{i}.md", layer="L1", kind="event", subject="proj",
                    fact=None, status="active", summary=body, body=f"{body} {i}", tags=("#t",),
                    created="2026-01-02T03:04:05Z", updated=None)


def _searcher(ix: MemoryIndex):
    ix.search(SearchQuery("alpha"))
    return ix._cached_searcher()


@pytest.fixture(scope="module")
def index(tmp_path_factory):
    ix = MemoryIndex(Path(tmp_path_factory.mktemp("lookups")) / "index")
    ix.rebuild([_doc(i) for i in range(60)], commit="c1")
    # one writer writes m70 twice: Whoosh keeps both (the id's postings are two documents)
    ix.update(upserts=[_doc(70), _doc(70, "gamma"), _doc(71)], deletes=["m3"], commit="c2")
    # m5 and m71 are deleted where they were and written again in a newer segment
    ix.update(upserts=[_doc(5, "delta"), _doc(71, "epsilon")], deletes=["m7"], commit="c3")
    leaves = [leaf for leaf, _ in _searcher(ix).reader().leaf_readers()]
    assert len(leaves) == 3 and leaves[0].has_deletions() and leaves[1].has_deletions()
    assert leaves[1].doc_frequency("id", "m70") == 2
    yield ix
    ix.close()


@pytest.fixture(scope="module")
def searcher(index):
    return _searcher(index)


IDS = [f"m{i}" for i in range(80)] + ["", "m", "m1x", "M1", "x" * 300, "数据库"]


def test_an_id_names_the_document_whoosh_names(searcher):
    found = {mid: lookups.docnum_of(searcher, mid) for mid in IDS}
    assert found == {mid: searcher.document_number(id=mid) for mid in IDS}
    assert found["m3"] is None and found["m7"] is None and found["m75"] is None
    assert searcher.stored_fields(found["m5"])["body"] == "delta 5"
    assert searcher.stored_fields(found["m71"])["body"] == "epsilon 71"


def test_a_document_has_the_stored_fields_whoosh_gives(searcher):
    n = searcher.doc_count_all()
    for docnum in range(n):   # deleted documents included, as Whoosh reads them
        assert lookups.stored_fields(searcher, docnum) == searcher.stored_fields(docnum), docnum


def test_every_segment_is_read_directly(searcher):
    # the answers above are not Whoosh's fallback: the plain segment is read by position,
    # the compound ones from their buffers
    segs = lookups._segments(searcher)[1]
    assert all(seg.table is not None and seg.read_stored is not None for seg in segs)


def test_term_files_read_by_position_answer_as_whoosh_reads_them(index, searcher):
    plain = index._open_ix().searcher()   # Whoosh's own reads, nothing of the search's set-up
    try:
        # the plain segment's term file is read by position (the compound ones are in memory)
        assert "get" in vars(searcher.reader().leaf_readers()[0][0]._terms._dbfile)
        terms = list(plain.reader().all_terms())
        assert len(terms) > 100
        for field, word in terms:
            assert searcher.doc_frequency(field, word) == plain.doc_frequency(field, word), (field, word)
            assert searcher.frequency(field, word) == plain.frequency(field, word), (field, word)
            mine, theirs = searcher.reader().term_info(field, word), plain.reader().term_info(field, word)
            assert (mine.doc_frequency(), mine.max_weight(), mine.min_id()) == \
                (theirs.doc_frequency(), theirs.max_weight(), theirs.min_id())
    finally:
        plain.close()


def test_a_single_segment_index(tmp_path):
    ix = MemoryIndex(tmp_path / "index")
    ix.rebuild([_doc(i) for i in range(30)], commit="c1")
    s = _searcher(ix)
    assert [lookups.docnum_of(s, f"m{i}") for i in range(32)] == [s.document_number(id=f"m{i}") for i in range(32)]
    assert [lookups.stored_fields(s, d) for d in range(30)] == [s.stored_fields(d) for d in range(30)]
    ix.close()


def test_a_terms_document_frequency_is_whoosh_s(searcher):
    from memrepo.retrieval.fields import SCORED
    terms = ["alpha", "beta", "gamma", "delta", "epsilon", "absent", "", "5", "70", "数据", "m70"]
    for field in (SCORED, "id", "subject", "status", "keys"):
        for term in terms:
            want = searcher.doc_frequency(field, term)
            assert lookups.doc_frequency(searcher, field, term) == want, (field, term)
            assert lookups.doc_frequency(searcher, field, term) == want   # remembered
    assert lookups.doc_frequency(searcher, SCORED, "alpha") > 0
    assert lookups.doc_frequency(searcher, "id", "m70") == 2   # one writer wrote it twice


def test_a_closed_searcher_reads_no_other_file(tmp_path):
    ix = MemoryIndex(tmp_path / "index")
    ix.rebuild([_doc(i) for i in range(30)], commit="c1")
    s = _searcher(ix)
    assert lookups.stored_fields(s, 0)["id"] == "m0"
    ix.close()   # closes the searcher and its files
    # files opened now take the freed descriptor numbers
    others = [open(tmp_path / f"other{i}", "wb+") for i in range(16)]
    try:
        for f in others:
            f.write(b"x" * 4096)
            f.flush()
        with pytest.raises(ValueError):
            lookups.stored_fields(s, 0)
        with pytest.raises(ValueError):
            lookups.docnum_of(s, "m1")
    finally:
        for f in others:
            f.close()
