"""What a query says: a transcript's turns weighed by who said them and when, Chinese glue left
out, and a conversation never routed as a history question."""
from __future__ import annotations

from pathlib import Path

from memrepo.retrieval.analysis import detect_intent
from memrepo.retrieval.fields import IndexDoc
from memrepo.retrieval.index import MemoryIndex
from memrepo.retrieval.query_text import is_transcript, query_counts, semantic_text
from memrepo.retrieval.ranking import SearchQuery, Tuning

TRANSCRIPT = ('Bart:"我以前养过一只小狗。"\n'
              '助手:"真的吗？它叫什么名字？"\n'
              'Bart:"它叫豆豆，我们常去公园。"\n'
              '助手:"听起来很开心！"\n'
              'Bart:"对了，我想学画画。"')


def counts(query: str, **kw) -> dict[str, float]:
    options = {"assistant_lines": 0.5, "unigrams": False, "last_turn": 1.0, "function_grams": True, **kw}
    return dict(query_counts(query, **options))


def test_a_transcript_needs_two_speakers_one_of_them_an_assistant():
    assert is_transcript(TRANSCRIPT)
    assert is_transcript("User: what port?\nAssistant: 8080.")
    assert not is_transcript("Bart: 你好\nLisa: 你好")   # no assistant: two people talking
    assert not is_transcript("数据库以前的配置")


def test_the_users_last_turn_counts_last_turn_times():
    plain = counts(TRANSCRIPT)
    weighted = counts(TRANSCRIPT, last_turn=2.0)
    assert plain["画画"] == 1.0 and weighted["画画"] == 2.0       # the last user turn
    assert plain["豆豆"] == weighted["豆豆"] == 1.0              # an earlier user turn
    assert plain["名字"] == weighted["名字"] == 0.5              # the assistant's line
    # a line without a label continues the turn above it
    assert counts("User: my cat\nbites people\nAssistant: oh no", last_turn=3.0)["bite"] == 3.0


def test_the_last_turn_weight_is_for_transcripts_only():
    assert counts("我想学画画，画画很好玩", last_turn=2.0)["画画"] == 2.0   # two occurrences, not four


def test_chinese_glue_between_words_is_no_query_term():
    got = counts("我的猫很好看", function_grams=False)
    assert set(got) == {"好看"}                        # 我的, 的猫, 猫很, 很好 hold a function character
    assert set(counts("我的猫很好看")) == {"我的", "的猫", "猫很", "很好", "好看"}
    assert counts("我的", function_grams=False) == {"我的": 1.0}   # nothing else: the glue stays
    assert counts("Redis 超时了", function_grams=False) == {"redi": 1.0, "超时": 1.0}


def test_a_transcript_is_never_a_history_question():
    assert detect_intent("数据库以前的配置") == "history"
    assert detect_intent(TRANSCRIPT) != "history"
    assert detect_intent("User: what did we use before the redesign?\nAssistant: Let me look.") != "history"


def test_semantic_text_keeps_the_users_words():
    assert semantic_text(TRANSCRIPT) == "我以前养过一只小狗。\n它叫豆豆，我们常去公园。\n对了，我想学画画。"


def doc(id: str, summary: str) -> IndexDoc:
    return IndexDoc(id=id, path=f"memories/L1/{id}.md", layer="L1", kind="event", subject="u1", fact=None,
                    status="active", summary=summary, body=summary, tags=(), created="2026-03-01T10:00:00+00:00",
                    updated=None)


MEMORIES = [doc("cat", "小猫喜欢在窗台上晒太阳"), doc("friend", "我的朋友住在北京"),
            doc("paint", "周末在公园画画，很开心"), doc("dog", "豆豆是一只小狗")] + [
    doc(f"f{i}", f"第{i}天的普通笔记") for i in range(8)]


def test_a_memory_sharing_only_glue_with_the_question_is_not_found(tmp_path: Path):
    ix = MemoryIndex(tmp_path / "index")
    ix.rebuild(MEMORIES, commit="c1")
    hits = [h.id for h in ix.search(SearchQuery("我的小猫")).hits]
    assert hits[0] == "cat" and "friend" not in hits
    ix.tuning = Tuning(function_grams=True)   # as before: 我的 named the friend
    assert "friend" in [h.id for h in ix.search(SearchQuery("我的小猫")).hits]


def test_the_memory_the_last_turn_names_comes_first(tmp_path: Path):
    ix = MemoryIndex(tmp_path / "index")
    ix.rebuild(MEMORIES + [doc("learn", "学画画")], commit="c1")
    chat = 'Bart: 我养过小狗，小狗叫豆豆。\n助手: 真好！\nBart: 我想学画画。'
    assert [h.id for h in ix.search(SearchQuery(chat)).hits][0] == "learn"
    ix.tuning = Tuning(last_turn=1.0)   # every user turn alike: the dog, named twice, came first
    assert [h.id for h in ix.search(SearchQuery(chat)).hits][0] == "dog"
