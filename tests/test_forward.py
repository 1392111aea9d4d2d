"""Bulk encoding: the forward pass that computes the first convolution once per
distinct token (memrepo.retrieval.forward) gives the model's own vectors within float
rounding, on every kind of text, however the texts are cut into micro-batches and whatever
tokens it kept from earlier calls; the bulk paths through ``Encoder`` use it."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo.retrieval import embed, encoder_process
from memrepo.retrieval.forward import Forward

pytestmark = pytest.mark.skipif(not embed.available(), reason="the embedding model package is not installed")

TEXTS = [
    "", " ", "\n\n", "a", "?", "数",
    "What is the connection pool limit of the orders database?",
    "我们家去年春天领养的小狗叫什么名字？它是一只金毛。",
    "INC-34021: 回滚 the orders-db migration (PostgreSQL 16.2) — café naïve Ωmega 🙂",
    "the the the the the the the the the the the the",     # one id again and again
    "ha" * 400,                                              # long, few distinct ids
    "部署 " * 300 + "end",                                    # long, Chinese and spaces
    " ".join(f"word{i} topic{i % 13}" for i in range(700)),   # longer than any token budget
]


@pytest.fixture(scope="module")
def model():
    return embed.Encoder()._load()   # from the wheel: no cache written


def assert_close(new: np.ndarray, old: np.ndarray) -> None:
    assert new.shape == old.shape and new.dtype == np.float32
    assert np.abs(new - old).max() <= 1e-5
    assert (new * old).sum(axis=1).min() >= 0.99999


@pytest.mark.parametrize(("capacity", "budget"), [(4096, 1024), (0, 1024), (8, 16), (16, 7), (4096, 1), (40, 384)])
def test_the_vectors_are_the_models_on_every_kind_of_text_and_batching(model, capacity, budget):
    # budget 1: each text alone; 7 and 16: windows reach the micro-batch's edges; capacity 8:
    # the parts are computed per micro-batch; 16 and 40: the kept parts are evicted often
    forward = Forward(model._model, capacity=capacity, token_budget=budget)
    old = model.encode(TEXTS)
    assert_close(forward.encode(TEXTS), old)
    assert_close(forward.encode(TEXTS[::-1]), old[::-1])   # with the parts kept from before
    assert forward.used <= capacity


def test_the_parts_kept_stay_right_through_evictions(model):
    # short texts, few to a micro-batch: each batch's distinct tokens are kept, and a
    # capacity of 24 evicts the less used half again and again
    texts = [f"{word} {i}" for i in range(60) for word in ("pool", "小狗", "orders", f"id{i * 7}")]
    forward = Forward(model._model, capacity=24, token_budget=12)
    for start in range(0, len(texts), 50):
        assert_close(forward.encode(texts[start:start + 50]), model.encode(texts[start:start + 50]))
    assert_close(forward.encode(texts[::-1]), model.encode(texts[::-1]))


def test_a_few_memories_now_and_then_keep_nothing(model):
    encoder = embed.Encoder()
    encoder._model = model
    texts = TEXTS[:embed.BULK - 1]
    assert_close(np.concatenate(list(encoder.batches(texts))), model.encode(texts))
    assert encoder._forward.used == 0 and not encoder._forward.memo
    assert_close(encoder.encode_memories(texts), model.encode(texts))   # a bulk worker's call keeps
    assert encoder._forward.used > 0 and encoder._forward.memo


def test_an_encoding_of_one_text_and_of_none(model):
    forward = Forward(model._model)
    assert_close(forward.encode(["hello"]), model.encode(["hello"]))
    assert forward.encode([]).shape == (0, embed.DIM)


WORDS = ["pool", "database", "orders", "the", "a", "Max", "retriever", "数据库", "连接池", "小狗", "名字",
         "INC-34021", "café", "🙂", "?", "\n", "  ", "42", "ünïcode", "x" * 30]
TEXT = st.one_of(st.lists(st.sampled_from(WORDS), max_size=60).map(" ".join),
                 st.text(alphabet=st.sampled_from("abcxyz 数据库连接池。,.!-\n\t0123é"), max_size=120),
                 st.text(max_size=40))


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.lists(TEXT, min_size=1, max_size=8), min_size=1, max_size=4),
       capacity=st.sampled_from([0, 6, 24, 200, 4096]), budget=st.integers(1, 300))
def test_random_texts_in_random_batchings_match_the_model(model, batches, capacity, budget):
    forward = Forward(model._model, capacity=capacity, token_budget=budget)
    for texts in batches:   # each call meets the parts the earlier ones kept (or evicted)
        assert_close(forward.encode(texts), model.encode(texts))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(texts=st.lists(st.one_of(TEXT, st.text(alphabet=st.sampled_from("ab数 \u2581\u3000\t.x"), max_size=30)), max_size=10))
def test_the_tokenizer_per_chunk_gives_the_tokenizers_ids(model, texts):
    forward = Forward(model._model)
    sp = model._model.sp
    assert isinstance(sp._prefixes, dict) and forward._chunked(sp)   # the wheel's tokenizer: a dict
    for text in texts + TEXTS + texts:   # the second time from the kept chunks
        assert forward.tokenize(text) == sp.encode(text, out_type=int, add_bos=True, add_eos=True)


def test_ascii_text_is_normalized_as_the_tokenizers_normalizer_does(model):
    """Forward._normalize's table path for ASCII text, against the normalizer's loop over bytes:
    every character, every pair (spaces, tabs, line breaks and control characters among them)."""
    forward = Forward(model._model)
    normalizer = model._model.sp._normalizer
    texts = [chr(a) + chr(b) for a in range(128) for b in range(128)] + ["", "  a \t\n b  ", "\x01 \x01"]
    assert [forward._normalize(normalizer, t) for t in texts] == [normalizer.normalize(t) for t in texts]
    assert forward.ascii not in (None, False)   # the table path ran


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(text=st.text(alphabet=st.characters(max_codepoint=127), max_size=40)
       | st.text(alphabet=st.sampled_from(" \t\n\r\x0b\x0c\x1fab.-"), max_size=40))
def test_random_ascii_text_is_normalized_as_the_tokenizers_normalizer_does(model, text):
    normalizer = model._model.sp._normalizer
    assert Forward(model._model)._normalize(normalizer, text) == normalizer.normalize(text)


def test_a_normalizer_that_does_more_to_ascii_keeps_its_own_way():
    from memrepo.retrieval.forward import SPACE, _ascii_table

    class Normalizer:
        _remove_extra_whitespaces = True
        _add_dummy_prefix = True
        _space_symbol = SPACE.encode()
        _two_byte = frozenset({(ord("a") << 8) | 0xCC})
        _ascii = [bytes((b,)) for b in range(128)]
    assert _ascii_table(Normalizer()) == {}
    Normalizer._ascii = [b"x" if b == ord("y") else bytes((b,)) for b in range(128)]   # y -> x
    assert _ascii_table(Normalizer()) is False
    Normalizer._ascii = [bytes((b,)) for b in range(128)]
    Normalizer._two_byte = frozenset({(ord("a") << 8) | ord("b")})                       # an ASCII key "ab"
    assert _ascii_table(Normalizer()) is False


def test_a_vocabulary_with_a_mark_inside_a_piece_is_not_cut_into_chunks():
    from memrepo.retrieval.forward import _marks_lead_only
    assert _marks_lead_only(["\u2581a", "b", "\u2581", "cd"])
    assert not _marks_lead_only(["\u2581a", "b\u2581c"])
    assert not _marks_lead_only(["\u2581a", "b\u2581"])
    assert not _marks_lead_only(["x\0\u2581y"])


def test_the_bulk_path_and_its_workers_give_the_models_vectors(model, monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(embed, "PARALLEL_MIN", 4)
    monkeypatch.setattr(embed, "UNIT", 5)
    texts = TEXTS + [f"note {i}: 数据库连接池 pool size {i}" for i in range(10)]
    old = model.encode(texts)
    monkeypatch.setenv(encoder_process.WORKERS_ENV, "1")
    serial = np.concatenate(list(embed.Encoder(embed.user_cache_dir()).batches(texts)))
    monkeypatch.setenv(encoder_process.WORKERS_ENV, "2")
    parallel = np.concatenate(list(embed.Encoder(embed.user_cache_dir()).batches(texts)))
    assert_close(serial, old)
    assert np.array_equal(parallel, serial)


def test_a_units_vectors_depend_on_its_texts_alone(model):
    """A build encodes ``UNIT`` texts at a time from nothing kept: a unit encoded after
    anything else (a resumed build's first, another worker's) is the same bits as in an
    uninterrupted pass; a pass that kept parts from before gives other bits (why units)."""
    texts = [f"{word} {i} and the orders pool" for i in range(300) for word in ("note", "小狗")][:520]
    encoder = embed.Encoder()
    encoder._model = model
    whole = np.concatenate(list(encoder.batches(texts)))
    later = embed.Encoder()
    later._model = model
    later.encode_memories(TEXTS + texts[::-1], keep=True)        # parts kept from other texts
    assert np.array_equal(later.encode_unit(texts[:embed.UNIT]), whole[:embed.UNIT])
    assert np.array_equal(later.encode_unit(texts[embed.UNIT:]), whole[embed.UNIT:])
    later.encode_memories(TEXTS + texts[::-1], keep=True)
    assert not np.array_equal(later.encode_memories(texts[:embed.UNIT], keep=True), whole[:embed.UNIT])


def test_an_exact_pass_computes_an_ids_parts_alike_whatever_ids_come_with_it(model):
    # BLAS rounds a row of a product by the product's size and the row's place in it: the
    # query encoder's pass puts each id in one place of one block shape (Forward._compute)
    exact = Forward(model._model, exact=True)
    rng = np.random.default_rng(3)
    ids = rng.choice(len(model._model.table), size=300, replace=False)
    alone = {int(i): exact._compute(np.array([i])) for i in ids[:24]}
    for size in (2, 15, 16, 17, 40, 200):
        for _ in range(3):
            group = rng.permutation(np.concatenate([ids[:24], rng.choice(ids[24:], size=size, replace=False)]))
            rows, parts = exact._compute(group)
            for k, i in enumerate(group.tolist()):
                if i in alone:
                    assert np.array_equal(rows[k], alone[i][0][0]) and np.array_equal(parts[k], alone[i][1][0]), (size, i)
    plain = Forward(model._model)
    rows, parts = plain._compute(ids)
    np.testing.assert_allclose(exact._compute(ids)[0], rows, rtol=1e-5, atol=1e-5)   # within float rounding
    np.testing.assert_allclose(exact._compute(ids)[1], parts, rtol=1e-5, atol=1e-5)


def test_a_query_vector_does_not_depend_on_the_queries_before_it(model):
    # the query encoder keeps its tokens' parts; each is computed on a block of rows, so a
    # query's vector is bit for bit the same in a fresh encoder and after any other queries
    # (a search's query child and its in-place fallback must agree exactly)
    queries = ["what is the pool limit?", "小狗叫什么名字？", "pool", "the orders database pool limit", "限",
               "INC-34021 回滚 orders-db", "a", ""] + [f"pool {i} limit 小狗 {i * 3}" for i in range(40)]
    fresh = {}
    for q in queries:
        encoder = embed.Encoder()
        encoder._model = model
        fresh[q] = encoder.query(q)
        assert_close(fresh[q][None], model.encode([q or " "]))
    seasoned = embed.Encoder()
    seasoned._model = model
    for q in queries[::-1] + queries:
        assert np.array_equal(seasoned.query(q), fresh[q]), q
    assert 0 < seasoned._queries.used <= embed.QUERY_CAPACITY
