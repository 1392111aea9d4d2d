"""The vectors' IVF index (memrepo.retrieval.vectors): a wide pool of a large snapshot is
searched through it, everything else exactly, and the answers stay inside the pool.

Synthetic unit vectors, no model: clustered ones as real memories make (each a centre plus
noise) and written straight into snapshots in temporary directories.
"""
from __future__ import annotations

import json

import numpy as np
import pytest
from conftest import index_doc, stored

from memrepo.retrieval import embed, ivf, vector_snapshot, vectors
from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.filters import Filters
from memrepo.retrieval.vectors import VectorStore

N = 3000
ABOVE = 1000  # the tests' ann_above: their snapshots are small


def clustered(n: int, seed: int = 5, centres: int = 120, noise: float = 0.07) -> np.ndarray:
    rng = np.random.default_rng(seed)
    c = rng.standard_normal((centres, embed.DIM)).astype(np.float32)
    v = c[rng.integers(0, centres, n)] / np.sqrt(embed.DIM) + rng.normal(0, noise, (n, embed.DIM)).astype(np.float32)
    return (v / np.linalg.norm(v, axis=1, keepdims=True)).astype(np.float32)


def queries(vecs: np.ndarray, count: int = 40, seed: int = 6) -> np.ndarray:
    """Near existing rows (as a question near its memory), not on them."""
    rng = np.random.default_rng(seed)
    q = vecs[rng.integers(0, len(vecs), count)] + rng.normal(0, 0.03, (count, embed.DIM)).astype(np.float32)
    return (q / np.linalg.norm(q, axis=1, keepdims=True)).astype(np.float32)


def fields(i: int) -> tuple[str, str, str, str]:
    status = "superseded" if i % 10 == 0 else "archived" if i % 10 == 1 else "active"
    return f"s{i % 7}", status, ("L1", "L2")[i % 2], ("event", "fact", "preference")[i % 3]


def write(path, vecs, *, ann_above=ABOVE, commit="c1") -> VectorStore:
    store = VectorStore(path, ann_above=ann_above)
    store._write_snapshot([(f"m{i:05d}", stored(f"h{i}", *fields(i)), vecs[i]) for i in range(len(vecs))],
                          commit, [])
    return store


def exact(vecs, q, k, keep) -> list[str]:
    sims = vecs @ q
    pool = [i for i in range(len(vecs)) if keep(i)]
    return [f"m{i:05d}" for i in sorted(pool, key=lambda i: -sims[i])[:k]]


class Vectors:
    """Delta rows for ``apply``: memories' texts mapped to given vectors."""

    def __init__(self):
        self.by_text: dict[str, np.ndarray] = {}

    def doc(self, mid: str, vec: np.ndarray, subject="s0", status="active", layer="L1", kind="event") -> IndexDoc:
        text = f"text of {mid} {len(self.by_text)}"
        self.by_text[text] = vec
        return index_doc(mid, text, subject, status, layer, kind)

    def batches(self, texts, progress=None):
        yield np.stack([self.by_text[t] for t in texts])


@pytest.fixture(scope="module")
def data():
    return clustered(N)


def test_ann_top_k_finds_nearly_all_of_the_exact_top_k(tmp_path, data, monkeypatch):
    """Recall@10 against the exact scan on clustered vectors (a row's nearest other row at cosine
    ~0.35): 0.9975 here with 7 of 219 lists probed (~3 % of the rows read); a list assignment
    gone wrong gives ~0.03, so 0.95 is the bound. bench/ann.py measures 20k and 100k."""
    monkeypatch.setattr(ivf, "ANN_PROBE_MIN", 1)  # 3 % of the lists, as at 100k rows
    snap = write(tmp_path / "v", data).load()
    assert snap.ivf is not None and snap.uses_ann(Filters.where(statuses={"active"}))
    hits, total = 0, 0
    for q in queries(data):
        got = [mid for mid, _ in snap.top(q, 10, Filters.where(statuses={"active"}))]
        want = exact(data, q, 10, lambda i: fields(i)[1] == "active")
        hits += len(set(got) & set(want))
        total += 10
        # the cosines are exact, and the order is theirs
        assert all(abs(c - float(data[int(m[1:])] @ q)) < 1e-5 for m, c in snap.top(q, 10, Filters.where(statuses={"active"})))
    assert hits / total >= 0.95


def test_every_answer_is_inside_the_pool(tmp_path, data):
    store = write(tmp_path / "v", data)
    docs = Vectors()
    rng = np.random.default_rng(8)
    near = queries(data, 1, seed=9)[0]
    # delta: a few rows moved next to the query (inside and outside the filters), a few deleted
    upserts = [docs.doc("m00003", near, subject="s3", status="active", layer="L2", kind="event"),
               docs.doc("m00004", near, subject="s3", status="superseded", layer="L2", kind="event"),
               docs.doc("new01", near, subject="s3", status="active", layer="L1", kind="fact"),
               docs.doc("new02", near, subject="s9", status="active", layer="L1", kind="fact")]
    top_before = [m for m, _ in store.load().top(near, 5, Filters.where(statuses={"active"}))]
    store.apply(upserts, top_before[:3], docs, commit="c2")
    snap = VectorStore(tmp_path / "v", ann_above=ABOVE).load()
    live = {mid: meta for mid, meta, _ in snap.items()}
    assert not set(top_before[:3]) & set(live)
    for q in [near, *queries(data, 5, seed=10)]:
        for flt in ({"statuses": {"active"}}, {"statuses": {"active", "archived"}}, {"statuses": None},
                    {"statuses": {"active"}, "layer": "L1"}, {"statuses": {"active"}, "kind": "fact"},
                    {"statuses": {"active"}, "subject": "s3"}, {"statuses": {"superseded"}}):
            got = snap.top(q + rng.normal(0, 0.001, embed.DIM).astype(np.float32), 20, Filters.where(**flt))
            assert len(got) == 20
            for mid, _ in got:
                meta = live[mid]
                assert flt["statuses"] is None or meta.facets.status in flt["statuses"]
                assert all(getattr(meta.facets, f) == flt[f] for f in ("layer", "kind", "subject") if f in flt)
    # the delta is exact and wins over the snapshot's row of the same memory
    got = [m for m, _ in snap.top(near, 3, Filters.where(statuses={"active"}))]
    assert {"m00003", "new01", "new02"} == set(got)
    assert "m00004" not in [m for m, _ in snap.top(near, 50, Filters.where(statuses={"active"}))]


def test_the_delta_seen_by_a_loaded_state_follows_each_change(tmp_path, data):
    """The delta is scored as one block, rebuilt when this process changes it: an upsert, then
    its delete, then a move to another subject, each seen by the next query of the same state."""
    store = write(tmp_path / "v", data)
    docs = Vectors()
    near = queries(data, 1, seed=12)[0]
    first = store.load()
    store.apply([docs.doc("new01", near, subject="s3")], [], docs, commit="c2")
    snap = store.load()
    assert snap is first  # the loaded state is updated in place
    assert snap.top(near, 1, Filters.where(statuses={"active"}))[0][0] == "new01"
    assert snap.top(near, 1, Filters.where(statuses={"active"}, subject="s3"))[0][0] == "new01"
    store.apply([docs.doc("new01", near, subject="s4")], [], docs, commit="c3")
    assert store.load().top(near, 1, Filters.where(statuses={"active"}, subject="s4"))[0][0] == "new01"
    assert "new01" not in [m for m, _ in store.load().top(near, 30, Filters.where(statuses={"active"}, subject="s3"))]
    store.apply([], ["new01"], docs, commit="c4")
    assert "new01" not in [m for m, _ in store.load().top(near, 30, Filters.where(statuses={"active"}))]
    vectors._LOADED.clear()
    fresh = VectorStore(tmp_path / "v", ann_above=ABOVE).load()
    assert fresh is not first and "new01" not in [m for m, _ in fresh.top(near, 30, Filters.where(statuses=None))]


def test_the_threshold_and_a_narrow_pool_keep_the_exact_scan(tmp_path, data):
    small = write(tmp_path / "small", data, ann_above=N + 1).load()
    assert small.ivf is None and not (tmp_path / "small" / "snap-000001.ivf.npy").exists()
    assert not small.uses_ann(Filters.where(statuses={"active"}))
    big = write(tmp_path / "big", data).load()
    assert big.uses_ann(Filters.where(statuses={"active"})) and big.uses_ann(Filters.where(layer="L1"))       # 80 %, 50 % of the rows
    assert not big.uses_ann(Filters.where(subject="s3")) and not big.uses_ann(Filters.where(statuses={"archived"}))  # 1/7, 1/10
    for q in queries(data, 10):
        want = exact(data, q, 10, lambda i: fields(i)[0] == "s3" and fields(i)[1] == "active")
        assert [m for m, _ in big.top(q, 10, Filters.where(subject="s3", statuses={"active"}))] == want
        assert [m for m, _ in small.top(q, 10, Filters.where(statuses={"active"}))] == \
            exact(data, q, 10, lambda i: fields(i)[1] == "active")
    # the threshold is read per store: the same loaded snapshot searched with a higher one is exact
    assert not VectorStore(tmp_path / "big", ann_above=N + 1).load().uses_ann(Filters.where(statuses={"active"}))
    assert VectorStore(tmp_path / "big", ann_above=0).ann_above == vector_snapshot.ANN_ABOVE


@pytest.mark.parametrize("damage", ["missing", "garbage", "truncated", "fewer lists", "wrong width", "wrong type"])
def test_a_missing_or_broken_index_searches_exactly(tmp_path, data, damage):
    write(tmp_path / "v", data)
    path = tmp_path / "v" / "snap-000001.ivf.npy"
    if damage == "missing":
        path.unlink()
    elif damage == "garbage":
        path.write_bytes(b"not an npy at all")
    elif damage == "truncated":
        path.write_bytes(path.read_bytes()[:5000])
    else:
        centroids = np.load(path)
        np.save(path, centroids[:-1] if damage == "fewer lists" else centroids[:, :100].copy()
                if damage == "wrong width" else centroids.astype(np.float64))
    vectors._LOADED.clear()
    snap = VectorStore(tmp_path / "v", ann_above=ABOVE).load()
    assert snap.ivf is None and not snap.uses_ann(Filters.where(statuses={"active"}))
    for q in queries(data, 5):
        assert [m for m, _ in snap.top(q, 10, Filters.where(statuses={"active"}))] == \
            exact(data, q, 10, lambda i: fields(i)[1] == "active")


def test_a_snapshot_with_an_index_keeps_each_list_in_one_run_of_the_matrix(tmp_path, data):
    """Format 2: the matrix grouped by list (a query multiplies runs in place, no copy), each
    id mapped to its row; a snapshot under the threshold stays format 1, sorted by id."""
    store = write(tmp_path / "v", data)
    assert store.meta()["format"] == vectors.FORMAT_IVF
    snap = store.load()
    matrix = np.load(tmp_path / "v" / "snap-000001.vecs.npy")
    labels = snap.ivf.labels()
    for j in range(len(snap.ivf.centroids)):
        a, b = snap.ivf.offsets[j], snap.ivf.offsets[j + 1]
        assert np.array_equal(matrix[a:b], data[snap.ivf.order[a:b]]) and set(labels[snap.ivf.order[a:b]]) <= {j}
    assert all(np.array_equal(snap.vector(f"m{i:05d}"), data[i]) for i in range(0, N, 97))
    assert np.array_equal(snap.find_hash("h42"), data[42]) and np.array_equal(snap.cache()["h43"], data[43])
    assert all(np.array_equal(v, data[int(m[1:])]) for m, _, v in list(snap.items())[:200])
    small = write(tmp_path / "small", data[:500])
    assert small.meta()["format"] == vectors.FORMAT
    assert np.array_equal(np.load(tmp_path / "small" / "snap-000001.vecs.npy"), data[:500])


def test_an_index_beside_a_format_1_snapshot_is_ignored(tmp_path, data):
    """A format 1 matrix is sorted by id: an index file beside it (an earlier build's) is never read."""
    write(tmp_path / "v", data)
    write(tmp_path / "old", data, ann_above=N + 1)
    (tmp_path / "old" / "snap-000001.ivf.npy").write_bytes((tmp_path / "v" / "snap-000001.ivf.npy").read_bytes())
    snap = VectorStore(tmp_path / "old", ann_above=ABOVE).load()
    assert snap.ivf is None and snap.matrix_row is None
    q = queries(data, 1)[0]
    assert [m for m, _ in snap.top(q, 10, Filters.where(statuses={"active"}))] == exact(data, q, 10, lambda i: fields(i)[1] == "active")


def test_a_compaction_keeps_the_centroids_and_writes_the_new_snapshots_index(tmp_path, data, monkeypatch):
    monkeypatch.setattr(vectors, "COMPACT_AT", 5)
    store = write(tmp_path / "v", data)
    first = store.load().ivf
    docs = Vectors()
    near = queries(data, 1, seed=11)[0]
    store.apply([docs.doc(f"add{i}", near) for i in range(3)], ["m00002"], docs, commit="c2")
    assert store.meta()["snapshot"] == "snap-000001"
    store.apply([docs.doc("add3", near), docs.doc("m00005", near)], ["m00012"], docs, commit="c3")  # compacts
    assert store.meta()["snapshot"] == "snap-000002" and store.commit() == "c3"
    assert sorted(p.name for p in (tmp_path / "v").iterdir() if p.name.startswith("snap-")) == \
        ["snap-000002.ivf.npy", "snap-000002.rows.npz", "snap-000002.vecs.npy"]
    vectors._LOADED.clear()
    snap = VectorStore(tmp_path / "v", ann_above=ABOVE).load()
    assert snap.ivf is not None and not snap.delta and len(snap.ids) == N + 4 - 2
    assert np.array_equal(snap.ivf.centroids, first.centroids) and snap.ivf.trained_on == N
    # rows the old snapshot had unchanged stay in their list; changed and new rows are assigned
    old_labels, labels = first.labels(), snap.ivf.labels()
    row = {str(m): i for i, m in enumerate(snap.ids)}
    assert all(labels[row[f"m{i:05d}"]] == old_labels[i] for i in range(N) if i not in (2, 5, 12))
    assert labels[row["add0"]] == int(np.argmax(first.centroids @ near))
    got = [m for m, _ in snap.top(near, 5, Filters.where(statuses={"active"}))]
    assert set(got) == {"add0", "add1", "add2", "add3", "m00005"}


def test_a_full_rebuild_trains_anew_and_is_deterministic(tmp_path, data):
    a = write(tmp_path / "a", data).load().ivf
    b = write(tmp_path / "b", data).load().ivf
    assert a is not None and b is not None
    assert np.array_equal(a.centroids, b.centroids) and np.array_equal(a.order, b.order)
    assert np.array_equal(a.offsets, b.offsets)
    assert (tmp_path / "a" / "snap-000001.vecs.npy").read_bytes() == (tmp_path / "b" / "snap-000001.vecs.npy").read_bytes()
    assert len(a.centroids) == round(ivf.ANN_LISTS * np.sqrt(N))
    docs = Vectors()
    store = VectorStore(tmp_path / "a", ann_above=ABOVE)
    store.rebuild([docs.doc(f"m{i:05d}", data[i]) for i in range(N - 500)], docs, commit="c2")
    rebuilt = store.load().ivf
    assert rebuilt is not None and rebuilt.trained_on == N - 500 and len(rebuilt.centroids) == round(ivf.ANN_LISTS * np.sqrt(N - 500))


def test_a_crash_before_meta_flips_leaves_the_old_snapshot_searchable(tmp_path, data, monkeypatch):
    store = write(tmp_path / "v", data)
    q = queries(data, 1)[0]
    before = store.load().top(q, 10, Filters.where(statuses={"active"}))

    def crash(path, payload):
        raise OSError("disk full")  # the new snapshot's files are written, meta.json is not

    monkeypatch.setattr(vectors, "_atomic_write", crash)
    with pytest.raises(OSError):
        store._write_snapshot([(f"x{i:05d}", stored(f"g{i}", *fields(i)), data[i]) for i in range(N)], "c2", [])
    monkeypatch.undo()
    assert (tmp_path / "v" / "snap-000002.ivf.npy").exists()
    assert json.loads((tmp_path / "v" / "meta.json").read_text())["snapshot"] == "snap-000001"
    vectors._LOADED.clear()
    snap = VectorStore(tmp_path / "v", ann_above=ABOVE).load()
    assert snap.ivf is not None and snap.top(q, 10, Filters.where(statuses={"active"})) == before
    # the next write reuses the name and must not pick up the crashed write's index
    write(tmp_path / "v", data[:ABOVE - 1], commit="c3")
    assert not (tmp_path / "v" / "snap-000002.ivf.npy").exists()
    assert VectorStore(tmp_path / "v", ann_above=ABOVE).load().ivf is None


def test_ann_above_is_a_checked_config_value(tmp_path):
    from memrepo import config
    assert config.check({"search": {"ann_above": 50000}}) == ([], [])
    problems, _ = config.check({"search": {"ann_above": "many"}})
    assert problems and "search.ann_above" in str(problems[0])
    problems, _ = config.check({"search": {"ann_above": -1}})
    assert problems and "at least 0" in str(problems[0])


def test_search_reads_ann_above_from_the_config_and_answers_through_the_index(vault, monkeypatch, tmp_path_factory):
    """End to end with the model: ``[search] ann_above`` reaches the vectors' store, the inline
    build writes a snapshot with an index, and a question finds its memory through it."""
    from memrepo.retrieval import search, semantic
    from memrepo.review import writes as memories
    assert semantic.vector_store(vault).ann_above == vector_snapshot.ANN_ABOVE  # absent: the default
    if not embed.available():
        pytest.skip("the embedding model package is not installed")
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.mktemp("model-cache")))
    config = vault.root / ".memrepo" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[search]\nann_above = 4\n", encoding="utf-8")
    vault.refresh()
    texts = {"dog": "We adopted a golden retriever puppy named Max last spring.",
             "tax": "The quarterly tax filing is due on the fifteenth of April.",
             "piano": "She started learning the piano at six and practises an hour every day.",
             "trip": "For the national holiday the whole family drove to the seaside for two nights.",
             "pool": "The orders database connection pool is limited to twenty connections."}
    for mid, text in texts.items():
        memories.add(vault, {"id": mid, "subject": "proj", "summary": text}, text)
    result, _ = search.search(vault, "我们家去年春天领养的小狗叫什么名字？", limit=3)
    store = semantic.vector_store(vault)
    assert store.ann_above == 4 and store.meta()["format"] == vectors.FORMAT_IVF
    snap = store.load()
    assert snap.ivf is not None and snap.uses_ann(Filters.where(statuses={"active"}))
    assert result.semantic == "hybrid" and result.hits[0].id == "dog"


def tagged(i: int) -> tuple[tuple[str, ...], int | None]:
    """Row i's tags (a common one of 13, "rare" on every 97th row) and creation time (none on every 11th)."""
    return tuple(sorted({f"t{i % 13}"} | ({"rare"} if i % 97 == 0 else set()))), \
        None if i % 11 == 0 else 1_700_000_000 + 3600 * i


def write_tagged(path, vecs) -> VectorStore:
    store = VectorStore(path, ann_above=ABOVE)
    store._write_snapshot([(f"m{i:05d}", stored(f"h{i}", *fields(i), *tagged(i)), vecs[i]) for i in range(len(vecs))],
                          "c1", [])
    return store


def test_a_tag_or_a_date_filter_searches_its_own_pool(tmp_path, data):
    """Tag and date filters are applied to the rows in numpy, as subject and status are: the
    nearest memories *within* the tag's or the date's pool, not the overall nearest filtered
    afterwards (which holds none of a rare tag's memories)."""
    store = write_tagged(tmp_path / "v", data)
    snap = store.load()
    since = 1_700_000_000 + 3600 * 500
    in_pool = {
        "rare": lambda i: "rare" in tagged(i)[0],
        "t3": lambda i: "t3" in tagged(i)[0],
        "since": lambda i: tagged(i)[1] is not None and tagged(i)[1] >= since,
        "rare since": lambda i: "rare" in tagged(i)[0] and tagged(i)[1] is not None and tagged(i)[1] >= since,
    }
    args = {"rare": {"tag": "rare"}, "t3": {"tag": "t3"}, "since": {"since": since},
            "rare since": {"tag": "rare", "since": since}}
    assert snap.uses_ann(Filters.where(statuses={"active"}, since=since))          # 5/6 of the rows: the IVF index
    assert not snap.uses_ann(Filters.where(statuses={"active"}, tag="rare"))       # 31 rows: exact
    for q in queries(data, 10):
        # filtering the overall nearest 30 afterwards would leave fewer than 10 of the rare tag
        overall = [m for m, _ in snap.top(q, 30, Filters.where(statuses={"active"}))]
        assert len([m for m in overall if "rare" in tagged(int(m[1:]))[0]]) < 10
        for name, keep in in_pool.items():
            got = [m for m, _ in snap.top(q, 10, Filters.where(statuses={"active"}, **args[name]))]
            want = exact(data, q, 10, lambda i, keep=keep: keep(i) and fields(i)[1] == "active")
            if name == "since":   # the IVF index: inside the pool, nearly the exact top
                assert all(in_pool["since"](int(m[1:])) for m in got) and len(set(got) & set(want)) >= 8
            else:
                assert got == want and len(got) == 10, name
    assert snap.top(queries(data, 1)[0], 5, Filters.where(tag="no-such-tag")) == []
    # the delta carries tags and dates, and a compaction keeps them
    docs = Vectors()
    near = queries(data, 1, seed=21)[0]
    moved = docs.doc("m00097", near)                   # was "rare": now without tags
    fresh = index_doc("new01", "a new rare memory", "s0", "active", "L1", "event", ("rare",), since + 1)
    docs.by_text[fresh.body] = near
    store.apply([moved, fresh], [], docs, commit="c2")
    snap = store.load()
    got = [m for m, _ in snap.top(near, 3, Filters.where(statuses={"active"}, tag="rare", since=since))]
    assert got[0] == "new01" and "m00097" not in [m for m, _ in snap.top(near, 40, Filters.where(tag="rare"))]
    store._write_snapshot(sorted(snap.items(), key=lambda e: e[0]), "c3", [], previous=snap)
    vectors._LOADED.clear()
    again = store.load()
    assert [m for m, _ in again.top(near, 3, Filters.where(statuses={"active"}, tag="rare", since=since))] == got
    assert dict((m, meta) for m, meta, _ in again.items())["m00194"].facets.tags == tagged(194)[0]


def test_vectors_of_the_format_without_tags_are_reused_not_encoded_again(tmp_path, data):
    store = write(tmp_path / "v", data[:50])
    meta = json.loads((tmp_path / "v" / "meta.json").read_text())
    with np.load(tmp_path / "v" / f"{meta['snapshot']}.rows.npz") as z:   # as the older format wrote it
        arrays = {k: z[k] for k in z.files if k not in ("tag_offsets", "tag_codes", "v_tag", "created")}
    np.savez(tmp_path / "v" / f"{meta['snapshot']}.rows.npz", **arrays)
    (tmp_path / "v" / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    vectors._LOADED.clear()
    store = VectorStore(tmp_path / "v", ann_above=ABOVE)
    assert not store.ready() and store.load().count() == 0   # not searched: it has no tags or dates

    class NoEncoding:
        def batches(self, texts, progress=None):
            raise AssertionError(f"{len(texts)} texts encoded again")
    texts = {f"h{i}": f"text {i}" for i in range(50)}
    docs = [index_doc(f"m{i:05d}", texts[f"h{i}"], *fields(i), *tagged(i)) for i in range(50)]
    # the rebuild finds each text's vector by its hash: make the old rows' hashes those of the texts
    arrays["hashes"] = np.array([embed.text_hash(texts[f"h{i}"]) for i in range(50)], dtype=str)
    np.savez(tmp_path / "v" / f"{meta['snapshot']}.rows.npz", **arrays)
    vectors._LOADED.clear()
    assert store.rebuild(docs, NoEncoding(), commit="c2") == 50
    snap = store.load()
    assert store.ready() and snap.count() == 50
    assert [m for m, _ in snap.top(data[0], 3, Filters.where(tag="rare"))] == ["m00000"]


class Batched:
    """An encoder of fixed vectors by text, ``size`` texts a batch, counting what it encodes;
    with ``dies_after`` batches it raises (a build killed midway)."""

    def __init__(self, by_text: dict[str, np.ndarray], size: int = 10, dies_after: int | None = None):
        self.by_text, self.size, self.dies_after = by_text, size, dies_after
        self.unit = size   # as the real encoder's units: a build resumes a unit at a time
        self.encoded: list[str] = []

    def batches(self, texts, progress=None):
        for n, start in enumerate(range(0, len(texts), self.size)):
            if n == self.dies_after:
                raise KeyboardInterrupt("killed")
            chunk = texts[start:start + self.size]
            self.encoded += chunk
            yield np.stack([self.by_text[t] for t in chunk])


def test_a_killed_build_resumes_from_the_vectors_it_kept(tmp_path, data):
    """A build keeps each unit's vectors as they come (encoded-<model>.partial): killed after
    three units, the next build encodes only the rest, its snapshot is the one a build never
    interrupted writes (bit for bit), and the partial file is gone. A unit with a record whose
    checksum fails or a torn last record is encoded again whole, never used."""
    by_text = {f"text {i}": data[i] for i in range(95)}
    docs = [index_doc(f"m{i:05d}", f"text {i}", *fields(i)) for i in range(95)]
    clean = VectorStore(tmp_path / "clean")
    clean.rebuild(docs, Batched(by_text), commit="c1")

    store = VectorStore(tmp_path / "v")
    with pytest.raises(KeyboardInterrupt):
        store.rebuild(docs, Batched(by_text, dies_after=3), commit="c1")
    assert not store.ready()
    [partial] = (tmp_path / "v").glob("encoded-*.partial")
    assert partial.stat().st_size == 30 * vectors._RECORD
    resumed = Batched(by_text)
    assert store.rebuild(docs, resumed, commit="c1") == 95
    assert resumed.encoded == [f"text {i}" for i in range(30, 95)]
    assert not partial.exists()
    got, want = store.load(), clean.load()
    assert np.array_equal(got.vecs, want.vecs) and list(got.ids) == list(want.ids)

    # damaged records: one with a flipped byte, the last one torn
    with pytest.raises(KeyboardInterrupt):
        VectorStore(tmp_path / "w").rebuild(docs, Batched(by_text, dies_after=5), commit="c1")
    [partial] = (tmp_path / "w").glob("encoded-*.partial")
    raw = bytearray(partial.read_bytes())
    raw[5 * vectors._RECORD + 100] ^= 0x40              # record 5's vector (unit 0)
    partial.write_bytes(bytes(raw[:-7]))                 # record 49 torn (unit 4)
    again = Batched(by_text)
    VectorStore(tmp_path / "w").rebuild(docs, again, commit="c1")
    assert again.encoded == [f"text {i}" for i in [*range(0, 10), *range(40, 95)]]
    assert np.array_equal(VectorStore(tmp_path / "w").load().vecs, want.vecs)


def test_a_build_killed_twice_keeps_what_each_encoded(tmp_path, data):
    """A torn last record is cut off before the next build appends: killed again, that build's
    vectors are still read back (misaligned, every one of them would fail its checksum)."""
    by_text = {f"text {i}": data[i] for i in range(95)}
    docs = [index_doc(f"m{i:05d}", f"text {i}", *fields(i)) for i in range(95)]
    store = VectorStore(tmp_path / "v")
    with pytest.raises(KeyboardInterrupt):
        store.rebuild(docs, Batched(by_text, dies_after=3), commit="c1")
    [partial] = (tmp_path / "v").glob("encoded-*.partial")
    partial.write_bytes(partial.read_bytes()[:-100])    # record 29 torn
    second = Batched(by_text, dies_after=3)
    with pytest.raises(KeyboardInterrupt):
        store.rebuild(docs, second, commit="c1")
    assert second.encoded == [f"text {i}" for i in range(20, 50)]   # from unit 2, kept in part
    third = Batched(by_text)
    store.rebuild(docs, third, commit="c1")
    assert third.encoded == [f"text {i}" for i in range(50, 95)]
    clean = VectorStore(tmp_path / "clean")
    clean.rebuild(docs, Batched(by_text), commit="c1")
    assert np.array_equal(store.load().vecs, clean.load().vecs)


def test_a_snapshot_removes_a_killed_builds_partial_file(tmp_path, data):
    """A reindex killed on a vault whose vectors stay readable leaves its partial file; the next
    snapshot written (a compaction of the delta) removes it."""
    by_text = {f"text {i}": data[i] for i in range(40)}
    docs = [index_doc(f"m{i:05d}", f"text {i}", *fields(i)) for i in range(40)]
    store = VectorStore(tmp_path / "v")
    store.rebuild(docs[:20], Batched(by_text), commit="c1")
    with pytest.raises(KeyboardInterrupt):
        store.rebuild(docs, Batched(by_text, dies_after=1), commit="c2")
    assert store.ready() and list((tmp_path / "v").glob("encoded-*.partial"))
    store._write_snapshot(sorted(store.load().items(), key=lambda e: e[0]), "c3", [])
    assert not list((tmp_path / "v").glob("encoded-*.partial"))


def test_a_partial_file_of_another_model_is_not_used(tmp_path, data):
    by_text = {f"text {i}": data[i] for i in range(30)}
    docs = [index_doc(f"m{i:05d}", f"text {i}", *fields(i)) for i in range(30)]
    with pytest.raises(KeyboardInterrupt):
        VectorStore(tmp_path / "v", model="other-model/1").rebuild(docs, Batched(by_text, dies_after=2), commit="c1")
    assert len(list((tmp_path / "v").glob("encoded-*.partial"))) == 1
    enc = Batched(by_text)
    VectorStore(tmp_path / "v").rebuild(docs, enc, commit="c1")
    assert len(enc.encoded) == 30 and not list((tmp_path / "v").glob("encoded-*.partial"))


def _docs(data, n, edited=()):
    """Memories m00000.. with texts mapped to rows of ``data`` (``edited``: ids whose text and vector changed)."""
    by_text, docs = {}, []
    for i in range(n):
        mid = f"m{i:05d}"
        text, vec = (f"edited {i}", data[n + i]) if mid in edited else (f"text {i}", data[i])
        by_text[text] = vec
        docs.append(index_doc(mid, text, *fields(i)))
    return by_text, docs


def test_a_new_snapshot_never_inherits_an_old_delta(tmp_path, data):
    """meta.json lost (a hand delete, a torn write): the rebuild's snapshot must not pick up the
    previous snapshot's delta, whose lines would put an edited memory's old vector back."""
    by_text, docs = _docs(data, 20)
    store = VectorStore(tmp_path / "v")
    store.rebuild(docs, Batched(by_text), commit="c1")
    store.apply([index_doc("m00003", "moved 3", *fields(3))], [], Batched({"moved 3": data[60]}), commit="c2")
    assert list((tmp_path / "v").glob("*.delta.jsonl"))
    (tmp_path / "v" / "meta.json").write_text("")
    by_text, docs = _docs(data, 20, edited={"m00003"})
    VectorStore(tmp_path / "v").rebuild(docs, Batched(by_text), commit="c3")
    vectors._LOADED.clear()
    fresh = VectorStore(tmp_path / "v").load()
    assert fresh.hash_of("m00003") == embed.text_hash("edited 3") and not fresh.delta


def test_a_torn_delta_line_does_not_swallow_the_next_change(tmp_path, data):
    """An append killed midway leaves a line without its newline (meta.json not flipped): the next
    append starts on a line of its own, so every later change is read back."""
    by_text, docs = _docs(data, 10)
    store = VectorStore(tmp_path / "v")
    store.rebuild(docs, Batched(by_text), commit="c1")
    enc = Batched({f"new {i}": data[100 + i] for i in range(3)})
    store.apply([index_doc("n0", "new 0", *fields(0))], [], enc, commit="c2")
    [delta] = (tmp_path / "v").glob("*.delta.jsonl")
    with open(delta, "ab") as fh:
        fh.write(delta.read_bytes()[:150])   # a torn append
    store.apply([index_doc("n1", "new 1", *fields(1))], [], enc, commit="c3")
    store.apply([index_doc("n2", "new 2", *fields(2))], [], enc, commit="c4")
    vectors._LOADED.clear()
    fresh = VectorStore(tmp_path / "v").load()
    assert all(fresh.vector(f"n{i}") is not None for i in range(3))
    assert fresh.delta_lines == 3


def test_an_unchanged_memory_adds_nothing_to_the_delta(tmp_path, data):
    """A memory edited but not committed is handed to every catch-up: while its text and fields
    are those stored, nothing is appended, and meta.json is rewritten only when the commit or the
    list of uncommitted files moves (each rewrite makes every other process reload)."""
    by_text, docs = _docs(data, 10)
    store = VectorStore(tmp_path / "v")
    store.rebuild(docs, Batched(by_text), commit="c1")
    edited = index_doc("m00002", "edited 2", *fields(2))
    enc = Batched({"edited 2": data[50]})
    store.apply([edited], [], enc, commit="c1", dirty=["memories/m00002.md"])
    [delta] = (tmp_path / "v").glob("*.delta.jsonl")
    size, meta = delta.stat().st_size, (tmp_path / "v" / "meta.json").stat()
    for _ in range(3):
        store.apply([edited, docs[4]], ["gone"], enc, commit="c1", dirty=["memories/m00002.md"])
    assert delta.stat().st_size == size
    assert (tmp_path / "v" / "meta.json").stat().st_ino == meta.st_ino
    store.apply([edited], [], enc, commit="c2", dirty=["memories/m00002.md"])
    assert delta.stat().st_size == size and store.commit() == "c2"
    store.apply([index_doc("m00002", "edited 2", "other", *fields(2)[1:])], [], enc, commit="c2")
    assert delta.stat().st_size > size and store.load().delta_lines == 2


def _truncate_vecs(d):
    [f] = d.glob("snap-*.vecs.npy")
    with open(f, "r+b") as fh:
        fh.truncate(500)


def _garbage_rows(d):
    [f] = d.glob("snap-*.rows.npz")
    f.write_bytes(b"garbage\n")


def _no_rows(d):
    [f] = d.glob("snap-*.rows.npz")
    f.unlink()


def _rows_of_another_length(d):
    [f] = d.glob("snap-*.rows.npz")
    with np.load(f) as z:
        arrays = {k: z[k] for k in z.files}
    arrays["ids"] = arrays["ids"][:-1]
    with open(f, "wb") as fh:
        np.savez(fh, **arrays)


@pytest.mark.parametrize("damage", [_truncate_vecs, _garbage_rows, _no_rows, _rows_of_another_length])
def test_unreadable_vectors_raise_one_error_and_a_rebuild_repairs_them(tmp_path, data, damage):
    """Vectors are derived state: a damaged snapshot is one VectorsCorrupt (not numpy's own
    errors) and a rebuild writes them anew, reusing what a killed build kept (nothing of the
    unreadable snapshot)."""
    by_text, docs = _docs(data, 40)
    store = VectorStore(tmp_path / "v")
    store.rebuild(docs, Batched(by_text), commit="c1")
    damage(tmp_path / "v")
    vectors._LOADED.clear()
    with pytest.raises(vectors.VectorsCorrupt):
        VectorStore(tmp_path / "v").load()
    with pytest.raises(KeyboardInterrupt):
        VectorStore(tmp_path / "v").rebuild(docs, Batched(by_text, dies_after=1), commit="c2")
    again = Batched(by_text)
    assert VectorStore(tmp_path / "v").rebuild(docs, again, commit="c2") == 40
    assert again.encoded == [f"text {i}" for i in range(10, 40)]
    fresh = VectorStore(tmp_path / "v").load()
    assert fresh.count() == 40 and fresh.top(data[7], 1)[0][0] == "m00007"


def test_a_killed_bulk_apply_resumes_with_the_vectors_an_uninterrupted_one_writes(tmp_path, data):
    """A bulk change (more than a unit of new texts) appended to built vectors is encoded as a
    build is: killed after two units, the next apply of the same change encodes only the rest;
    the vectors equal an uninterrupted apply's, its progress is in build.json, and the partial
    file is gone once they are in the delta."""
    from memrepo.retrieval import vector_progress
    by_text = {f"text {i}": data[i] for i in range(120)}
    base = [index_doc(f"m{i:05d}", f"text {i}", *fields(i)) for i in range(20)]
    change = [index_doc(f"m{i:05d}", f"text {i}", *fields(i)) for i in range(20, 120)]
    stores = {}
    for name in ("clean", "killed"):
        stores[name] = VectorStore(tmp_path / name)
        stores[name].rebuild(base, Batched(by_text), commit="c1")
    assert stores["clean"].apply(change, [], Batched(by_text), commit="c2") == 100
    with pytest.raises(KeyboardInterrupt):
        stores["killed"].apply(change, [], Batched(by_text, dies_after=2), commit="c2")
    assert stores["killed"].commit() == "c1" and list((tmp_path / "killed").glob("encoded-*.partial"))
    resumed = Batched(by_text)
    assert stores["killed"].apply(change, [], resumed, commit="c2") == 100
    assert resumed.encoded == [f"text {i}" for i in range(40, 120)]
    got, want = stores["killed"].load(), stores["clean"].load()
    assert sorted(got.items(), key=lambda e: e[0]) and all(
        np.array_equal(v, want.vector(mid)) and meta == want.meta_of(mid) for mid, meta, v in got.items())
    assert got.count() == want.count() == 120 and stores["killed"].commit() == "c2"
    assert not list((tmp_path / "killed").glob("encoded-*.partial"))
    done = vector_progress.read(tmp_path / "killed")
    assert (done.state, done.total, done.ready, done.kept, done.encoded) == ("done", 120, 120, 20, 80)
