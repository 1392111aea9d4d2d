"""Index sync: keeps the derived search index in step with git and the working tree.

Before every search the index catches up by itself: git says which memory files changed
between the commit the index reflects and HEAD (a memrepo write, a hand commit, a revert, a
merge or a checkout of another branch alike), plus uncommitted edits in the working tree
(:mod:`memrepo.retrieval.scan`); only those files are re-read. A missing or corrupt index is
rebuilt with a notice.
"""
from __future__ import annotations

import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from memrepo.errors import Busy, MemrepoError
from memrepo.model import MEMORY_ROOTS, is_memory_path
from memrepo.retrieval import scan
from memrepo.retrieval.warm import index as warm_index
from memrepo.retrieval.warm import stats
from memrepo.store import git
from memrepo.store.vault import Vault

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.fields import IndexDoc

REBUILD_CHANGED = 2500   # this many changed memory files, half the index or more: rebuilt instead of updated


@dataclass(frozen=True)
class SyncReport:
    rebuilt: bool
    updated: int
    deleted: int
    notice: str | None = None


def read_doc(path: str, data: bytes) -> IndexDoc | None:
    """The index document of one memory file, or None when the file cannot be read."""
    from memrepo.retrieval.fields import IndexDoc
    from memrepo.store.checks import reader_problem
    from memrepo.store.document import DocumentError, load_bytes
    try:
        parsed = load_bytes(data, path)
    except DocumentError:
        return None
    m = parsed.meta
    if m.get("id") != id_of(path) or reader_problem(path, m) is not None:
        # not a memory as it stands (validate: the id is the file name, the schema holds):
        # indexed under another id, it would outlive the file's next change, keyed by the name
        return None
    def tup(key):
        value = m.get(key) or ()
        return tuple(str(v) for v in value) if isinstance(value, list) else ()
    weight = m.get("weight")
    return IndexDoc(id=m["id"], path=path, layer=str(m.get("layer", "")), kind=str(m.get("kind", "")),
                    subject=str(m.get("subject", "")), fact=m.get("fact"), status=str(m.get("status", "")),
                    summary=str(m.get("summary", "")), body=parsed.body, tags=tup("tags"),
                    created=m.get("created"), updated=m.get("updated"), links=tup("links"),
                    weight=float(weight) if isinstance(weight, int | float) else None, scope=m.get("scope"))


def read_worktree(vault: Vault, path: str) -> IndexDoc | None:
    """The index document of a memory file as the working tree has it (None: gone, unreadable,
    or reached through a symlink anywhere on the way)."""
    from memrepo.store.files import LinkRefused, read_inside
    try:
        return read_doc(path, read_inside(vault.root, path))
    except (OSError, LinkRefused):
        return None


def read_all(vault: Vault) -> tuple[int, Iterable[IndexDoc]]:
    """(memory files in the working tree, their documents read one by one)."""
    paths = [p for p in vault.tree_paths() if is_memory_path(p)]
    return len(paths), (d for d in (read_worktree(vault, p) for p in paths) if d is not None)


def rebuild(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
            each: Callable[[IndexDoc], None] | None = None) -> int:
    """Rebuild the index from the working tree's memory files; ``each`` is given every
    document read (:func:`memrepo.retrieval.search.reindex` keeps what the vectors need of them)."""
    head = git.rev_parse(vault.root, "HEAD")
    total, docs = read_all(vault)
    if each is not None:
        docs = (each(d) or d for d in docs)
    count = with_index_errors(lambda: warm_index(vault).rebuild(
        docs, commit=head, progress=(lambda n: progress(n, total)) if progress else None))
    scan.save(vault, scan.look(vault) if head else scan.Scan(at=time.time()))
    return count


def sync(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
         each: Callable[[IndexDoc], None] | None = None) -> SyncReport:
    """Bring the index to HEAD plus uncommitted memory edits, reading only changed files.
    When it rebuilds, ``progress`` and ``each`` are :func:`rebuild`'s; when it updates,
    ``each`` is given every document it read (the vectors' catch-up need not read them again)."""
    try:
        return _sync(vault, progress, each)
    finally:
        scan.looks(vault).synced = True


def _sync(vault: Vault, progress=None, each=None) -> SyncReport:
    def rebuilt() -> int:
        return rebuild(vault, progress=progress, each=each)

    head = git.resolve(vault.root, "HEAD")
    vault.ensure_trusted(head)  # the index's files must not be ones a pull planted (see store/incoming.py)
    index = warm_index(vault)
    if not index.exists():
        notice = ("building the search index (first search in this vault)" if not vault.index_dir.exists()
                  else "search index of an older format: rebuilding it from the memory files" if index.outdated()
                  else "search index missing or unreadable: rebuilding it from the memory files")
        return SyncReport(True, rebuilt(), 0, notice)
    indexed = index.indexed_commit()
    changed: set[str] = set()
    if indexed != head:
        try:
            changed = {c.path for c in git.diff_tree(vault.root, indexed, head, MEMORY_ROOTS)} if head else set()
        except MemrepoError:  # the indexed commit is gone (e.g. a new clone): start over
            return SyncReport(True, rebuilt(), 0, "search index was for an unknown commit: rebuilt")
    last, looked = scan.catch_up(vault)
    # Files dirty at the last look are re-read when they may have changed back or again.
    todo = changed | (looked.paths | last.paths if looked else set())
    if not todo and indexed == head:
        return SyncReport(False, 0, 0)
    if len(todo) >= REBUILD_CHANGED and len(todo) * 2 >= _indexed_count(index):
        # a bulk import or a checkout of another history: building anew on every core is
        # faster than one writer updating (and reads at most twice the changed files)
        count = rebuilt()
        gone = [id_of(p) for p in todo if not (is_memory_path(p) and (vault.root / p).is_file())]
        _forget_deleted(vault, gone)
        return SyncReport(True, count, 0, f"{len(todo)} memory files changed: search index rebuilt")
    upserts, deletes = read_changed(vault, todo)
    for doc in upserts if each is not None else ():
        each(doc)
    with_index_errors(lambda: index.update(upserts=upserts, deletes=deletes, commit=head))
    _forget_deleted(vault, deletes)
    return SyncReport(False, len(upserts), len(deletes))


def read_changed(vault: Vault, paths: Iterable[str],
                 known: dict[str, IndexDoc] | None = None) -> tuple[list[IndexDoc], list[str]]:
    """(the documents of the changed memory files that are there, the ids of those gone): a
    memory moved from one file to another is an upsert, not a deletion. ``known``: documents
    already read (by path), not read again."""
    upserts, deletes = [], []
    known = known or {}
    for path in sorted(paths):
        doc = known[path] if path in known else read_worktree(vault, path) if is_memory_path(path) else None
        (upserts.append(doc) if doc else deletes.append(id_of(path)))
    live = {d.id for d in upserts}
    return upserts, [d for d in deletes if d not in live]


def id_of(path: str) -> str:
    """The memory id a memory file's name says."""
    return path.rsplit("/", 1)[-1][:-3]


def _forget_deleted(vault: Vault, ids: list[str]) -> None:
    """Forget the statistics of memories whose files are gone (not moved: the catalog knows those)."""
    if ids:
        forget(vault, [d for d in ids if vault.catalog().path_of(d) is None])


def _indexed_count(index) -> int:
    from memrepo.retrieval.index import IndexError_
    try:
        return index.doc_count()
    except IndexError_:   # unreadable: the update below says so
        return 0


def forget(vault: Vault, ids: Iterable[str]) -> None:
    """A deleted memory leaves every derived store (statistics; the index drops it on sync)."""
    ids = list(ids)
    if ids:
        s = stats(vault)
        for memory_id in ids:
            s.forget(memory_id)


def with_index_errors(fn):
    """``fn()`` with the index's own errors as :mod:`memrepo.errors` (busy: retry; corrupt: reindex)."""
    from memrepo.retrieval.index import IndexBusy, IndexCorrupt
    try:
        return fn()
    except IndexBusy as e:
        raise Busy(f"{e}; retry in a moment") from None
    except IndexCorrupt as e:
        raise MemrepoError(f"{e} ('memrepo reindex')") from None
