"""The vault: finding it, creating it, and the one write path every change goes through.

Write order is file -> git -> derived state, under the vault lock: a crash can at worst leave
the derived catalog or index stale, and both catch up from git on their next use. Commits are
built with ``git fast-import`` onto the branch tip and the branch moves by compare-and-swap,
so the user's staged work is never swept into a memrepo commit and no commit is ever lost.
"""
from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, Iterator, List

from memrepo import config as config_mod
from memrepo.errors import Conflict, GitError, InvalidMemory, NotFound, RefMoved, UsageError, VaultExists, VaultNotFound
from memrepo.model import MEMORY_ROOTS, Memory, is_memory_path, is_valid_id
from memrepo.resources import resource
from memrepo.store import faults, git, git_locks, incoming, policy
from memrepo.store.files import atomic_write, copy_tree, refuse_blocked  # (callers import atomic_write from here too)
from memrepo.store.lock import locked

if TYPE_CHECKING:
    from memrepo.store.catalog import Catalog

MARKER = ".memrepo"
JOURNAL = "memrepo-journal.json"
STALE_LOCK_WINDOW = 60.0  # s after a killed write's journal in which its git locks were taken
ENV_VAULT = "MEMREPO_VAULT"


@dataclass(frozen=True)
class CommitResult:
    commit: str
    paths: tuple[str, ...]


def render_bytes(memory: Memory) -> bytes:
    from memrepo.store import document, schema
    return document.render(dict(memory.meta), memory.body, schema.field_order()).encode("utf-8")


def find_root(start: Path | None = None, explicit: str | os.PathLike | None = None) -> Path:
    """The vault for ``--vault``/``MEMREPO_VAULT``, else the nearest one at or above ``start``."""
    given = explicit or os.environ.get(ENV_VAULT)
    if given:
        root = Path(given).expanduser().resolve()
        if not (root / MARKER).is_dir():
            raise VaultNotFound(f"{root} is not a memrepo vault (no {MARKER}/ folder); create one with 'memrepo init {root}'")
        return root
    here = (start or Path.cwd()).resolve()
    for candidate in (here, *here.parents):
        if (candidate / MARKER).is_dir() and (candidate / ".git").exists():
            return candidate
    raise VaultNotFound(f"no memrepo vault at or above {here}; run 'memrepo init PATH', or pass --vault PATH / set {ENV_VAULT}")


class Vault:
    """A memory vault: a git work tree holding ``memories/``, ``archive/`` and ``.memrepo/``."""

    def __init__(self, root: Path):
        self.root = Path(root).resolve()
        self.state_dir = self.root / MARKER / "state"
        self.index_dir = self.root / MARKER / "index"
        self._catalog: Catalog | None = None
        self._in_lock = False
        self._synced_in_lock = False
        self._checked_head: str | None = None
        self._config: config_mod.Config | None = None
        self._trusted: str | None = None   # the last commit checked clean in this process
        # At most this many seconds of waiting for the lock (a caller that must answer a person
        # at once, as the web window does); None: the configured timeout alone.
        self.lock_wait: float | None = None

    # ---------------------------------------------------------- opening

    @classmethod
    def find(cls, start: Path | None = None, explicit: str | os.PathLike | None = None, *,
             recover: bool = True) -> Vault:
        """The vault (see :func:`find_root`); first finishes a write a killed process left,
        so no command ever reads or commits a checkout that lags behind main."""
        vault = cls(find_root(start, explicit))
        if recover:
            vault.recover_if_interrupted()
        return vault

    @classmethod
    def init(cls, path: str | os.PathLike) -> Vault:
        """Create a vault at ``path`` from the template: git repo on ``main``, one commit.

        The review gate's hooks are installed by :func:`memrepo.api.init`, which wraps this.
        """
        root = Path(path).expanduser().resolve()
        _refuse_occupied(root)
        root.mkdir(parents=True, exist_ok=True)
        copy_tree(resource("template-vault"), root)
        git.init(root)
        git.commit_all(root, "memrepo: create vault")
        return cls(root)

    def refresh(self) -> None:
        """Forget the configuration read so far: a process that keeps the vault open between
        calls (the background server) reads it afresh, with its warnings, on each call."""
        self._config = None

    @property
    def config(self) -> config_mod.Config:
        """The configuration in force: ``config.toml`` as written, except that a change lowering
        the review policy ([risk], [arbitration]) counts only once a person accepted it
        (:mod:`memrepo.store.policy`; ``raw_config`` is the file as written)."""
        if self._config is None:
            raw = self.raw_config()
            main_ref = f"refs/heads/{raw.get('vault', 'main_branch', 'main')}"
            path = self.root / config_mod.CONFIG_PATH
            data = path.read_bytes() if path.is_file() and not path.is_symlink() else None
            self._config = policy.in_force(self.root, main_ref, git.resolve(self.root, main_ref), raw, data)
        return self._config

    def raw_config(self) -> config_mod.Config:
        """``.memrepo/config.toml`` as written in the working tree (checked, with its warnings)."""
        return config_mod.load(self.root)

    @property
    def main_branch(self) -> str:
        return str(self.config.get("vault", "main_branch", "main"))

    @property
    def owner(self) -> str | None:
        """The agent whose private vault this is (``[vault] owner``); None for a shared vault."""
        owner = self.config.get("vault", "owner")
        return str(owner) if owner else None

    @property
    def main_ref(self) -> str:
        return f"refs/heads/{self.main_branch}"

    def head(self) -> str | None:
        """The tip of the main branch (no git process while its ref files are unchanged)."""
        return git.resolve(self.root, self.main_ref)

    def ensure_trusted(self, commit: str | None = None) -> None:
        """Refuse (UnsafeChange) to go on when ``commit`` (default: main) holds paths memrepo
        never accepts, as a plain ``git pull`` or ``git clone`` may bring (a symlink, files under
        ``.memrepo/`` over the derived state): called before any derived state is read."""
        commit = commit or self.head()
        if commit is None or commit == self._trusted:
            return
        incoming.check_checkout(self.root, commit)
        self._trusted = commit

    def catalog(self, *, sync: bool = True):
        """The derived catalog, caught up with the main branch."""
        if sync and not (self._in_lock and self._synced_in_lock):
            self.ensure_trusted()
        if self._catalog is None:
            from memrepo.store.catalog import Catalog
            self._catalog = Catalog(self.root, self.state_dir / "catalog.sqlite")
        if sync and not (self._in_lock and self._synced_in_lock):
            self._catalog.sync(self.head())
            self._synced_in_lock = self._in_lock
        return self._catalog

    def close(self) -> None:
        if self._catalog is not None:
            self._catalog.close()
            self._catalog = None

    def __enter__(self) -> Vault:
        return self

    def __exit__(self, *exc) -> None:
        self.close()

    @contextmanager
    def lock(self, *, reentrant: bool = False) -> Iterator[None]:
        """The vault's write lock; on entry, finishes a write a killed writer left.

        With ``reentrant``, a caller already holding it just carries on."""
        if reentrant and self._in_lock:
            yield
            return
        timeout = float(os.environ.get("MEMREPO_LOCK_TIMEOUT") or self.config.get("vault", "lock_timeout", 30))
        if self.lock_wait is not None:
            timeout = min(timeout, self.lock_wait)
        with locked(git.git_path(self.root, "memrepo.store.lock"), timeout=timeout, what=f"vault {self.root}"):
            self.recover()
            # Under the lock only memrepo moves main (and its own commits update the catalog),
            # so the catalog is brought up to date once per locked operation, not per lookup.
            self._synced_in_lock = False
            self._checked_head = None
            self._in_lock = True
            try:
                yield
            finally:
                self._in_lock = False
                self._checked_head = None

    # A write moves the branch first, then updates the working tree and index. The journal,
    # written before any git object, names the write's scratch ref, the lock files git will
    # take for it and the paths of the checkout it changes. It is removed when the write is
    # complete, so finding one means a memrepo process was killed mid-write: the next one
    # drops that write's scratch ref and stale git locks (only those it recorded, never a
    # lock of a person's git) and makes those checkout paths match the branch.
    def _journal_path(self) -> Path:
        return git.git_path(self.root, JOURNAL)

    def interrupted(self) -> bool:
        """True when a killed memrepo write left work for :meth:`recover` to finish."""
        return self._journal_path().exists()

    def recover(self) -> bool:
        """Finish a write a killed process left (caller holds the lock); True when there was one."""
        path = self._journal_path()
        if not path.exists():
            return False
        try:
            journal = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(journal, dict):
                raise ValueError
        except (OSError, ValueError):
            journal = {}
        _remove_stale_locks(journal.get("locks") or [], float(journal.get("time") or 0))
        scratch = journal.get("scratch")
        if isinstance(scratch, str) and scratch.startswith(git.SCRATCH_PREFIX):
            git.update_refs(self.root, [git.RefChange(scratch, None, None)], reason="memrepo: recover")
        # Only paths a write may touch: a journal naming anything else is not memrepo's.
        ref, paths = journal.get("ref"), [p for p in journal.get("paths") or []
                                          if isinstance(p, str) and incoming.path_problem(p) is None]
        if paths and ref and git.head_ref(self.root) == ref and git.rev_parse(self.root, ref):
            present = {e.path: e.sha for e in git.ls_tree(self.root, ref, paths)}
            with git.BlobReader(self.root) as reader:
                changes = {p: (reader.read(present[p]) if p in present else None) for p in paths}
            self._update_checkout(changes)
            for p in paths:
                for stray in (self.root / p).parent.glob(f".{Path(p).name}.*.tmp"):
                    stray.unlink(missing_ok=True)
        path.unlink(missing_ok=True)
        return True

    def recover_if_interrupted(self) -> bool:
        """Take the lock and finish a killed write, when one is pending (one stat otherwise)."""
        if not self.interrupted():
            return False
        with self.lock():
            return True

    # ---------------------------------------------------------- reading

    def get(self, memory_id: str, *, rev: str | None = None) -> Memory:
        """The memory with this id on the main branch (or at ``rev``)."""
        if not is_valid_id(memory_id):
            raise UsageError(f"{memory_id!r} is not a valid memory id (letters, digits, '_', '.', '-')")
        if rev is None:
            path = self.catalog().path_of(memory_id)
            rev = self.main_ref
        else:
            path = self.find_path(memory_id, rev)
        if path is None:
            broken = [p for p in self.catalog().errors() if p.path.rsplit("/", 1)[-1] == f"{memory_id}.md"]
            if broken:
                raise InvalidMemory(broken, f"{memory_id} exists but cannot be read; fix the file ('memrepo validate')")
            raise NotFound(self.whereabouts(memory_id)
                           or f"no memory {memory_id!r} in {self.root}; 'memrepo list' shows what exists")
        return self.read_at(rev, path)

    def whereabouts(self, memory_id: str) -> str | None:
        """Where a memory that is not on main is: pending in a proposal, or removed from main by a
        revert or rollback (with the command that shows more). None when it never existed.
        Only asked on the not-found path, so its git calls cost nothing on the way of a write."""
        name = f"/{memory_id}.md"
        main = self.main_ref
        for ref in git.refs(self.root, "refs/heads/proposal/"):
            if any(("/" + c.path).endswith(name) and c.status != "D" for c in git.diff_tree(self.root, main, ref)):
                pid = ref.removeprefix("refs/heads/proposal/")
                return f"{memory_id} is not on {self.main_branch}: it is pending in proposal {pid}: memrepo review {pid}"
        glob = f":(glob)**/{memory_id}.md"
        for entry, changes in git.log_raw(self.root, main, paths=[glob]):
            gone = [c for c in changes if ("/" + c.path).endswith(name) and c.status == "D"]
            if gone:
                from memrepo.store import document
                try:
                    meta = document.load_bytes(git.read_blob(self.root, gone[0].old_sha), gone[0].path).meta
                except document.DocumentError:  # an unreadable old version still has a place in history
                    meta = {}
                commit = entry.commit[:12]
                see = (f"memrepo history {meta['subject']} {meta['fact']} (or memrepo history {memory_id})"
                       if meta.get("subject") and meta.get("fact") else f"memrepo history {memory_id} or git show {commit}")
                return f"{memory_id} is not on {self.main_branch}: it was reverted in {commit}: see {see}"
        return None

    def find_path(self, memory_id: str, rev: str) -> str | None:
        """Where ``rev`` holds this memory: main's path when it is there too (one git call),
        else a listing of the whole tree."""
        hint = self.catalog().path_of(memory_id)
        if hint and git.exists(self.root, f"{rev}:{hint}"):
            return hint
        entries = git.ls_tree(self.root, rev, MEMORY_ROOTS)
        return next((e.path for e in entries if e.path.rsplit("/", 1)[-1] == f"{memory_id}.md"), None)

    def read_at(self, rev: str, path: str) -> Memory:
        """The memory file ``path`` at ``rev``; InvalidMemory naming the field when it cannot be
        read or breaks the schema (what a hand commit or a pull may have put there)."""
        data = git.read_blob(self.root, f"{rev}:{path}")
        from memrepo.store.checks import check_bytes, reader_problem
        memory, problems = check_bytes(path, data)
        if memory is None:
            raise InvalidMemory(problems)
        problem = reader_problem(path, dict(memory.meta))
        if problem is not None:
            raise InvalidMemory([problem], "the file on main breaks the schema; fix it ('memrepo validate' lists every problem)")
        return memory

    def warn_skipped(self) -> list:
        """Warn (:class:`SkippedMemory`, one per file) about the memory files on main that readers
        skip; returns their problems. A reader calls it so a broken file is never silently absent."""
        import warnings

        from memrepo.errors import SkippedMemory
        problems = self.catalog().errors()
        for p in problems:
            warnings.warn(SkippedMemory(f"{p} (skipped; fix the file: 'memrepo validate' lists every problem)"),
                          stacklevel=2)
        return problems

    def list(self, **filters: str | None) -> List[dict]:
        """Rows of memories on main matching every given filter; a layer, kind, status or
        source that is not one of the schema's values is a UsageError (not an empty list)."""
        from memrepo.model import CHOICES, check_choice
        for name in CHOICES:
            check_choice(name, filters.get(name))
        rows = self.catalog().query(**filters)
        self.warn_skipped()
        return rows

    def history(self, memory_id: str) -> List[git.LogEntry]:
        """Every commit on main that touched this memory's file, newest first."""
        self.get(memory_id)  # NotFound / invalid id first, with a clear message
        return git.log(self.root, self.main_ref, paths=[f":(glob)**/{memory_id}.md"])

    # ---------------------------------------------------------- writing

    def tree_paths(self) -> List[str]:
        """Every file under memories/ and archive/ in the working tree (links not followed)."""
        found = []
        for top in MEMORY_ROOTS:
            for dirpath, dirnames, filenames in os.walk(self.root / top):
                rel_dir = Path(dirpath).relative_to(self.root).as_posix()
                for name in filenames + [d for d in dirnames if (Path(dirpath) / d).is_symlink()]:
                    if not name.startswith("."):
                        found.append(f"{rel_dir}/{name}")
        return sorted(found)

    def check_new(self, memories: List[Memory], *, deleted: Iterable = (), view=None) -> None:
        """Raise InvalidMemory unless these memories can be written as one change."""
        from memrepo.store.checks import Overlay, Row, check_memory, check_rows, text_problems
        problems = []
        for memory in memories:   # text that cannot be written as UTF-8 is named, not a traceback
            problems += text_problems(memory) or check_memory(memory, text=render_bytes(memory).decode("utf-8"))
        rows = [Row.of(m) for m in memories]
        deleted = list(deleted)
        overlay = Overlay(view if view is not None else self.catalog(), rows, [r.path for r in deleted])
        problems += check_rows(rows, overlay, deleted=deleted)
        if problems:
            raise InvalidMemory(sorted(set(problems)), "nothing was written")

    def commit(self, *, writes: Iterable[Memory] = (), deletes: Iterable[str] = (), message: str,
               branch: str | None = None, ref: str | None = None, parent: str | None = None,
               merge: Iterable[str] = (), expect: str | None = None,
               also: Iterable[git.RefChange] = (), reason: str | None = None,
               files: dict[str, bytes | None] | None = None, parsed: Iterable[Memory] = (),
               adopt: Iterable[str] = (), agent: str | None = None) -> CommitResult:
        """Commit files onto ``branch`` (or the full ``ref``) as one write transaction (caller
        holds the lock): journal, commit object, then ``ref`` (compare-and-swap against its
        old tip; ``expect`` guards that tip too) and every ``also`` ref in ONE ref transaction,
        then the checkout when ``ref`` is checked out.

        ``files`` are other paths as raw bytes (None deletes): citation records, a merged
        remote's files; the catalog then catches up from git instead of from ``writes``, unless
        ``parsed`` holds the parsed memory of every memory file in ``files``. ``adopt`` names
        paths whose uncommitted working-tree content is what ``files`` commits (not refused as dirty).
        ``agent``: the commit's author is that agent (with the person's email: they run it);
        the committer stays the person.
        """
        writes, deletes = list(writes), list(deletes)
        ref = ref or f"refs/heads/{branch or self.main_branch}"
        synced = self._in_lock and self._synced_in_lock and ref == self.main_ref and self._catalog is not None
        # Under the lock the catalog already knows main's tip (it was caught up once and follows
        # every memrepo commit); if anything else moved main meanwhile, the CAS below refuses.
        old = self._catalog.commit if synced and self._catalog is not None else git.rev_parse(self.root, ref)
        if expect is not None and old != expect:
            raise RefMoved(f"{ref.removeprefix('refs/heads/')} moved from {expect[:12]} to {(old or 'nothing')[:12]} "
                           "while preparing the change; retry (nothing was written)")
        checked_out = (self._checked_head if self._in_lock and self._checked_head else git.head_ref(self.root)) == ref
        changes: dict[str, bytes | None] = {p: None for p in deletes}
        changes.update(files or {})
        changes.update({m.path: render_bytes(m) for m in writes})
        incoming.check_paths(changes)
        if checked_out:
            self._refuse_links(list(changes))
            adopted = set(adopt)
            self._refuse_dirty([p for p in changes if p not in adopted])
            refuse_blocked(self.root, changes)
            git_locks.wait_unlocked(git.git_path(self.root, "index.lock"))
        also = list(also)
        moved = [ref] + [c.ref for c in also]
        scratch = git.new_scratch_ref()
        self._write_journal({
            "pid": os.getpid(), "time": time.time(), "ref": ref, "old": old, "scratch": scratch,
            "paths": list(changes) if checked_out else [],
            "locks": self._lock_files(moved + [scratch], deleting=True, index=checked_out)})
        faults.point("commit-before-objects")
        author = (agent, git.identity(self.root)[1]) if agent else None
        sha = git.write_commit(self.root, parent=parent or old, changes=changes, message=message,
                               merge=merge, scratch=scratch, author=author)
        faults.point("commit-after-objects")
        try:
            git.update_refs(self.root, [git.RefChange(ref, sha, old)] + [c.resolved(sha) for c in also],
                            scratch=scratch, reason=reason or f"memrepo: {message.splitlines()[0]}")
        except BaseException:
            self._journal_path().unlink(missing_ok=True)  # nothing moved: nothing to finish
            raise
        faults.point("commit-after-refs-moved")
        if ref == self.main_ref and old == self._trusted:  # checked above, path by path
            incoming.remember_clean(self.root, sha)
            self._trusted = sha
        if ref == self.main_ref and config_mod.CONFIG_PATH not in changes:
            policy.carry_forward(self.root, old, sha)  # the policy in force did not change
        if checked_out and not self._checkout_follows(sha, changes):
            return CommitResult(sha, tuple(sorted(changes)))  # committed: the next command brings the checkout
        faults.point("commit-after-checkout")
        self._journal_path().unlink(missing_ok=True)
        if ref == self.main_ref and self._catalog is not None:
            parsed = list(parsed)
            known = {m.path for m in parsed}
            raw = [p for p, data in (files or {}).items() if data is not None and is_memory_path(p) and p not in known]
            if raw:
                self._catalog.sync(sha)
            else:
                gone = [p for p, data in (files or {}).items() if data is None and is_memory_path(p)]
                self._catalog.record(writes + parsed, deletes + gone, old, sha)
        return CommitResult(sha, tuple(sorted(changes)))

    def fast_forward(self, new: str) -> CommitResult:
        """Move main forward to ``new``, a descendant of its tip (caller holds the lock), and
        bring the checkout along, journaled like :meth:`commit` so a crash is finished by recovery."""
        ref = self.main_ref
        old = git.rev_parse(self.root, ref)
        incoming.check_range(self.root, old, new, what=f"moving {self.main_branch} to {new[:12]}")
        diff = git.diff_tree(self.root, old, new)
        checked_out = git.head_ref(self.root) == ref
        if checked_out:
            self._refuse_links([c.path for c in diff])
            self._refuse_dirty([c.path for c in diff])
        blobs = git.read_blobs(self.root, [c.sha for c in diff if c.status != "D"])
        changes: dict[str, bytes | None] = {c.path: None if c.status == "D" else blobs[c.sha] for c in diff}
        if checked_out:
            refuse_blocked(self.root, changes)
            git_locks.wait_unlocked(git.git_path(self.root, "index.lock"))
        self._write_journal({
            "pid": os.getpid(), "time": time.time(), "ref": ref, "old": old, "scratch": None,
            "paths": list(changes) if checked_out else [],
            "locks": self._lock_files([ref], deleting=False, index=checked_out)})
        try:
            git.update_refs(self.root, [git.RefChange(ref, new, old)], reason="memrepo: sync fast-forward")
        except BaseException:
            self._journal_path().unlink(missing_ok=True)
            raise
        if old == self._trusted:  # check_range above
            incoming.remember_clean(self.root, new)
            self._trusted = new
        if checked_out:
            self._update_checkout(changes)
        self._journal_path().unlink(missing_ok=True)
        self._config = None
        if self._catalog is not None:
            self._catalog.sync(new)
        return CommitResult(new, tuple(sorted(changes)))

    def _checkout_follows(self, sha: str, changes: dict[str, bytes | None]) -> bool:
        """Bring the checkout to a commit that is already on its branch; False, with a warning,
        when git's index stays taken (a person's git holds ``index.lock``): the write stands and
        says so, and the journal is kept, so the next memrepo command finishes the checkout
        (the pre-commit hook refuses a commit meanwhile). A write that was committed never
        reports "failed"."""
        try:
            self._update_checkout(changes)
            return True
        except (GitError, OSError) as e:
            import warnings

            from memrepo.errors import CheckoutBehind
            warnings.warn(CheckoutBehind(
                f"committed {sha[:12]}, but the checkout could not follow yet ({e}); the next memrepo command "
                "(or 'memrepo recover') brings it along once git's index.lock is released"), stacklevel=3)
            return False

    def _lock_files(self, refs: List[str], *, deleting: bool, index: bool) -> List[str]:
        both = (git.git_path(self.root, "HEAD.lock"), git.git_path(self.root, "index.lock")) if index else None
        return git_locks.lock_files(git.common_dir(self.root), refs, deleting=deleting, head_and_index=both)

    def _write_journal(self, journal: dict) -> None:
        path = self._journal_path()
        with open(path, "w", encoding="utf-8") as fh:  # one small file, read only after a crash
            fh.write(json.dumps(journal))

    def _refuse_links(self, paths: List[str]) -> None:
        """No folder on the way to a written file may be a symlink: it would lead out of the vault."""
        seen: set[str] = set()
        for path in paths:
            parts = path.split("/")
            for i in range(1, len(parts) + 1):
                rel = "/".join(parts[:i])
                if rel in seen:
                    continue
                seen.add(rel)
                if (self.root / rel).is_symlink():
                    raise Conflict(f"{rel} is a symlink; memrepo never writes through links (the file would land "
                                   f"outside the vault): replace it with a real folder or file (nothing was written)")

    def _refuse_dirty(self, paths: List[str]) -> None:
        # A path that exists nowhere in the working tree cannot hold uncommitted edits (a new
        # memory): skip asking git, the common case of every add.
        paths = [p for p in paths if os.path.lexists(self.root / p)]
        if not paths:
            return
        dirty = git.status_porcelain(self.root, paths)
        if dirty:
            names = ", ".join(sorted({d[3:] for d in dirty}))
            raise Conflict(f"uncommitted changes in {names}; commit or discard them first (nothing was written)")

    def _update_checkout(self, changes: dict[str, bytes | None]) -> None:
        # deletions first: a folder a change replaces by a file is gone before the file is written
        for path in [p for p, payload in changes.items() if payload is None]:
            target = self.root / path
            target.unlink(missing_ok=True)
            _prune_empty_dirs(target.parent, self.root)
        for path, payload in changes.items():
            if payload is not None:
                atomic_write(self.root / path, payload)
        faults.point("commit-mid-checkout")
        git.update_index(self.root, sorted(changes, key=lambda p: changes[p] is not None))

    def require_main_checkout(self) -> None:
        """Writes go to main; refuse a detached HEAD or another branch checked out."""
        head = git.head_ref(self.root)
        if self._in_lock:
            self._checked_head = head  # commit() under this lock need not ask again
        if head is None:
            raise Conflict(f"HEAD is detached in {self.root}; run 'git switch {self.main_branch}' first")
        if head != self.main_ref:
            raise Conflict(f"{head.removeprefix('refs/heads/')} is checked out; memrepo writes to {self.main_branch}: run 'git switch {self.main_branch}' first")


def recover(vault: Vault) -> bool:
    """Finish a write a killed memrepo process left; True when there was one."""
    return vault.recover_if_interrupted()


def _remove_stale_locks(locks: list, since: float) -> None:
    """Remove the git lock files a killed memrepo write recorded, when they date from that write.

    A lock made before the write, or well after it, belongs to someone else's git and stays.
    """
    for name in locks:
        if not isinstance(name, str) or not name.endswith(".lock"):
            continue
        try:
            made = os.stat(name).st_mtime
        except OSError:
            continue
        if since - 2 <= made <= since + STALE_LOCK_WINDOW:
            Path(name).unlink(missing_ok=True)


def _prune_empty_dirs(folder: Path, root: Path) -> None:
    while folder != root and folder.is_dir() and not any(folder.iterdir()):
        folder.rmdir()
        folder = folder.parent


def _refuse_occupied(root: Path) -> None:
    if (root / MARKER).exists():
        raise VaultExists(f"{root} already holds a memrepo vault; use it, or pick another path")
    if root.exists() and not root.is_dir():
        raise VaultExists(f"{root} is a file; pick a directory path")
    if root.is_dir() and any(root.iterdir()):
        raise VaultExists(f"{root} is not empty and is not a vault; pick an empty or new directory")
