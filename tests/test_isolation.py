"""The isolation every test runs in (conftest.isolated_env) holds for the whole test, even
after the test drops its own patches with ``monkeypatch.undo()``: a machine without a global
git identity, or with a background server enabled, must not change what a test sees."""
from __future__ import annotations

import os
import pwd
import subprocess

ISOLATED = ("HOME", "XDG_CONFIG_HOME", "GIT_CONFIG_GLOBAL", "GIT_CONFIG_NOSYSTEM", "MEMREPO_SEMANTIC",
            "MEMREPO_DAEMON", "MEMREPO_LOCK_TIMEOUT")


def _isolation() -> dict[str, str | None]:
    return {key: os.environ.get(key) for key in ISOLATED}


def test_a_tests_monkeypatch_undo_keeps_the_isolation(monkeypatch, tmp_path):
    isolated = _isolation()
    assert isolated["MEMREPO_DAEMON"] == "0" and isolated["HOME"] != pwd.getpwuid(os.getuid()).pw_dir
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    monkeypatch.setenv("HOME", str(tmp_path))
    monkeypatch.undo()
    assert _isolation() == isolated
    # and git still has the test identity: a commit in a new repository works
    subprocess.run(["git", "init", "-q", str(tmp_path / "r")], check=True)
    done = subprocess.run(["git", "-C", str(tmp_path / "r"), "commit", "-q", "--allow-empty", "-m", "x"],
                          capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    author = subprocess.run(["git", "-C", str(tmp_path / "r"), "log", "-1", "--format=%an"],
                            capture_output=True, text=True).stdout.strip()
    assert author == "Test Person"
