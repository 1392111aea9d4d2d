"""Whoosh analyzers for memory text (the only analysis code that knows about Whoosh tokens).

Every field gets an explicit analyzer: the Whoosh forks' default tokenizer keeps ``*`` inside
tokens, so markdown ``**word**`` would be indexed as ``**word``. The text analyzer produces
exactly the terms of :func:`memrepo.text.terms` (stemmed English words without stop words,
CJK character bigrams), so a query analysed with ``terms()`` meets the index term for term.
At index time single CJK characters are added too, so a one-character query still finds
something; at query time they are left out (they match too much to rank well).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from functools import lru_cache
from typing import cast

from whoosh.analysis import Analyzer, Token, Tokenizer
from whoosh.fields import TEXT
from whoosh.system import pack_uint

from memrepo import text
from memrepo.retrieval.query_text import is_transcript


class MemoryTokenizer(Tokenizer):
    """Stemmed Latin words and CJK bigrams (plus unigrams when indexing)."""

    def __init__(self, *, index_unigrams: bool = True) -> None:
        self.index_unigrams = index_unigrams

    def __eq__(self, other: object) -> bool:
        return (isinstance(other, MemoryTokenizer)
                and other.index_unigrams == self.index_unigrams)

    def __call__(self, value: str, positions: bool = False, chars: bool = False,
                 keeporiginal: bool = False, removestops: bool = True, start_pos: int = 0,
                 start_char: int = 0, tokenize: bool = True, mode: str = "",
                 **kwargs) -> Iterator[Token]:
        unigrams = self.index_unigrams and mode == "index"
        tok = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos
        for term in _terms(value, unigrams):
            tok.text = term
            tok.boost = 1.0
            tok.stopped = False
            if keeporiginal:
                tok.original = term  # type: ignore[attr-defined]  # a Token takes any attribute, as Whoosh's own tokenizers set it
            if positions:
                tok.pos = pos
            pos += 1
            yield tok


def _terms(value: str, unigrams: bool) -> list[str]:
    return text.terms(value, unigrams=unigrams)


class KeyTokenizer(Tokenizer):
    """Splits identifiers such as ``release.auto_publish`` or ``project-alpha`` into parts.

    The whole key is emitted too (lower-cased), so an exact key query scores highest.
    """

    def __eq__(self, other: object) -> bool:
        return isinstance(other, KeyTokenizer)

    def __call__(self, value: str, positions: bool = False, chars: bool = False,
                 keeporiginal: bool = False, removestops: bool = True, start_pos: int = 0,
                 start_char: int = 0, tokenize: bool = True, mode: str = "",
                 **kwargs) -> Iterator[Token]:
        tok = Token(positions, chars, removestops=removestops, mode=mode, **kwargs)
        pos = start_pos
        for term in key_terms(value):
            tok.text = term
            tok.boost = 1.0
            tok.stopped = False
            if positions:
                tok.pos = pos
            pos += 1
            yield tok


def key_terms(value: str) -> list[str]:
    """Terms of identifier-like text: each whole key plus its analysed parts."""
    out: list[str] = []
    for key in value.split():
        out.extend(_key_terms(key))
    return out


@lru_cache(maxsize=65536)
def _key_terms(key: str) -> tuple[str, ...]:
    """One key's terms (cached: subjects, tags and facts repeat from memory to memory)."""
    low = key.lower()
    parts = text.terms(low.replace(".", " ").replace("_", " ").replace("-", " "), unigrams=False)
    return (low, *(part for part in parts if part != low))


PROSE, KEYS, EXACT, LEAD = "p", "k", "x", "l"


class ScoredText(TEXT):
    """A frequency-only text field indexed straight from :func:`memrepo.text.terms`.

    Whoosh's generic path builds and yields one ``Token`` object per word; this field counts
    the terms of its value directly (4-5x less Python per token at index time) and gives the
    same terms as :class:`MemoryTokenizer` in index mode, which stays its analyzer for parsed
    (advanced) queries. The value is either a string (prose) or a tuple of
    ``(kind, text, boost)`` sections: ``kind`` is :data:`PROSE` (stemmed words, CJK bigrams
    and unigrams), :data:`KEYS` (identifiers and their parts, :func:`key_terms`),
    :data:`EXACT` (whole lower-cased whitespace-separated keys) or :data:`LEAD` (prose such as
    a summary that usually repeats the body's first sentence: only its occurrences beyond
    those of the prose sections count, so a summary that copies the body adds nothing and a
    written summary ranks its words above the body's). A term's weight is the sum of its
    occurrences' boosts, which folds field weights into one scored field at index time.
    """

    def __init__(self, *, stored: bool = False) -> None:
        super().__init__(analyzer=cast(Analyzer, MemoryTokenizer()), phrase=False, stored=stored)  # a tokenizer analyses alone

    def index(self, value, **kwargs):
        if isinstance(value, str):
            value = ((PROSE, value, 1.0),)
        freqs: Counter = Counter()
        weights: dict[str, float] = {}
        prose: Counter = Counter()
        lead = []
        for kind, section, boost in value:
            if not section:
                continue
            if kind == LEAD:
                lead.append((Counter(text.terms(section, unigrams=True)), boost))
                continue
            if kind == PROSE:
                counts = Counter(text.terms(section, unigrams=True))
                prose.update(counts)
            elif kind == KEYS:
                counts = Counter(key_terms(section))
            else:
                counts = Counter(section.lower().split())
            freqs.update(counts)
            for t, n in counts.items():
                weights[t] = weights.get(t, 0.0) + n * boost
        for counts, boost in lead:
            counts.subtract(prose)
            counts = +counts
            freqs.update(counts)
            for t, n in counts.items():
                weights[t] = weights.get(t, 0.0) + n * boost
        fb = self.format.field_boost if self.format is not None else 1.0
        return [(t.encode("utf-8"), n, weights[t] * fb, pack_uint(n))
                for t, n in freqs.items()]


# ------------------------------------------------------------------ query analysis ---

_HISTORY_RE = re.compile(
    r"\b(history|before|previous(?:ly)?|used to|formerly|originally|earlier|old value|"
    r"changed|change log)\b|以前|之前|历史|曾经|原来|过去|早先|变更|改动",
    re.IGNORECASE)
# "the week before 16 November", "two days earlier": a span of time, not a memory's history
_SPAN_BEFORE_RE = re.compile(
    r"\b(?:days?|nights?|weeks?|weekends?|months?|years?|mornings?|evenings?|monday|tuesday|wednesday|"
    r"thursday|friday|saturday|sunday)\s+(?:before|earlier)\b", re.IGNORECASE)
_HOWTO_RE = re.compile(
    r"^\s*(how|why)\b|\bhow (?:do|to|can|should|does)\b|\b(steps|procedure|best way|fix|"
    r"troubleshoot)\b|如何|怎么|怎样|为什么|为何|方法|步骤|办法",
    re.IGNORECASE)
_QUESTION_RE = re.compile(r"\b(what|who|when|where|which|why|how|is|are|did|does|do)\b|[?？吗呢]",
                          re.IGNORECASE)
KEY_RE = re.compile(r"[^\W_][\w-]*(?:[._][\w-]+)+|[^\W_]\w*-[\w-]+", re.UNICODE)
MAX_KEY_CHARS = 256
"""Keys never span whitespace, and KEY_RE backtracks quadratically on one long unbroken word
(20,000 characters: 13 s): it is run on each word, cut to this length."""


def find_keys(text: str) -> list[str]:
    """KEY_RE's matches in ``text``, in linear time (see MAX_KEY_CHARS)."""
    if len(text) <= MAX_KEY_CHARS:
        return KEY_RE.findall(text)
    return [k for word in text.split() for k in KEY_RE.findall(word[:MAX_KEY_CHARS])]


def detect_intent(query: str) -> str:
    """Route a query: ``history``, ``fact`` (exact keys/entities), ``howto`` or ``general``.

    A light, deterministic classifier: history words first, then
    identifier-like keys or a short keyword query (a fact lookup), then how-to phrasing. A
    stretch of a conversation (:func:`~memrepo.retrieval.query_text.is_transcript`) is never a
    history question: its "以前" or "before" is the speakers' past, not a memory's versions.
    """
    if _HISTORY_RE.search(_SPAN_BEFORE_RE.sub(" ", query)) and not is_transcript(query):
        return "history"
    if find_keys(query):
        return "fact"
    if _HOWTO_RE.search(query):
        return "howto"
    if len(text.raw_tokens(query)) <= 3 and not _QUESTION_RE.search(query):
        return "fact"
    return "general"


def query_keys(query: str) -> list[str]:
    """Identifier-like tokens of a query (``release.auto_publish``, ``project-alpha``)."""
    return [k.lower().strip(".-_") for k in find_keys(query)]
