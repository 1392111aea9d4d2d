"""Vectors that survive an interruption: an import returns once the keyword index is ready and
the vectors are built in the background from the files it read; ``memrepo status`` and a search
say how far the build is; a build killed midway (kill -9, a fault point) resumes from the units
it kept and writes the very vectors an uninterrupted build writes, array for array.

The builds run as real processes (``memrepo import``, the detached build, ``reindex --wait``)
with the real model; each kill is at a named fault point (``memrepo/store/faults.py``)."""
from __future__ import annotations

import json
import os
import shutil
import signal
import time
from pathlib import Path

import numpy as np
import pytest
from conftest import MEMREPO, cli, git, on_a_terminal, person_env

from memrepo.retrieval import embed, sync, vector_plan, vector_progress
from memrepo.retrieval import semantic as layer
from memrepo.store import faults

N = 1100   # more than INLINE_BUILD_MAX (a background build) and than two units (three: 512, 512, 76)


@pytest.fixture
def semantic(monkeypatch, tmp_path_factory):
    if not embed.available():
        pytest.skip("the embedding model package is not installed")
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "model-cache"))


def notes(tmp_path: Path, n: int = N) -> Path:
    """An import file of ``n`` memories with distinct texts (so memories and texts count alike)."""
    path = tmp_path / "notes.jsonl"
    path.write_text("".join(json.dumps({"id": f"mem_n{i:05d}", "subject": f"proj{i % 7}", "tags": [f"t{i % 5}"],
                                        "summary": f"note {i}: the plan for week {i} on topic {i % 13}"}) + "\n"
                            for i in range(n)), encoding="utf-8")
    return path


def vectors_dir(root: Path) -> Path:
    return root / ".memrepo" / "index" / "vectors"


def until(check, what: str, timeout: float = 600.0):
    """Poll ``check()`` until it returns something true (the machine may be loaded)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        got = check()
        if got:
            return got
        time.sleep(0.1)
    raise AssertionError(f"timed out waiting for {what}")


def arrays(root: Path) -> dict[str, np.ndarray]:
    """Every array of the vectors' current snapshot (the matrix and each column of its rows)."""
    folder = vectors_dir(root)
    meta = json.loads((folder / "meta.json").read_text())
    snap = meta["snapshot"]
    assert not (folder / f"{snap}.delta.jsonl").exists()
    out = {"vecs": np.load(folder / f"{snap}.vecs.npy")}
    with np.load(folder / f"{snap}.rows.npz") as rows:
        out.update({k: rows[k] for k in rows.files})
    return out


def assert_same_arrays(got: dict[str, np.ndarray], want: dict[str, np.ndarray]) -> None:
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), name


def clean_build(root: Path) -> dict[str, np.ndarray]:
    """The vectors an uninterrupted build writes for this working tree (``reindex --wait``, its
    vectors folder new: nothing reused)."""
    folder = vectors_dir(root)
    shutil.move(folder, folder.with_name("vectors-resumed"))
    proc = cli(root, "reindex", "--wait", "--json")
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout) == {"indexed": N, "vectors": N, "semantic": "hybrid"}
    return arrays(root)


def test_a_background_build_killed_midway_resumes_to_the_vectors_of_a_clean_build(vault, semantic, tmp_path):
    """``memrepo import`` returns with the keywords ready and the vectors building; the build
    held after its first unit (47 %) says so to ``status`` and to a search, is killed there
    (kill -9), and the next search's build encodes only the rest: the snapshot equals an
    uninterrupted build's, array for array."""
    root = vault.root
    held = person_env(**{faults.WAIT_ENV: "vectors-checkpointed"})   # the detached build inherits it
    proc = cli(root, "import", str(notes(tmp_path)), "--json", **held)
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["imported"] == N and data["semantic"] == "building"
    assert f"semantic: building ({N:,} memories)" in proc.stderr and "memrepo status" in proc.stderr

    folder = vectors_dir(root)
    held_at = until(lambda: (p := vector_progress.read(folder)) and p.ready >= embed.UNIT and p, "the first unit")
    assert (held_at.state, held_at.ready, held_at.total, held_at.encoded) == ("encoding", embed.UNIT, N, embed.UNIT)

    found = cli(root, "search", "note 7: the plan for week 7", "--json")   # keywords meanwhile, and how far
    assert found.returncode == 0, found.stderr
    result = json.loads(found.stdout)
    assert result["semantic"] == "building" and result["hits"][0]["id"] == "mem_n00007"
    assert result["semantic_progress"]["ready"] == embed.UNIT and result["semantic_progress"]["total"] == N
    assert f"semantic: building ({embed.UNIT:,} of {N:,})" in found.stderr
    shown = cli(root, "status")
    assert shown.returncode == 0 and f"building ({embed.UNIT:,} of {N:,} memories, 46 %), about" in shown.stdout, shown.stdout
    building = json.loads(cli(root, "status", "--json").stdout)
    assert building["semantic"] == "building" and building["vectors"]["eta_s"] is not None
    assert f"keywords  {N:,} memories, at HEAD" in shown.stdout

    assert "vectors_build" in Path(f"/proc/{held_at.pid}/cmdline").read_text()   # the build this test started
    os.kill(held_at.pid, signal.SIGKILL)
    until(lambda: not layer.vector_store(vault).building(), "the killed build's lock to go")
    status = json.loads(cli(root, "status", "--json").stdout)
    assert status["semantic"] == "interrupted" and status["vectors"]["ready"] == embed.UNIT
    assert "interrupted at 512 of 1,100 memories" in cli(root, "status").stdout
    assert vector_plan.read(folder) is not None and list(folder.glob("encoded-*.partial"))

    resumed = cli(root, "search", "note 8", "--json")   # starts the build again, at once
    assert resumed.returncode == 0 and json.loads(resumed.stdout)["semantic"] == "building", resumed.stderr
    until(lambda: (p := vector_progress.read(folder)) and p.state == "done" and p.pid != held_at.pid, "the resumed build")
    done = vector_progress.read(folder)
    assert (done.kept, done.encoded, done.ready, done.total) == (embed.UNIT, N - embed.UNIT, N, N)
    assert vector_plan.read(folder) is None and not list(folder.glob("encoded-*.partial"))
    status = json.loads(cli(root, "status", "--json").stdout)
    assert status["semantic"] == "hybrid" and status["vectors"]["count"] == N and status["vectors"]["current"]
    resumed_arrays = arrays(root)
    assert_same_arrays(resumed_arrays, clean_build(root))
    after = json.loads(cli(root, "search", "note 7: the plan for week 7", "--json").stdout)
    assert after["semantic"] == "hybrid" and "semantic_progress" not in after


@pytest.mark.parametrize("point", ["vectors-checkpointed:2", "vectors-snapshot-written"])
def test_a_reindex_killed_while_it_builds_resumes_to_a_clean_build(vault, semantic, tmp_path, point):
    """``reindex --wait`` killed (as kill -9) after its second unit, or with every vector
    encoded and the snapshot's files written but not yet in meta.json: the vectors on disk are
    none (never half a snapshot), and the next ``reindex --wait`` encodes only what was not
    kept (nothing, at the second point) and writes a clean build's arrays."""
    root = vault.root
    proc = cli(root, "import", str(notes(tmp_path)), "--no-index")
    assert proc.returncode == 0, proc.stderr
    killed = cli(root, "reindex", "--wait", **{faults.ENV: point})
    assert killed.returncode == faults.EXIT_CODE, killed.stderr
    store = layer.vector_store(vault)
    assert not store.ready() and list(store.dir.glob("encoded-*.partial"))
    kept = vector_progress.read(store.dir)
    assert kept is not None and kept.state == ("encoding" if point.startswith("vectors-checkpointed") else "writing")
    again = cli(root, "reindex", "--wait", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["vectors"] == N, again.stderr
    done = vector_progress.read(store.dir)
    assert done.state == "done" and done.kept + done.encoded == N
    assert done.kept == (2 * embed.UNIT if point.startswith("vectors-checkpointed") else N)
    assert_same_arrays(arrays(root), clean_build(root))


def test_the_background_build_reads_its_plan_not_the_memory_files(vault, semantic, tmp_path, monkeypatch):
    """An import killed once its keyword index is ready and its build planned (none started):
    the build the next search starts reads the plan — no memory file — and writes the vectors
    a build from the files writes."""
    from memrepo.retrieval import vectors_build
    root = vault.root
    killed = cli(root, "import", str(notes(tmp_path)), **{faults.ENV: "vectors-planned"})
    assert killed.returncode == faults.EXIT_CODE, killed.stderr
    plan = vector_plan.read(vectors_dir(root))
    assert plan is not None and plan.kind == "rebuild" and len(plan.items) == N
    assert plan.commit == git(root, "rev-parse", "HEAD").strip()
    reads: list[str] = []
    real = sync.read_worktree
    monkeypatch.setattr(sync, "read_worktree", lambda v, path: reads.append(path) or real(v, path))
    assert vectors_build.main([str(root)]) == 0   # what the detached build runs
    assert reads == [] and layer.vector_store(vault).ready() and vector_plan.read(vectors_dir(root)) is None
    assert_same_arrays(arrays(root), clean_build(root))


def test_a_plan_made_on_other_vectors_is_not_used(vault, semantic, tmp_path):
    """A plan is for the vectors' state it was made on: when another build wrote them since,
    the background build drops it and catches up from git (the vectors follow HEAD)."""
    from memrepo.retrieval import vectors_build
    root = vault.root
    assert cli(root, "import", str(notes(tmp_path, 40))).returncode == 0    # inline: hybrid
    store = layer.vector_store(vault)
    before = store.state()
    stale = vector_plan.Plan("rebuild", store.model, "0" * 40, (), None, ())   # made when there were none
    stale.write(store.dir)
    assert vectors_build.main([str(root)]) == 0
    assert vector_plan.read(store.dir) is None and store.state() == before


def test_small_imports_and_reindexes_build_here_and_status_says_hybrid(vault, semantic, tmp_path):
    root = vault.root
    proc = cli(root, "import", str(notes(tmp_path, 30)), "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout)["semantic"] == "hybrid", proc.stderr
    proc = cli(root, "reindex", "--json")
    assert json.loads(proc.stdout) == {"indexed": 30, "vectors": 30, "semantic": "hybrid"}, proc.stderr
    status = json.loads(cli(root, "status", "--json").stdout)
    assert status["semantic"] == "hybrid" and status["index"] == {
        "commit": git(root, "rev-parse", "HEAD").strip(), "current": True, "memories": 30}
    assert status["vectors"]["count"] == 30 and status["vectors"]["last_build"]["state"] == "done"


def test_reindex_wait_draws_the_vectors_bar_on_a_terminal(vault, semantic, tmp_path):
    import re
    assert cli(vault.root, "import", str(notes(tmp_path, 30)), "--no-index").returncode == 0
    shown = on_a_terminal([*MEMREPO, "--vault", str(vault.root), "reindex", "--wait"], stream="stderr",
                          env=person_env(PYTHONPATH=os.getcwd()))
    bars = [(int(d), int(t)) for d, t in re.findall(r"vectors \[[#.]{30}\] (\d+)/(\d+)", shown)]
    assert bars and bars[-1] == (30, 30), shown


def test_ctrl_c_during_reindex_wait_keeps_the_vectors_encoded_so_far(vault, semantic, tmp_path):
    """Ctrl-C while ``reindex --wait`` encodes (held after its first unit): exit 130, the unit
    kept; the next build encodes only the rest."""
    import subprocess
    root = vault.root
    assert cli(root, "import", str(notes(tmp_path)), "--no-index").returncode == 0
    proc = subprocess.Popen([*MEMREPO, "--vault", str(root), "reindex", "--wait"], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True, env=person_env(**{faults.WAIT_ENV: "vectors-checkpointed"}))
    folder = vectors_dir(root)
    until(lambda: (p := vector_progress.read(folder)) and p.encoded >= embed.UNIT or proc.poll() is not None,
          "the first unit")
    proc.send_signal(signal.SIGINT)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "Traceback" not in err, err
    again = cli(root, "reindex", "--wait", "--json")
    assert again.returncode == 0, again.stderr
    done = vector_progress.read(folder)
    assert (done.kept, done.encoded) == (embed.UNIT, N - embed.UNIT)


def test_a_plan_reads_back_whole_or_not_at_all(tmp_path):
    """A plan is its header and one line per memory: cut short (a disk error, another
    version's file), it is no plan, and the build reads the memory files instead."""
    from memrepo.retrieval.filters import Facets
    from memrepo.retrieval.vectors import Item
    items = tuple(Item(f"m{i}", f"text {i}\nwith a second line 第{i}行", Facets("s", "active", "L1", "event", ("t",), 1700000000 + i))
                  for i in range(5))
    plan = vector_plan.Plan("apply", "model/1", "c" * 40, ("memories/L1/x.md",), ("snap-000001", "b" * 40, []), items, ("gone",))
    plan.write(tmp_path)
    assert vector_plan.read(tmp_path) == plan
    path = tmp_path / vector_plan.FILE
    path.write_bytes(path.read_bytes()[:-40])
    assert vector_plan.read(tmp_path) is None
    path.write_text('{"plan": 99}\n')
    assert vector_plan.read(tmp_path) is None


def test_an_import_into_a_vault_with_vectors_reads_each_new_memory_once(vault, semantic, tmp_path, monkeypatch):
    """The keyword index's update reads the imported files; the vectors' catch-up is given
    those documents and reads none of them again."""
    from memrepo import api
    from memrepo.review import writes as memories
    memories.import_jsonl(vault, notes(tmp_path, 40))
    assert api.catch_up(vault) == ("hybrid", "building the search index (first search in this vault)")
    more = tmp_path / "more.jsonl"
    more.write_text("".join(json.dumps({"id": f"mem_m{i:03d}", "summary": f"another note {i}"}) + "\n"
                            for i in range(25)), encoding="utf-8")
    memories.import_jsonl(vault, more)
    reads: list[str] = []
    real = sync.read_worktree
    monkeypatch.setattr(sync, "read_worktree", lambda v, path: reads.append(path) or real(v, path))
    assert api.catch_up(vault, wait=False) == ("hybrid", None)
    assert len(reads) == 25 == len(set(reads))
    assert layer.vector_store(vault).load().count() == 65
