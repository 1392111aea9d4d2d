"""Trust: paths around review are seen, hooks stay in the vault, bad input gets a one-line
error. Each test is a case that once got past review or broke a command (or a sequence found
by the property tests), run against real git repositories."""
from __future__ import annotations

import json
import subprocess

import pytest
from conftest import MEMREPO, cli, commit_of, git, person_env, person_git

from memrepo.review import proposals, provenance, validate
from memrepo.review import writes as memories

# ------------------------------------------------------------ property-test regression

def test_hand_revert_of_the_add_of_a_memory_a_rolled_back_one_superseded(vault):
    """Found by test_properties: add, supersede through review, apply, rollback, then a hand
    ``git revert`` of the first add. The rolled-back record may name a memory that is gone."""
    memories.add(vault, {"id": "mem_1", "subject": "proj", "fact": "ui.theme", "kind": "knowledge",
                         "layer": "L2", "summary": "v1"}, "b1")
    r = memories.add(vault, {"id": "mem_2", "subject": "proj", "fact": "ui.theme", "kind": "knowledge",
                             "layer": "L2", "summary": "v2"}, "b2")
    proposals.apply(vault, r.proposal)
    provenance.rollback(vault, "mem_2")
    proc = person_git(vault.root, "revert", "--no-edit", commit_of(vault.root, "memrepo: add mem_1"))
    assert proc.returncode == 0, proc.stderr
    assert validate.validate_tree(vault) == []
    assert vault.get("mem_2").meta["status"] == "rolled_back"


# ------------------------------------------------------------ case 8: the review gate, audited

def hand_file(vault, memory_id: str, **meta) -> str:
    """Write a memory file by hand (as a person in an editor would); returns its path."""
    from memrepo.model import Memory
    from memrepo.store.vault import render_bytes
    fields = {"id": memory_id, "layer": "L2", "kind": "knowledge", "subject": "proj", "summary": f"{memory_id} text",
              "status": "active", "source": "user", "created": "2026-11-01T00:00:00+00:00", **meta}
    memory = Memory(fields, meta.pop("body", "body"))
    (vault.root / memory.path).parent.mkdir(parents=True, exist_ok=True)
    (vault.root / memory.path).write_bytes(render_bytes(memory))
    return memory.path


def audit_lines(vault) -> list[str]:
    return [str(p) for p in validate.validate_tree(vault)]


def constraint_commit(vault, memory_id: str = "mem_c", **meta) -> str:
    path = hand_file(vault, memory_id, kind="constraint", **meta)
    git(vault.root, "add", path)
    return path


def test_edit_of_an_active_low_risk_memory_into_a_constraint_is_refused_by_the_hook(vault):
    memories.add(vault, {"id": "mem_e", "layer": "L2", "subject": "proj", "summary": "plain"}, "body")
    path = "memories/L2/mem_e.md"
    text = (vault.root / path).read_text().replace("kind: pattern", "kind: constraint")
    (vault.root / path).write_text(text)
    git(vault.root, "add", path)
    proc = person_git(vault.root, "commit", "-m", "tighten")
    assert proc.returncode == 1 and "high-risk memory" in proc.stderr and path in proc.stderr
    proc = person_git(vault.root, "commit", "--amend", "--no-edit")
    assert proc.returncode == 1
    git(vault.root, "commit", "--no-verify", "-m", "tighten")
    sha = git(vault.root, "rev-parse", "HEAD").strip()
    [line] = audit_lines(vault)
    assert line.startswith(f"{path}:status: high-risk memory") and sha[:12] in line


@pytest.mark.parametrize("how", ["ff-merge", "cherry-pick", "rebase", "am"])
def test_high_risk_memory_arriving_without_a_commit_hook_is_reported(vault, tmp_path, how):
    git(vault.root, "checkout", "-q", "-b", "side")
    path = constraint_commit(vault)
    git(vault.root, "commit", "-q", "-m", "a rule")   # not on main: the hook lets a branch be
    side = git(vault.root, "rev-parse", "HEAD").strip()
    git(vault.root, "checkout", "-q", "main")
    if how == "ff-merge":
        git(vault.root, "merge", "-q", "--ff-only", "side")
    elif how == "cherry-pick":
        git(vault.root, "cherry-pick", side)
    elif how == "rebase":
        memories.add(vault, {"id": "mem_x", "summary": "moves main on"}, "")
        git(vault.root, "checkout", "-q", "side")
        git(vault.root, "rebase", "-q", "main")
        git(vault.root, "checkout", "-q", "main")
        git(vault.root, "merge", "-q", "--ff-only", "side")
    else:
        patch = tmp_path / "p.patch"
        patch.write_text(git(vault.root, "format-patch", "--stdout", "-1", side))
        git(vault.root, "am", "-q", str(patch))
    head = git(vault.root, "rev-parse", "HEAD").strip()
    lines = audit_lines(vault)
    assert len(lines) == 1 and lines[0].startswith(f"{path}:status:") and head[:12] in lines[0], lines
    proc = cli(vault.root, "validate")
    assert proc.returncode == 1 and head[:12] in proc.stderr


def test_no_ff_merge_with_forged_propose_trailers_is_reported(vault):
    git(vault.root, "checkout", "-q", "-b", "side")
    path = constraint_commit(vault, proposal="prop_fake")
    git(vault.root, "commit", "-q", "-m", "looks reviewed\n\nMemrepo-Action: propose\nMemrepo-Proposal: prop_fake\nMemrepo-Ids: mem_c")
    git(vault.root, "checkout", "-q", "main")
    person_git(vault.root, "merge", "--no-ff", "--no-verify", "-m", "merge", "side")
    assert (vault.root / path).exists()
    [line] = audit_lines(vault)
    assert line.startswith(f"{path}:status:")


def test_self_made_proposal_branch_merged_by_hand_is_reported(vault):
    git(vault.root, "checkout", "-q", "-b", "proposal/x")
    path = constraint_commit(vault, proposal="x")
    git(vault.root, "commit", "-q", "-m", "my own proposal")
    git(vault.root, "checkout", "-q", "main")
    proc = person_git(vault.root, "merge", "--no-ff", "-m", "merge x", "proposal/x")
    if proc.returncode == 0:
        [line] = audit_lines(vault)
        assert line.startswith(f"{path}:status:")
    else:  # the merge hook refused it: nothing landed on main
        assert person_git(vault.root, "cat-file", "-e", f"HEAD:{path}").returncode != 0
        git(vault.root, "merge", "--abort")


def test_hand_revert_of_a_memrepo_rollback_is_reported(vault):
    r = memories.add(vault, {"id": "mem_k", "layer": "L2", "kind": "constraint", "subject": "proj", "summary": "no deploys"}, "")
    proposals.apply(vault, r.proposal)
    assert audit_lines(vault) == []
    undo = provenance.rollback(vault, "mem_k")
    proc = person_git(vault.root, "revert", "--no-edit", undo)
    assert proc.returncode == 0, proc.stderr
    sha = git(vault.root, "rev-parse", "HEAD").strip()
    [line] = audit_lines(vault)
    assert line.startswith("memories/L2/mem_k.md:status:") and sha[:12] in line


def test_reviewed_paths_and_undo_by_revert_pass_the_audit(vault, tmp_path):
    r = memories.add(vault, {"id": "mem_k", "subject": "proj", "fact": "deploy", "layer": "L2", "kind": "constraint",
                             "summary": "no deploys"}, "")
    proposals.apply(vault, r.proposal)
    r2 = memories.add(vault, {"id": "mem_k2", "subject": "proj", "fact": "deploy", "layer": "L2", "kind": "constraint",
                              "summary": "deploys on Fridays only"}, "")
    merge = proposals.apply(vault, r2.proposal)
    src = tmp_path / "in.jsonl"
    src.write_text(json.dumps({"id": "mem_imp", "layer": "L2", "kind": "policy", "summary": "imported rule"}) + "\n")
    memories.import_jsonl(vault, src)
    assert audit_lines(vault) == []
    git(vault.root, "revert", "--no-edit", "-m", "1", merge)   # mem_k is active again, as reviewed
    assert vault.get("mem_k").meta["status"] == "active"
    assert audit_lines(vault) == []
    provenance.rollback(vault, "mem_imp")
    assert audit_lines(vault) == []


def test_override_trailer_is_listed_with_author_and_reason(vault):
    path = constraint_commit(vault)
    person_git(vault.root, "commit", "--no-verify", "-m", "emergency rule",
               "--trailer", "Memrepo-Override: incident 42, reviewed on the call")
    assert audit_lines(vault) == []
    report = validate.validate_vault(vault)
    [o] = report.overrides
    assert (o.path, o.reason, o.author) == (path, "incident 42, reviewed on the call", "Test Person <test@example.invalid>")
    proc = cli(vault.root, "validate")
    assert proc.returncode == 0 and "override" in proc.stdout and "incident 42" in proc.stdout
    data = json.loads(cli(vault.root, "validate", "--json").stdout)
    assert data["ok"] and data["overrides"][0]["reason"].startswith("incident 42")


def test_audit_reads_history_once(vault, monkeypatch):
    for i in range(5):
        constraint_commit(vault, f"mem_c{i}")
    git(vault.root, "commit", "--no-verify", "-q", "-m", "five rules")
    from memrepo.store import git as git_mod
    calls = []
    real = git_mod.log_raw
    monkeypatch.setattr(git_mod, "log_raw", lambda *a, **k: calls.append(k.get("paths")) or real(*a, **k))
    assert len(audit_lines(vault)) == 5
    assert len([paths for paths in calls if paths != [".memrepo/config.toml"]]) == 1  # the policy's history apart


# ------------------------------------------------------------ case 9: hooks stay in the vault

def test_hooks_install_refuses_a_global_hooks_path_and_never_writes_there(vault, tmp_path):
    global_hooks = tmp_path / "global-hooks"
    global_hooks.mkdir()
    (global_hooks / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    git(vault.root, "config", "--global", "core.hooksPath", str(global_hooks))
    proc = cli(vault.root, "hooks", "install")
    assert proc.returncode != 0 and "core.hooksPath" in proc.stderr and "git -C" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert sorted(p.name for p in global_hooks.iterdir()) == ["pre-commit"]
    assert (global_hooks / "pre-commit").read_text() == "#!/bin/sh\nexit 0\n"
    fresh = tmp_path / "fresh"
    proc = subprocess.run([*MEMREPO, "init", str(fresh)], capture_output=True, text=True, env=person_env())
    assert proc.returncode != 0 and "core.hooksPath" in proc.stderr
    assert sorted(p.name for p in global_hooks.iterdir()) == ["pre-commit"]
    # the fix the message gives: the vault's own hooks folder, set in the vault's own config
    git(vault.root, "config", "core.hooksPath", ".git/hooks")
    proc = cli(vault.root, "hooks", "install")
    assert proc.returncode == 0, proc.stderr
    assert (vault.root / ".git/hooks/pre-commit").exists()
    assert sorted(p.name for p in global_hooks.iterdir()) == ["pre-commit"]


# ------------------------------------------------------------ case 14: long words

def test_search_on_a_long_unbroken_word_is_bounded(vault):
    import time

    from memrepo.retrieval import search
    memories.add(vault, {"summary": "release.auto_publish is off"}, "body")
    for word in ("a" * 20_000, "x" * 100_000, ("ab_" * 33_000)[:100_000], "é" * 50_000):
        started = time.perf_counter()
        search.search(vault, word, limit=5)
        assert time.perf_counter() - started < 3.0   # the aim is 1 s; generous for a loaded machine


def test_a_held_index_lock_refuses_the_write_before_anything_is_committed(vault):
    """A person's git holding .git/index.lock (or a killed one leaving it): memrepo used to
    commit, then fail to update the index and exit 1 with the new memory committed but shown
    by 'git status' as deleted-and-untracked (a plain commit would have dropped it). Now it
    waits a moment, then refuses as busy (75) with nothing written."""
    head = vault.head()
    lock = vault.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    proc = cli(vault.root, "add", "--subject", "proj", "--summary", "the build uses make", "--body", "make")
    assert proc.returncode == 75, proc.stderr
    assert "index.lock" in proc.stderr and "nothing was written" in proc.stderr and "Traceback" not in proc.stderr
    assert vault.head() == head and lock.exists()
    lock.unlink()
    assert git(vault.root, "status", "--porcelain") == ""


def test_an_index_lock_released_during_the_wait_lets_the_write_through(vault):
    import threading
    lock = vault.root / ".git" / "index.lock"
    lock.write_bytes(b"")
    threading.Timer(0.5, lock.unlink).start()
    memories.add(vault, {"subject": "proj", "summary": "the build uses make"}, "make")
    assert not lock.exists() and git(vault.root, "status", "--porcelain") == ""
