"""Data loss and integrity: each case a reproduction that once lost or damaged data."""
from __future__ import annotations

import json
import os
import sqlite3
import subprocess
import sys

import pytest
from conftest import git

from memrepo.errors import Busy, Conflict, InvalidMemory
from memrepo.retrieval import search as svc
from memrepo.retrieval.stats import SCHEMA_VERSION, Stats
from memrepo.review import proposals, provenance
from memrepo.review import writes as memories
from memrepo.store import git as gitops
from memrepo.store.catalog import Catalog
from memrepo.store.vault import Vault


class Killed(BaseException):
    """Stands in for the process dying (not an Exception: nothing may catch it)."""


def person_env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}


def memrepo(root, *args: str, stdin: str | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrepo", "--vault", str(root), *args], input=stdin,
                          capture_output=True, text=True, env={**person_env(), **(env or {})})


def kill_after_refs_moved(monkeypatch, also=None):
    """The process dies after the ref transaction, before the checkout is updated."""
    def boom(self, changes):
        if also:
            also(self, changes)
        raise Killed()
    monkeypatch.setattr(Vault, "_update_checkout", boom)


def apply_constraint(vault, memory_id="mem_rule_1"):
    pending = memories.add(vault, {"id": memory_id, "kind": "constraint", "subject": "release",
                                   "summary": "never auto-publish"}, "")
    assert pending.proposal
    proposals.apply(vault, pending.proposal)
    return vault.get(memory_id)


# ---- 1. an existing id never overwrites a memory

def test_add_with_an_existing_id_is_refused_and_the_reviewed_memory_stays(vault):
    reviewed = apply_constraint(vault)
    head = vault.head()
    with pytest.raises(InvalidMemory, match="already exists"):
        memories.add(vault, {"id": "mem_rule_1", "kind": "event", "subject": "release",
                             "summary": "agent may auto-publish"}, "")
    assert vault.head() == head
    assert vault.get("mem_rule_1").meta == reviewed.meta


def test_import_line_with_an_existing_id_is_refused(vault, tmp_path):
    apply_constraint(vault)
    memories.add(vault, {"id": "mem_old_note", "layer": "L2", "summary": "kept"}, "")
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"id": "mem_rule_1", "kind": "event", "subject": "release",
                                 "summary": "agent may auto-publish"}) + "\n"
                     + json.dumps({"id": "mem_old_note", "layer": "L2", "summary": "replaced"}) + "\n"
                     + json.dumps({"id": "mem_fresh", "summary": "new"}) + "\n")
    head = vault.head()
    with pytest.raises(InvalidMemory, match="already exists") as e:
        memories.import_jsonl(vault, lines)
    assert "line 1" in str(e.value) and "line 2" in str(e.value) and vault.head() == head
    result = memories.import_jsonl(vault, lines, skip_invalid=True)
    assert result.count == 1
    assert vault.get("mem_rule_1").meta["kind"] == "constraint"
    assert vault.get("mem_old_note").meta["summary"] == "kept"


def test_an_id_in_the_archive_or_rolled_back_is_taken_too(vault):
    memories.add(vault, {"id": "mem_gone", "summary": "first"}, "")
    provenance.rollback(vault, "mem_gone")
    assert vault.get("mem_gone").meta["status"] == "rolled_back"
    with pytest.raises(InvalidMemory, match="already exists"):
        memories.add(vault, {"id": "mem_gone", "summary": "again"}, "")


# ---- 2. a crash, then an ordinary commit, never deletes a memory

def test_a_plain_commit_after_a_killed_add_is_refused_until_recovered(vault, monkeypatch):
    kill_after_refs_moved(monkeypatch)
    with pytest.raises(Killed):
        memories.add(vault, {"id": "mem_new", "summary": "written before the kill"}, "")
    monkeypatch.undo()
    (vault.root / "README.md").write_text("docs\n") if (vault.root / "README.md").exists() else None
    done = subprocess.run(["git", "-C", str(vault.root), "commit", "-qam", "docs"], capture_output=True,
                          text=True, env=person_env())
    assert done.returncode != 0 and "memrepo recover" in done.stderr
    assert "mem_new.md" in git(vault.root, "ls-tree", "-r", "--name-only", "main")
    listed = memrepo(vault.root, "list", "--json")  # any command finishes the recovery first
    assert listed.returncode == 0 and "mem_new" in listed.stdout
    assert "mem_new.md" not in git(vault.root, "status", "--porcelain")
    subprocess.run(["git", "-C", str(vault.root), "commit", "-qam", "docs"], capture_output=True, env=person_env())
    assert "mem_new.md" in git(vault.root, "ls-tree", "-r", "--name-only", "main")


def test_recover_command_says_what_it_did(vault, monkeypatch):
    kill_after_refs_moved(monkeypatch)
    with pytest.raises(Killed):
        memories.add(vault, {"id": "mem_r", "summary": "x"}, "")
    monkeypatch.undo()
    first = memrepo(vault.root, "recover")
    assert first.returncode == 0 and "Finished" in first.stdout
    assert "Nothing to recover" in memrepo(vault.root, "recover").stdout
    assert git(vault.root, "status", "--porcelain") == ""


# ---- 3. the size cap holds on every write path

BIG = "x" * (300 * 1024)


def test_add_refuses_an_oversized_body(vault):
    head = vault.head()
    with pytest.raises(InvalidMemory, match="cap"):
        memories.add(vault, {"summary": "big"}, BIG)
    done = memrepo(vault.root, "add", "--summary", "big", stdin=BIG)
    assert done.returncode != 0 and "cap" in done.stderr and "Traceback" not in done.stderr
    assert vault.head() == head


def test_import_and_proposals_refuse_an_oversized_body(vault, tmp_path):
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"summary": "big", "body": BIG}) + "\n")
    head = vault.head()
    with pytest.raises(InvalidMemory, match="cap"):
        memories.import_jsonl(vault, lines)
    with pytest.raises(InvalidMemory, match="cap"):
        memories.add(vault, {"kind": "constraint", "summary": "big rule"}, BIG)
    assert vault.head() == head and not gitops.refs(vault.root, "refs/heads/proposal/")


# ---- 4. no write through a symlinked folder

def test_add_through_a_symlinked_layer_folder_is_refused(vault, tmp_path):
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    layer = vault.root / "memories" / "L2"
    if layer.exists():
        for child in layer.iterdir():
            child.unlink()
        layer.rmdir()
    layer.symlink_to(elsewhere)
    head = vault.head()
    with pytest.raises(Conflict, match="memories/L2 is a symlink"):
        memories.add(vault, {"layer": "L2", "summary": "pattern"}, "")
    assert vault.head() == head and list(elsewhere.iterdir()) == []
    memories.add(vault, {"summary": "an event still works"}, "")
    assert vault.head() != head


# ---- 5. killed apply / reject / rollback: nothing done, or everything recorded

def test_killed_apply_records_the_proposal_as_applied(vault, monkeypatch):
    memories.add(vault, {"id": "mem_old", "subject": "p", "fact": "release.auto", "summary": "manual"}, "")
    pending = memories.add(vault, {"id": "mem_new", "subject": "p", "fact": "release.auto", "summary": "auto"}, "")
    kill_after_refs_moved(monkeypatch)
    with pytest.raises(Killed):
        proposals.apply(vault, pending.proposal)
    monkeypatch.undo()
    fresh = Vault.find(vault.root)
    assert [p.id for p in proposals.list_proposals(fresh)] == []
    assert proposals.get(fresh, pending.proposal).status == "applied"
    with pytest.raises(Conflict, match="already applied"):
        proposals.apply(fresh, pending.proposal)
    with pytest.raises(Conflict, match="already applied"):
        proposals.reject(fresh, pending.proposal, why="stale")
    assert git(vault.root, "status", "--porcelain") == ""


def test_killed_reject_is_all_or_nothing(vault, monkeypatch):
    pending = memories.add(vault, {"kind": "constraint", "summary": "rule"}, "")
    calls = []
    real = gitops.update_refs

    def die_after(root, changes, **kw):
        real(root, changes, **kw)
        calls.append(1)
        raise Killed()
    monkeypatch.setattr(gitops, "update_refs", die_after)
    with pytest.raises(Killed):
        proposals.reject(vault, pending.proposal, why="no")
    monkeypatch.undo()
    fresh = Vault.find(vault.root)
    assert proposals.get(fresh, pending.proposal).status == "rejected"
    assert not gitops.refs(vault.root, "refs/heads/proposal/")
    with pytest.raises(Conflict, match="already rejected"):
        proposals.reject(fresh, pending.proposal, why="again")


def test_rollback_retry_says_it_is_already_done(vault):
    memories.add(vault, {"id": "mem_x", "summary": "x"}, "")
    provenance.rollback(vault, "mem_x")
    with pytest.raises(Conflict, match="already rolled back"):
        provenance.rollback(vault, "mem_x")


def test_main_moved_while_writing_is_busy_and_leaves_no_scratch_ref(vault, monkeypatch):
    real = gitops.write_commit

    def person_commits_meanwhile(root, **kw):
        sha = real(root, **kw)
        subprocess.run(["git", "-C", str(root), "commit", "-q", "--allow-empty", "--no-verify", "-m", "meanwhile"],
                       check=True, env=person_env())
        return sha
    monkeypatch.setattr(gitops, "write_commit", person_commits_meanwhile)
    with pytest.raises(Busy, match="main moved while writing; retry"):
        memories.add(vault, {"summary": "racing"}, "")
    monkeypatch.undo()
    assert gitops.refs(vault.root, "refs/memrepo/tmp/") == {}
    assert not Vault(vault.root).interrupted()
    memories.add(Vault(vault.root), {"summary": "retried"}, "")


# ---- 6. stale git locks of a killed memrepo write; stray temp files

def test_stale_git_locks_left_by_a_killed_write_are_cleaned_by_the_next_write(vault, monkeypatch):
    gitdir = vault.root / ".git"

    def leave_locks(self, changes):
        for name in ("packed-refs.lock", "index.lock"):
            (gitdir / name).write_text("")
        target = vault.root / next(iter(changes))
        target.parent.mkdir(parents=True, exist_ok=True)
        (target.parent / f".{target.name}.abc123.tmp").write_text("half")
    kill_after_refs_moved(monkeypatch, also=leave_locks)
    with pytest.raises(Killed):
        memories.add(vault, {"id": "mem_k", "summary": "k"}, "")
    monkeypatch.undo()
    memories.add(Vault(vault.root), {"summary": "next write"}, "")
    assert not (gitdir / "packed-refs.lock").exists() and not (gitdir / "index.lock").exists()
    assert not list((vault.root / "memories").rglob("*.tmp"))
    assert git(vault.root, "status", "--porcelain") == ""


def test_a_persons_git_lock_is_never_removed(vault):
    lock = vault.root / ".git" / "packed-refs.lock"
    lock.write_text("")
    with pytest.raises(Busy, match="packed-refs.lock"):
        memories.add(vault, {"summary": "blocked"}, "")
    assert lock.exists()
    lock.unlink()
    memories.add(Vault(vault.root), {"summary": "after the person's git"}, "")


# ---- 7. derived state holding the only copy of data; catalog stamps

def test_damaged_stats_are_kept_aside_with_a_notice(vault):
    memories.add(vault, {"summary": "deploy notes"}, "")
    path = vault.state_dir / "stats.sqlite"
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"not a database at all" * 100)
    _result, report = svc.search(vault, "deploy", session="s1", log_recalls=True)
    kept = list(path.parent.glob("stats.sqlite.damaged-*"))
    assert len(kept) == 1 and kept[0].read_bytes().startswith(b"not a database")
    assert report.notice and kept[0].name in report.notice


def test_stats_have_a_schema_version_and_old_files_migrate_keeping_data(tmp_path):
    path = tmp_path / "stats.sqlite"
    old = sqlite3.connect(path)
    old.executescript("CREATE TABLE recall (rid INTEGER PRIMARY KEY, session TEXT NOT NULL, query TEXT NOT NULL, ts REAL NOT NULL);"
                      "CREATE TABLE useful (mem TEXT NOT NULL, session TEXT, ts REAL NOT NULL);"
                      "INSERT INTO useful VALUES ('mem_a', 's', 1.0);")
    old.commit()
    old.close()
    stats = Stats(path)
    assert stats.db.execute("PRAGMA user_version").fetchone()[0] == SCHEMA_VERSION >= 1
    assert stats.db.execute("SELECT mem FROM useful").fetchall() == [("mem_a",)]
    assert stats.notice is None


def test_catalog_sync_never_stamps_rows_of_another_commit(vault, monkeypatch):
    memories.add(vault, {"id": "mem_a", "summary": "a"}, "")
    c0 = vault.head()
    memories.add(vault, {"id": "mem_b", "summary": "b"}, "")
    c1 = vault.head()
    memories.add(vault, {"id": "mem_c", "summary": "c"}, "")
    c2 = vault.head()
    db = vault.state_dir / "race.sqlite"
    first, second = Catalog(vault.root, db), Catalog(vault.root, db)
    first.sync(c0)
    real = gitops.diff_tree
    state = {"raced": False}

    def other_sync_meanwhile(*args, **kw):
        out = real(*args, **kw)
        if not state["raced"]:
            state["raced"] = True
            second.sync(c2)  # another process catches up further while this one reads git
        return out
    monkeypatch.setattr(gitops, "diff_tree", other_sync_meanwhile)
    first.sync(c1)
    monkeypatch.undo()
    truth = Catalog(vault.root, vault.state_dir / "fresh.sqlite")
    truth.sync(c1)
    rows = lambda cat: sorted(cat.db.execute("SELECT path, id, status FROM memory"))  # noqa: E731
    assert first.commit == c1 and rows(first) == rows(truth)
