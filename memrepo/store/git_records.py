"""git's records as memrepo's values, and git's words read: no git process runs here.

:mod:`memrepo.store.git` runs git and returns these: a tree entry, a changed file, a log entry
and the blob ids a commit changed, a ref change of a transaction; it parses git's output with
the functions below and writes a fast-import stream with their help.
"""
from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from memrepo.errors import GitError, GitLocked, MemrepoError, RefMoved

ZERO = "0" * 40
NEW_COMMIT = "@new-commit"


@dataclass(frozen=True)
class TreeEntry:
    mode: str
    sha: str
    path: str


@dataclass(frozen=True)
class Change:
    status: str          # A, M, D, T
    path: str
    sha: str             # new blob (zeros for a deletion)
    mode: str


def parse_raw_diff(out: str) -> list[Change]:
    parts = out.split("\0")
    changes = []
    i = 0
    while i + 1 < len(parts) and parts[i].startswith(":"):
        _old_mode, new_mode, _old_sha, new_sha, status = parts[i][1:].split()
        changes.append(Change(status[0], parts[i + 1], new_sha, new_mode))
        i += 2
    return changes


@dataclass(frozen=True)
class RefChange:
    """One ref of a transaction: ``new`` None deletes; ``old`` None means "must not exist"
    (for a deletion: whatever it holds). ``new`` may be :data:`NEW_COMMIT`, the commit
    the transaction is about to publish."""

    ref: str
    new: str | None
    old: str | None

    def resolved(self, sha: str) -> RefChange:
        return RefChange(self.ref, sha if self.new == NEW_COMMIT else self.new, self.old)

    def command(self) -> str:
        if self.new is None:
            return f"delete {self.ref}" + (f" {self.old}" if self.old else "") + "\n"
        return f"update {self.ref} {self.new} {self.old or ZERO}\n"


def ref_error(error: GitError, changes: list[RefChange]) -> MemrepoError:
    text = str(error)
    if "File exists" in text or ".lock" in text:
        lock = next((w.strip("'\".,:") for w in text.split() if ".lock" in w), "a lock file")
        return GitLocked(f"git's lock {lock} is taken: another git process is writing now, or one was killed; "
                         f"retry in a moment, and if no git is running, delete {lock} (nothing was written)")
    if "cannot lock ref" in text or "but expected" in text or "already exists" in text:
        moved = next((c.ref for c in changes if f"'{c.ref}'" in text), "a branch")
        name = moved.removeprefix("refs/heads/")
        return RefMoved(f"{name} moved while writing; retry (nothing was written)")
    return error


@dataclass(frozen=True)
class LogEntry:
    commit: str
    parents: tuple[str, ...]
    author: str
    date: str
    subject: str
    body: str


LOG_FORMAT = "%H%x1f%P%x1f%an <%ae>%x1f%aI%x1f%s%x1f%b%x1e"


def parse_log(out: str) -> Iterator[LogEntry]:
    for rec in out.split("\x1e"):
        rec = rec.strip("\n")
        if not rec:
            continue
        commit, parents, author, date, subject, body = rec.split("\x1f")
        yield LogEntry(commit, tuple(parents.split()), author, date, subject, body.strip())


@dataclass(frozen=True)
class RawChange:
    old_sha: str         # zeros when the file was added
    new_sha: str         # zeros when the file was deleted
    status: str
    path: str


def quote_path(path: str) -> bytes:
    if any(c in path for c in '"\\\n') or path.startswith(" "):
        return ('"' + path.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"').encode()
    return path.encode()


def data_block(payload: bytes) -> bytes:
    return b"data %d\n" % len(payload) + payload + b"\n"


def parse_log_raw(out: str) -> list[tuple[LogEntry, list[RawChange]]]:
    """``git log --raw`` with :data:`LOG_FORMAT`'s fields after a \\x1e and before a \\x1d: each
    commit with the blob ids before and after of every file it changed."""
    result = []
    for record in filter(None, out.split("\x1e")):
        head, _, raw = record.partition("\x1d")
        entry = next(parse_log(head + "\x1e"))
        changes = []
        for line in filter(None, raw.strip("\n").split("\n")):
            meta, path = line.split("\t", 1)
            _om, _nm, old_sha, new_sha, status = meta[1:].split()
            changes.append(RawChange(old_sha, new_sha, status[0], path))
        result.append((entry, changes))
    return result


def parse_batch(out: bytes, wanted: Sequence[str]) -> dict[str, bytes]:
    """``git cat-file --batch``'s answer to ``wanted`` (in order): object id -> bytes;
    :class:`GitError` for an object the repository does not have."""
    found, pos = {}, 0
    for sha in wanted:
        end = out.index(b"\n", pos)
        header = out[pos:end].split()
        if len(header) < 3 or header[1] == b"missing":
            raise GitError(f"object {sha} is missing from the repository")
        size = int(header[2])
        found[sha] = out[end + 1:end + 1 + size]
        pos = end + 1 + size + 1
    return found


def commit_parts(raw: bytes) -> tuple[str, list[str], dict[str, str], bytes]:
    """(tree, parents, the GIT_AUTHOR_* / GIT_COMMITTER_* variables that recreate its author and
    committer, message) of a commit object as ``git cat-file commit`` prints it."""
    head, _, message = raw.partition(b"\n\n")
    tree, parents, env = "", [], {}
    for line in head.decode("utf-8", "surrogateescape").splitlines():
        key, _, value = line.partition(" ")
        if key == "tree":
            tree = value
        elif key == "parent":
            parents.append(value)
        elif key in ("author", "committer"):
            name, _, rest = value.partition(" <")
            email, _, date = rest.partition("> ")
            env.update({f"GIT_{key.upper()}_NAME": name, f"GIT_{key.upper()}_EMAIL": email, f"GIT_{key.upper()}_DATE": date})
    return tree, parents, env, message
