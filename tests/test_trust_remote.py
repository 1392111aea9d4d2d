"""What a hostile remote sends: a teammate with push access to the shared remote builds trees
git's own checkout would refuse (``.git`` entries, ``..``, symlinks, submodules, files under
``.memrepo/`` that are never committed) and waits for ``memrepo sync``. Nothing of it may reach
the checkout, ``.git/`` or main; the sync names the commit and the path; nothing is wedged."""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from conftest import cli, git

from memrepo import api
from memrepo.errors import UnsafeChange
from memrepo.store import incoming
from memrepo.store.vault import Vault
from memrepo.team import sync as team_sync


def make_server(tmp: Path) -> Path:
    server = tmp / "server.git"
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(server)], check=True)
    return server


@pytest.fixture
def team(tmp_path):
    """A victim's vault synced with a bare remote, and an attacker's plain clone of it."""
    server = make_server(tmp_path)
    victim = api.init(tmp_path / "victim")
    git(victim.root, "remote", "add", "origin", str(server))
    victim.close()
    assert cli(victim.root, "sync").returncode == 0
    attacker = tmp_path / "attacker"
    git(tmp_path, "clone", "-q", str(server), str(attacker))
    return victim.root, attacker, tmp_path


def _mktree(repo: Path, entries: list[tuple[str, str, str, str]]) -> str:
    """A tree object from (mode, type, sha, name) entries: git mktree takes any name."""
    text = "".join(f"{mode} {kind} {sha}\t{name}\n" for mode, kind, sha, name in entries)
    return subprocess.run(["git", "-C", str(repo), "mktree"], input=text, capture_output=True, text=True,
                          check=True).stdout.strip()


def _blob(repo: Path, data: bytes) -> str:
    return subprocess.run(["git", "-C", str(repo), "hash-object", "-w", "--stdin"], input=data, capture_output=True,
                          check=True).stdout.decode().strip()


def _tree_with(repo: Path, base_tree: str, path: str, sha: str, mode: str = "100644") -> str:
    """``base_tree`` with one more entry at ``path`` (components taken literally: '.git', '..')."""
    first, _, rest = path.partition("/")
    listing = subprocess.run(["git", "-C", str(repo), "ls-tree", "-z", base_tree], capture_output=True,
                             check=True).stdout.decode("utf-8", "surrogateescape")
    entries = []
    sub = None
    for rec in filter(None, listing.split("\0")):
        meta, name = rec.split("\t", 1)
        m, kind, s = meta.split()
        if name == first:
            sub = s if kind == "tree" else None
            continue
        entries.append((m, kind, s, name))
    if rest:
        inner = _tree_with(repo, sub or _mktree(repo, []), rest, sha, mode)
        entries.append(("040000", "tree", inner, first))
    else:
        kind = {"160000": "commit", "040000": "tree"}.get(mode, "blob")
        entries.append((mode, kind, sha, first))
    return _mktree(repo, entries)


def push_hostile(attacker: Path, path: str, data: bytes = b"attacker\n", *, mode: str = "100644",
                 message: str = "notes from a teammate") -> str:
    """Commit a tree holding ``path`` (literally) on top of the remote's main and push it."""
    git(attacker, "fetch", "-q", "origin")
    parent = git(attacker, "rev-parse", "origin/main").strip()
    tree = git(attacker, "rev-parse", f"{parent}^{{tree}}").strip()
    sha = parent if mode == "160000" else _blob(attacker, data)
    new_tree = _tree_with(attacker, tree, path, sha, mode)
    commit = git(attacker, "commit-tree", new_tree, "-p", parent, "-m", message).strip()
    git(attacker, "push", "-q", "origin", f"{commit}:refs/heads/main")
    return commit


FSMONITOR = '[core]\n\trepositoryformatversion = 0\n\tbare = false\n\tfsmonitor = "touch {marker}; false"\n'


def _ok_after(victim: Path) -> None:
    """Nothing wedged: reading, writing and recovering all still work."""
    for args in (["list"], ["recover"], ["validate"]):
        proc = cli(victim, *args)
        assert proc.returncode == 0, (args, proc.stdout, proc.stderr)
    proc = cli(victim, "add", "--subject", "user", "--kind", "preference", "--summary", "still works", "--json")
    assert proc.returncode == 0, proc.stderr
    assert not (victim / ".git" / "memrepo-journal.json").exists()


# ------------------------------------------------------------ case 1: .git written by sync

@pytest.mark.parametrize("diverged", [False, True], ids=["fast-forward", "merge"])
def test_a_remote_tree_with_git_config_never_reaches_dot_git(team, diverged):
    victim, attacker, tmp = team
    marker = tmp / "PWNED"
    config_before = (victim / ".git" / "config").read_bytes()
    head_before = git(victim, "rev-parse", "main").strip()
    if diverged:
        assert cli(victim, "add", "--subject", "user", "--kind", "preference", "--summary", "local").returncode == 0
        head_before = git(victim, "rev-parse", "main").strip()
    bad = push_hostile(attacker, ".git/config", FSMONITOR.format(marker=marker).encode())
    proc = cli(victim, "sync")
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert bad[:12] in proc.stderr and ".git/config" in proc.stderr
    assert (victim / ".git" / "config").read_bytes() == config_before
    assert git(victim, "rev-parse", "main").strip() == head_before
    assert not marker.exists()
    _ok_after(victim)
    assert not marker.exists()


def test_a_remote_pre_commit_hook_never_replaces_the_review_gate(team):
    victim, attacker, _tmp = team
    hook = victim / ".git" / "hooks" / "pre-commit"
    before = hook.read_bytes()
    push_hostile(attacker, ".git/hooks/pre-commit", b"#!/bin/sh\nexit 0\n", mode="100755")
    proc = cli(victim, "sync")
    assert proc.returncode == 5 and ".git/hooks/pre-commit" in proc.stderr
    assert hook.read_bytes() == before
    _ok_after(victim)


@pytest.mark.parametrize("path", [
    ".GIT/config", "memories/.git/config", "memories/L2/.Git/hooks/pre-commit", ".git./config", ".git /config",
    "git~1/config", ".g\u200cit/config", "memories/L1/.git",
])
def test_names_git_treats_as_dot_git_are_refused(team, path):
    victim, attacker, _tmp = team
    bad = push_hostile(attacker, path)
    proc = cli(victim, "sync", "--json")
    assert proc.returncode == 5, proc.stdout
    error = json.loads(proc.stdout)["error"]
    assert error["code"] == "invalid" and bad[:12] in error["message"]
    assert not os.path.lexists(victim / path)
    _ok_after(victim)


# ------------------------------------------------------------ case 2: .. written outside the vault

@pytest.mark.parametrize("path", ["../evil.txt", "memories/../../evil.txt", "memories/L2/../../../evil.txt"])
@pytest.mark.parametrize("diverged", [False, True], ids=["fast-forward", "merge"])
def test_a_dotdot_entry_never_writes_outside_the_vault(team, path, diverged):
    victim, attacker, tmp = team
    if diverged:
        assert cli(victim, "add", "--subject", "user", "--kind", "preference", "--summary", "local").returncode == 0
    head_before = git(victim, "rev-parse", "main").strip()
    bad = push_hostile(attacker, path)
    proc = cli(victim, "sync")
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert bad[:12] in proc.stderr and path in proc.stderr
    assert not (tmp / "evil.txt").exists() and not (victim / "evil.txt").exists()
    assert git(victim, "rev-parse", "main").strip() == head_before
    _ok_after(victim)


# ------------------------------------------------------------ symlinks, submodules, .memrepo/

@pytest.mark.parametrize("path,mode,data", [
    ("memories/L2/mem_link.md", "120000", b"/etc/passwd"),
    ("evidence", "120000", b".."),
    ("memories/L2/sub", "160000", b""),
    (".memrepo/state/catalog.sqlite", "100644", b"not a catalog"),
    (".memrepo/private/analyst/x.md", "100644", b"planted"),
    (".gitmodules", "100644", b'[submodule "x"]\n\tpath = x\n\turl = ../x\n'),
])
def test_links_submodules_and_unversioned_state_are_refused(team, path, mode, data):
    victim, attacker, _tmp = team
    bad = push_hostile(attacker, path, data, mode=mode)
    proc = cli(victim, "sync")
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert bad[:12] in proc.stderr and path in proc.stderr
    assert not (victim / path).exists() and not (victim / path).is_symlink()
    _ok_after(victim)


def test_a_clean_change_after_a_refused_one_is_refused_as_a_whole(team):
    """The incoming main is refused whole: a good memory on top of a bad commit does not land."""
    victim, attacker, _tmp = team
    bad = push_hostile(attacker, ".git/config", b"[core]\n")
    push_hostile(attacker, "notes.md", b"fine\n", message="a fine change")
    proc = cli(victim, "sync")
    assert proc.returncode == 5 and bad[:12] in proc.stderr
    assert not (victim / "notes.md").exists()


def test_the_library_refuses_before_anything_moves(team):
    victim, attacker, _tmp = team
    push_hostile(attacker, "memories/../../evil.txt")
    vault = Vault.find(explicit=victim)
    with pytest.raises(UnsafeChange) as caught:
        team_sync.sync(vault)
    assert caught.value.problems and caught.value.problems[0].path == "memories/../../evil.txt"
    vault.close()


def test_the_write_path_itself_refuses_unsafe_paths(vault):
    """Defence in depth: whatever computes a change, the commit never writes such a path."""
    for path in (".git/config", "../x", "memories/../../x", ".memrepo/state/a"):
        with pytest.raises(UnsafeChange):
            with vault.lock():
                vault.commit(files={path: b"x"}, message="no")
    assert not (vault.root.parent / "x").exists()


@pytest.mark.parametrize("path,ok", [
    ("memories/L2/mem_a.md", True), (".memrepo/config.toml", True), ("citations/mem_a.jsonl", True),
    (".gitignore", True), ("evidence/ab.txt", True), ("README.md", True),
    (".git", False), (".git/x", False), ("a/.GIT/x", False), (".git. . /x", False), ("GIT~1/x", False),
    (".gi\u200dt/x", False), (".g\ufeffit", False), ("..", False), ("a/../b", False), ("./a", False), ("/abs", False),
    ("a//b", False), ("a\\b", False), (".git::$INDEX_ALLOCATION/x", False), (".memrepo/index/x", False),
    (".Memrepo/state/x", False), ("a/" + "n" * 241, False), ("a/" + "n" * 240, True),
    ("a/" + "\u00e9" * 121, False), (".Memrepo/config.toml", False), (".MEMREPO/config.toml", False),
    (".memrepo\u200c/config.toml", False),
])
def test_path_rules(path, ok):
    assert (incoming.path_problem(path, "100644") is None) is ok


def test_modes():
    assert incoming.path_problem("memories/L2/a.md", "120000")
    assert incoming.path_problem("memories/L2/a", "160000")
    assert incoming.path_problem("memories/L2/a.md", "100755") is None


# ------------------------------------------------------------ trees the checkout could not take

def _push_commit(attacker: Path, tree: str, message: str) -> str:
    parent = git(attacker, "rev-parse", "origin/main").strip()
    commit = git(attacker, "commit-tree", tree, "-p", parent, "-m", message).strip()
    git(attacker, "push", "-q", "origin", f"{commit}:refs/heads/main")
    return commit


def test_a_folder_replaced_by_a_file_syncs(team):
    """A teammate's plain change (the folder notes/ becomes the file notes) reaches the checkout."""
    victim, attacker, _tmp = team
    (attacker / "notes").mkdir()
    (attacker / "notes" / "a.md").write_text("in a folder\n")
    git(attacker, "add", "-A")
    git(attacker, "commit", "-qm", "notes as a folder")
    git(attacker, "push", "-q", "origin", "main")
    assert cli(victim, "sync").returncode == 0
    git(attacker, "rm", "-rq", "notes")
    (attacker / "notes").write_text("now a file\n")
    git(attacker, "add", "-A")
    git(attacker, "commit", "-qm", "notes as a file")
    git(attacker, "push", "-q", "origin", "main")
    proc = cli(victim, "sync")
    assert proc.returncode == 0, proc.stderr
    assert (victim / "notes").read_text() == "now a file\n"
    assert git(victim, "status", "--porcelain") == ""
    _ok_after(victim)


@pytest.mark.parametrize("file_first", [True, False], ids=["file-then-folder", "folder-then-file"])
def test_a_name_that_is_both_a_file_and_a_folder_is_refused(team, file_first):
    """A tree object may list one name twice (git mktree does not check): as a file and as a
    folder. git's checkout fails on it; memrepo refuses it before main moves."""
    victim, attacker, _tmp = team
    git(attacker, "fetch", "-q", "origin")
    base = git(attacker, "rev-parse", "origin/main^{tree}").strip()
    blob = _blob(attacker, b"x\n")
    folder = _mktree(attacker, [("100644", "blob", blob, "b")])
    listing = [tuple(line.split(None, 3)) for line in git(attacker, "ls-tree", base).splitlines()]
    both = [("100644", "blob", blob, "notes"), ("040000", "tree", folder, "notes")]
    entries = "".join(f"{m} {k} {s}\t{n}\n" for m, k, s, n in [*listing, *(both if file_first else both[::-1])])
    tree = subprocess.run(["git", "-C", str(attacker), "mktree"], input=entries, capture_output=True, text=True,
                          check=True).stdout.strip()
    head_before = git(victim, "rev-parse", "main").strip()
    bad = _push_commit(attacker, tree, "notes twice")
    proc = cli(victim, "sync")
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert bad[:12] in proc.stderr and "notes" in proc.stderr
    assert git(victim, "rev-parse", "main").strip() == head_before
    _ok_after(victim)


def test_a_name_too_long_for_the_file_system_is_refused(team):
    victim, attacker, _tmp = team
    head_before = git(victim, "rev-parse", "main").strip()
    bad = push_hostile(attacker, "notes/" + "n" * 250)
    proc = cli(victim, "sync")
    assert proc.returncode == 5, (proc.stdout, proc.stderr)
    assert bad[:12] in proc.stderr
    assert git(victim, "rev-parse", "main").strip() == head_before
    _ok_after(victim)


def test_a_local_file_in_the_way_of_an_incoming_folder_refuses_the_sync_and_wedges_nothing(team):
    victim, attacker, _tmp = team
    (victim / "notes").write_text("mine, not committed\n")
    push_hostile(attacker, "notes/a.md")
    head_before = git(victim, "rev-parse", "main").strip()
    proc = cli(victim, "sync")
    assert proc.returncode == 4, (proc.stdout, proc.stderr)
    assert "notes" in proc.stderr
    assert git(victim, "rev-parse", "main").strip() == head_before
    assert (victim / "notes").read_text() == "mine, not committed\n"
    (victim / "notes").unlink()
    _ok_after(victim)
