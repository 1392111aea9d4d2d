"""Everything memrepo asks of git, through the ``git`` command line (owner of git).

Why the CLI and not GitPython's object model: measured on this project's target machines,
GitPython's ``index.commit`` silently lost 22-30 % of commits when two processes wrote at once
and cost 150 ms a commit at 5,000 files, while the git CLI under a file lock lost none. So
memrepo runs git itself, and builds commits with ``git fast-import``: one process writes the
blobs, the trees along the changed paths only and the commit, without reading or rewriting the
whole index. The branch then moves with ``git update-ref NEW OLD`` (compare-and-swap), so a
commit can never silently replace another. Nothing here rewrites history or force-pushes.

This is the only module that runs git (tests/test_architecture.py holds to it): every other
module calls a named operation below. The values it returns and the parsing of git's output
are :mod:`memrepo.store.git_records`; what git's own files say without a git process (has
HEAD moved? was the index rewritten?) is :mod:`memrepo.store.git_stamps`. Operations on many items (``read_blobs``, ``commits``,
``diff_trees``, ``object_ids``, ``refs``, ``log_raw``) take them all at once and start one git
process, so no command's git cost grows with the number of memories or proposals it touches.
"""
from __future__ import annotations

import os
import subprocess
import time
from functools import lru_cache
from pathlib import Path
from typing import Iterable, Mapping

from memrepo.errors import GitError
from memrepo.store import faults
from memrepo.store.git_locks import SCRATCH_PREFIX as SCRATCH_PREFIX
from memrepo.store.git_locks import new_scratch_ref as new_scratch_ref
from memrepo.store.git_records import (
    LOG_FORMAT,
    Change,
    LogEntry,
    RawChange,
    RefChange,
    TreeEntry,
    commit_parts,
    data_block,
    parse_batch,
    parse_log,
    parse_log_raw,
    parse_raw_diff,
    quote_path,
    ref_error,
)
from memrepo.store.git_records import NEW_COMMIT as NEW_COMMIT
from memrepo.store.git_records import ZERO as ZERO
from memrepo.store.git_stamps import index_stamp as index_stamp
from memrepo.store.git_stamps import ref_stamp

# Variables git sets for hooks; inherited blindly they would point our commands elsewhere.
_GIT_ENV_STRIP = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_PREFIX", "GIT_OBJECT_DIRECTORY",
                  "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_COMMON_DIR", "GIT_EDITOR", "GIT_REFLOG_ACTION")
FALLBACK_NAME = "memrepo"
FALLBACK_EMAIL = "memrepo@localhost"


def clean_env(extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k not in _GIT_ENV_STRIP}
    env.setdefault("LC_ALL", "C.UTF-8")
    env["GIT_TERMINAL_PROMPT"] = "0"
    if extra:
        env.update(extra)
    return env


def _run(root: Path, *args: str, input: bytes | None = None, check: bool = True,
        env: Mapping[str, str] | None = None) -> str:
    """Run ``git -C root args``; return stdout as text; raise GitError with git's words."""
    proc = subprocess.run(["git", "-C", str(root), *args], input=input, capture_output=True,
                          env=clean_env(env))
    if check and proc.returncode != 0:
        msg = proc.stderr.decode("utf-8", "replace").strip() or proc.stdout.decode("utf-8", "replace").strip()
        raise GitError(f"git {' '.join(args[:2])} failed: {msg}")
    return proc.stdout.decode("utf-8", "surrogateescape")


def _run_bytes(root: Path, *args: str, check: bool = True) -> bytes:
    proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, env=clean_env())
    if check and proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


def commit_all(root: Path, message: str) -> None:
    """Stage everything in the work tree and commit it (no hooks run), as the git identity
    (or memrepo's fallback): for a repository memrepo has just created."""
    name, email = identity(root)
    _run(root, "add", "-A")
    _run(root, "commit", "-q", "--no-verify", "-m", message,
        env={"GIT_AUTHOR_NAME": name, "GIT_AUTHOR_EMAIL": email, "GIT_COMMITTER_NAME": name, "GIT_COMMITTER_EMAIL": email})


def config_with_scope(root: Path, key: str) -> tuple[str, str] | None:
    """(scope, value) of a git config key as git resolves it (``local``, ``global``, ...), or None."""
    out = _run(root, "config", "--show-scope", "--get", key, check=False).strip()
    if not out:
        return None
    scope, _, value = out.partition("\t")
    return scope, value


def init(root: Path, *, branch: str = "main") -> None:
    _run(root, "init", "-q", "-b", branch)
    # Keep add/commit flat as the vault grows: a split index writes only what changed.
    for key, value in (("core.splitIndex", "true"), ("core.untrackedCache", "true"),
                       ("index.version", "4"), ("core.quotePath", "false")):
        _run(root, "config", key, value)


def clone_shared(source: Path, target: Path) -> None:
    """A throw-away repository at ``target`` that borrows ``source``'s objects (``git clone
    --shared --no-checkout``): nothing is written into ``source``, and its commits, including
    those made after the clone, can be checked out in ``target``."""
    _run(target.parent, "clone", "--quiet", "--shared", "--no-checkout", str(source), str(target))


def checkout_detached(root: Path, commit: str) -> None:
    """Make ``root``'s working tree and index hold ``commit`` (detached HEAD), with no hook run:
    for the throw-away repositories of :func:`clone_shared` only."""
    _run(root, "-c", "core.hooksPath=/dev/null", "checkout", "--quiet", "--force", "--detach", commit)


def rev_parse(root: Path, ref: str) -> str | None:
    out = _run(root, "rev-parse", "--verify", "-q", f"{ref}^{{commit}}", check=False).strip()
    return out or None


def head_ref(root: Path) -> str | None:
    """The symbolic ref HEAD points at (``refs/heads/main``), or None when detached."""
    out = _run(root, "symbolic-ref", "-q", "HEAD", check=False).strip()
    return out or None


_OWN_FILES = ("memrepo.store.lock", "memrepo-journal.json", "memrepo-nightly.lock", "MERGE_HEAD", "index.lock", "HEAD.lock",
              "memrepo-trusted", "memrepo-policy.json")


@lru_cache(maxsize=256)
def git_path(root: Path, name: str) -> Path:
    """``git rev-parse --git-path NAME`` (cached: where git keeps a file never moves).

    memrepo's own files in an ordinary ``.git`` directory need no git call; hooks and
    anything in a linked worktree or with ``core.hooksPath`` are asked of git.
    """
    if name in _OWN_FILES and (root / ".git").is_dir():
        return root / ".git" / name
    out = _run(root, "rev-parse", "--git-path", name).strip()
    p = Path(out)
    return p if p.is_absolute() else root / p


@lru_cache(maxsize=64)
def identity(root: Path) -> tuple[str, str]:
    """The committer identity git would use, or memrepo's fallback when none is configured.

    Cached for the life of the process: one write asks for it several times. The same git call
    tells whether commits are to be signed (:func:`signs_commits`)."""
    out = _run(root, "config", "--get-regexp", r"^(user\.(name|email)|commit\.gpgsign)$", check=False)
    found = dict(line.split(" ", 1) for line in out.splitlines() if " " in line)
    _SIGNS[root] = found.get("commit.gpgsign", "").strip().lower() in ("true", "yes", "on", "1")
    name = found.get("user.name", "").strip() or os.environ.get("GIT_COMMITTER_NAME") or FALLBACK_NAME
    email = found.get("user.email", "").strip() or os.environ.get("GIT_COMMITTER_EMAIL") or FALLBACK_EMAIL
    if name == FALLBACK_NAME or email == FALLBACK_EMAIL:
        import warnings

        from memrepo.errors import IdentityWarning
        warnings.warn(f"no git identity is set: commits are recorded as {name} <{email}>; set yours with "
                      f"'git config --global user.name \"Your Name\"' and 'git config --global user.email you@example.com'",
                      IdentityWarning, stacklevel=2)
    return name, email


def ls_tree(root: Path, rev: str, paths: Iterable[str] = ()) -> list[TreeEntry]:
    """Every file (recursively) of ``rev`` under ``paths``."""
    out = _run(root, "ls-tree", "-r", "-z", "--full-tree", rev, "--", *paths)
    entries = []
    for rec in filter(None, out.split("\0")):
        meta, path = rec.split("\t", 1)
        mode, _type, sha = meta.split()
        entries.append(TreeEntry(mode, sha, path))
    return entries


def diff_tree(root: Path, old: str | None, new: str, paths: Iterable[str] = ()) -> list[Change]:
    """Files changed between two commits (``old`` None: everything in ``new``)."""
    if old is None:
        return [Change("A", e.path, e.sha, e.mode) for e in ls_tree(root, new, paths)]
    out = _run(root, "diff-tree", "-r", "-z", "--no-renames", "--no-commit-id", old, new, "--", *paths)
    return parse_raw_diff(out)


def diff_text(root: Path, old: str | None, new: str, paths: Iterable[str] = ()) -> str:
    """The unified diff of two commits (``old`` None: the empty tree): a .gitattributes hides nothing."""
    empty = _run(root, "hash-object", "-t", "tree", "--stdin", input=b"").strip() if old is None else old
    return _run_bytes(root, "diff", "--no-color", "--no-ext-diff", "--no-textconv", "--text", "--no-renames", empty, new,
                      "--", *paths).decode("utf-8", errors="replace")


def diff_index(root: Path, rev: str, *, cached: bool, paths: Iterable[str] = (),
               index_file: str | None = None) -> list[Change]:
    """Staged (``cached``) or working-tree changes against ``rev``."""
    args = ["diff-index", "-r", "-z", "--no-renames"] + (["--cached"] if cached else []) + [rev, "--", *paths]
    env = {"GIT_INDEX_FILE": index_file} if index_file else None
    return parse_raw_diff(_run(root, *args, env=env))


class BlobReader:
    """Reads many blobs through one ``git cat-file --batch`` process."""

    def __init__(self, root: Path):
        self._proc = subprocess.Popen(["git", "-C", str(root), "cat-file", "--batch"],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, env=clean_env())

    def read(self, sha: str) -> bytes:
        assert self._proc.stdin and self._proc.stdout
        self._proc.stdin.write(sha.encode() + b"\n")
        self._proc.stdin.flush()
        header = self._proc.stdout.readline().split()
        if len(header) < 3 or header[1] == b"missing":
            raise GitError(f"object {sha} is missing from the repository")
        data = self._proc.stdout.read(int(header[2]))
        self._proc.stdout.read(1)
        return data

    def close(self) -> None:
        if self._proc.stdin:
            self._proc.stdin.close()
        self._proc.wait()

    def __enter__(self) -> BlobReader:
        return self

    def __exit__(self, *exc) -> None:
        self.close()


def read_blob(root: Path, rev_path: str) -> bytes:
    """Bytes of ``REV:path`` or of a blob id."""
    return _run_bytes(root, "cat-file", "blob", rev_path)


def write_commit(root: Path, *, parent: str | None, changes: Mapping[str, bytes | None], message: str,
                 scratch: str, merge: Iterable[str] = (), author: tuple[str, str] | None = None) -> str:
    """Write one commit with ``changes`` (path -> new bytes, None deletes) on top of ``parent``.

    Returns the commit id. The commit sits under the ``scratch`` ref until :func:`update_refs`
    moves the real branch and drops the scratch ref in one transaction. fast-import itself is
    never pointed at a real branch: given ``from``, it would move the branch even where that
    drops commits.
    """
    stamp = f"{int(time.time())} +0000"
    committer = "{} <{}> {}".format(*identity(root), stamp).encode()
    who = "{} <{}> {}".format(*author, stamp).encode() if author else committer
    stream = [b"commit " + scratch.encode() + b"\n", b"mark :1\n",
              b"author " + who + b"\n", b"committer " + committer + b"\n", data_block(message.encode())]
    if parent:
        stream.append(f"from {parent}\n".encode())
    stream.extend(f"merge {sha}\n".encode() for sha in merge)
    for path, payload in sorted(changes.items()):
        quoted = quote_path(path)
        if payload is None:
            stream.append(b"D " + quoted + b"\n")
        else:
            stream.append(b"M 100644 inline " + quoted + b"\n" + data_block(payload))
    stream.append(b"\nget-mark :1\ndone\n")
    out = _run(root, "fast-import", "--quiet", "--done", input=b"".join(stream))
    sha = out.strip().splitlines()[-1]
    return _signed_copy(root, sha) if signs_commits(root) else sha


_SIGNS: dict[Path, bool] = {}  # filled by identity(), which asks git once per process


def signs_commits(root: Path) -> bool:
    """True when git signs every commit here (``commit.gpgSign``): memrepo's own are signed too."""
    identity(root)
    return _SIGNS.get(root, False)


def _signed_copy(root: Path, sha: str) -> str:
    """The same commit signed with the user's key (``commit-tree -S``: fast-import cannot sign)."""
    tree, parents, env, message = commit_parts(_run_bytes(root, "cat-file", "commit", sha))
    return _run(root, "commit-tree", "-S", tree, *[a for p in parents for a in ("-p", p)], input=message, env=env).strip()


def signatures(root: Path, shas: Iterable[str]) -> dict[str, str]:
    """commit -> git's signature check letter (``G`` good, ``N`` none, ``B`` bad, ...), in one call."""
    wanted = list(dict.fromkeys(shas))
    out = _run(root, "log", "--no-walk=unsorted", "--format=%H %G?", *wanted) if wanted else ""
    return dict(line.split(" ", 1) for line in out.splitlines() if " " in line)


def update_refs(root: Path, changes: Iterable[RefChange], *, reason: str, scratch: str | None = None) -> None:
    """Every ref change (and the scratch ref's deletion) in ONE ``git update-ref --stdin``
    transaction: all of them happen or none. A compare-and-swap that finds a ref moved raises
    :class:`RefMoved`; a lock git cannot take raises :class:`GitLocked`. On failure the
    scratch ref is dropped on its own, so nothing is left behind."""
    changes = list(changes)
    commands = "".join(c.command() for c in changes)
    if scratch:
        commands += f"delete {scratch}\n"
    if faults.armed("commit-in-ref-transaction"):
        _die_inside_transaction(root, commands)
    try:
        _run(root, "update-ref", "-m", reason, "--stdin", input=commands.encode())
    except GitError as e:
        if scratch:
            _run(root, "update-ref", "-d", scratch, check=False)
        raise ref_error(e, changes) from None


def _die_inside_transaction(root: Path, commands: str) -> None:
    """The fault point where git holds the transaction's locks: kill git, then ourselves."""
    import signal
    proc = subprocess.Popen(["git", "-C", str(root), "update-ref", "--stdin"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, env=clean_env())
    assert proc.stdin and proc.stdout
    proc.stdin.write(("start\n" + commands + "prepare\n").encode())
    proc.stdin.flush()
    proc.stdout.readline()  # start: ok
    proc.stdout.readline()  # prepare: ok (the locks are held now)
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    faults.point("commit-in-ref-transaction")


@lru_cache(maxsize=64)
def common_dir(root: Path) -> Path:
    """Where refs live (the main repository's git directory, also from a linked worktree)."""
    if (root / ".git").is_dir():
        return root / ".git"
    out = Path(_run(root, "rev-parse", "--git-common-dir").strip())
    return out if out.is_absolute() else root / out


def update_index(root: Path, paths: Iterable[str], *, attempts: int = 50) -> None:
    """Make the index match the working tree for ``paths`` (added, changed or removed).

    Runs after the branch moved, so it must not give up because another git process (an
    editor's ``git status``) holds ``index.lock`` for a moment: it retries for about 5 s.
    """
    payload = "\0".join(paths).encode()
    if not payload:
        return
    for attempt in range(attempts):
        try:
            _run(root, "update-index", "--add", "--remove", "-z", "--stdin", input=payload + b"\0")
            return
        except GitError as e:
            if "index.lock" not in str(e) or attempt == attempts - 1:
                raise
            time.sleep(0.1)


def log(root: Path, rev: str, *, paths: Iterable[str] = (), extra: Iterable[str] = ()) -> list[LogEntry]:
    out = _run(root, "log", f"--format={LOG_FORMAT}", *extra, rev, "--", *paths)
    return list(parse_log(out))


def log_paths(root: Path, rev: str, paths: Iterable[str], *, line_regex: str | None = None) -> list[str]:
    """Paths under ``paths`` changed on ``rev``'s main line (first parents), one per change,
    newest first; with ``line_regex``, only changes that add or remove a matching line."""
    grep = [f"-G{line_regex}"] if line_regex else []
    out = _run(root, "log", rev, "--format=", "--name-only", "--no-renames", "--first-parent",
              "--diff-merges=first-parent", *grep, "--", *paths)
    return [p for p in out.splitlines() if p]


def log_raw(root: Path, rev: str, *, paths: Iterable[str], reverse: bool = False) -> list[tuple[LogEntry, list[RawChange]]]:
    """Main-line history (first parents, merges diffed against their first parent) of
    ``paths``, each commit with the blob ids before and after of every file it changed."""
    args = ["log", "--first-parent", "--diff-merges=first-parent", "--raw", "--no-renames", "--no-abbrev",
            "--format=\x1e" + LOG_FORMAT.replace("%x1e", "\x1d")] + (["--reverse"] if reverse else [])
    return parse_log_raw(_run(root, *args, rev, "--", *paths))


def status_porcelain(root: Path, paths: Iterable[str] = (), *, chunk: int = 2000, renames: bool = True) -> list[str]:
    """``git status`` records for ``paths`` (any number: asked in chunks, as argv is limited).

    Never takes ``index.lock`` (GIT_OPTIONAL_LOCKS=0): a reader must not make a concurrent
    writer fail on the lock. Without ``renames``, a rename is a deletion and an addition."""
    paths = list(paths)
    args = ["status", "--porcelain=v1", "-z", "--untracked-files=all", *([] if renames else ["--no-renames"]), "--"]
    batches = [paths[i:i + chunk] for i in range(0, len(paths), chunk)] or [[]]
    out = "".join(_run(root, *args, *batch, env={"GIT_OPTIONAL_LOCKS": "0"}) for batch in batches)
    return [r for r in out.split("\0") if r]


def exists(root: Path, rev_path: str) -> bool:
    """True when ``REV:path`` names an object."""
    return bool(_run(root, "rev-parse", "-q", "--verify", rev_path, check=False).strip())


def grep_files(root: Path, rev: str, pattern: str, paths: Iterable[str]) -> list[str]:
    """Paths (in ``rev``) of files under ``paths`` with a line matching the extended regex."""
    out = _run(root, "grep", "-l", "-z", "-E", "-e", pattern, rev, "--", *paths, check=False)
    return [p.split(":", 1)[1] for p in out.split("\0") if ":" in p]


def grep_fixed(root: Path, rev: str, text: str, paths: Iterable[str]) -> list[str]:
    """Paths (in ``rev``) of files under ``paths`` containing ``text`` as written (no regex:
    the fastest search git has)."""
    out = _run(root, "grep", "-l", "-z", "-F", "-e", text, rev, "--", *paths, check=False)
    return [p.split(":", 1)[1] for p in out.split("\0") if ":" in p]


def remotes(root: Path) -> list[str]:
    return _run(root, "remote").split()


def fetch(root: Path, remote: str, refspecs: Iterable[str]) -> None:
    """Fetch ``refspecs`` from ``remote`` (remote-tracking refs only move; nothing is pushed)."""
    _run(root, "fetch", "--quiet", "--no-tags", remote, *refspecs)


def push(root: Path, remote: str, refspecs: Iterable[str]) -> dict[str, str]:
    """Push without ever forcing; returns local ref -> git's per-ref result ('ok', 'up to date',
    'rejected: ...'). Raises GitError when the remote could not be reached at all."""
    proc = subprocess.run(["git", "-C", str(root), "push", "--porcelain", remote, *refspecs],
                          capture_output=True, env=clean_env())
    out = proc.stdout.decode("utf-8", "replace")
    results = {}
    for line in out.splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1:
            flag, refs, summary = parts[0], parts[1], parts[2]
            local = refs.split(":", 1)[0]
            results[local] = "rejected: " + summary if flag == "!" else ("up to date" if flag == "=" else "ok")
    if proc.returncode != 0 and not results:
        raise GitError(f"git push to {remote} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return results


def push_branch(root: Path, remote: str, branch: str) -> None:
    """Push ``branch`` to the branch of the same name on ``remote`` (never forced)."""
    _run(root, "push", "--quiet", remote, f"refs/heads/{branch}:refs/heads/{branch}")


def delete_remote_refs(root: Path, remote: str, expected: Mapping[str, str]) -> dict[str, str]:
    """Delete refs on ``remote`` (ref -> the commit it must still hold there): each deletion is
    a compare-and-delete (``--force-with-lease=ref:commit``, on that ref only), so a branch that
    moved on the remote since the last fetch is kept and reported 'rejected: ...'; nothing is
    ever overwritten. Returns ref -> 'ok' / 'rejected: ...'; GitError when unreachable."""
    if not expected:
        return {}
    leases = [f"--force-with-lease={ref}:{sha}" for ref, sha in expected.items()]
    proc = subprocess.run(["git", "-C", str(root), "push", "--porcelain", *leases, remote,
                           *(f":{ref}" for ref in expected)], capture_output=True, env=clean_env())
    results = {}
    for line in proc.stdout.decode("utf-8", "replace").splitlines():
        parts = line.split("\t")
        if len(parts) >= 3 and len(parts[0]) == 1:
            ref = parts[1].split(":", 1)[-1]
            results[ref] = "rejected: " + parts[2] if parts[0] == "!" else "ok"
    if proc.returncode != 0 and not results:
        raise GitError(f"git push to {remote} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return results


def merge_base(root: Path, a: str, b: str) -> str | None:
    return _run(root, "merge-base", a, b, check=False).strip() or None


def is_ancestor(root: Path, a: str, b: str) -> bool:
    """True when commit ``a`` is reachable from ``b`` (or is ``b``)."""
    proc = subprocess.run(["git", "-C", str(root), "merge-base", "--is-ancestor", a, b], capture_output=True, env=clean_env())
    return proc.returncode == 0


def ref_messages(root: Path, pattern: str, *, merged_into: str | None = None) -> dict[str, tuple[str, str]]:
    """ref -> (tip commit, its full message), for every ref matching ``pattern`` (one call);
    with ``merged_into``, only the refs whose tip that commit already contains."""
    merged = [f"--merged={merged_into}"] if merged_into else []
    out = _run(root, "for-each-ref", *merged, "--format=%(refname)%1f%(objectname)%1f%(contents)%1e", pattern)
    parts = (rec.strip("\n").split("\x1f", 2) for rec in out.split("\x1e"))
    return {p[0]: (p[1], p[2]) for p in parts if len(p) == 3}


def refs(root: Path, *patterns: str) -> dict[str, str]:
    """ref -> commit for every ref matching any of ``patterns`` (for-each-ref patterns), in one call."""
    out = _run(root, "for-each-ref", "--format=%(refname)%09%(objectname)", *patterns)
    return dict(line.split("\t", 1) for line in out.splitlines() if "\t" in line)


def commits(root: Path, shas: Iterable[str]) -> dict[str, LogEntry]:
    """commit id -> its log entry, for any number of commits in one ``git log --no-walk``."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    out = _run(root, "log", "--no-walk=unsorted", "--stdin", f"--format={LOG_FORMAT}",
              input=("\n".join(wanted) + "\n").encode())
    return {e.commit: e for e in parse_log(out)}


def diff_trees(root: Path, pairs: Iterable[tuple[str | None, str]],
               paths: Iterable[str] = ()) -> dict[tuple[str | None, str], list[Change]]:
    """(old, new) -> files changed from commit old to commit new, for many pairs in one
    ``git diff-tree --stdin`` (an ``old`` of None: everything in ``new``, one listing each)."""
    pairs, paths = list(dict.fromkeys(pairs)), list(paths)
    found: dict[tuple[str | None, str], list[Change]] = {
        (old, new): diff_tree(root, None, new, paths) for old, new in pairs if old is None}
    asked: list[tuple[str | None, str]] = [(old, new) for old, new in pairs if old is not None]
    if not asked:
        return found
    out = _run(root, "diff-tree", "--stdin", "--always", "-r", "-z", "--no-renames", "--", *paths,
              input="".join(f"{new} {old}\n" for old, new in asked).encode())
    parts, i, n = out.split("\0"), 0, -1
    current: list[Change] = []
    while i < len(parts):
        part = parts[i]
        if part.startswith(":") and i + 1 < len(parts):
            _old_mode, new_mode, _old_sha, new_sha, status = part[1:].split()
            current.append(Change(status[0], parts[i + 1], new_sha, new_mode))
            i += 2
            continue
        if part.strip():  # the header --always prints for every line read, in order
            n += 1
            current = found.setdefault(asked[n], [])
        i += 1
    return found


def new_commits(root: Path, new: str, old: str | None) -> list[tuple[str, tuple[str, ...]]]:
    """(commit, parents) of every commit reachable from ``new`` but not from ``old``, oldest first."""
    out = _run(root, "rev-list", "--parents", "--reverse", new, *(["--not", old] if old else []))
    return [(line.split()[0], tuple(line.split()[1:])) for line in out.splitlines() if line.strip()]


def object_ids(root: Path, names: Iterable[str]) -> dict[str, str | None]:
    """name (``REV:path``, a ref, ...) -> object id, None where it names nothing, all in one
    ``git cat-file --batch-check``."""
    wanted = list(dict.fromkeys(names))
    if not wanted:
        return {}
    out = _run(root, "cat-file", "--batch-check=%(objectname)", input=("\n".join(wanted) + "\n").encode())
    lines = out.split("\n")
    return {name: (line if len(line) == 40 and " " not in line else None) for name, line in zip(wanted, lines)}


def merge_commit_of(root: Path, commit: str, rev: str) -> str | None:
    """The first merge on ``rev``'s first-parent line that brought ``commit`` in."""
    out = _run(root, "rev-list", "--first-parent", "--merges", "--reverse", "--ancestry-path", f"{commit}..{rev}", check=False)
    return next(iter(out.split()), None)


def set_config(root: Path, key: str, value: str) -> None:
    _run(root, "config", key, value)


def add_config(root: Path, key: str, values: Iterable[str]) -> None:
    """Add to a multi-valued git config key (``remote.origin.fetch``) the values it lacks."""
    have = _run(root, "config", "--get-all", key, check=False).splitlines()
    for value in [v for v in values if v not in have]:
        _run(root, "config", "--add", key, value)


def read_blobs(root: Path, shas: Iterable[str]) -> dict[str, bytes]:
    """Many blobs in one ``git cat-file --batch`` call, fed and drained at once (no
    per-object round trip: a thousand blobs cost one process, not a thousand pipe turns)."""
    wanted = list(dict.fromkeys(shas))
    if not wanted:
        return {}
    return parse_batch(_run_bytes_input(root, ["cat-file", "--batch"], ("\n".join(wanted) + "\n").encode()), wanted)


def _run_bytes_input(root: Path, args: list[str], payload: bytes) -> bytes:
    proc = subprocess.run(["git", "-C", str(root), *args], input=payload, capture_output=True, env=clean_env())
    if proc.returncode != 0:
        raise GitError(f"git {' '.join(args[:2])} failed: {proc.stderr.decode('utf-8', 'replace').strip()}")
    return proc.stdout


_RESOLVED: dict[tuple[Path, str], tuple[tuple, str | None]] = {}


def resolve(root: Path, ref: str = "HEAD") -> str | None:
    """:func:`rev_parse` of ``ref``, answered without a git process while the ref's files are
    unchanged since this process last asked (see :func:`ref_stamp`). For long-lived processes
    (the MCP server, batch runs) that look at HEAD before every search."""
    stamp = ref_stamp(root, ref)  # read before git answers: a move in between only costs a re-ask
    key = (root, ref)
    if stamp is not None:
        known = _RESOLVED.get(key)
        if known is not None and known[0] == stamp:
            return known[1]
    sha = rev_parse(root, ref)
    if stamp is not None:
        if len(_RESOLVED) >= 256:
            _RESOLVED.clear()
        _RESOLVED[key] = (stamp, sha)
    return sha


def worktree_changes(root: Path, paths: Iterable[str]) -> list[str]:
    """Paths under ``paths`` that differ from HEAD in the working tree (edited, staged, new,
    deleted), without taking ``index.lock``: a plain 'git status' refreshes the index and would
    make a concurrent writer fail on the lock."""
    return [rec[3:] for rec in status_porcelain(root, paths, renames=False) if len(rec) > 3]
