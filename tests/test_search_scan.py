"""How often search looks at the working tree for uncommitted edits (commits are always seen)."""
from __future__ import annotations

import os
import time
from dataclasses import replace

from memrepo.retrieval import scan as scans
from memrepo.retrieval import search
from memrepo.retrieval.scan import Scan as _Scan
from memrepo.retrieval.scan import due as _scan_due
from memrepo.retrieval.scan import load as _load_scan
from memrepo.retrieval.scan import save as _save_scan
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
    assert not _scan_due(last, lambda: False)
    assert _scan_due(last, lambda: True)


def _as_if_huge(vault, **changes):
    """The last look, as a vault of 100,000 memories would have recorded it."""
    scan = replace(scans.look(vault), at=time.time(), cost=0.3, files=LARGE)
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


# ---- the folder watch of a process that searches again ------------------------------------

def test_a_folder_watch_reports_every_change_in_its_folders(tmp_path):
    from memrepo.store.watch import FolderWatch, filesystem
    (tmp_path / "a" / "b").mkdir(parents=True)
    (tmp_path / "a" / "x.md").write_text("one")
    (tmp_path / "c").mkdir()
    watch = FolderWatch.start(tmp_path, ("a", "a/b"))
    assert watch is not None and not watch.moved()
    assert watch.local == (filesystem(tmp_path) in ("ext4", "xfs", "btrfs", "tmpfs", "overlay", "zfs"))
    (tmp_path / "c" / "elsewhere.md").write_text("not watched")
    assert not watch.moved()
    (tmp_path / "a" / "x.md").write_text("two")  # in place (the folder stamp does not move)
    assert watch.moved() and not watch.moved()  # reported once
    (tmp_path / "a" / "b" / "new.md").write_text("new")
    assert watch.moved() and not watch.moved()
    os.replace(tmp_path / "a" / "b" / "new.md", tmp_path / "a" / "x.md")  # as editors save
    assert watch.moved()
    (tmp_path / "a" / "x.md").unlink()
    assert watch.moved()
    os.rmdir(tmp_path / "a" / "b")
    assert watch.moved()
    watch.close()
    assert watch.moved()  # a closed watch cannot vouch for anything


def test_a_folder_watch_is_not_set_up_for_a_missing_folder(tmp_path):
    from memrepo.store.watch import FolderWatch
    (tmp_path / "a").mkdir()
    assert FolderWatch.start(tmp_path, ("a", "gone")) is None
    assert FolderWatch.start(tmp_path, ()) is None


def test_a_process_that_searches_again_watches_instead_of_stat(vault, monkeypatch):
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    assert [h.id for h in search.search(vault, "alpha")[0].hits] == ["mem_a"]
    path = vault.root / vault.get("mem_a").path
    _as_if_huge(vault)
    search.search(vault, "alpha")  # the second search in this process starts the watch
    warm = scans.looks(vault)
    assert warm.watch is not None and warm.watch.dirs == _load_scan(vault).dirs

    stamps, looks = [], []
    stamp, scan = scans.tree_stamp, scans.look
    monkeypatch.setattr(scans, "tree_stamp", lambda *a: stamps.append(1) or stamp(*a))
    monkeypatch.setattr(scans, "look", lambda *a: looks.append(1) or scan(*a))
    assert search.search(vault, "lambda")[0].nothing_relevant
    assert stamps == looks == []  # no stat of the folders: the watch answered
    new = path.with_name("mem_n.md")
    new.write_text(path.read_text(encoding="utf-8").replace("mem_a", "mem_n").replace("alpha", "lambda"),
                   encoding="utf-8")
    assert [h.id for h in search.search(vault, "lambda")[0].hits] == ["mem_n"]  # at once, as with the stamp
    assert len(stamps) == len(looks) == 1  # the look records the stamp for processes without a watch
    _as_if_huge(vault)
    new.unlink()
    assert search.search(vault, "lambda")[0].nothing_relevant
    _as_if_huge(vault)
    path.write_text(path.read_text(encoding="utf-8").replace("alpha", "omega"), encoding="utf-8")  # in place
    assert [h.id for h in search.search(vault, "omega")[0].hits] == ["mem_a"]  # at once, unlike the stamp


def test_a_watch_on_a_local_filesystem_spares_the_periodic_look(vault, monkeypatch):
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    search.search(vault, "alpha")
    _as_if_huge(vault)
    search.search(vault, "alpha")  # starts the watch
    _as_if_huge(vault, at=time.time() - 60)
    search.search(vault, "alpha")  # a look that begins under the watch
    warm = scans.looks(vault)
    assert warm.watch is not None and warm.watched_look
    _as_if_huge(vault, at=time.time() - 60)  # the last look a minute ago: the window is long past
    looks = []
    scan = scans.look
    monkeypatch.setattr(scans, "look", lambda *a: looks.append(1) or scan(*a))
    monkeypatch.setattr(warm.watch, "local", True)
    assert search.search(vault, "alpha")[0].hits and looks == []  # nothing changed: no look
    monkeypatch.setattr(warm.watch, "local", False)  # as on NFS: another machine's edits are not reported
    assert search.search(vault, "alpha")[0].hits and looks == [1]


def test_a_new_memory_folder_is_watched_too(vault):
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    search.search(vault, "alpha")
    _as_if_huge(vault)
    search.search(vault, "alpha")
    first = scans.looks(vault).watch
    assert first is not None
    folder = vault.root / "memories" / "L2" / "handmade"
    folder.mkdir(parents=True)
    text = (vault.root / vault.get("mem_a").path).read_text(encoding="utf-8")
    (folder / "mem_h.md").write_text(text.replace("mem_a", "mem_h").replace("alpha", "zeta"), encoding="utf-8")
    assert [h.id for h in search.search(vault, "zeta")[0].hits] == ["mem_h"]
    _as_if_huge(vault, paths=_load_scan(vault).paths)
    search.search(vault, "zeta")  # the folders differ from the watch's: a new watch, and the stamp once more
    watch = scans.looks(vault).watch
    assert watch is not None and watch is not first and "memories/L2/handmade" in watch.dirs
    _as_if_huge(vault, paths=_load_scan(vault).paths)
    (folder / "mem_i.md").write_text(text.replace("mem_a", "mem_i").replace("alpha", "theta"), encoding="utf-8")
    assert [h.id for h in search.search(vault, "theta")[0].hits] == ["mem_i"]


def test_folders_that_cannot_be_watched_are_not_tried_on_every_search(vault, monkeypatch):
    from memrepo.store import watch as watch_mod
    tries = []
    monkeypatch.setattr(watch_mod.FolderWatch, "start", classmethod(lambda cls, root, dirs: tries.append(dirs)))
    memories.add(vault, {"id": "mem_a", "subject": "s", "summary": "alpha database pool"}, "")
    search.search(vault, "alpha")
    for _ in range(3):
        _as_if_huge(vault)
        assert [h.id for h in search.search(vault, "alpha")[0].hits] == ["mem_a"]
    assert len(tries) == 1 and scans.looks(vault).watch is None  # the stat stamp answers instead
