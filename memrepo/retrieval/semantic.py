"""The semantic layer's catch-up: the memory vectors of the hybrid ranking kept at HEAD.

The vectors (:mod:`memrepo.retrieval.vectors`) catch up like the index, from the commit they
reflect, when a search needs them: changed files are re-read and only texts whose content hash
is new are encoded. A first build or a bulk change of a large vault runs in a background
process (``python -m memrepo.retrieval.vectors_build``) while searches answer on keywords
alone, saying ``"semantic": "building"`` and how far it is ("building (N of M)",
:mod:`memrepo.retrieval.vector_progress`). An import or a reindex, which has just read every
memory it changed, leaves that build a plan of them (:mod:`memrepo.retrieval.vector_plan`)
and returns. A build keeps its vectors as it goes: killed, the next one resumes it. A model
that cannot be loaded means keywords with one notice, and is not tried again by searches for
``MODEL_RETRY_S``.
"""
from __future__ import annotations

import json
import os
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from memrepo.errors import Busy, MemrepoError
from memrepo.model import MEMORY_ROOTS, is_memory_path
from memrepo.retrieval import scan, vector_progress
from memrepo.retrieval.sync import read_all, read_changed
from memrepo.retrieval.vector_progress import Progress
from memrepo.retrieval.warm import index as warm_index
from memrepo.store import faults, git
from memrepo.store.vault import Vault

if TYPE_CHECKING:  # pragma: no cover (numpy and the vectors load when a search needs them)
    from memrepo.retrieval.fields import IndexDoc
    from memrepo.retrieval.vector_plan import Plan

INLINE_BUILD_MAX = 1000  # a first vector build or catch-up of up to this many memories runs inside the search
MODEL_RETRY_S = 600      # a model that failed to load in a build is not tried again by searches for this long
MODEL_FAILED = "model-failed.json"   # beside the vectors: why and when
SEMANTIC_ENV = "MEMREPO_SEMANTIC"  # "0"/"1": overrides [search] semantic for one process


def semantic_enabled(vault: Vault) -> bool:
    """``[search] semantic`` (default true), overridden per process by MEMREPO_SEMANTIC=0/1."""
    env = os.environ.get(SEMANTIC_ENV)
    if env is not None and env.strip() != "":
        return env.strip().lower() not in ("0", "false", "no", "off")
    value = vault.config.get("search", "semantic", True)
    return value if isinstance(value, bool) else True


def vector_state(vault: Vault) -> str:
    """"hybrid" when this vault's search uses vectors, else "off" (by config) or "unavailable"."""
    if not semantic_enabled(vault):
        return "off"
    from memrepo.retrieval import embed
    return "hybrid" if embed.available() else "unavailable"


def vector_store(vault: Vault):
    """The vault's vectors (for the model installed)."""
    from memrepo.retrieval.vectors import VectorStore
    return VectorStore(vault.index_dir / "vectors", ann_above=vault.config.get("search", "ann_above", 0))


def memory_count(vault: Vault) -> int:
    """The memory files in the working tree (git's listing: nothing is read)."""
    return sum(1 for p in vault.tree_paths() if is_memory_path(p))


def encode_ahead(vault: Vault, queries: list) -> dict:
    """Start encoding the queries (:meth:`~memrepo.retrieval.embed.Encoder.queries_soon`) when the vault's vectors are there
    to be searched: the model runs while git is consulted and the keywords are ranked."""
    if not queries or not semantic_enabled(vault):
        return {}
    from memrepo.retrieval import embed
    if not embed.available() or not vector_store(vault).ready():
        return {}
    encoder = embed.shared(embed.user_cache_dir())
    return encoder.queries_soon(warm_index(vault).query_texts(queries))


def semantic_sync(vault: Vault) -> tuple[str, Any, str | None]:
    """(state, (vectors, encoder) or None, notice): bring the vectors to HEAD when they exist;
    build them inline for a small vault, in the background for a large one."""
    state = vector_state(vault)
    from memrepo.retrieval import embed
    if state == "off":
        return "off", None, None
    if state == "unavailable":
        return "unavailable", None, unavailable(embed.unavailable_reason())
    from memrepo.retrieval.vectors import VectorsBusy, VectorsCorrupt
    store = vector_store(vault)
    failed = model_failure(vault)
    if failed:
        return "unavailable", None, unavailable(f"{failed}; memrepo reindex tries it again")
    damaged = None   # unreadable vectors are derived state: built anew as a first build is
    try:
        if store.ready():
            try:
                notice = catch_up_vectors(vault, store)
                if notice:
                    return "building", None, notice
                return "hybrid", (store.load(), embed.shared(embed.user_cache_dir())), None
            except VectorsCorrupt as e:
                damaged = str(e)
        if store.building():
            return "building", None, building_notice(vault)
        total = memory_count(vault)
        if total > INLINE_BUILD_MAX:
            start_background_build(vault)
            return "building", None, building_notice(vault, damaged, total=total)
        build_vectors(vault)
        return "hybrid", (store.load(), embed.shared(embed.user_cache_dir())), damaged and f"{damaged}: rebuilt them"
    except VectorsBusy:
        return "building", None, building_notice(vault, None if store.building() else BUSY)
    except VectorsCorrupt as e:   # still unreadable after a rebuild (a disk failing): keywords
        return "building", None, f"{e}: keywords only"
    except embed.ModelUnavailable as e:
        note_model_failure(vault, str(e))
        return "unavailable", None, unavailable(str(e))


def unavailable(reason: str) -> str:
    return f"semantic search unavailable ({reason}): keywords only"


def unavailable_notice() -> str:
    """The notice of a search or a build in this process without the model."""
    from memrepo.retrieval import embed
    return unavailable(embed.unavailable_reason())


def model_unavailable() -> type[Exception]:
    from memrepo.retrieval import embed
    return embed.ModelUnavailable


def note_model_failure(vault: Vault, reason: str | None) -> None:
    """Note (``reason``) or clear (None) that this model failed to load in this vault: a
    background build that dies of it would otherwise be started again by every search."""
    from memrepo.retrieval import embed
    from memrepo.store.files import atomic_write
    path = vector_store(vault).dir / MODEL_FAILED
    try:
        if reason is None:
            path.unlink(missing_ok=True)
        else:
            path.parent.mkdir(parents=True, exist_ok=True)
            atomic_write(path, json.dumps({"model": embed.model_id(), "error": reason, "at": time.time()}).encode())
    except OSError:
        pass   # only a hint: the next search tries the model again


def model_failure(vault: Vault) -> str | None:
    """Why this model failed to load here lately (within ``MODEL_RETRY_S``), if it did."""
    from memrepo.retrieval import embed
    try:
        noted = json.loads((vector_store(vault).dir / MODEL_FAILED).read_text(encoding="utf-8"))
        if noted["model"] == embed.model_id() and 0 <= time.time() - float(noted["at"]) < MODEL_RETRY_S:
            return str(noted["error"])
    except (OSError, ValueError, KeyError, TypeError):
        pass
    return None


def catch_up_vectors(vault: Vault, store, *, wait: bool = False, progress: Callable[[int, int], None] | None = None,
                     known: dict[str, IndexDoc] | None = None) -> str | None:
    """Bring built vectors to HEAD and the working tree: the changed memories encoded here,
    or — more than ``INLINE_BUILD_MAX`` of them (a bulk import, a checkout far away) — by
    a background build (returns its notice; the search answers on keywords meanwhile).
    ``wait``: every encoding here (``progress`` sees a large one); ``known``: the documents
    the caller has just read, by path (planned for that build, not read again)."""
    from memrepo.retrieval import embed
    from memrepo.retrieval.vectors import VectorsBusy
    if store.building():  # a reindex is writing them: do not wait, answer on keywords
        raise VectorsBusy("vectors are being rebuilt")
    head = git.resolve(vault.root, "HEAD")
    indexed = store.commit()
    changed: set[str] = set()
    if indexed != head and head:
        diffed: set[str] | None
        try:
            diffed = {c.path for c in git.diff_tree(vault.root, indexed, head, MEMORY_ROOTS)} if indexed else None
        except MemrepoError:
            diffed = None
        if diffed is None:  # the commit the vectors reflect is gone: re-read everything (cached by hash)
            if memory_count(vault) > INLINE_BUILD_MAX and not wait:
                start_background_build(vault)
                return building_notice(vault, "the semantic vectors were built for a commit that is gone")
            build_vectors(vault, progress=progress)
            return None
        changed = diffed
    dirty = set(scan.load(vault).paths)  # the index sync just looked at the working tree
    was_dirty = set(store.dirty())
    todo = changed | dirty | was_dirty
    if not todo and indexed == head:
        return None
    # files already dirty at the last write of the vectors are cheap to look at again (their
    # vectors are there unless they changed once more): only the others count as the change
    if len(changed | (dirty - was_dirty)) > INLINE_BUILD_MAX and not wait:
        why = f"{len(todo)} memory files changed since the semantic vectors were built"
        if known is None:   # (a search: the build reads them)
            start_background_build(vault)
            return building_notice(vault, why)
        from memrepo.retrieval.vector_plan import Plan
        from memrepo.retrieval.vectors import item_of
        upserts, deletes = read_changed(vault, todo, known)
        return build_in_background(vault, Plan("apply", store.model, head, tuple(sorted(dirty)), store.state(),
                                               tuple(map(item_of, upserts)), tuple(deletes)), why)
    upserts, deletes = read_changed(vault, todo, known)
    store.apply(upserts, deletes, embed.shared(embed.user_cache_dir()), commit=head,
                dirty=sorted(dirty), progress=progress)
    return None


def build_vectors(vault: Vault, *, progress: Callable[[int, int], None] | None = None,
                  docs: list | None = None) -> int:
    """Encode every memory of the working tree here (texts already encoded are reused by
    hash); ``docs``: their index documents, when the caller has just read them all. A large
    build leaves its plan behind while it runs, so that one killed resumes without them."""
    plan = _rebuild_plan(vault, docs)
    if len(plan.items) > INLINE_BUILD_MAX:
        plan.write(vector_store(vault).dir)
    return run_plan(vault, plan, progress=progress)


def build_in_background(vault: Vault, plan: Plan | None = None, why: str | None = None, *,
                        docs: list | None = None) -> str:
    """Plan a build (``plan``, or every memory of ``docs``) and start it in the background;
    returns the notice that says so (the vectors are "building" meanwhile)."""
    plan = plan or _rebuild_plan(vault, docs)
    plan.write(vector_store(vault).dir)
    faults.point("vectors-planned")
    start_background_build(vault)
    notice = building_notice(vault, why, total=len(plan.items) if plan.kind == "rebuild" else None)
    return f"{notice} (memrepo status shows how far)"


def _rebuild_plan(vault: Vault, docs: list | None) -> Plan:
    from memrepo.retrieval.vector_plan import Plan
    from memrepo.retrieval.vectors import item_of
    head = git.rev_parse(vault.root, "HEAD")
    store = vector_store(vault)
    items = tuple(item_of(d) for d in (docs if docs is not None else read_all(vault)[1]))
    return Plan("rebuild", store.model, head, tuple(sorted(scan.load(vault).paths)), store.state(), items)


def run_plan(vault: Vault, plan: Plan, *, progress: Callable[[int, int], None] | None = None,
             strict: bool = False) -> int:
    """Build the vectors as ``plan`` says (the vectors it writes, or the texts an ``apply``
    encoded); its file is removed once done. ``strict``: only on the state it was planned on
    (a background build: VectorsMoved otherwise)."""
    from memrepo.retrieval import embed, vector_plan
    from memrepo.retrieval.vectors import ANY
    store = vector_store(vault)
    encoder = embed.shared(embed.user_cache_dir())
    expect = plan.base if strict else ANY
    if plan.kind == "rebuild":
        count = store.rebuild(plan.items, encoder, commit=plan.commit, progress=progress,
                              dirty=plan.dirty, expect=expect)
    else:
        count = store.apply(plan.items, plan.deletes, encoder, commit=plan.commit, dirty=plan.dirty,
                            expect=expect, progress=progress)
    vector_plan.remove(store.dir)
    note_model_failure(vault, None)
    (store.dir / BUILD_STARTED).unlink(missing_ok=True)   # another may start at once
    return count


def background_build(vault: Vault) -> None:
    """The background build (:mod:`memrepo.retrieval.vectors_build`): the plan left for it,
    when it is for these vectors as they are; otherwise (none, another model's, the vectors
    moved since) a catch-up or a build from the memory files."""
    from memrepo.retrieval import vector_plan
    from memrepo.retrieval.vectors import VectorsCorrupt, VectorsMoved
    store = vector_store(vault)
    plan = vector_plan.read(store.dir)
    if plan is not None and plan.model == store.model:
        try:
            run_plan(vault, plan, strict=True)
            return
        except VectorsMoved:
            pass
    vector_plan.remove(store.dir)
    if store.ready():
        try:
            store.load()   # (unreadable vectors in step with HEAD have nothing to catch up: built anew)
            catch_up_vectors(vault, store, wait=True)
            return
        except VectorsCorrupt:
            pass
    build_vectors(vault)


BUSY = "another process is writing the semantic vectors"


def building_notice(vault: Vault, why: str | None = None, *, total: int | None = None) -> str:
    """"semantic: building (N of M) in the background": what a search says while the vectors
    are built (``why``: what started the build; ``total``: its memories, before it has said)."""
    got = build_progress(vault)
    counts = f" ({got.ready:,} of {got.total:,})" if got else f" ({total:,} memories)" if total else ""
    return (f"{why + ': ' if why else ''}semantic: building{counts} in the background: "
            "keywords only until the vectors are ready")


def build_progress(vault: Vault) -> Progress | None:
    """The progress of the build under way or last killed (None: none known, or it is done)."""
    got = vector_progress.read(vector_store(vault).dir)
    return got if got is not None and got.state != "done" else None


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
    except model_unavailable() as e:
        note_model_failure(vault, str(e))
        return "unavailable", 0


SPAWN_GRACE_S = 30.0   # a background build started this recently is taken as under way
BUILD_STARTED = "build-started"   # beside the vectors: touched when one is started


def start_background_build(vault: Vault) -> None:
    """Build the vectors in a detached process (it takes the vectors' write lock), unless
    one was started in the last ``SPAWN_GRACE_S`` seconds and may not hold the lock yet
    (every search until then would start another). One that took the lock since (its
    progress says so) and holds it no longer was killed: another starts at once."""
    from memrepo.store import processes
    started = vector_store(vault).dir / BUILD_STARTED
    if build_starting(vault):
        return
    try:
        started.parent.mkdir(parents=True, exist_ok=True)
        started.touch()
    except OSError:
        pass   # only a hint
    processes.start_detached("-m", "memrepo.retrieval.vectors_build", str(vault.root))


def build_starting(vault: Vault) -> bool:
    """Whether a background build was started in the last ``SPAWN_GRACE_S`` seconds and has
    not taken the vectors' lock yet (its progress is older than its start)."""
    folder = vector_store(vault).dir
    try:
        at = (folder / BUILD_STARTED).stat().st_mtime
    except OSError:
        return False
    took = vector_progress.read(folder)
    return 0 <= time.time() - at < SPAWN_GRACE_S and (took is None or took.started < at)
