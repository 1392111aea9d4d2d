"""How often search looks at the working tree for uncommitted edits (commits are always seen)."""
from __future__ import annotations

import time

from memrepo.retrieval import search
from memrepo.retrieval.search import _load_scan, _save_scan, _Scan, _scan_due
from memrepo.review import writes as memories


def test_cheap_looks_happen_on_every_search():
    assert _scan_due(_Scan(at=time.time(), cost=0.01))


def test_a_costly_look_waits_ten_times_its_cost_at_most_five_seconds():
    now = time.time()
    assert not _scan_due(_Scan(at=now, cost=0.3))
    assert _scan_due(_Scan(at=now - 3.1, cost=0.3))
    assert _scan_due(_Scan(at=now - 5.1, cost=2.0))
    assert _scan_due(_Scan(at=now + 60, cost=0.3))  # a clock that went back never stalls it


def test_large_vault_sees_uncommitted_edit_within_the_window_and_commits_at_once(vault):
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    assert [h.id for h in search.search(vault, "alpha")[0].hits] == ["mem_a"]
    path = vault.root / vault.get("mem_a").path
    _save_scan(vault, _Scan(at=time.time(), cost=0.3))  # as if the vault were huge
    path.write_text(path.read_text(encoding="utf-8").replace("alpha", "omega"), encoding="utf-8")
    assert search.search(vault, "omega")[0].nothing_relevant  # inside the 3 s window
    _save_scan(vault, _Scan(_load_scan(vault).paths, at=time.time() - 10, cost=0.3))
    assert [h.id for h in search.search(vault, "omega")[0].hits] == ["mem_a"]
    memories.add(vault, {"id": "mem_b", "subject": "s", "summary": "kappa cache"}, "")
    _save_scan(vault, _Scan(at=time.time(), cost=0.3))
    assert [h.id for h in search.search(vault, "kappa")[0].hits] == ["mem_b"]  # a commit: at once
