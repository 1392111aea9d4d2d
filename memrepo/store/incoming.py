"""What arrives through git is untrusted until checked: the paths a commit may bring.

A teammate with push access to a shared remote can write any tree object, including names
git's own checkout refuses: a ``.git`` folder (its ``config`` can run a command on the next
git call, its hooks switch the review gate off), ``..`` (a file beside the vault), a symlink
(a later write through it lands outside), a submodule, or files under ``.memrepo/`` that a
vault never commits (the derived catalog, agents' private vaults). memrepo moves its checkout
itself, so it checks every path before anything is written: :func:`path_problem` for one
path, :func:`check_range` for what a fetched commit would bring, naming the commit that
brought each bad path. The same rules guard every write (:meth:`Vault.commit`).

A plain ``git pull`` or ``git clone`` does not ask memrepo: git's own checkout refuses ``.git``
and ``..`` but writes symlinks and tracked files under ``.memrepo/`` (over the git-ignored
derived state: the search index keeps its table of contents as a Python pickle, so a planted
one would run code on the next search). So before any derived state is read, the commit the
checkout holds is checked too (:func:`check_checkout`), from the last commit found clean
(a stamp inside ``.git``, where no checkout can write) to the new one.
"""
from __future__ import annotations

import unicodedata
from pathlib import Path
from typing import Iterable

from memrepo import config
from memrepo.errors import Problem, UnsafeChange
from memrepo.store import git

# Under .memrepo/ only the configuration is versioned; index/, state/, private/ and evidence/
# are local (git-ignored) and must never arrive from elsewhere.
VERSIONED_STATE = frozenset({".memrepo/config.toml"})
SYMLINK, GITLINK, TREE = "120000", "160000", "040000"
# File systems take names of up to 255 bytes; memrepo writes each file through a temporary name
# beside it, 14 bytes longer (files.atomic_write). A longer name could be committed but never
# checked out: the branch would move and the checkout fail.
MAX_NAME_BYTES = 240
# Code points HFS+ ignores when comparing names (git's is_hfs_dotgit): ".g\u200cit" is ".git" there.
_HFS_IGNORED = frozenset([0x200C, 0x200D, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x206A, 0x2070), 0xFEFF])


def _folded(name: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFC", name) if ord(c) not in _HFS_IGNORED).casefold()


def is_dot_git(name: str) -> bool:
    """True for ``.git`` and every name a filesystem git supports takes for it: any case, HFS+
    ignorable code points, NTFS trailing dots and spaces, an NTFS stream (``.git::$...``) and
    the 8.3 short name ``git~1``."""
    folded = _folded(name)
    stem = folded.split(":", 1)[0].rstrip(". ")
    return stem in (".git", "git~1")


def _component_problem(part: str) -> str | None:
    if part in ("", ".", ".."):
        return "an empty, '.' or '..' path component (it would lead out of its folder or the vault)"
    if "\\" in part:
        return "a backslash in a name (a folder separator on Windows)"
    if is_dot_git(part):
        return "a '.git' component (git's own folder: its config and hooks would run code)"
    if _folded(part) == ".gitmodules":
        return "a submodule declaration (a vault holds no submodules)"
    if len(part.encode("utf-8", "surrogateescape")) > MAX_NAME_BYTES:
        return f"a name longer than {MAX_NAME_BYTES} bytes (no file system memrepo writes to takes it)"
    return None


def path_problem(path: str, mode: str = "100644") -> str | None:
    """Why memrepo never writes ``path`` (a tree path with git's file ``mode``), or None."""
    if path.startswith("/"):
        return "an absolute path"
    for part in path.split("/"):
        reason = _component_problem(part)
        if reason:
            return reason
    parts = path.split("/")
    if _folded(parts[0]) == ".memrepo" and path not in VERSIONED_STATE:  # .Memrepo/config.toml is the file on macOS
        return "a file under .memrepo/ other than config.toml (the index, state, private vaults and local evidence are never versioned)"
    if mode == SYMLINK:
        return "a symlink (a later write through it would land outside the vault)"
    if mode == GITLINK:
        return "a submodule (a vault holds no submodules)"
    return None


def check_paths(paths: Iterable[str], *, hint: str = "nothing was written") -> None:
    """Raise :class:`UnsafeChange` when any of ``paths`` is one memrepo never writes."""
    problems = [Problem(p, "path", reason) for p in paths if (reason := path_problem(p)) is not None]
    if problems:
        raise UnsafeChange(problems, hint)


def unsafe_changes(changes: Iterable[git.Change]) -> list[tuple[str, str]]:
    """(path, reason) of every change that adds or changes a path memrepo never writes, or a
    name the change makes both a file and a folder (a tree object may list a name twice)."""
    kept = [c for c in changes if c.status != "D"]
    found = [(c.path, reason) for c in kept if (reason := path_problem(c.path, c.mode))]
    folders = {c.path.rsplit("/", n)[0] for c in kept for n in range(1, c.path.count("/") + 1)}
    return found + [(c.path, "both a file and a folder in one tree (no checkout can hold both; git's own "
                             "refuses the tree)") for c in kept if c.path in folders]


def check_range(root: Path, old: str | None, new: str, *, what: str, pulled: bool = False) -> None:
    """Refuse ``new`` when it brings, compared with ``old``, any path memrepo never writes.

    The message names each bad path and the first commit (not reachable from ``old``) that
    brought it, so the person can find who sent it; nothing is changed.
    """
    bad = unsafe_changes(git.diff_tree(root, old, new))
    if not bad:
        return
    culprits = _first_commits(root, old, new, {path for path, _ in bad})
    problems = [Problem(path, "path", f"{reason}; brought by commit {culprits.get(path, new)[:12]}")
                for path, reason in sorted(bad)]
    if pulled:
        raise UnsafeChange(problems, f"{what} holds paths memrepo never reads or writes (a plain git pull or clone "
                                     "brought them: git does not check these); nothing was read. Remove them with "
                                     "'git rm -r PATH' and commit (or reset main to before that commit), then run "
                                     "the command again")
    raise UnsafeChange(problems, f"{what} refused whole: it holds paths memrepo never writes (git's own checkout "
                                 "refuses them too); nothing changed locally. Ask whoever pushed it to remove them "
                                 "(git rm on their side), then sync again")


# Keys that say what this clone is, not what the team decides: another value arriving from a
# remote would make a shared clone an agent's private vault (whose sync is refused for good) or
# send every write to another branch.
CLONE_KEYS = (("vault", "owner"), ("vault", "main_branch"))


def check_config(root: Path, old: str | None, new: str, *, what: str) -> None:
    """Refuse ``new`` when the config.toml it brings (changed since ``old``) would not load
    (every command would stop on it) or changes a :data:`CLONE_KEYS` key; nothing changes."""
    path = config.CONFIG_PATH
    ids = git.object_ids(root, [f"{new}:{path}", *([f"{old}:{path}"] if old else [])])
    after, before = ids[f"{new}:{path}"], ids.get(f"{old}:{path}")
    if after is None or after == before:
        return
    blobs = git.read_blobs(root, [b for b in (after, before) if b])
    data, problems, _notes = config.parse_bytes(blobs[after])
    if not problems:
        was = config.Config(config.parse_bytes(blobs[before])[0] if before else {})
        now = config.Config(data)
        problems = [Problem(path, f"{table}.{key}", f"{was.get(table, key)!r} -> {now.get(table, key)!r}: says what "
                                                    "this clone is, set on each clone, never by a sync")
                    for table, key in CLONE_KEYS if was.get(table, key) != now.get(table, key)]
    if problems:
        commit = next(iter(git.log(root, f"{old}..{new}" if old else new, paths=[path], extra=["-1"])), None)
        by = f"; brought by commit {commit.commit[:12]}" if commit else ""
        raise UnsafeChange([Problem(p.path, p.field, p.message + by) for p in problems],
                           f"{what} refused whole: its {path} would break this clone; nothing changed locally. "
                           "Ask whoever pushed it to fix the file, then sync again")


TRUST_STAMP = "memrepo-trusted"


def check_checkout(root: Path, commit: str) -> None:
    """Raise :class:`UnsafeChange` when ``commit`` (what the checkout holds) brought, since the
    last commit found clean here, a path memrepo never accepts; remember it as clean otherwise.
    Costs one small file read when nothing moved, one ``git diff-tree`` when something did,
    and one listing of the whole tree the first time (a fresh clone)."""
    stamp = git.git_path(root, TRUST_STAMP)
    try:
        known: str | None = stamp.read_text(encoding="ascii").strip() or None
    except (OSError, UnicodeDecodeError):
        known = None
    if known == commit:
        return
    if known is not None and not git.exists(root, f"{known}^{{commit}}"):
        known = None  # that commit is gone (a reset and gc): check the whole tree
    check_range(root, known, commit, what=f"the checked-out commit {commit[:12]}", pulled=True)
    remember_clean(root, commit)


def remember_clean(root: Path, commit: str) -> None:
    """Record ``commit`` as checked clean (memrepo's own commits are: every write is checked)."""
    try:
        git.git_path(root, TRUST_STAMP).write_text(commit + "\n", encoding="ascii")
    except OSError:
        pass  # only costs a check again next time


def _first_commits(root: Path, old: str | None, new: str, paths: set[str]) -> dict[str, str]:
    """path -> the oldest commit of ``new`` not in ``old`` whose change (against any parent) adds it."""
    found: dict[str, str] = {}
    history = git.new_commits(root, new, old)
    pairs = [(parent, commit) for commit, parents in history for parent in (parents or (None,))]
    diffs = git.diff_trees(root, pairs)
    for commit, parents in history:
        for parent in parents or (None,):
            for change in diffs.get((parent, commit), ()):
                if change.path in paths and change.status != "D":
                    found.setdefault(change.path, commit)
    return found
