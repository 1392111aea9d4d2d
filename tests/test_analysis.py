"""Analyzers and query routing: the terms the index stores are the terms a query asks for."""
from memrepo.analysis import detect_intent, key_terms, memory_analyzer, query_keys
from memrepo.text import terms


def tokens(value: str, mode: str = "index") -> list[str]:
    return [t.text for t in memory_analyzer()(value, mode=mode)]


def test_markdown_emphasis_is_not_part_of_a_token():
    assert tokens("**Redis** timeout", mode="query") == ["redi", "timeout"]


def test_english_is_stemmed_and_stopwords_dropped():
    assert tokens("The configured configuration", mode="query") == ["configur", "configur"]


def test_cjk_bigrams_and_index_time_unigrams():
    assert tokens("数据库", mode="query") == ["数据", "据库"]
    assert tokens("数据库") == ["数据", "据库", "数", "据", "库"]


def test_index_and_query_agree_with_shared_terms():
    text = "配置数据库连接池 configured Redis"
    assert tokens(text, mode="query") == terms(text)


def test_key_terms_keep_the_whole_key_and_its_parts():
    assert key_terms("release.auto_publish") == ["release.auto_publish", "releas", "auto", "publish"]


def test_intents():
    assert detect_intent("project-alpha release.auto_publish") == "fact"
    assert detect_intent("Redis 超时") == "fact"
    assert detect_intent("how do I configure the connection pool?") == "howto"
    assert detect_intent("如何处理服务超时") == "howto"
    assert detect_intent("what was the theme before the redesign?") == "history"
    assert detect_intent("数据库以前的配置") == "history"
    assert detect_intent("When did Caroline go to the support group?") == "general"


def test_query_keys():
    assert query_keys("is project-alpha release.auto_publish on?") == [
        "project-alpha", "release.auto_publish"]
