"""The re-rank of the candidate pool (memrepo.retrieval.ranking): the coverage reported as
``keyword_score`` (the idf-weighted share of the query's terms the memory holds) and the BM25
of the common query terms that were not searched, through the product on real vaults."""
from __future__ import annotations

import json
import math

import pytest
from typer.testing import CliRunner

from memrepo import api, text
from memrepo.cli.app import app
from memrepo.retrieval.analysis import key_terms
from memrepo.review import writes as memories

runner = CliRunner()

MEMORIES = (
    # id, summary, body, tags
    ("mem_pool", "orders database pool size is 20", "The orders service uses a pool of 20 connections.", ()),
    ("mem_cache", "session cache eviction uses LRU", "The session cache evicts least recently used keys.",
     ("#latency",)),
    ("mem_deploy", "releases go out on Fridays", "The orders service deploys every Friday after review.", ()),
    ("mem_pager", "pager rotation is weekly", "The on-call pager rotates every Monday.", ("#orders",)),
    ("mem_zh", "数据库连接池大小为二十", "订单服务的数据库连接池有二十个连接。", ()),
)


@pytest.fixture
def seeded(vault):
    for memory_id, summary, body, tags in MEMORIES:
        memories.add(vault, {"id": memory_id, "subject": "proj", "summary": summary, "tags": list(tags)}, body)
    return vault


def _held(memory_id: str) -> set[str]:
    """Every term of the memory's text, tags and keys (analysed here, not read from the index)."""
    _, summary, body, tags = next(m for m in MEMORIES if m[0] == memory_id)
    return set(text.terms(f"{summary} {body} {' '.join(tags)}")) | set(key_terms(f"proj {' '.join(tags)}"))


def _share(query: str, memory_id: str) -> float:
    """The idf-weighted share of the query's terms (those some memory holds) in the memory."""
    n = len(MEMORIES)
    df = {t: sum(t in _held(m[0]) for m in MEMORIES) for t in set(text.terms(query))}
    idf = {t: math.log(1.0 + (n - d + 0.5) / (d + 0.5)) for t, d in df.items() if d}
    return sum(v for t, v in idf.items() if t in _held(memory_id)) / sum(idf.values())


@pytest.mark.parametrize("query", [
    "orders database pool weekly",        # a word in a summary only, one in the body only
    "orders latency friday review",       # a business tag (#latency, #orders) counts as held
    "数据库 连接池 订单 weekly",             # CJK bigrams
])
def test_keyword_score_is_the_idf_weighted_share_of_the_query_terms(seeded, query):
    out = runner.invoke(app, ["--vault", str(seeded.root), "search", "--json", "--limit", "10", query])
    assert out.exit_code == 0, out.output
    hits = json.loads(out.stdout)["hits"]
    assert len(hits) >= 2
    for hit in hits:
        assert hit["keyword_score"] == pytest.approx(_share(query, hit["id"]), abs=1e-6), hit["id"]


def test_a_common_term_that_was_not_searched_still_ranks_the_pool(vault):
    # Only the 64 rarest query terms are searched (Tuning.max_terms); "deploy" is the
    # commonest, so it only re-ranks the candidates the others found: a memory holding it
    # goes above one that does not, though that one is shorter (a higher BM25 for "alpha")
    # and would win a tie on its id.
    filler = [f"zq{i:02d}x" for i in range(63)]
    docs = [("mem_b", "alpha"), ("mem_c", "alpha deploy"), ("mem_filler", " ".join(filler)),
            ("mem_other1", "deploy gamma"), ("mem_other2", "deploy delta")]
    for memory_id, words in docs:
        memories.add(vault, {"id": memory_id, "subject": "proj", "summary": words}, words)
    query = " ".join([*filler, "alpha", "deploy"])
    result, _ = api.search(vault, query)
    ids = [h.id for h in result.hits]
    assert ids[0] == "mem_filler"
    assert ids.index("mem_c") < ids.index("mem_b")
    assert "mem_other1" not in ids   # the unsearched term brings in no memory of its own


def test_the_stored_term_counts_rank_as_the_text_counted(seeded, monkeypatch):
    # The index stores what the re-rank counts a query's terms in (text.pack_terms), so a
    # candidate's text is not analysed again at search time; an index without them (a term
    # holding a separator, or written by hand) is counted in the text: the hits are the same.
    from memrepo.retrieval import lookups, search, warm
    from memrepo.retrieval.fields import TERMS
    queries = ["orders database pool weekly", "数据库 连接池 订单 weekly", "库 订单", "cache latency LRU proj"]

    def hits():
        return [[(h.id, h.score, h.keyword_score) for h in api.search(seeded, q)[0].hits] for q in queries]

    def stored_terms() -> list[bool]:
        with warm.index(seeded)._open_ix().searcher() as s:
            return [TERMS in lookups.stored_fields(s, d) for d in range(s.doc_count_all())]

    stored = hits()
    assert all(stored_terms())
    monkeypatch.setattr(text, "pack_terms", lambda *a, **k: None)
    search.rebuild(seeded)
    assert not any(stored_terms())
    assert hits() == stored
    assert all(stored)
