"""Snippets (memrepo.retrieval.snippets): the window around the first match, matches in ``**``.

The body is read only as far as the window reaches; the snippet must be the one a reading of
the whole body gives (``_reference`` below), also when a match straddles the window's end or
joins a word just past it.
"""
from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from memrepo import text
from memrepo.retrieval.snippets import _EMPHASIS_RE, _merge, _word_re, snippet


def _reference(body: str, query: str, width: int = 160) -> str:
    """The snippet from every match of the whole body."""
    wanted = set(text.terms(query))
    body = _EMPHASIS_RE.sub("", body or "")
    if not body:
        return ""
    spans = []
    for m in _word_re().finditer(body):
        tok = m.group().lower()
        if text.is_cjk(tok):
            spans += [(m.start() + i, m.start() + i + 2) for i in range(len(tok) - 1) if tok[i:i + 2] in wanted]
        elif text.stem(tok) in wanted:
            spans.append((m.start(), m.end()))
    start = max(spans[0][0] - width // 3, 0) if spans else 0
    end = min(start + width, len(body))
    out, pos = [], start
    for a, b in _merge(spans):
        if a >= start and b <= end:
            out += [body[pos:a], "**", body[a:b], "**"]
            pos = b
    out.append(body[pos:end])
    return ("…" if start > 0 else "") + "".join(out).replace("\n", " ").strip() + ("…" if end < len(body) else "")


def test_matches_past_the_window_are_not_shown():
    body = "deploy " + "filler " * 40 + "deploy again"
    assert snippet(body, "deploy", width=40) == "**deploy** filler filler filler filler fille…"


def test_a_match_that_runs_past_the_window_end_is_not_highlighted():
    # 数据库 is two overlapping bigrams, merged into one match that ends past the window
    body = "x" * 10 + " 数据库 " + "y" * 30
    for width in range(8, 20):
        assert snippet(body, "数据库", width=width) == _reference(body, "数据库", width=width)
    # a CJK match ending on the window's edge joins the Latin match right after it
    body = "abc " * 3 + "中文abc tail"
    for width in range(12, 24):
        assert snippet(body, "中文 abc", width=width) == _reference(body, "中文 abc", width=width)


def test_no_match_shows_the_start():
    assert snippet("alpha beta gamma", "zeta", width=10) == "alpha beta…"


WORDS = ["deploy", "deployed", "run", "running", "the", "数据库", "连接池", "配置数据库连接池", "库", "中文abc",
         "abc中文", "**", "__", "\n", "café", "it's", "don’t", "x1", "İstanbul"]


@settings(max_examples=400, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(WORDS), st.sampled_from(["", " ", ", ", "\n", "-"])), max_size=60),
       st.lists(st.sampled_from(WORDS), min_size=1, max_size=4), st.sampled_from([5, 12, 40, 160]))
def test_the_same_snippet_as_reading_the_whole_body(words, query, width):
    body = "".join(w + sep for w, sep in words)
    assert snippet(body, " ".join(query), width) == _reference(body, " ".join(query), width)
