"""Search end to end on real vaults: the index follows git by itself (memrepo writes, plain
git commits, revert, merge, checkout, uncommitted edits, deletions), survives a lost or
corrupt index, reads Chinese and free text, filters by status, and serves the CLI, batches,
heat and concurrent readers while a writer commits."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
from conftest import git
from typer.testing import CliRunner

from memrepo.cli.app import app, main
from memrepo.errors import MemrepoError
from memrepo.retrieval import search, sync, warm
from memrepo.review import proposals
from memrepo.review import writes as memories
from memrepo.review.writes import build
from memrepo.store.vault import render_bytes

runner = CliRunner()


def add(vault, memory_id, summary, body="", **fields):
    return memories.add(vault, {"id": memory_id, "subject": fields.pop("subject", "proj"), "summary": summary,
                                **fields}, body)


def ids(vault, query, **filters) -> list[str]:
    result, _report = search.search(vault, query, **filters)
    return [h.id for h in result.hits]


def write_by_hand(root: Path, memory_id: str, summary: str, body: str = "", **fields) -> str:
    """A valid memory file written the way a person (or another tool) would, not via memrepo."""
    memory = build({"id": memory_id, "subject": "proj", "summary": summary, "created": "2026-03-02T10:00:00+00:00",
                    "risk": "low", "risk_reason": "hand-written", **fields}, body, author="Test Person")
    target = root / memory.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(render_bytes(memory))
    return memory.path


def replace_in(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text
    path.write_text(text.replace(old, new), encoding="utf-8")


@pytest.fixture
def seeded(vault):
    add(vault, "mem_pool", "database pool size is 20", "The orders service uses a pool of 20 connections.")
    add(vault, "mem_cache", "cache eviction uses LRU", "The session cache evicts least recently used keys.")
    return vault


# ------------------------------------------------------------------ the index follows git

def test_memrepo_add_is_seen_without_reindex(seeded):
    assert ids(seeded, "kafka partitions") == []
    add(seeded, "mem_kafka", "kafka topic has 12 partitions", "Orders topic: 12 partitions.")
    assert ids(seeded, "kafka partitions")[0] == "mem_kafka"


def test_many_changed_files_rebuild_the_index_instead_of_updating_it(seeded, monkeypatch):
    # a bulk import (or a checkout of another history) changes most memory files at once
    ids(seeded, "pool")
    monkeypatch.setattr(sync, "REBUILD_CHANGED", 3)
    for i in range(3):
        write_by_hand(seeded.root, f"mem_hand{i}", f"hand note {i} about zeppelins")
    git(seeded.root, "add", "-A")
    git(seeded.root, "commit", "-qm", "three notes by hand")
    result, report = search.search(seeded, "zeppelins")
    assert report.rebuilt and report.notice == "3 memory files changed: search index rebuilt"
    assert sorted(h.id for h in result.hits) == ["mem_hand0", "mem_hand1", "mem_hand2"]
    assert ids(seeded, "database pool") == ["mem_pool"]
    add(seeded, "mem_one", "one more zeppelin")   # one file: updated, not rebuilt
    result, report = search.search(seeded, "zeppelin")
    assert not report.rebuilt and "mem_one" in [h.id for h in result.hits]
    # deleted in bulk: gone from the index and from the recall statistics
    search.search(seeded, "zeppelins", session="s1", log_recalls=True)
    assert "mem_hand0" in warm.stats(seeded).recall_summary()
    git(seeded.root, "rm", "-q", *(seeded.catalog().path_of(f"mem_hand{i}") for i in range(3)))
    git(seeded.root, "commit", "-qm", "drop the hand notes")
    result, report = search.search(seeded, "zeppelins")
    assert report.rebuilt and [h.id for h in result.hits] == ["mem_one"]
    assert "mem_hand0" not in warm.stats(seeded).recall_summary()


def test_hand_edit_committed_with_git_then_reverted(seeded):
    ids(seeded, "pool")  # the index exists and reflects HEAD
    path = seeded.root / seeded.catalog().path_of("mem_pool")
    replace_in(path, "pool of 20 connections", "pool of 20 connections behind pgbouncer")
    git(seeded.root, "commit", "-qam", "note pgbouncer")
    assert ids(seeded, "pgbouncer") == ["mem_pool"]

    git(seeded.root, "revert", "--no-edit", "HEAD")
    assert ids(seeded, "pgbouncer") == []
    assert ids(seeded, "database pool")[0] == "mem_pool"


def test_git_revert_of_an_add_removes_the_memory(seeded):
    add(seeded, "mem_kafka", "kafka topic has 12 partitions")
    assert ids(seeded, "kafka partitions") == ["mem_kafka"]
    git(seeded.root, "revert", "--no-edit", "HEAD")
    assert ids(seeded, "kafka partitions") == []


def test_merge_of_a_branch_made_with_plain_git(seeded):
    ids(seeded, "pool")
    git(seeded.root, "switch", "-qc", "feature")
    path = write_by_hand(seeded.root, "mem_grpc", "grpc deadline is 3 seconds", "Client deadline 3 s.")
    git(seeded.root, "add", path)
    git(seeded.root, "commit", "-qm", "grpc deadline")
    git(seeded.root, "switch", "-q", "main")
    assert ids(seeded, "grpc deadline") == []
    add(seeded, "mem_main_side", "main side note about tracing")  # main moved on: a real merge
    git(seeded.root, "merge", "-q", "--no-edit", "feature")
    assert git(seeded.root, "rev-list", "--count", "--merges", "HEAD").strip() == "1"
    assert ids(seeded, "grpc deadline") == ["mem_grpc"]
    assert ids(seeded, "tracing") == ["mem_main_side"]


def test_checkout_of_another_branch_and_back(seeded):
    ids(seeded, "pool")
    git(seeded.root, "switch", "-qc", "experiment")
    git(seeded.root, "rm", "-q", seeded.catalog().path_of("mem_cache"))
    path = write_by_hand(seeded.root, "mem_exp", "experimental sharding of orders table")
    git(seeded.root, "add", path)
    git(seeded.root, "commit", "-qm", "experiment")
    assert ids(seeded, "experimental sharding") == ["mem_exp"]
    assert ids(seeded, "cache eviction") == []

    git(seeded.root, "switch", "-q", "main")
    assert ids(seeded, "experimental sharding") == []
    assert ids(seeded, "cache eviction") == ["mem_cache"]

    git(seeded.root, "switch", "-q", "experiment")
    assert ids(seeded, "experimental sharding") == ["mem_exp"]


def test_uncommitted_edit_then_discarded(seeded):
    ids(seeded, "pool")
    rel = seeded.catalog().path_of("mem_cache")
    replace_in(seeded.root / rel, "least recently used", "least frequently used (LFU, tinylfu)")
    assert ids(seeded, "tinylfu") == ["mem_cache"]
    git(seeded.root, "checkout", "--", rel)
    assert ids(seeded, "tinylfu") == []
    assert ids(seeded, "least recently used")[0] == "mem_cache"


def test_uncommitted_new_file_and_its_removal(seeded):
    ids(seeded, "pool")
    path = write_by_hand(seeded.root, "mem_draft", "draft note on circuit breakers")
    assert ids(seeded, "circuit breakers") == ["mem_draft"]
    (seeded.root / path).unlink()
    assert ids(seeded, "circuit breakers") == []


def test_deleted_memory_leaves_results_and_statistics(seeded):
    result, _ = search.search(seeded, "database pool", session="s1", log_recalls=True)
    assert [h.id for h in result.hits][:1] == ["mem_pool"]
    search.mark_useful(seeded, "mem_pool", session="s1")
    stats = warm.stats(seeded)
    assert "mem_pool" in stats.recall_summary()

    git(seeded.root, "rm", "-q", seeded.catalog().path_of("mem_pool"))
    git(seeded.root, "commit", "-qm", "drop pool note")
    assert ids(seeded, "database pool") == []
    assert "mem_pool" not in warm.stats(seeded).recall_summary()
    assert "mem_cache" in [h.id for h in search.search(seeded, "cache eviction")[0].hits]


# ------------------------------------------------------------------ a lost or damaged index

def test_deleted_index_is_rebuilt_with_a_notice(seeded):
    ids(seeded, "pool")
    import shutil
    shutil.rmtree(seeded.index_dir)
    result, report = search.search(seeded, "database pool")
    assert report.rebuilt and report.notice
    assert [h.id for h in result.hits][:1] == ["mem_pool"]
    assert search.search(seeded, "database pool")[1].notice is None


def test_an_index_of_an_older_format_is_rebuilt_with_a_notice(seeded):
    # a memrepo that stores less in its index (format 2 kept no term counts) left this one
    ids(seeded, "pool")
    from memrepo.retrieval import index as index_mod
    gen = (seeded.index_dir / "CURRENT").read_text().strip()
    meta = seeded.index_dir / f"{gen}.json"
    meta.write_text(json.dumps({**json.loads(meta.read_text()), "format": index_mod.FORMAT - 1}))
    result, report = search.search(seeded, "database pool")
    assert report.rebuilt and report.notice == "search index of an older format: rebuilding it from the memory files"
    assert [h.id for h in result.hits][:1] == ["mem_pool"]
    assert search.search(seeded, "database pool")[1].notice is None


def _garble_files(folder: Path, *, only=None) -> int:
    n = 0
    for p in sorted(folder.rglob("*")):
        if p.is_file() and p.name != "write.lock" and (only is None or only(p)):
            p.write_bytes(b"\x00\xffgarbage\x13\x37" * 7)
            n += 1
    return n


@pytest.mark.parametrize("which", ["segments", "meta", "current", "everything"])
def test_corrupt_index_is_rebuilt_or_refused_never_wrong(seeded, which):
    ids(seeded, "pool")
    only = {"everything": None,
            "segments": lambda p: p.parent.name.startswith("gen-"),
            "current": lambda p: p.name == "CURRENT",
            "meta": lambda p: p.suffix == ".json" and p.name.startswith("gen-")}[which]
    assert _garble_files(seeded.index_dir, only=only) > 0
    try:
        result, _report = search.search(seeded, "database pool")
    except MemrepoError as e:  # a clear error is acceptable: it must say how to fix it
        assert "reindex" in str(e)
        search.rebuild(seeded)
        result, _report = search.search(seeded, "database pool")
    assert [h.id for h in result.hits] == ["mem_pool"]
    assert ids(seeded, "cache eviction") == ["mem_cache"]


def test_damaged_statistics_do_not_break_search(seeded):
    ids(seeded, "pool")
    warm.stats(seeded).close()
    (seeded.state_dir / "stats.sqlite").write_bytes(b"\x00not a database\xff" * 64)
    for side in seeded.state_dir.glob("stats.sqlite-*"):
        side.unlink()
    assert ids(seeded, "database pool") == ["mem_pool"]


# ------------------------------------------------------------------ text

@pytest.fixture
def mixed(vault):
    add(vault, "mem_zh_pool", "配置数据库连接池", "订单服务的数据库连接池上限为 50。", subject="orders")
    add(vault, "mem_zh_redis", "Redis 超时时间调整为 5 秒", "缓存读写超时从 2 秒改为 5 秒。", subject="cache")
    add(vault, "mem_en_cfg", "release configuration lives in ci.yml", "The configuration of the release job.")
    add(vault, "mem_en_group", "the on-call group owns paging", "Pager rotation belongs to the SRE group.")
    add(vault, "mem_en_other", "frontend uses react 18", "Upgrade done in March.")
    return vault


def test_chinese_mixed_and_stemmed_queries(mixed):
    for query, expected in [("数据库", "mem_zh_pool"), ("连接池配置", "mem_zh_pool"), ("Redis 超时", "mem_zh_redis"),
                            ("超时", "mem_zh_redis"), ("configured", "mem_en_cfg"), ("configurations", "mem_en_cfg")]:
        assert ids(mixed, query)[:1] == [expected], query


SYNTAX = ["group?", "which group owns paging?", "a:b", "group:paging", "*", "*group*", '"unbalanced',
          '"on-call group', "(x", "(group", "group)", "AND", "NOT OR", "title:[a TO", "~", "^2", "\\",
          "group^3 paging~2", "{", "数据库?", "", "   "]


def test_query_syntax_characters_never_error(mixed):
    for query in SYNTAX:
        result, _ = search.search(mixed, query)
        assert result.nothing_relevant == (not result.hits), query
        if "group" in query:  # the words still count as words
            assert [h.id for h in result.hits][:1] == ["mem_en_group"], query
    assert ids(mixed, "数据库?")[:1] == ["mem_zh_pool"]


def test_nothing_relevant_for_unrelated_queries(mixed):
    for query in ("quantum chromodynamics lattice", "香蕉 菠萝 西瓜", "zzqx"):
        result, _ = search.search(mixed, query)
        assert result.nothing_relevant is True and result.hits == ()


# ------------------------------------------------------------------ status filters

def test_default_is_active_deep_finds_archived(vault, tmp_path):
    add(vault, "mem_live", "terraform state lives in s3")
    lines = [{"id": "mem_old_arch", "subject": "proj", "status": "archived", "created": "2025-01-05T09:00:00+00:00",
              "summary": "terraform state used to live in consul", "body": "Moved off consul in 2025."}]
    src = tmp_path / "arch.jsonl"
    src.write_text("\n".join(json.dumps(x) for x in lines) + "\n", encoding="utf-8")
    memories.import_jsonl(vault, src)
    assert vault.catalog().path_of("mem_old_arch").startswith("archive/")
    assert ids(vault, "terraform state consul") == ["mem_live"]
    deep = ids(vault, "terraform state consul", deep=True)
    assert deep[0] == "mem_old_arch" and "mem_live" in deep


def test_history_finds_superseded_versions(vault):
    memories.add(vault, {"id": "mem_v1", "subject": "proj", "fact": "db.pool", "layer": "L2", "kind": "knowledge",
                         "summary": "connection pool size 10"}, "Pool size is 10.")
    new = memories.add(vault, {"id": "mem_v2", "subject": "proj", "fact": "db.pool", "layer": "L2",
                               "kind": "knowledge", "summary": "connection pool size 20"}, "Pool size is 20.")
    assert new.proposal  # overriding an active fact goes through review
    proposals.apply(vault, new.proposal)
    assert ids(vault, "connection pool size") == ["mem_v2"]
    assert set(ids(vault, "connection pool size", history=True)) == {"mem_v1", "mem_v2"}


# ------------------------------------------------------------------ CLI

def cli(vault, *args):
    return runner.invoke(app, ["--vault", str(vault.root), *args])


def test_cli_search_json_shape(mixed):
    out = cli(mixed, "search", "数据库", "--json")
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert set(data) >= {"query", "hits", "nothing_relevant"} and data["query"] == "数据库"
    assert data["nothing_relevant"] is False
    hit = data["hits"][0]
    assert {"id", "score", "path", "layer", "subject", "summary", "snippet"} <= set(hit)
    assert hit["id"] == "mem_zh_pool" and hit["path"] == mixed.catalog().path_of("mem_zh_pool")
    assert hit["layer"] == "L1" and hit["subject"] == "orders" and isinstance(hit["score"], float)
    assert "数据库" in hit["snippet"] or "数据库" in hit["summary"]

    empty = json.loads(cli(mixed, "search", "quantum chromodynamics", "--json").stdout)
    assert empty["hits"] == [] and empty["nothing_relevant"] is True


def test_cli_batch_queries_in_order_with_filters(mixed, tmp_path):
    add(mixed, "mem_zh_pool2", "数据库连接池监控", "连接池使用率告警。", subject="billing")
    lines = [{"qid": "q-a", "query": "数据库连接池"},
             {"qid": 7, "query": "数据库连接池", "subject": "billing"},
             {"query": "Redis 超时", "limit": 1},
             {"qid": "q-none", "query": "quantum chromodynamics"},
             {"qid": "q-lim", "query": "数据库连接池", "limit": 1}]
    f = tmp_path / "q.jsonl"
    f.write_text("\n".join(json.dumps(x, ensure_ascii=False) for x in lines) + "\n", encoding="utf-8")
    out = cli(mixed, "search", "--queries", str(f), "--json")
    assert out.exit_code == 0, out.output
    rows = [json.loads(line) for line in out.stdout.splitlines()]
    assert [r["qid"] for r in rows] == ["q-a", 7, None, "q-none", "q-lim"]
    assert {h["id"] for h in rows[0]["hits"]} >= {"mem_zh_pool", "mem_zh_pool2"}
    assert [h["id"] for h in rows[1]["hits"]] == ["mem_zh_pool2"]
    assert [h["id"] for h in rows[2]["hits"]] == ["mem_zh_redis"]
    assert rows[3]["hits"] == [] and rows[3]["nothing_relevant"] is True
    assert len(rows[4]["hits"]) == 1


@pytest.mark.parametrize("bad", ['{"query": "ok"}\nnot json', '{"query": "ok"}\n{"qid": 1}',
                                 '{"query": "ok"}\n{"query": "x", "limit": 0}',
                                 '{"query": "ok"}\n{"query": "x", "colour": "red"}', '{"query": "ok"}\n[1, 2]'])
def test_cli_batch_bad_line_names_its_number(mixed, tmp_path, capsys, bad):
    f = tmp_path / "q.jsonl"
    f.write_text(bad + "\n", encoding="utf-8")
    code = main(["--vault", str(mixed.root), "search", "--queries", str(f), "--json"])
    captured = capsys.readouterr()
    error = json.loads(captured.out)["error"]
    assert code == 5 and error["code"] == "invalid" and captured.err == ""  # a queries file is input data
    assert [(p["path"], p["line"]) for p in error["problems"]] == [(str(f), 2)]


def test_cli_batch_lists_every_bad_line_in_order(mixed, tmp_path, capsys):
    f = tmp_path / "q.jsonl"
    f.write_text('{"query": "ok"}\n{"query": "x", "layer": "L9"}\n\nnope\n{"qid": 1}\n', encoding="utf-8")
    code = main(["--vault", str(mixed.root), "search", "--queries", str(f)])
    err = capsys.readouterr().err.splitlines()
    assert code == 5
    assert [line.split(":line ")[1].split(":")[0] for line in err[:-1]] == ["2", "4", "5"]
    assert "--layer 'L9' is not one of" in err[0] and "fix these lines" in err[-1]


def test_useful_raises_rank_of_a_tied_memory(vault):
    text = "The staging database password rotates every 30 days."
    add(vault, "mem_twin_a", "staging password rotation", text)
    add(vault, "mem_twin_b", "staging password rotation", text)
    before, _ = search.search(vault, "staging password rotation")
    assert len(before.hits) == 2 and before.hits[0].score == pytest.approx(before.hits[1].score)
    loser = before.hits[1].id
    out = cli(vault, "useful", loser, "--session", "sess-1")
    assert out.exit_code == 0, out.output
    after, _ = search.search(vault, "staging password rotation")
    assert after.hits[0].id == loser and after.hits[0].score > after.hits[1].score


def test_useful_on_unknown_memory_is_an_error(vault, capsys):
    assert main(["--vault", str(vault.root), "useful", "mem_nope", "--session", "s"]) == 3  # not found
    assert "mem_nope" in capsys.readouterr().err


# ------------------------------------------------------------------ concurrency

SEARCHER = textwrap.dedent("""
    import sys
    from memrepo.store.vault import Vault
    from memrepo.retrieval import search
    root, rounds = sys.argv[1], int(sys.argv[2])
    for i in range(rounds):
        with Vault(root) as v:
            res, _ = search.search(v, "database pool")
        assert [h.id for h in res.hits][:1] == ["mem_pool"], res
    print("ok", rounds)
""")

WRITER = textwrap.dedent("""
    import sys
    from memrepo.store.vault import Vault
    from memrepo.review import writes as memories
    root, n = sys.argv[1], int(sys.argv[2])
    for i in range(n):
        with Vault(root) as v:
            memories.add(v, {"id": f"mem_w{i}", "subject": "proj", "summary": f"writer note {i} about zookeeper"})
    print("ok", n)
""")


def test_two_searchers_and_a_writer_all_succeed(seeded):
    ids(seeded, "pool")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    procs = [subprocess.Popen([sys.executable, "-c", SEARCHER, str(seeded.root), "40"], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True, env=env) for _ in range(2)]
    procs.append(subprocess.Popen([sys.executable, "-c", WRITER, str(seeded.root), "12"], stdout=subprocess.PIPE,
                                  stderr=subprocess.PIPE, text=True, env=env))
    for p in procs:
        out, err = p.communicate(timeout=60)
        assert p.returncode == 0, err
        assert out.startswith("ok")
    found = ids(seeded, "writer note zookeeper", limit=20)
    assert sorted(found) == sorted(f"mem_w{i}" for i in range(12))
