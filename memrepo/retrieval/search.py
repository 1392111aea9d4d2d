"""Search service: keeps the derived index in step with git, then asks it.

Before every search the index catches up by itself: git says which memory files changed
between the commit the index reflects and HEAD (a memrepo write, a hand commit, a revert, a
merge or a checkout of another branch alike), plus uncommitted edits in the working tree;
only those files are re-read. A missing or corrupt index is rebuilt with a notice.

The memory vectors of the hybrid ranking (:mod:`memrepo.retrieval.vectors`) catch up the same
way, from the commit they reflect, when a search needs them: changed files are re-read and only
texts whose content hash is new are encoded. A first build of a large vault runs in a
background process (``python -m memrepo.retrieval.vectors_build``) while searches answer on
keywords alone, saying ``"semantic": "building"``.
"""
from __future__ import annotations

import json
import os
import time
import weakref
from dataclasses import asdict, dataclass, replace
from pathlib import Path
from typing import Any, Callable, Iterable

from memrepo import model
from memrepo.errors import Busy, InvalidData, MemrepoError, Problem, UsageError
from memrepo.model import MEMORY_ROOTS, is_memory_path
from memrepo.store import git
from memrepo.store.vault import Vault

REBUILD_CHANGED = 2500   # this many changed memory files, half the index or more: rebuilt instead of updated
INLINE_BUILD_MAX = 1000  # a first vector build or catch-up of up to this many memories runs inside the search
MODEL_RETRY_S = 600      # a model that failed to load in a build is not tried again by searches for this long
MODEL_FAILED = "model-failed.json"   # beside the vectors: why and when
SEMANTIC_ENV = "MEMREPO_SEMANTIC"  # "0"/"1": overrides [search] semantic for one process

ADVANCED_WORD_CHARS = 1000
QUERY_FILTERS = ("subject", "layer", "kind", "tag", "since", "limit", "deep", "history", "advanced", "intent")
DIRTY_FILE = "dirty.json"


@dataclass(frozen=True)
class SyncReport:
    rebuilt: bool
    updated: int
    deleted: int
    notice: str | None = None


def _index(vault: Vault):
    return _warm(vault).index


def stats(vault: Vault):
    from memrepo.retrieval.stats import Stats
    vault.state_dir.mkdir(parents=True, exist_ok=True)
    return Stats(vault.state_dir / "stats.sqlite")


class _Warm:
    """What a process keeps per open vault between searches (the MCP server, batch runs,
    benchmarks): the index object with its open searcher, the statistics connection and the
    last look at the working tree. Each is checked for staleness on every use."""

    def __init__(self, vault: Vault):
        from memrepo.retrieval.index import MemoryIndex
        self.stats = stats(vault)
        self.index = MemoryIndex(vault.index_dir, stats=self.stats)
        self.scan_stamp: tuple | None = None  # the stat of the scan file when it was read
        self.scan = _Scan()
        self.stats_file: int | None = None    # the statistics file's inode after the last search
        self.watch = None                      # a FolderWatch on the memory folders (a large vault, searched again)
        self.synced = False                    # a search has run here before
        self.watched_look = False              # the last look at the working tree began under ``watch``
        self.unwatchable: tuple[str, ...] = ()  # folders a watch could not be set up for

    def live_stats(self, vault: Vault):
        """The statistics, reopened when their file was removed or replaced meanwhile."""
        if self.stats_file is not None and _inode(self.stats.path) != self.stats_file:
            self.stats.close()
            self.stats = self.index.stats = stats(vault)
        return self.stats


def _inode(path: Path) -> int | None:
    try:
        return path.stat().st_ino
    except OSError:
        return None


_WARM: weakref.WeakKeyDictionary[Vault, _Warm] = weakref.WeakKeyDictionary()


def _warm(vault: Vault) -> _Warm:
    warm = _WARM.get(vault)
    if warm is None:
        warm = _WARM[vault] = _Warm(vault)
    return warm


def _doc(path: str, data: bytes):
    """The index document of one memory file, or None when the file cannot be read."""
    from memrepo.retrieval.fields import IndexDoc
    from memrepo.store.checks import reader_problem
    from memrepo.store.document import DocumentError, load_bytes
    try:
        parsed = load_bytes(data, path)
    except DocumentError:
        return None
    m = parsed.meta
    if m.get("id") != _id_of(path) or reader_problem(path, m) is not None:
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


def _read_worktree(vault: Vault, path: str):
    from memrepo.store.files import LinkRefused, read_inside
    try:
        return _doc(path, read_inside(vault.root, path))  # never through a link, at any depth
    except (OSError, LinkRefused):
        return None


def _dirty_paths(vault: Vault) -> set[str]:
    """Memory files that differ from HEAD in the working tree (edited, staged, new, deleted)."""
    return {p for p in git.worktree_changes(vault.root, MEMORY_ROOTS) if is_memory_path(p)}


@dataclass(frozen=True)
class _Scan:
    """The last look at the working tree: the dirty memory files, when, what it cost, how many
    memory files there were, and the tree's stamp taken just before (see :func:`_tree_stamp`)."""

    paths: frozenset[str] = frozenset()
    at: float = 0.0
    cost: float = 0.0
    files: int = 0
    dirs: tuple[str, ...] = ()
    stamp: tuple = ()


SCAN_ALWAYS_FILES = 2000  # vaults of up to 2,000 memory files look on every search;
SCAN_MIN_INTERVAL = 1.0   # a larger one when its tree stamp moved, else at most once a second,
SCAN_COST_FACTOR = 10.0   # ten times the look's cost apart,
SCAN_MAX_INTERVAL = 5.0   # and at least every 5 s


def _load_scan(vault: Vault) -> _Scan:
    path = vault.index_dir / DIRTY_FILE
    warm = _warm(vault)
    try:
        st = path.stat()
        stamp = (st.st_ino, st.st_size, st.st_mtime_ns)
    except OSError:
        return _Scan()
    if stamp == warm.scan_stamp:
        return warm.scan
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        scan = _Scan(frozenset(data["paths"]), float(data["at"]), float(data["cost"]), int(data.get("files", 0)),
                     tuple(data.get("dirs", ())), _tuple(data.get("stamp", ())))
    except (OSError, ValueError, KeyError, TypeError):
        return _Scan()
    warm.scan_stamp, warm.scan = stamp, scan
    return scan


def _tuple(value):
    return tuple(_tuple(v) for v in value) if isinstance(value, list) else value


def _save_scan(vault: Vault, scan: _Scan) -> None:
    from memrepo.store.vault import atomic_write
    payload = {"paths": sorted(scan.paths), "at": scan.at, "cost": scan.cost, "files": scan.files,
               "dirs": list(scan.dirs), "stamp": scan.stamp}
    path = vault.index_dir / DIRTY_FILE
    atomic_write(path, json.dumps(payload).encode())
    st = path.stat()
    warm = _warm(vault)
    warm.scan_stamp, warm.scan = (st.st_ino, st.st_size, st.st_mtime_ns), scan


def _tree_stamp(vault: Vault, dirs: Iterable[str]) -> tuple:
    """What changes when a memory file is added, removed or replaced (most editors save by
    replacing), or git touches its index (add, commit, checkout, reset, merge): the stat of
    git's index file and the mtimes of the memory folders. Only an edit written in place
    into an existing file leaves it as it was."""
    root = os.path.join(vault.root, "")

    def mtime(d: str):
        try:
            return os.stat(root + d).st_mtime_ns
        except OSError:
            return None
    return (git.index_stamp(vault.root), tuple(mtime(d) for d in dirs))


def _tree_moved(vault: Vault, last: _Scan) -> bool:
    """Whether the tree stamp moved since ``last`` look. A process that searches this vault
    again watches its memory folders (:class:`memrepo.store.watch.FolderWatch`) instead of
    a stat of each one (~5 ms at 100,000 memories): the watch starts before the stamp is
    compared once more, so a change before it is the stamp's to see and one after it the
    watch's."""
    warm = _warm(vault)
    if warm.watch is not None and warm.watch.fd >= 0 and warm.watch.dirs == last.dirs:
        return warm.watch.moved() or (git.index_stamp(vault.root),) != last.stamp[:1]
    if warm.watch is not None:  # the folders changed since it began (or it broke)
        warm.watch.close()
        warm.watch = None
    if warm.synced and last.dirs and last.stamp and warm.unwatchable != last.dirs:
        from memrepo.store.watch import FolderWatch
        warm.watch = FolderWatch.start(vault.root, last.dirs)
        if warm.watch is None:  # e.g. the per-user watch limit: not tried again for these folders
            warm.unwatchable = last.dirs
    return _tree_stamp(vault, last.dirs) != last.stamp


def _memory_dirs(vault: Vault) -> tuple[tuple[str, ...], int]:
    """The folders under the memory roots (relative, sorted as a walk visits them) and how
    many memory files they hold."""
    root = os.path.join(vault.root, "")
    dirs, files = [], 0
    for top in MEMORY_ROOTS:
        stack = [top]
        while stack:
            folder = stack.pop()
            try:
                with os.scandir(root + folder) as entries:
                    subdirs = []
                    for entry in entries:
                        if entry.is_dir(follow_symlinks=False):
                            subdirs.append(f"{folder}/{entry.name}")
                        elif entry.name.endswith(".md"):
                            files += 1
            except OSError:  # not there (yet), or removed meanwhile
                continue
            dirs.append(folder)
            stack.extend(sorted(subdirs, reverse=True))
    return tuple(dirs), files


def _scan(vault: Vault) -> _Scan:
    start = time.monotonic()
    dirs, files = _memory_dirs(vault)
    stamp = _tree_stamp(vault, dirs)  # before git looks: a change after it moves the stamp
    paths = frozenset(_dirty_paths(vault))
    return _Scan(paths, time.time(), time.monotonic() - start, files, dirs, stamp)


def _scan_due(last: _Scan, moved: Callable[[], bool] | None = None, *, watched: bool = False) -> bool:
    """Whether to look at the working tree again for uncommitted edits.

    Commits are always seen at once (HEAD is compared on every search). Looking for
    uncommitted edits means a stat of every memory file (a git process: ~10 ms at 1,000
    memories, ~270 ms at 100,000). Vaults of up to 2,000 memories look on every search. A
    larger one looks when its tree stamp moved (a file added, removed or replaced, git's
    index rewritten), and otherwise every 1-5 s (ten times the look's cost), which bounds how
    long an edit written in place into an existing file stays unseen. When ``watched`` (a
    folder watch on a local filesystem that began before the last look: every change since
    is reported, in-place edits included), it looks only when ``moved`` says so.
    """
    if last.files <= SCAN_ALWAYS_FILES:
        return True
    if watched and moved is not None:
        return moved()
    waited = time.time() - last.at
    if waited < 0 or waited >= min(SCAN_MAX_INTERVAL, max(SCAN_MIN_INTERVAL, SCAN_COST_FACTOR * last.cost)):
        return True
    return moved is not None and moved()


def rebuild(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
            each: Callable[[Any], None] | None = None) -> int:
    """Rebuild the index from the working tree's memory files; ``each`` is given every
    document read (:func:`reindex` keeps what the vectors need of them)."""
    head = git.rev_parse(vault.root, "HEAD")
    paths = [p for p in vault.tree_paths() if is_memory_path(p)]
    docs = (d for d in (_read_worktree(vault, p) for p in paths) if d is not None)
    if each is not None:
        docs = (each(d) or d for d in docs)
    total = len(paths)
    count = _with_index_errors(lambda: _index(vault).rebuild(
        docs, commit=head, progress=(lambda n: progress(n, total)) if progress else None))
    _save_scan(vault, _scan(vault) if head else _Scan(at=time.time()))
    return count


def sync(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
         each: Callable[[Any], None] | None = None) -> SyncReport:
    """Bring the index to HEAD plus uncommitted memory edits, reading only changed files.
    When it rebuilds, ``progress`` and ``each`` are :func:`rebuild`'s."""
    try:
        return _sync(vault, progress, each)
    finally:
        _warm(vault).synced = True


def _sync(vault: Vault, progress=None, each=None) -> SyncReport:
    def rebuilt() -> int:
        return rebuild(vault, progress=progress, each=each)

    head = git.resolve(vault.root, "HEAD")
    vault.ensure_trusted(head)  # the index's files must not be ones a pull planted (see store/incoming.py)
    index = _index(vault)
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
    last = _load_scan(vault)
    warm = _warm(vault)
    watch = warm.watch
    watched = warm.watched_look and watch is not None and watch.local and watch.dirs == last.dirs
    scan = _scan(vault) if _scan_due(last, lambda: _tree_moved(vault, last), watched=watched) else None
    if warm.watch is not watch:  # a new watch (or none): it has not seen a look begin yet
        warm.watched_look = False
    if scan is not None:  # every change after this look began is the watch's to report
        warm.watched_look = warm.watch is not None and warm.watch.dirs == scan.dirs
    # Files dirty at the last look are re-read when they may have changed back or again.
    todo = changed | (scan.paths | last.paths if scan else set())
    if scan is not None:
        _save_scan(vault, scan)
    if not todo and indexed == head:
        return SyncReport(False, 0, 0)
    if len(todo) >= REBUILD_CHANGED and len(todo) * 2 >= _indexed_count(index):
        # a bulk import or a checkout of another history: building anew on every core is
        # faster than one writer updating (and reads at most twice the changed files)
        count = rebuilt()
        gone = [_id_of(p) for p in todo if not (is_memory_path(p) and (vault.root / p).is_file())]
        _forget_deleted(vault, gone)
        return SyncReport(True, count, 0, f"{len(todo)} memory files changed: search index rebuilt")
    upserts, deletes = [], []
    for path in sorted(todo):
        doc = _read_worktree(vault, path) if is_memory_path(path) else None
        (upserts.append(doc) if doc else deletes.append(_id_of(path)))
    live = {d.id for d in upserts}
    deletes = [d for d in deletes if d not in live]
    _with_index_errors(lambda: index.update(upserts=upserts, deletes=deletes, commit=head))
    _forget_deleted(vault, deletes)
    return SyncReport(False, len(upserts), len(deletes))


def _id_of(path: str) -> str:
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


def _with_index_errors(fn):
    from memrepo.retrieval.index import IndexBusy, IndexCorrupt
    try:
        return fn()
    except IndexBusy as e:
        raise Busy(f"{e}; retry in a moment") from None
    except IndexCorrupt as e:
        raise MemrepoError(f"{e} ('memrepo reindex')") from None


def make_query(text: str, **filters: Any):
    from memrepo.retrieval.ranking import SearchQuery
    unknown = set(filters) - set(QUERY_FILTERS)
    if unknown:
        raise UsageError(f"unknown search option(s): {', '.join(sorted(unknown))}; use {', '.join(QUERY_FILTERS)}")
    if not isinstance(text, str):
        raise UsageError("'query' must be a string")
    clean = {k: v for k, v in filters.items() if v is not None}
    for name in ("layer", "kind"):
        model.check_choice(name, clean.get(name))
    model.parse_when("since", clean.get("since"))
    model.check_choice("intent", clean.get("intent"), model.INTENTS)
    if "limit" in clean and (not isinstance(clean["limit"], int) or clean["limit"] < 1):
        raise UsageError("'limit' must be a positive integer")
    longest = max(map(len, text.split()), default=0) if clean.get("advanced") else 0
    if longest > ADVANCED_WORD_CHARS:  # Whoosh's parser takes time quadratic in a word's length
        raise UsageError(f"an --advanced query takes words of up to {ADVANCED_WORD_CHARS:,} characters (this one has "
                         f"{longest:,}); search without --advanced for long text")
    return SearchQuery(text=text, **clean)


def search_many(vault: Vault, queries: list, *, session: str | None = None, log_recalls: bool = False) -> tuple[list, SyncReport]:
    """Run queries after a sync; optionally log the results as recalls of ``session``."""
    from memrepo.retrieval.index import IndexCorrupt
    if log_recalls and not session:
        raise UsageError("--log records recalls of a session: give --session ID too")
    ahead = _encode_ahead(vault, queries)
    report = sync(vault)
    state, semantic, notice = semantic_sync(vault)
    if notice:
        report = SyncReport(report.rebuilt, report.updated, report.deleted,
                            f"{report.notice}; {notice}" if report.notice else notice)
    warm = _warm(vault)
    s = warm.live_stats(vault)
    try:
        try:
            results = warm.index.search_many(queries, semantic=semantic, ahead=ahead)
        except _model_unavailable() as e:   # the query's encoding could not load the model
            note_model_failure(vault, str(e))
            state, semantic = "unavailable", None
            report = replace(report, notice="; ".join(filter(None, (report.notice, _unavailable(str(e))))))
            results = warm.index.search_many(queries)
    except IndexCorrupt:
        report = SyncReport(True, rebuild(vault), 0, "search index was corrupt: rebuilt it")
        results = warm.index.search_many(queries, semantic=semantic)
    if state != "hybrid":
        results = [replace(r, semantic=state) for r in results]
    if log_recalls and session:
        for result in results:
            s.record_recall(session, result.query, [h.id for h in result.hits])
    if s.notice:  # said once: the damaged file was kept aside
        report = replace(report, notice="; ".join(filter(None, (report.notice, s.notice))))
        s.notice = None
    warm.stats_file = _inode(s.path)
    return results, report


# ---- the semantic layer's state -----------------------------------------------------------

def semantic_enabled(vault: Vault) -> bool:
    """``[search] semantic`` (default true), overridden per process by MEMREPO_SEMANTIC=0/1."""
    env = os.environ.get(SEMANTIC_ENV)
    if env is not None and env.strip() != "":
        return env.strip().lower() not in ("0", "false", "no", "off")
    value = vault.config.get("search", "semantic", True)
    return value if isinstance(value, bool) else True


def _encode_ahead(vault: Vault, queries: list) -> dict:
    """Start encoding the queries (:meth:`~memrepo.retrieval.embed.Encoder.query_soon`) when the vault's vectors are there
    to be searched: the model runs while git is consulted and the keywords are ranked."""
    if not queries or not semantic_enabled(vault):
        return {}
    from memrepo.retrieval import embed
    if not embed.available() or not _vector_store(vault).ready():
        return {}
    encoder = embed.shared(embed.user_cache_dir())
    return encoder.queries_soon(_index(vault).query_texts(queries))


def _vector_store(vault: Vault):
    from memrepo.retrieval.vectors import VectorStore
    return VectorStore(vault.index_dir / "vectors", ann_above=vault.config.get("search", "ann_above", 0))


def _vec_doc(doc):
    from memrepo.retrieval import embed
    from memrepo.retrieval.fields import epoch, tag_terms
    from memrepo.retrieval.vectors import VecDoc
    return VecDoc(doc.id, embed.memory_text(doc.summary, doc.body), doc.subject, doc.status, doc.layer, doc.kind,
                  tag_terms(doc.tags), epoch(doc.created))


def semantic_sync(vault: Vault) -> tuple[str, Any, str | None]:
    """(state, (vectors, encoder) or None, notice): bring the vectors to HEAD when they exist;
    build them inline for a small vault, in the background for a large one."""
    state = vector_state(vault)
    from memrepo.retrieval import embed
    if state == "off":
        return "off", None, None
    if state == "unavailable":
        return "unavailable", None, _unavailable(embed.unavailable_reason())
    from memrepo.retrieval.vectors import VectorsBusy, VectorsCorrupt
    store = _vector_store(vault)
    failed = _model_failure(vault)
    if failed:
        return "unavailable", None, _unavailable(f"{failed}; memrepo reindex tries it again")
    damaged = None   # unreadable vectors are derived state: built anew as a first build is
    try:
        if store.ready():
            try:
                notice = _catch_up_vectors(vault, store)
                if notice:
                    return "building", None, notice
                return "hybrid", (store.load(), embed.shared(embed.user_cache_dir())), None
            except VectorsCorrupt as e:
                damaged = str(e)
        if store.building():
            return "building", None, "semantic vectors are being built: keywords only until they are ready"
        paths = [p for p in vault.tree_paths() if is_memory_path(p)]
        if len(paths) > INLINE_BUILD_MAX:
            start_background_build(vault)
            return "building", None, (f"{damaged + ': ' if damaged else ''}building semantic vectors for "
                                      f"{len(paths)} memories in the background: keywords only until they are ready")
        build_vectors(vault)
        return "hybrid", (store.load(), embed.shared(embed.user_cache_dir())), damaged and f"{damaged}: rebuilt them"
    except VectorsBusy:
        return "building", None, "semantic vectors are being written by another process: keywords only"
    except VectorsCorrupt as e:   # still unreadable after a rebuild (a disk failing): keywords
        return "building", None, f"{e}: keywords only"
    except embed.ModelUnavailable as e:
        note_model_failure(vault, str(e))
        return "unavailable", None, _unavailable(str(e))


def _unavailable(reason: str) -> str:
    return f"semantic search unavailable ({reason}): keywords only"


def unavailable_notice() -> str:
    """The notice of a search or a build in this process without the model."""
    from memrepo.retrieval import embed
    return _unavailable(embed.unavailable_reason())


def _model_unavailable() -> type[Exception]:
    from memrepo.retrieval import embed
    return embed.ModelUnavailable


def note_model_failure(vault: Vault, reason: str | None) -> None:
    """Note (``reason``) or clear (None) that this model failed to load in this vault: a
    background build that dies of it would otherwise be started again by every search."""
    from memrepo.retrieval import embed
    from memrepo.store.files import atomic_write
    path = _vector_store(vault).dir / MODEL_FAILED
    try:
        if reason is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps({"model": embed.model_id(), "error": reason, "at": time.time()}).encode())
    except OSError:
        pass   # only a hint: the next search tries the model again


def _model_failure(vault: Vault) -> str | None:
    """Why this model failed to load here lately (within ``MODEL_RETRY_S``), if it did."""
    from memrepo.retrieval import embed
    try:
        noted = json.loads((_vector_store(vault).dir / MODEL_FAILED).read_text(encoding="utf-8"))
        if noted["model"] == embed.model_id() and 0 <= time.time() - float(noted["at"]) < MODEL_RETRY_S:
            return str(noted["error"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def _catch_up_vectors(vault: Vault, store, *, wait: bool = False,
                      progress: Callable[[int, int], None] | None = None) -> str | None:
    """Bring built vectors to HEAD and the working tree: the changed memories encoded here,
    or — more than ``INLINE_BUILD_MAX`` of them (a bulk import, a checkout far away) — by
    a background build (returns its notice; the search answers on keywords meanwhile).
    ``wait``: every encoding here, a large catch-up as a build with ``progress``."""
    from memrepo.retrieval import embed
    from memrepo.retrieval.vectors import VectorsBusy
    if store.building():  # a reindex is writing them: do not wait, answer on keywords
        raise VectorsBusy("vectors are being rebuilt")
    head = git.resolve(vault.root, "HEAD")
    indexed = store.commit()
    changed: set[str] = set()
    if indexed != head and head:
        try:
            changed = {c.path for c in git.diff_tree(vault.root, indexed, head, MEMORY_ROOTS)} if indexed else None
        except MemrepoError:
            changed = None
        if changed is None:  # the commit the vectors reflect is gone: re-read everything (cached by hash)
            total = sum(1 for p in vault.tree_paths() if is_memory_path(p))
            if total > INLINE_BUILD_MAX and not wait:
                start_background_build(vault)
                return ("the semantic vectors were built for a commit that is gone: rebuilding them in the "
                        "background, keywords only until they are ready")
            build_vectors(vault, progress=progress)
            return None
    dirty = set(_load_scan(vault).paths)  # the index sync just looked at the working tree
    was_dirty = set(store.dirty())
    todo = changed | dirty | was_dirty
    if not todo and indexed == head:
        return None
    # files already dirty at the last write of the vectors are cheap to look at again (their
    # vectors are there unless they changed once more): only the others count as the change
    if len(changed | (dirty - was_dirty)) > INLINE_BUILD_MAX:   # the build reuses every vector it has
        if wait:
            build_vectors(vault, progress=progress)
            return None
        start_background_build(vault)
        return (f"{len(todo)} memory files changed since the semantic vectors were built: updating them in "
                "the background, keywords only until they are ready")
    upserts, deletes = [], []
    for path in sorted(todo):
        doc = _read_worktree(vault, path) if is_memory_path(path) else None
        (upserts.append(_vec_doc(doc)) if doc else deletes.append(path.rsplit("/", 1)[-1][:-3]))
    live = {d.id for d in upserts}
    store.apply(upserts, [d for d in deletes if d not in live], embed.shared(embed.user_cache_dir()), commit=head, dirty=sorted(dirty))
    return None


def build_vectors(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
                  docs: list | None = None) -> int:
    """Encode every memory of the working tree (texts already encoded are reused by hash);
    ``docs``: their :func:`_vec_doc`, when the caller has just read them all."""
    from memrepo.retrieval import embed
    head = git.rev_parse(vault.root, "HEAD")
    if docs is None:
        paths = [p for p in vault.tree_paths() if is_memory_path(p)]
        docs = [_vec_doc(d) for d in (_read_worktree(vault, p) for p in paths) if d is not None]
    count = _vector_store(vault).rebuild(docs, embed.shared(embed.user_cache_dir()), commit=head, progress=progress,
                                         dirty=sorted(_load_scan(vault).paths))
    note_model_failure(vault, None)
    (_vector_store(vault).dir / BUILD_STARTED).unlink(missing_ok=True)   # another may start at once
    return count


def rebuild_vectors(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
                    docs: list | None = None) -> tuple[str, int]:
    """The vectors anew: (state, vectors) — "off" or "unavailable" build nothing."""
    state = vector_state(vault)
    if state != "hybrid":
        return state, 0
    from memrepo.retrieval.vectors import VectorsBusy
    try:
        return "hybrid", build_vectors(vault, progress=progress, docs=docs)
    except VectorsBusy as e:
        raise Busy(f"{e}; retry in a moment") from None
    except _model_unavailable() as e:
        note_model_failure(vault, str(e))
        return "unavailable", 0


def vector_state(vault: Vault) -> str:
    """"hybrid" when this vault's search uses vectors, else "off" (by config) or "unavailable"."""
    if not semantic_enabled(vault):
        return "off"
    from memrepo.retrieval import embed
    return "hybrid" if embed.available() else "unavailable"


def reindex(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
            vector_progress: Callable[[int, int], None] | None = None) -> tuple[int, str, int]:
    """``memrepo reindex``: the search index and the vectors anew, every memory file read once
    for both; (memories indexed, vector state, vectors)."""
    docs: list | None = None
    if vector_state(vault) == "hybrid":   # only their vectors' text is kept, not each whole memory
        docs = []
    count = rebuild(vault, progress=progress, each=None if docs is None else (lambda d: docs.append(_vec_doc(d))))
    state, vectors = rebuild_vectors(vault, progress=vector_progress, docs=docs)
    return count, state, vectors


def catch_up(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
             vector_progress: Callable[[int, int], None] | None = None) -> tuple[str, str | None]:
    """Bring the search index and the vectors to HEAD and the working tree now, waiting for
    every encoding (``memrepo import`` after its commit): what the next search would do,
    without leaving any of it to that search or to a background build. ``progress`` and
    ``vector_progress`` see a rebuild of the index and a build of the vectors. Returns (vector
    state, notice): "building" when another process is writing the vectors."""
    state = vector_state(vault)
    docs: list | None = [] if state == "hybrid" else None
    report = sync(vault, progress=progress, each=None if docs is None else (lambda d: docs.append(_vec_doc(d))))
    if state != "hybrid":
        return state, "; ".join(filter(None, (report.notice, unavailable_notice() if state == "unavailable" else None))) or None
    from memrepo.retrieval.vectors import VectorsBusy, VectorsCorrupt
    store = _vector_store(vault)
    try:
        if store.building():
            raise VectorsBusy("vectors are being built")
        if report.rebuilt or not store.ready():   # a rebuild read every memory file: build from them
            build_vectors(vault, progress=vector_progress, docs=docs if report.rebuilt else None)
        else:
            try:
                _catch_up_vectors(vault, store, wait=True, progress=vector_progress)
            except VectorsCorrupt:   # unreadable: built anew
                build_vectors(vault, progress=vector_progress)
    except VectorsBusy:
        return "building", "semantic vectors are being written by another process: keywords only until it is done"
    except _model_unavailable() as e:
        note_model_failure(vault, str(e))
        return "unavailable", _unavailable(str(e))
    return "hybrid", report.notice


SPAWN_GRACE_S = 30.0   # a background build started this recently is taken as under way
BUILD_STARTED = "build-started"   # beside the vectors: touched when one is started


def start_background_build(vault: Vault) -> None:
    """Build the vectors in a detached process (it takes the vectors' write lock), unless
    one was started in the last ``SPAWN_GRACE_S`` seconds and may not hold the lock yet
    (every search until then would start another)."""
    import subprocess
    import sys
    started = _vector_store(vault).dir / BUILD_STARTED
    try:
        if 0 <= time.time() - started.stat().st_mtime < SPAWN_GRACE_S:
            return
    except OSError:
        pass
    try:
        started.parent.mkdir(parents=True, exist_ok=True)
        started.touch()
    except OSError:
        pass   # only a hint
    subprocess.Popen([sys.executable, "-m", "memrepo.retrieval.vectors_build", str(vault.root)],
                     stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
                     start_new_session=True, close_fds=True)


def search(vault: Vault, text: str, *, session: str | None = None, log_recalls: bool = False, **filters: Any):
    results, report = search_many(vault, [make_query(text, **filters)], session=session, log_recalls=log_recalls)
    return results[0], report


def hit_dict(hit) -> dict[str, Any]:
    data = asdict(hit)
    data.pop("body", None)  # the snippet stands for it; memrepo show / memory_get give the whole memory
    data["tags"] = list(data.get("tags") or ())
    return data


def result_dict(result) -> dict[str, Any]:
    return {"query": result.query, "hits": [hit_dict(h) for h in result.hits],
            "nothing_relevant": result.nothing_relevant, "intent": result.intent,
            "semantic": result.semantic}


def read_queries(path: Path) -> list[tuple[Any, Any]]:
    """(qid, SearchQuery) per line of a batch file. The file is input data: every bad line is
    a problem naming its number (InvalidData, exit 5), in line order, and nothing is searched."""
    out, problems = [], []
    from memrepo.store.jsontext import loads
    for n, line in enumerate(Path(path).read_bytes().split(b"\n"), start=1):
        if not line.strip():
            continue
        try:
            record = loads(line, where="the line")
            if not isinstance(record, dict) or "query" not in record:
                raise ValueError("each line must be an object with a 'query'")
            qid = record.pop("qid", None)
            text = record.pop("query")
            record.pop("session", None)
            out.append((qid, make_query(text, **record)))
        except (ValueError, UsageError) as e:
            problems.append(Problem(f"{path}:line {n}", "(line)", str(e)))
    if problems:
        raise InvalidData(problems, "no query was run; fix these lines of the --queries file")
    return out


def mark_useful(vault: Vault, memory_id: str, *, session: str | None = None) -> str | None:
    """Record that a recalled memory helped (heat; the strongest signal). Returns a notice
    when the statistics file was damaged and kept aside."""
    vault.get(memory_id)
    s = stats(vault)
    s.mark_useful(memory_id, session=session)
    return s.notice
