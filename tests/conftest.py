"""Shared fixtures: every test runs with its own HOME, git identity and real temporary vaults."""
from __future__ import annotations

import os
import pty
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo import api
from memrepo.store.vault import Vault


@pytest.fixture(autouse=True)
def isolated_env(tmp_path_factory):
    """No test reads or writes the real HOME, git config or vault environment.

    The isolation has its own MonkeyPatch, not the test's ``monkeypatch``: a test that calls
    ``monkeypatch.undo()`` to drop its own patches must not also drop these (on a machine
    without a global git identity its next commit would fail, and the CLI would start a
    background server)."""
    with pytest.MonkeyPatch.context() as patch:
        home = tmp_path_factory.mktemp("home")
        for key, value in ISOLATION.items():
            patch.setenv(key, value.format(home=home))
        for key in ("MEMREPO_VAULT", "MEMREPO_AUTHOR", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            patch.delenv(key, raising=False)
        subprocess.run(["git", "config", "--global", "user.name", "Test Person"], check=True)
        subprocess.run(["git", "config", "--global", "user.email", "test@example.invalid"], check=True)
        subprocess.run(["git", "config", "--global", "init.defaultBranch", "main"], check=True)
        yield


# The environment of every test. Keyword ranking unless a test asks for the semantic layer
# (tests/test_semantic.py): loading the model costs about a second per process. No background
# server (memrepo/cli/server.py) outlives a test; tests/test_daemon.py turns it on.
ISOLATION = {"HOME": "{home}", "XDG_CONFIG_HOME": "{home}/.config", "GIT_CONFIG_NOSYSTEM": "1",
             "GIT_CONFIG_GLOBAL": "{home}/.gitconfig", "MEMREPO_LOCK_TIMEOUT": "10",
             "MEMREPO_SEMANTIC": "0", "MEMREPO_DAEMON": "0"}


@pytest.fixture
def vault(tmp_path) -> Vault:
    """A fresh vault made by ``memrepo init`` in a temporary directory."""
    v = api.init(tmp_path / "vault")
    yield v
    v.close()


MEMREPO = [sys.executable, "-m", "memrepo"]


def person_env(**extra: str) -> dict[str, str]:
    """The environment a person's shell has: ours without the GIT_* variables a hook run sets."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    env.update(extra)
    return env


def person_git(root: Path, *args: str, **extra: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=person_env(**extra))


def cli(root: Path, *args: str, stdin: str | bytes | None = None, **extra: str) -> subprocess.CompletedProcess:
    """``memrepo --vault ROOT ARGS`` as a real process, output decoded."""
    data = stdin.encode() if isinstance(stdin, str) else stdin
    proc = subprocess.run([*MEMREPO, "--vault", str(root), *args], input=data, capture_output=True,
                          env=person_env(**extra))
    proc.stdout, proc.stderr = proc.stdout.decode("utf-8", "replace"), proc.stderr.decode("utf-8", "replace")
    return proc


def commit_of(root: Path, subject_start: str) -> str:
    """The newest commit on main whose subject starts with ``subject_start``."""
    for line in git(root, "log", "--format=%H %s", "main").splitlines():
        if line.split(" ", 1)[1].startswith(subject_start):
            return line.split()[0]
    raise AssertionError(f"no commit {subject_start!r}")


def git(root: Path, *args: str) -> str:
    """Run git in ``root`` as a person would; raise on failure."""
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True, env=person_env())
    if proc.returncode != 0:
        raise AssertionError(f"git {' '.join(args)} failed: {proc.stderr}{proc.stdout}")
    return proc.stdout


class GitCalls:
    """Counts the real git processes a piece of code starts: a ``git`` script first on PATH
    appends its arguments to a log and execs the real git (nothing is mocked)."""

    def __init__(self, directory: Path, monkeypatch):
        import shutil
        real = shutil.which("git")
        assert real, "git is not installed"
        directory.mkdir(parents=True, exist_ok=True)
        self.log = directory / "calls.log"
        wrapper = directory / "git"
        wrapper.write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{self.log}"\nexec "{real}" "$@"\n')
        wrapper.chmod(0o755)
        monkeypatch.setenv("PATH", f"{directory}{os.pathsep}{os.environ.get('PATH', '')}")

    def calls(self, fn, *args, **kwargs) -> list[str]:
        """The git command lines ``fn(*args, **kwargs)`` ran, in order."""
        self.log.write_text("")
        fn(*args, **kwargs)
        return self.log.read_text().splitlines()


@pytest.fixture
def git_calls(tmp_path, monkeypatch) -> GitCalls:
    return GitCalls(tmp_path / "git-calls", monkeypatch)


def on_a_terminal(argv: list[str], *, stream: str = "stdout", env: dict[str, str] | None = None) -> str:
    """What ``argv`` writes to ``stream`` ("stdout" or "stderr") when that stream is a terminal
    (a pty); the other stream is discarded."""
    leader, follower = pty.openpty()
    streams = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, stream: follower}
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, env=env, **streams)
    os.close(follower)
    chunks = []
    while True:
        try:
            data = os.read(leader, 65536)
        except OSError:  # the pty is closed when the process exits
            break
        if not data:
            break
        chunks.append(data)
    proc.wait()
    os.close(leader)
    return b"".join(chunks).decode("utf-8", "replace")


def index_doc(memory_id: str, text: str, subject: str = "s0", status: str = "active", layer: str = "L1",
              kind: str = "event", tags: tuple[str, ...] = (), created: int | None = None):
    """A memory as the index and the vectors read it, whose embedded text is ``text``
    (``tags``: tag terms; ``created``: epoch seconds)."""
    from datetime import UTC, datetime

    from memrepo.retrieval.fields import IndexDoc
    when = None if created is None else datetime.fromtimestamp(created, UTC).isoformat()
    return IndexDoc(id=memory_id, path=f"memories/{layer}/{memory_id}.md", layer=layer, kind=kind, subject=subject,
                    fact=None, status=status, summary="", body=text, tags=tuple(tags), created=when, updated=None)


def stored(text_hash: str, subject: str, status: str, layer: str, kind: str, tags: tuple[str, ...] = (),
           created: int | None = None):
    """What the vectors keep of a memory beside its vector."""
    from memrepo.retrieval.filters import Facets
    from memrepo.retrieval.vector_snapshot import Stored
    return Stored(text_hash, Facets(subject, status, layer, kind, tuple(tags), created))
