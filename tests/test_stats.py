"""Heat, cooldown, learned stopwords and forgetting (SQLite in a temp dir)."""
from datetime import UTC, datetime, timedelta

import pytest

from memrepo.retrieval.stats import COOLDOWN_CAP, Stats

T0 = datetime(2026, 3, 1, tzinfo=UTC)
OLD = "2026-01-01T00:00:00+00:00"


@pytest.fixture()
def stats(tmp_path):
    s = Stats(tmp_path / "state" / "stats.sqlite")
    yield s
    s.close()


def test_unknown_memories_are_cold(stats):
    assert stats.heat(["a"], T0) == {"a": 0.0}


def test_useful_marks_beat_recalls_and_sessions_count_once(stats):
    for _ in range(5):
        stats.record_recall("s1", "deploy", ["a", "b"], now=T0)
    stats.mark_useful("b", session="s1", now=T0)
    heat = stats.heat(["a", "b"], T0, created={"a": OLD, "b": OLD})
    assert heat["a"] == pytest.approx(0.2)       # five recalls in one session count once
    assert heat["b"] == pytest.approx(1.2)


def test_heat_decays_with_time_since_last_success(stats):
    stats.mark_useful("a", session="s1", now=T0)
    now = stats.heat(["a"], T0, created={"a": OLD})["a"]
    later = stats.heat(["a"], T0 + timedelta(days=30), created={"a": OLD})["a"]
    assert later == pytest.approx(now / 2)


def test_cooldown_caps_growth_in_the_first_day(stats):
    created = {"new": T0.isoformat(), "old": OLD}
    for i in range(5):
        stats.mark_useful("new", session=f"s{i}", now=T0 + timedelta(hours=i))
        stats.mark_useful("old", session=f"s{i}", now=T0 + timedelta(hours=i))
    heat = stats.heat(["new", "old"], T0 + timedelta(hours=5), created=created)
    assert heat["new"] <= COOLDOWN_CAP
    assert heat["old"] > 4.0
    stats.mark_useful("new", session="late", now=T0 + timedelta(days=2))
    grown = stats.heat(["new"], T0 + timedelta(days=2), created=created)["new"]
    assert grown == pytest.approx(COOLDOWN_CAP + 1.0)


def test_stopwords_need_three_distinct_failed_sessions(stats):
    stats.record_recall("s1", "please help deploy", ["a"], now=T0)
    stats.record_recall("s1", "please help again", ["b"], now=T0)
    stats.record_recall("s2", "please help", ["c"], now=T0)
    assert "pleas" not in stats.learned_stopwords()
    stats.record_recall("s3", "please", ["d"], now=T0)
    assert "pleas" in stats.learned_stopwords()
    assert "help" not in stats.learned_stopwords()  # only two sessions


def test_terms_of_successful_recalls_are_protected(stats):
    for s in ("s1", "s2", "s3", "s4"):
        stats.record_recall(s, "deploy rollback", ["a"], now=T0)
    stats.mark_useful("a", session="s4", now=T0)
    assert stats.learned_stopwords() == frozenset()


def test_forget_removes_every_trace(stats):
    stats.record_recall("s1", "deploy", ["a"], now=T0)
    stats.mark_useful("a", session="s1", now=T0)
    stats.forget("a")
    assert stats.heat(["a"], T0) == {"a": 0.0}
    count = stats.db.execute("SELECT COUNT(*) FROM recall_hit WHERE mem='a'").fetchone()[0]
    assert count == 0
