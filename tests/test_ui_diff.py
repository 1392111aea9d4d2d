"""The reviewer's diff: front matter field by field, the body word by word (CJK by character),
and a proposal compared with the version it supersedes as its base held it."""
from __future__ import annotations

import random
import time

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from memrepo import api
from memrepo.model import Memory
from memrepo.review import writes


def memory(body: str = "", **meta) -> Memory:
    fields = {"id": "mem_a", "layer": "L2", "kind": "knowledge", "subject": "proj", "summary": "s",
              "status": "active", "created": "2026-12-01T09:00:00+00:00", **meta}
    return Memory(fields, body)


def ops(segments) -> list[tuple[str, str]]:
    return [(s.op, s.text) for s in segments]


def test_front_matter_is_compared_field_by_field_with_list_items_added_and_removed():
    old = memory(summary="pool size 10", tags=["#db", "#ops"], weight=0.5)
    new = memory(summary="pool size 20", tags=["#db", "#perf"], confidence=0.9, status="pending_review")
    d = api.field_diff(old, new)
    by = {f.name: f for f in d.fields}
    assert by["summary"].change == "changed" and (by["summary"].old, by["summary"].new) == ("pool size 10", "pool size 20")
    assert by["tags"].added == ("#perf",) and by["tags"].removed == ("#ops",)
    assert by["confidence"].change == "added" and by["weight"].change == "removed"
    assert by["status"].bookkeeping and not by["summary"].bookkeeping
    assert "subject" not in by and "id" not in by          # unchanged fields are not listed
    assert d.kind == "edit"


def test_the_body_is_a_word_diff_and_chinese_is_compared_character_by_character():
    d = api.field_diff(memory("Pool size is 10 after the test.\n"), memory("Pool size is 20 after the test.\n"))
    assert ops(d.body) == [("same", "Pool size is "), ("del", "10"), ("ins", "20"), ("same", " after the test.\n")]
    zh = api.field_diff(memory("当前阶段禁止自动发布。\n"), memory("当前阶段允许自动发布。\n"))
    assert ops(zh.body) == [("same", "当前阶段"), ("del", "禁止"), ("ins", "允许"), ("same", "自动发布。\n")]
    mixed = api.field_diff(memory("连接池 max_threads=32，超时 5s\n"), memory("连接池 max_threads=64，超时 5s\n"))
    assert ("del", "32") in ops(mixed.body) and ("ins", "64") in ops(mixed.body)


def test_long_unchanged_stretches_are_folded_around_a_change():
    lines = [f"line {n}\n" for n in range(40)]
    changed = lines[:20] + ["line twenty\n"] + lines[21:]
    d = api.field_diff(memory("".join(lines)), memory("".join(changed)))
    folds = [s for s in d.body if s.op == "fold"]
    assert [f.text for f in folds] == ["18", "17"]
    assert ("del", "20") in ops(d.body) and ("ins", "twenty") in ops(d.body)
    assert api.field_diff(memory("same\n"), memory("same\n")).body_changed is False


def test_a_new_memory_and_a_deleted_one():
    d = api.field_diff(None, memory("new body\n"))
    assert d.kind == "new" and ops(d.body) == [("ins", "new body\n")]
    assert {f.change for f in d.fields} == {"added"}
    gone = api.field_diff(memory("old body\n"), None)
    assert gone.kind == "delete" and ops(gone.body) == [("del", "old body\n")]


@settings(max_examples=200, deadline=None)
@given(st.text(alphabet="ab 数据库\n.", max_size=60), st.text(alphabet="ab 数据库\n.", max_size=60))
def test_the_body_diff_rebuilds_both_versions(old, new):
    """Unchanged + removed gives the old body, unchanged + added the new one (nothing is lost
    or invented), whatever the text; only folds leave lines out, and they count them."""
    d = api.field_diff(memory(old), memory(new))
    folded = any(s.op == "fold" for s in d.body)
    if not folded:
        assert "".join(s.text for s in d.body if s.op in ("same", "del")) == old
        assert "".join(s.text for s in d.body if s.op in ("same", "ins")) == new


def _paragraph(words: int, edits: int) -> tuple[str, str]:
    """A pasted document as one long line (no line breaks to narrow the diff), edited in places."""
    rng = random.Random(7)
    vocabulary = [f"w{n}" for n in range(3000)] + ["the"] * 300 + ["a"] * 200
    old = [rng.choice(vocabulary) for _ in range(words)]
    new = list(old)
    for _ in range(edits):
        at = rng.randrange(words)
        new[at:at + 3] = [rng.choice(vocabulary) for _ in range(4)]
    return " ".join(old) + ".\n", " ".join(new) + ".\n"


@pytest.mark.parametrize("old, new", [
    _paragraph(9000, 20),                                                  # 60 KB of prose on one line
    ("x\n" * 20000 + "end\n", "start\n" + "x\n" * 20000),                 # a log excerpt of repeated lines
    (" | ".join(str(n % 10) for n in range(3000)), " | ".join(str(n % 7) for n in range(3000))),   # a row of digits
], ids=["prose", "repeated-lines", "digits"])
def test_a_long_body_is_compared_in_bounded_time(old, new):
    """difflib's exact search is quadratic in the pairs of equal elements (every space of a
    paragraph, every copy of a repeated line): a body the vault accepts must not hold the page
    (and the one-request-at-a-time server) for seconds or minutes."""
    start = time.perf_counter()
    d = api.field_diff(memory(old), memory(new))
    assert time.perf_counter() - start < 5
    assert "".join(s.text for s in d.body if s.op in ("same", "del", "fold")) != "" and d.body_changed


def test_a_long_paragraph_edited_in_places_shows_only_the_edits():
    old, new = _paragraph(9000, 20)
    d = api.field_diff(memory(old), memory(new))
    removed = sum(len(s.text) for s in d.body if s.op == "del")
    assert 0 < removed < len(old) / 50
    assert "".join(s.text for s in d.body if s.op in ("same", "del")) == old
    assert "".join(s.text for s in d.body if s.op in ("same", "ins")) == new


def test_a_proposal_is_compared_with_the_active_version_it_supersedes(vault):
    writes.add(vault, {"id": "mem_old", "subject": "proj", "fact": "db.pool", "layer": "L2", "kind": "knowledge",
                       "summary": "连接池大小 10"}, "连接池大小为 10。")
    r = writes.add(vault, {"id": "mem_new", "subject": "proj", "fact": "db.pool", "layer": "L2", "kind": "knowledge",
                           "summary": "连接池大小 20", "evidence": ["logs/load.md#L1-L9"]}, "连接池大小为 20。")
    assert r.proposal
    [d] = api.proposal_diffs(vault, r.proposal)
    assert (d.id, d.old_id, d.kind) == ("mem_new", "mem_old", "supersedes")
    by = {f.name: f for f in d.fields}
    assert (by["summary"].old, by["summary"].new) == ("连接池大小 10", "连接池大小 20")
    assert by["evidence"].added == ("logs/load.md#L1-L9",)
    assert ("del", "10") in ops(d.body) and ("ins", "20") in ops(d.body)
    raw = api.branch_diff(vault, r.proposal)
    assert "+summary: 连接池大小 20" in raw or "+summary: \"连接池大小 20\"" in raw
