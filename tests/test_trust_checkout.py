"""What a plain ``git pull`` or ``git clone`` writes without asking memrepo: symlinks, and files
under ``.memrepo/`` over the git-ignored derived state (git overwrites ignored files on
checkout). memrepo reads none of it: every command refuses until it is removed, naming the path
and the commit; the readers themselves never follow a link. Files are created with the user's
umask."""
from __future__ import annotations

import os
import stat
import subprocess
from pathlib import Path

import pytest
from conftest import cli, git

from memrepo import api
from memrepo.agents import evidence
from memrepo.review import writes


@pytest.fixture
def shared(tmp_path):
    """A bare 'team' remote holding a vault, the victim's clone of it and an attacker's clone."""
    server = tmp_path / "server.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(server)], check=True)
    origin = api.init(tmp_path / "origin")
    writes.add(origin, {"id": "mem_seed", "subject": "user", "kind": "preference", "summary": "short answers"}, "")
    git(origin.root, "remote", "add", "origin", str(server))
    git(origin.root, "push", "-q", "origin", "main")
    origin.close()
    victim = tmp_path / "victim"
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(server), str(victim))
    git(tmp_path, "clone", "-q", str(server), str(attacker))
    assert cli(victim, "hooks", "install").returncode == 0
    assert cli(victim, "search", "short answers").returncode == 0   # the victim has an index already
    return victim, attacker, tmp_path


def push(attacker: Path, message: str = "teammate notes") -> str:
    git(attacker, "commit", "-q", "--no-verify", "-m", message)
    git(attacker, "push", "-q", "origin", "main")
    return git(attacker, "rev-parse", "HEAD").strip()


class Evil:
    """Pickled, it runs a shell command when loaded (what a hostile index file carries)."""

    def __init__(self, command: str):
        self.command = command

    def __reduce__(self):
        return (os.system, (self.command,))


def plant_index(attacker: Path, marker: Path) -> str:
    """Commit a search index whose Whoosh table of contents is a pickle that runs code."""
    from whoosh.filedb.filestore import FileStorage
    from whoosh.index import TOC

    from memrepo.retrieval.fields import schema
    from memrepo.retrieval.index import FORMAT
    parent = git(attacker, "rev-parse", "HEAD").strip()
    gen = attacker / ".memrepo" / "index" / "gen-000099"
    gen.mkdir(parents=True)
    TOC(schema(), Evil(f"touch {marker}"), 1).write(FileStorage(str(gen)), "MAIN")
    (attacker / ".memrepo" / "index" / "gen-000099.json").write_text(f'{{"format": {FORMAT!r}, "commit": "{parent}"}}'
                                                                     .replace("'", '"'))
    (attacker / ".memrepo" / "index" / "CURRENT").write_text("gen-000099")
    git(attacker, "add", "-f", ".memrepo/index")
    return push(attacker, "speed up search for everyone")


def test_a_pulled_search_index_never_runs_code(shared):
    victim, attacker, tmp = shared
    marker = tmp / "PWNED"
    bad = plant_index(attacker, marker)
    git(victim, "pull", "-q", "--no-rebase", "origin", "main")
    for args in (["search", "answers"], ["recall", "answers"], ["list"], ["context"],
                 ["add", "--summary", "a note", "--kind", "event"]):
        proc = cli(victim, *args)
        assert not marker.exists(), (args, "the planted pickle ran")
        assert proc.returncode == 5, (args, proc.stdout, proc.stderr)
        assert ".memrepo/index/CURRENT" in proc.stderr and bad[:12] in proc.stderr and "Traceback" not in proc.stderr
    proc = cli(victim, "validate")
    assert proc.returncode == 1 and ".memrepo/index/gen-000099/_MAIN_1.toc" in proc.stdout + proc.stderr
    # the way out the message names: remove the files in a commit; everything works again
    git(victim, "rm", "-q", "-r", ".memrepo/index/CURRENT", ".memrepo/index/gen-000099", ".memrepo/index/gen-000099.json")
    git(victim, "commit", "-q", "-m", "remove planted index")
    proc = cli(victim, "search", "answers")
    assert proc.returncode == 0 and "mem_seed" in proc.stdout and not marker.exists()


def test_a_pulled_symlink_is_refused_by_every_command(shared):
    victim, attacker, tmp = shared
    secret = tmp / "secret.txt"
    secret.write_text("TOP-SECRET-CONTENT\n")
    sha = "a" * 64
    (attacker / "evidence").mkdir()
    (attacker / "evidence" / f"{sha}.txt").symlink_to(secret)
    (attacker / "prompts" / "flush.en.md").unlink()
    (attacker / "prompts" / "flush.en.md").symlink_to(secret)
    git(attacker, "add", "-A")
    bad = push(attacker)
    git(victim, "pull", "-q", "--no-rebase", "origin", "main")
    assert (victim / "evidence" / f"{sha}.txt").is_symlink()   # git wrote it: memrepo must not follow it
    for args in (["evidence", "aaaaaaaa"], ["flush", "--prompt"], ["list"], ["search", "answers"]):
        proc = cli(victim, *args)
        assert proc.returncode == 5, (args, proc.stdout, proc.stderr)
        assert "TOP-SECRET-CONTENT" not in proc.stdout + proc.stderr
        assert bad[:12] in proc.stderr and "symlink" in proc.stderr


def test_a_clone_of_a_hostile_vault_is_refused_before_anything_is_read(shared, tmp_path):
    _victim, attacker, tmp = shared
    marker = tmp / "PWNED"
    plant_index(attacker, marker)
    clone = tmp_path / "fresh"
    git(tmp_path, "clone", "-q", str(tmp / "server.git"), str(clone))
    proc = cli(clone, "hooks", "install")
    assert proc.returncode == 0, proc.stderr      # installing the hooks reads nothing of the tree
    for args in (["search", "answers"], ["list"], ["show", "mem_seed"]):
        proc = cli(clone, *args)
        assert proc.returncode == 5 and ".memrepo/index/CURRENT" in proc.stderr, (args, proc.stderr)
    assert not marker.exists()


# ------------------------------------------------------------ readers never follow a link

def test_evidence_is_never_read_through_a_symlink(vault, tmp_path):
    """A symlink made in the working tree (not committed) is refused by the reader itself."""
    secret = tmp_path / "secret.txt"
    secret.write_text("private key material\n")
    saved, _ = evidence.save_evidence(vault, ["a tool result worth keeping"])
    target = vault.root / saved[0].path
    target.unlink()
    target.symlink_to(secret)
    proc = cli(vault.root, "evidence", saved[0].pointer)
    assert proc.returncode == 5 and "symlink" in proc.stderr and "private key" not in proc.stdout
    (vault.root / "evidence").rename(vault.root / "evidence.real")
    (vault.root / "evidence").symlink_to(tmp_path)
    (tmp_path / f"{'b' * 64}.txt").write_text("private key material\n")
    proc = cli(vault.root, "evidence", "bbbbbbbb")
    assert proc.returncode in (3, 5) and "private key" not in proc.stdout


def test_a_symlinked_memory_file_is_never_read(vault, tmp_path):
    r = writes.add(vault, {"subject": "user", "kind": "preference", "summary": "tea not coffee"}, "")
    outside = tmp_path / "outside.md"
    outside.write_bytes((vault.root / r.path).read_bytes().replace(b"tea not coffee", b"LEAKED TEXT"))
    (vault.root / r.path).unlink()
    (vault.root / r.path).symlink_to(outside)
    for args in (["context"], ["recall", "tea"], ["search", "tea"], ["show", r.id]):
        proc = cli(vault.root, *args)
        assert "LEAKED" not in proc.stdout, (args, proc.stdout)
        assert "Traceback" not in proc.stderr


# ------------------------------------------------------------ the user's umask

def modes(root: Path) -> dict[str, int]:
    return {p.relative_to(root).as_posix(): stat.S_IMODE(p.lstat().st_mode)
            for p in [root, *root.rglob("*")] if ".git" not in p.relative_to(root).parts}


@pytest.mark.parametrize("umask", [0o077, 0o027, 0o022])
def test_files_and_folders_follow_the_umask(tmp_path, umask):
    root = tmp_path / "v"
    proc = subprocess.run(["sh", "-c", f"umask {umask:03o} && \"$0\" -m memrepo init \"$1\" && "
                           f"\"$0\" -m memrepo --vault \"$1\" add --layer L1 --summary 'L1 note' && "
                           f"\"$0\" -m memrepo --vault \"$1\" search note >/dev/null",
                           os.environ.get("PYTHON", __import__("sys").executable), str(root)],
                          capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    found = modes(root)
    assert found, found
    for rel, mode in found.items():
        path = root / rel
        if path.is_symlink():
            continue
        assert mode & umask == 0, (rel, oct(mode), f"umask {umask:03o}")  # no bit the umask takes away
    memory = next((root / "memories" / "L1").rglob("*.md"))
    assert stat.S_IMODE(memory.stat().st_mode) == 0o666 & ~umask
    for layer in ("L2", "L3", "L4"):
        assert stat.S_IMODE((root / "memories" / layer).stat().st_mode) == 0o777 & ~umask
    hook = root / ".git" / "hooks" / "pre-commit"
    assert stat.S_IMODE(hook.stat().st_mode) == 0o777 & ~umask
