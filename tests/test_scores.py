"""A hit's score is an absolute 0-1 match that tells hits apart and compares
across queries, not 1.000 for the best hit of every query."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from memrepo.cli.app import app
from memrepo.retrieval import search
from memrepo.review import writes as memories

runner = CliRunner()


@pytest.fixture
def seeded(vault):
    for memory_id, summary, body in (
        ("mem_pool", "orders database pool size is 20", "The orders service uses a pool of 20 connections."),
        ("mem_cache", "session cache eviction uses LRU", "The session cache evicts least recently used keys."),
        ("mem_deploy", "orders service deploys on Fridays", "Releases of the orders service go out on Fridays."),
        ("mem_pager", "pager rotation is weekly", "The on-call pager rotates every Monday."),
    ):
        memories.add(vault, {"id": memory_id, "subject": "proj", "summary": summary}, body)
    return vault


def hits(vault, query):
    result, _ = search.search(vault, query)
    return result.hits


def test_the_best_hit_scores_its_own_match_not_one(seeded):
    full = hits(seeded, "orders database pool connections")
    partial = hits(seeded, "orders database pool weekly Monday")
    assert full[0].id == partial[0].id == "mem_pool"
    assert full[0].keyword_score == pytest.approx(1.0) and full[0].score == pytest.approx(1.0)
    # half the query's weight is in another memory: the best hit says it matches only part
    assert 0.3 < partial[0].score < 0.9 and partial[0].score == pytest.approx(partial[0].keyword_score)
    assert partial[0].score < full[0].score


def test_scores_follow_the_order_and_tell_hits_apart(seeded):
    found = hits(seeded, "orders service pool")
    assert [h.id for h in found][:2] == ["mem_pool", "mem_deploy"]
    scores = [h.score for h in found]
    assert scores == sorted(scores, reverse=True)
    assert scores[0] - scores[1] > 0.05
    assert all(0.0 < h.keyword_score <= 1.0 for h in found)


def test_search_help_says_what_the_score_means():
    out = runner.invoke(app, ["search", "--help"], env={"COLUMNS": "200"})
    assert out.exit_code == 0
    assert "SCORE (0-1)" in out.output and "comparably across queries" in out.output


def test_json_scores_are_absolute(seeded):
    out = runner.invoke(app, ["--vault", str(seeded.root), "search", "--json", "orders database pool weekly"])
    assert out.exit_code == 0, out.output
    top = json.loads(out.stdout)["hits"][0]
    assert top["id"] == "mem_pool" and top["semantic_score"] is None
    assert top["score"] == pytest.approx(top["keyword_score"]) and top["score"] < 1.0
