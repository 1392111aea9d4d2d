"""How often search looks at the working tree for uncommitted edits (commits are always seen)."""
from __future__ import annotations

import os
import time
from dataclasses import replace

from memrepo.retrieval import search
from memrepo.retrieval.search import _load_scan, _save_scan, _Scan, _scan_due
from memrepo.review import writes as memories

LARGE = 100_000


def test_small_vaults_look_on_every_search():
    assert _scan_due(_Scan(at=time.time(), cost=0.3, files=2000))


def test_a_large_vault_looks_every_one_to_five_seconds():
    now = time.time()
    assert not _scan_due(_Scan(at=now, cost=0.3, files=LARGE))
    assert not _scan_due(_Scan(at=now - 0.5, cost=0.01, files=LARGE))  # at most once a second
    assert _scan_due(_Scan(at=now - 1.1, cost=0.01, files=LARGE))
    assert _scan_due(_Scan(at=now - 3.1, cost=0.3, files=LARGE))
    assert _scan_due(_Scan(at=now - 5.1, cost=2.0, files=LARGE))
    assert _scan_due(_Scan(at=now + 60, cost=0.3, files=LARGE))  # a clock that went back never stalls it


def test_a_large_vault_looks_at_once_when_its_tree_stamp_moved():
    last = _Scan(at=time.time(), cost=0.3, files=LARGE, stamp=("a",))
    assert not _scan_due(last, lambda: ("a",))
    assert _scan_due(last, lambda: ("b",))


def _as_if_huge(vault, **changes):
    """The last look, as a vault of 100,000 memories would have recorded it."""
    scan = replace(search._scan(vault), at=time.time(), cost=0.3, files=LARGE)
    _save_scan(vault, replace(scan, **changes))


def test_large_vault_sees_uncommitted_edit_within_the_window_and_commits_at_once(vault):
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    assert [h.id for h in search.search(vault, "alpha")[0].hits] == ["mem_a"]
    path = vault.root / vault.get("mem_a").path
    _as_if_huge(vault)
    path.write_text(path.read_text(encoding="utf-8").replace("alpha", "omega"), encoding="utf-8")  # in place
    assert search.search(vault, "omega")[0].nothing_relevant  # inside the window
    _as_if_huge(vault, at=time.time() - 10, paths=_load_scan(vault).paths)
    assert [h.id for h in search.search(vault, "omega")[0].hits] == ["mem_a"]
    memories.add(vault, {"id": "mem_b", "subject": "s", "summary": "kappa cache"}, "")
    _as_if_huge(vault)
    assert [h.id for h in search.search(vault, "kappa")[0].hits] == ["mem_b"]  # a commit: at once


def test_large_vault_sees_a_replaced_or_new_file_at_once(vault):
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    assert [h.id for h in search.search(vault, "alpha")[0].hits] == ["mem_a"]
    path = vault.root / vault.get("mem_a").path
    _as_if_huge(vault)
    tmp = path.with_name(".mem_a.md.swp")
    tmp.write_text(path.read_text(encoding="utf-8").replace("alpha", "sigma"), encoding="utf-8")
    os.replace(tmp, path)  # as editors save
    assert [h.id for h in search.search(vault, "sigma")[0].hits] == ["mem_a"]
    new = path.with_name("mem_n.md")
    new.write_text(path.read_text(encoding="utf-8").replace("mem_a", "mem_n").replace("sigma", "lambda"),
                   encoding="utf-8")
    assert [h.id for h in search.search(vault, "lambda")[0].hits] == ["mem_n"]
    new.unlink()
    assert search.search(vault, "lambda")[0].nothing_relevant
