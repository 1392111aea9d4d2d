"""Memory CI under a careless user and an attacker: the apply gate with a ref named like the
proposal, hostile check files, the throw-away clone after a crash, a memory filesystem that
fills up during a run."""
from __future__ import annotations

import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import cli, git
from test_memory_ci import CHECKS, bury_proposal, pool_vault

from memrepo import api
from memrepo.errors import Conflict
from memrepo.lifecycle import memory_ci
from memrepo.store import faults, recall_checks


@pytest.mark.parametrize("kind", ["branch", "tag"])
def test_a_ref_named_like_the_proposal_does_not_open_the_gate(vault, tmp_path, kind):
    """A person who makes a branch (or tag) named after a proposal to look at it: the checks
    still run on the proposal as it would be applied, and apply still refuses the regression."""
    ids = pool_vault(vault)
    pid = bury_proposal(vault, tmp_path)
    git(vault.root, kind, pid, f"proposal/{pid}")
    run = memory_ci.run_checks(vault, pid)
    assert run.proposal == pid and [r.check.name for r in run.regressions] == ["chk_pool"]
    assert api.proposal_checks(vault, pid).regressions
    head = git(vault.root, "rev-parse", "main")
    with pytest.raises(Conflict, match="chk_pool"):
        memory_ci.apply(vault, pid)
    refused = cli(vault.root, "apply", pid)
    assert refused.returncode == 4 and "chk_pool" in refused.stderr
    assert git(vault.root, "rev-parse", "main") == head
    # a plain revision is still a revision: the branch itself, asked for by its full name
    assert memory_ci.run_checks(vault, f"refs/heads/{pid}" if kind == "branch" else f"refs/tags/{pid}").proposal is None
    assert ids and (vault.root / CHECKS).is_file()


@pytest.mark.parametrize("entry", ["? [a, b]\n    : c", "? {a: 1}\n    : c", "[a]: c"])
def test_a_check_file_with_a_key_that_is_a_list_or_a_mapping_is_a_problem_not_a_crash(vault, entry):
    ids = pool_vault(vault)
    text = f"checks:\n  - {entry}\n    question: q\n    expect: {ids['pool']}\n"
    checks, problems = recall_checks.parse(CHECKS, text.encode())
    assert checks == [] and len(problems) == 1 and str(problems[0]).startswith(f"{CHECKS}:line 2")
    (vault.root / CHECKS).write_text(text, encoding="utf-8")
    git(vault.root, "commit", "-q", "--no-verify", "-am", "a hand-made checks file, the hook skipped")
    for args, code in ((("validate",), 1), (("check", "list"), 5), (("check", "run"), 5)):
        proc = cli(vault.root, *args)
        assert proc.returncode == code, proc.stderr
        assert "Traceback" not in proc.stderr and f"{CHECKS}:line 2" in proc.stdout + proc.stderr


def scratch(folder: Path) -> list[Path]:
    return sorted(folder.glob("memrepo-check-*"))


def test_the_clone_of_a_killed_run_is_removed_by_the_next_run_and_a_live_one_is_left(vault, tmp_path, monkeypatch):
    """A run killed outright (kill -9, a CI timeout's SIGTERM) cannot remove its throw-away
    clone; in a memory filesystem it would hold RAM until reboot. The next run removes it."""
    pool_vault(vault)
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(memory_ci, "MEMORY_FS", str(tmp_path / "no-memory-fs"))
    killed = cli(vault.root, "check", "run", MEMREPO_FAULT="check-clone-made", TMPDIR=str(tmp))
    assert killed.returncode == faults.EXIT_CODE, killed.stderr
    left = scratch(tmp)
    assert len(left) == 1 and (left[0] / "vault" / ".git").exists()
    monkeypatch.setenv("TMPDIR", str(tmp))
    monkeypatch.setattr(tempfile, "tempdir", None)
    with memory_ci._Scratch(vault) as live:          # the next run: the dead one's clone goes
        assert scratch(tmp) == [live.dir]
        assert memory_ci.sweep_scratch(str(tmp)) == []   # a live run's clone stays
    assert scratch(tmp) == []
    assert memory_ci.run_checks(vault, "HEAD").ok and scratch(tmp) == []


@pytest.fixture
def tiny_tmpfs(tmp_path):
    """A 64 KiB memory filesystem (mounting one needs root; skipped elsewhere)."""
    folder = tmp_path / "shm"
    folder.mkdir()
    if subprocess.run(["mount", "-t", "tmpfs", "-o", "size=64k", "tmpfs", str(folder)], capture_output=True).returncode:
        pytest.skip("mounting a small tmpfs needs root")
    yield folder
    subprocess.run(["umount", "-l", str(folder)], check=True)


def test_a_memory_filesystem_that_fills_up_during_a_run_gives_way_to_the_disk(vault, tmp_path, tiny_tmpfs, monkeypatch):
    """The memory filesystem is only a speed-up: when it fills up after the room check said
    yes (another program took the space), the run goes on in the temporary folder."""
    pool_vault(vault)
    monkeypatch.setattr(memory_ci, "_scratch_parent", lambda _vault: str(tiny_tmpfs))
    monkeypatch.setattr(memory_ci, "MEMORY_FS", str(tiny_tmpfs))
    tmp = tmp_path / "tmp"
    tmp.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(tmp))
    run = memory_ci.run_checks(vault, "HEAD")
    assert run.ok and [r.status for r in run.results] == ["pass", "pass"]
    assert scratch(tiny_tmpfs) == [] and scratch(tmp) == []
