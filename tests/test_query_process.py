"""A process that searches again encodes its queries in a child process (on the
other core, clear of the GIL), with the same vectors and hits as encoding them in place; a
child that dies, hangs or cannot start costs a search nothing but the overlap."""
from __future__ import annotations

import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

from memrepo import api
from memrepo.retrieval import embed, encoder_process, search
from memrepo.review import writes as memories

TEXTS = ["What is the connection pool limit of the orders database?", "我们家去年春天领养的小狗叫什么名字？",
         "", "x" * (embed.EMBED_CHARS + 50), "INC-34021: regression in sqlite"]


@pytest.fixture
def semantic(monkeypatch, tmp_path_factory):
    if not embed.available():
        pytest.skip("the embedding model package is not installed")
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path_factory.getbasetemp() / "query-process-models"))
    monkeypatch.delenv(encoder_process.QUERY_PROCESS_ENV, raising=False)


def started(cache_dir) -> encoder_process.QueryProcess:
    remote = encoder_process.QueryProcess.start(cache_dir, embed._vector)
    deadline = time.monotonic() + 60
    while not remote.ready():
        assert time.monotonic() < deadline, "the query encoder never became ready"
        time.sleep(0.02)
    return remote


def test_the_child_encodes_exactly_as_in_place_and_in_order(semantic):
    encoder = embed.Encoder(embed.user_cache_dir())
    remote = started(embed.user_cache_dir())
    try:
        futures = [remote.submit(text, encoder.query) for text in TEXTS * 2]  # all sent before any is read
        for future, text in zip(futures, TEXTS * 2):
            assert np.array_equal(future.result(), encoder.query(text))
            assert future.answered  # answered by the child, not encoded here
    finally:
        remote.close()


def test_a_child_that_dies_or_hangs_is_given_up_and_the_caller_encodes(semantic, monkeypatch):
    encoder = embed.Encoder(embed.user_cache_dir())
    remote = started(embed.user_cache_dir())
    os.kill(remote._proc.pid, signal.SIGKILL)
    remote._proc.wait()
    future = remote.submit(TEXTS[0], encoder.query)
    assert np.array_equal(future.result(), encoder.query(TEXTS[0]))
    assert not remote.ready()

    monkeypatch.setattr(encoder_process, "QUERY_TIMEOUT", 0.3)
    remote = started(embed.user_cache_dir())
    os.kill(remote._proc.pid, signal.SIGSTOP)
    try:
        futures = [remote.submit(text, encoder.query) for text in TEXTS[:2]]
        assert [np.array_equal(f.result(), encoder.query(t)) for f, t in zip(futures, TEXTS)] == [True, True]
        assert not remote.ready()
        assert remote._proc.poll() is not None  # the hung child was killed
    finally:
        remote.close()


def test_a_child_that_cannot_load_the_model_leaves_the_thread_encoding(semantic):
    # a child that says it failed (as serve does when the model will not load)
    failed = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdout.buffer.write(b'\\x06\\x00\\x00\\x00failed')"],
                              stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
    remote = encoder_process.QueryProcess(failed, embed._vector)
    deadline = time.monotonic() + 30
    while remote._state == "starting" and time.monotonic() < deadline:
        remote.ready()
        time.sleep(0.02)
    assert remote._state == "failed"
    encoder = embed.Encoder(embed.user_cache_dir())
    future = remote.submit(TEXTS[1], encoder.query)
    assert not future.answered
    assert np.array_equal(future.result(), encoder.query(TEXTS[1]))


def test_the_child_ends_with_its_parent(semantic, tmp_path):
    script = ("import sys, time\n"
              "from memrepo.retrieval import embed, encoder_process\n"
              "r = encoder_process.QueryProcess.start(embed.user_cache_dir())\n"
              "while not r.ready(): time.sleep(0.02)\n"
              "print(r._proc.pid, flush=True)\n")
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120, check=True)
    pid = int(out.stdout.split()[0])
    deadline = time.monotonic() + 20
    while os.path.exists(f"/proc/{pid}") and time.monotonic() < deadline:
        with open(f"/proc/{pid}/stat") as fh:
            if fh.read().split(") ")[1].startswith("Z"):  # ended; its reaper is init
                break
        time.sleep(0.05)
    assert not os.path.exists(f"/proc/{pid}") or open(f"/proc/{pid}/stat").read().split(") ")[1].startswith("Z")


def test_searching_again_moves_the_encoding_to_a_child_with_the_same_hits(semantic, vault, monkeypatch):
    for memory_id, text in (("pool", "The orders database connection pool is limited to twenty connections."),
                            ("dog", "我们家去年春天领养了一只小狗，名字叫 Max。"),
                            ("tax", "The quarterly tax filing is due on the fifteenth of April.")):
        memories.add(vault, {"id": memory_id, "subject": "proj", "summary": text}, text)
    queries = ["How many connections may the orders database open?", "小狗叫什么名字？", "when is the tax due"]
    monkeypatch.setenv(encoder_process.QUERY_PROCESS_ENV, "0")
    in_thread = [api.search(vault, q)[0] for q in queries]
    encoder = embed.shared(embed.user_cache_dir())
    assert encoder._remote is None  # switched off

    monkeypatch.delenv(encoder_process.QUERY_PROCESS_ENV)
    encoder._searches = 0
    search.search_many(vault, [search.make_query(q) for q in queries])   # one batch is one search
    assert encoder._remote is None
    api.search(vault, queries[1])   # a second search starts the child
    remote = encoder._remote
    assert remote is not None
    deadline = time.monotonic() + 60
    while not remote.ready():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    sent = []
    submit = remote.submit
    monkeypatch.setattr(remote, "submit", lambda text, fallback: sent.append(text) or submit(text, fallback))
    in_child = [api.search(vault, q)[0] for q in queries]
    assert sent == queries
    assert [[(h.id, h.score, h.semantic_score) for h in r.hits] for r in in_child] == \
        [[(h.id, h.score, h.semantic_score) for h in r.hits] for r in in_thread]
    remote.close()
    encoder._remote = None


def test_a_bulk_encoding_from_a_script_without_a_main_guard(semantic, tmp_path):
    """The bulk workers are plain children: a caller's script is not run again in them (with
    multiprocessing's spawn it was, and a script without a main guard failed)."""
    script = tmp_path / "agent_script.py"
    script.write_text("print('top level ran', flush=True)\n"
                      "from memrepo.retrieval import embed\n"
                      "texts = [f'memory number {i} about topic {i % 7}' for i in range(1200)]\n"
                      "arrays = list(embed.Encoder(embed.user_cache_dir())._parallel(texts, 2, None))\n"
                      "print(sum(len(a) for a in arrays), flush=True)\n", encoding="utf-8")
    out = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300)
    assert out.returncode == 0, out.stderr
    assert out.stdout.split("\n")[:2] == ["top level ran", "1200"]


def test_a_bulk_worker_that_fails_leaves_its_chunks_to_the_caller(semantic, monkeypatch):
    texts = [f"note {i}: 数据库连接池 pool size {i}" for i in range(3 * embed.UNIT // 2)]
    encoder = embed.Encoder(embed.user_cache_dir())
    serial = np.concatenate([encoder.encode_unit(texts[i:i + embed.UNIT]) for i in range(0, len(texts), embed.UNIT)])
    started = encoder_process.start
    calls = []

    def one_dies(cache_dir, *, bulk):
        calls.append(bulk)
        if len(calls) == 1:   # a worker that ends at once (as one whose model fails to load)
            return subprocess.Popen([sys.executable, "-c", "pass"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        return started(cache_dir, bulk=bulk)
    monkeypatch.setattr(encoder_process, "start", one_dies)
    seen: list[int] = []
    parallel = np.concatenate(list(encoder._parallel(texts, 2, seen.append)))
    assert calls == [True, True]
    assert seen == [embed.UNIT, len(texts)]
    assert np.array_equal(parallel, serial)   # a unit's vectors are the same bits wherever it is encoded
