"""Proof that stays: a real memrepo process killed (MEMREPO_FAULT) at every step of every write.

After each kill the next memrepo command must find the vault whole: ``validate`` and ``git fsck``
clean, nothing acknowledged before the kill lost, the killed write either absent or complete,
the checkout equal to main, no scratch ref, journal or git lock left, and the next write working.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import git

from memrepo.review import proposals
from memrepo.review import writes as memories
from memrepo.review.validate import validate_tree
from memrepo.store import faults
from memrepo.store.vault import Vault

COMMIT_POINTS = ("commit-before-objects", "commit-after-objects", "commit-in-ref-transaction",
                 "commit-after-refs-moved", "commit-mid-checkout", "commit-after-checkout")
# Every command's commit goes through the same write transaction: add is killed at each of its
# steps; the others at the steps where their own refs differ (the full matrix, 44 kills, runs
# with MEMREPO_FAULT_MATRIX=full and in bench/reliability.py).
FULL = os.environ.get("MEMREPO_FAULT_MATRIX") == "full"
REF_POINTS = COMMIT_POINTS if FULL else ("commit-in-ref-transaction", "commit-after-refs-moved")
CHECKOUT_POINTS = COMMIT_POINTS if FULL else ("commit-after-refs-moved", "commit-mid-checkout")
APPLY_POINTS = COMMIT_POINTS if FULL else ("commit-in-ref-transaction", "commit-after-refs-moved", "commit-mid-checkout")

SCENARIOS = (
    [("add", p) for p in ("add-checked", *COMMIT_POINTS)]
    + [("add-high-risk", p) for p in ("add-checked", *REF_POINTS)]
    + [("import", p) for p in ("import-checked", *CHECKOUT_POINTS)]
    + [("apply", p) for p in ("apply-checked", *APPLY_POINTS)]
    + [("reject", p) for p in ("reject-checked", *REF_POINTS)]
    + [("rollback", p) for p in ("rollback-checked", *CHECKOUT_POINTS)]
    + [("distill", p) for p in ("distill-proposed", *(REF_POINTS if FULL else ("commit-after-refs-moved",)))]
    + [("reindex", "reindex-built")]
)


def person_env(**extra) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    env.pop(faults.ENV, None)
    return {**env, **extra}


def memrepo(root, *args: str, **extra) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "memrepo", "--vault", str(root), *args],
                          capture_output=True, text=True, env=person_env(**extra))


def dark_log(root) -> str:
    rows = [{"id": f"l1_dark_{i}", "subject": "user", "kind": "event", "session": f"s{i}",
             "created": f"2026-11-{d:02d}T10:00:00+08:00", "summary": s}
            for i, (d, s) in enumerate([(3, "User prefers dark mode in the editor"),
                                        (9, "Switched the editor to dark theme again, user likes dark"),
                                        (15, "User asked for dark mode in the editor again")], start=1)]
    path = root.parent / "dark.jsonl"
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return str(path)


def prepare(vault, command: str, tmp_path) -> tuple[list[str], set[str], set[str]]:
    """Build the state before the write; return its command line, the ids acknowledged before
    it, and the ids the write itself adds (present in full, or absent, after the kill)."""
    memories.add(vault, {"id": "mem_before", "subject": "s", "summary": "acknowledged before the kill"}, "")
    known = {"mem_before"}
    if command == "add":
        return ["add", "--id", "mem_killed", "--summary", "the killed add"], known, {"mem_killed"}
    if command == "add-high-risk":
        return ["add", "--id", "mem_rule", "--kind", "constraint", "--summary", "a rule"], known, set()
    if command == "import":
        lines = tmp_path / "in.jsonl"
        lines.write_text("".join(json.dumps({"id": f"mem_imp_{i}", "summary": f"line {i}"}) + "\n" for i in range(5)))
        return ["import", str(lines)], known, {f"mem_imp_{i}" for i in range(5)}
    if command in ("apply", "reject"):
        memories.add(vault, {"id": "mem_old", "subject": "p", "fact": "release.auto", "summary": "manual"}, "")
        pending = memories.add(vault, {"id": "mem_new", "subject": "p", "fact": "release.auto", "summary": "auto"}, "")
        known.add("mem_old")
        if command == "apply":
            return ["apply", pending.proposal], known, set()
        return ["reject", pending.proposal, "--why", "not now"], known, set()
    if command == "rollback":
        memories.add(vault, {"id": "mem_undo", "summary": "to roll back"}, "")
        return ["rollback", "mem_undo"], known, set()
    if command == "distill":
        memories.import_jsonl(vault, dark_log(vault.root))
        known |= {"l1_dark_1", "l1_dark_2", "l1_dark_3"}
        return ["distill", "--now", "2026-11-20"], known, set()
    if command == "reindex":
        assert memrepo(vault.root, "search", "mode").returncode == 0
        return ["reindex"], known, set()
    raise AssertionError(command)


@pytest.mark.parametrize(("command", "point"), SCENARIOS, ids=[f"{c}@{p}" for c, p in SCENARIOS])
def test_a_write_killed_at_any_step_leaves_a_whole_vault(vault, tmp_path, command, point):
    assert point in faults.POINTS
    args, known, written = prepare(vault, command, tmp_path)
    root = vault.root
    before = git(root, "rev-parse", "main").strip()
    killed = memrepo(root, *args, **{faults.ENV: point})
    assert killed.returncode == faults.EXIT_CODE, f"{point} was not reached: {killed.stdout}{killed.stderr}"

    checked = memrepo(root, "validate")  # the next command finishes the killed write first
    assert checked.returncode == 0, checked.stdout + checked.stderr
    assert subprocess.run(["git", "-C", str(root), "fsck", "--no-dangling", "--no-progress"],
                          capture_output=True, env=person_env()).returncode == 0
    assert git(root, "status", "--porcelain") == "", "the checkout must match main"
    assert git(root, "for-each-ref", "refs/memrepo/tmp/") == ""
    gitdir = root / ".git"
    assert not (gitdir / "memrepo-journal.json").exists()
    own = {"memrepo.store.lock", "memrepo-nightly.lock"}  # memrepo's flock files live on, unlocked
    assert not [p for p in gitdir.rglob("*.lock") if p.name not in own], "no git lock may be left behind"

    after = Vault(root)
    listed = {row["id"] for row in after.list()}
    assert known <= listed, f"acknowledged memories lost: {known - listed}"
    assert written <= listed or not (written & listed), "a write must land whole or not at all"
    moved = git(root, "rev-parse", "main").strip() != before
    if command == "apply":
        assert proposals.get(after, "prop_mem_new").status == ("applied" if moved else "open")
    if command == "reject":
        status = proposals.get(after, "prop_mem_new").status
        branch = git(root, "for-each-ref", "refs/heads/proposal/")
        assert (status, bool(branch)) in (("rejected", False), ("open", True))

    memories.add(after, {"summary": "the next write works"}, "")
    assert validate_tree(after) == []
    assert git(root, "status", "--porcelain") == ""
    after.close()
