"""``add`` is one pipeline (build -> check once -> route -> render -> commit -> record):
the new memory is checked once on the low-risk path and once on the high-risk path.

The count comes from a profile hook that sees every call of ``checks.check_memory`` (whatever
name a module imported it under) and notes which memory it was given."""
from __future__ import annotations

import json
import sys
from collections import Counter

import pytest

from memrepo.review import proposals
from memrepo.review import writes as memories
from memrepo.store import checks


def checked_ids(fn) -> Counter:
    """memory id -> how many times check_memory ran on it during ``fn()``."""
    seen: Counter = Counter()
    code = checks.check_memory.__code__

    def profile(frame, event, _arg):
        if event == "call" and frame.f_code is code:
            seen[frame.f_locals["memory"].meta.get("id")] += 1

    sys.setprofile(profile)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return seen


def test_a_low_risk_add_checks_the_memory_once(vault):
    seen = checked_ids(lambda: memories.add(vault, {"id": "mem_low", "layer": "L2", "summary": "CI takes 4 minutes"}, ""))
    assert seen["mem_low"] == 1, seen
    assert vault.get("mem_low").meta["status"] == "active"


def test_a_high_risk_add_checks_the_memory_once(vault):
    memories.add(vault, {"id": "mem_old", "subject": "proj", "fact": "db.pool", "layer": "L2", "kind": "knowledge",
                         "summary": "pool size 10"}, "")
    result = None

    def add():
        nonlocal result
        result = memories.add(vault, {"id": "mem_new", "subject": "proj", "fact": "db.pool", "layer": "L2",
                                      "kind": "knowledge", "summary": "pool size 20", "author": "agent-7"}, "")
    seen = checked_ids(add)
    assert result.proposal and seen["mem_new"] == 1, seen
    card = proposals.card(vault, result.proposal)
    assert "2. Supersedes: mem_old (active): pool size 10" in card and "Current value: 'pool size 10'" in card


def test_an_import_for_review_checks_each_memory_once(vault, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("".join(json.dumps({"id": f"mem_i{i}", "layer": "L2", "summary": f"item {i}"}) + "\n" for i in range(3)))
    seen = checked_ids(lambda: memories.import_jsonl(vault, src, propose=True))
    assert [seen[f"mem_i{i}"] for i in range(3)] == [1, 1, 1], seen


@pytest.mark.parametrize("bad", [{"summary": "x", "tags": "not-a-list"}, {"summary": "key AKIAIOSFODNN7EXAMPLE here"}])
def test_a_proposal_of_an_invalid_memory_is_still_refused(vault, bad):
    """Checked once does not mean unchecked: create() still checks for callers that did not."""
    memory = memories.build({"id": "mem_bad", "layer": "L2", **bad}, "", author="someone")
    with vault.lock(), pytest.raises(Exception) as e:
        proposals.create(vault, [memory], reason="test")
    assert "mem_bad" in str(e.value) or "tags" in str(e.value) or "secret" in str(e.value).lower()
    assert proposals.list_proposals(vault) == []
