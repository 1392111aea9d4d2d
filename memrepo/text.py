"""Language-aware term extraction shared by search and distill (its one outside import is Whoosh's Porter stemmer).

Latin text becomes lower-cased word tokens, stemmed with the Porter stemmer; runs of CJK
characters become overlapping character bigrams (plus the single characters when
``unigrams`` is set). Bigrams need no dictionary, start instantly, and on Chinese benchmarks
beat dictionary segmentation: a two-character query such as 数据库 matches 配置数据库连接池.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Collection, Iterable
from functools import lru_cache

from whoosh.lang.porter import stem as _porter_stem

CJK = r"\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff"
TOKEN_PATTERN = rf"[{CJK}]+|[^\W_{CJK}]+(?:['’][^\W_{CJK}]+)*"
# The same tokens for ASCII text (no CJK, no ’; a word character is a letter, a digit or '_'):
# re builds a class of 28,000 characters one code point at a time (~6 ms per process), a cost
# an English query or memory need not pay. tests/test_analysis.py checks both agree.
_ASCII_TOKEN_RE = re.compile(r"[A-Za-z0-9]+(?:'[A-Za-z0-9]+)*")
# Chinese function characters: particles, pronouns, copulas and the commonest adverbs, what the
# English stop words are to English. A bigram holding one (我的, 了一, 很好) is the glue between
# words, not a word; :func:`is_function_gram` tells them.
ZH_FUNCTION_CHARS = frozenset("的了又在是和也就都把被着过吗呢吧啊这那个我你他她它们再还很要让")

ENGLISH_STOPWORDS = frozenset("""
a about above after again against all am an and any are as at be because been before being
below between both but by can could did do does doing down during each few for from further
had has have having he her here hers herself him himself his how i if in into is it its itself
just me more most my myself no nor not now of off on once only or other our ours ourselves out
over own same she should so some such than that the their theirs them themselves then there
these they this those through to too under until up very was we were what when where which
while who whom why will with would you your yours yourself yourselves s t don didn doesn isn
wasn weren won wouldn shouldn couldn ll re ve d m o y also
""".split())


@lru_cache(maxsize=65536)
def stem(word: str) -> str:
    """Porter stem of a lower-case word (cached: the vocabulary is small)."""
    return _porter_stem(word)


def is_cjk(token: str) -> bool:
    """Whether ``token`` starts with a CJK character (the ranges of :data:`CJK`; compared, not
    matched with a regex: a class of 28,000 characters costs milliseconds to compile per process)."""
    c = token[:1]
    return "\u3400" <= c <= "\u4dbf" or "\u4e00" <= c <= "\u9fff" or "\uf900" <= c <= "\ufaff"


def raw_tokens(text: str) -> list[str]:
    """Maximal runs of CJK characters or of word characters, lower-cased, in order."""
    found = _ASCII_TOKEN_RE.findall(text) if text.isascii() else _token_re().findall(text)
    return [t.lower() for t in found]


@lru_cache(maxsize=1)
def _token_re() -> re.Pattern[str]:
    return re.compile(TOKEN_PATTERN, re.UNICODE)


def is_function_gram(term: str) -> bool:
    """Whether ``term`` is a CJK gram holding a function character (:data:`ZH_FUNCTION_CHARS`)."""
    return is_cjk(term) and any(ch in ZH_FUNCTION_CHARS for ch in term)


def cjk_grams(run: str, *, unigrams: bool = False) -> list[str]:
    """Character bigrams of a CJK run (a one-character run yields itself)."""
    if len(run) == 1:
        return [run]
    grams = [run[i:i + 2] for i in range(len(run) - 1)]
    if unigrams:
        grams.extend(run)
    return grams


def terms(text: str, *, stopwords: frozenset[str] = ENGLISH_STOPWORDS,
          unigrams: bool = False) -> list[str]:
    """Normalised content terms of ``text``: stemmed Latin words, CJK bigrams."""
    out: list[str] = []
    for tok in raw_tokens(text):
        if is_cjk(tok):
            out.extend(cjk_grams(tok, unigrams=unigrams))
        elif tok not in stopwords:
            out.append(stem(tok.replace("’", "'")))
    return out


class TermCounter:
    """Counts a fixed set of terms in texts: ``counter(text)`` is
    ``Counter(terms(text, unigrams=unigrams))`` restricted to ``wanted``, without listing every
    term of the text: each distinct Latin word is stemmed once, and a CJK term is counted in
    the text's CJK runs (a bigram as a substring, overlaps included; a single character as a
    one-character run, or anywhere with ``unigrams``) instead of listing every bigram (unless
    the text has fewer characters than terms are wanted). The re-rank counts the query's terms
    in a few dozen memories."""

    def __init__(self, wanted: Collection[str], *, unigrams: bool = False) -> None:
        self.wanted = frozenset(wanted)
        self.latin = frozenset(t for t in self.wanted if not is_cjk(t))
        grams = [t for t in self.wanted if len(t) <= 2 and all(map(is_cjk, t))]   # what a CJK run yields
        self.single = [t for t in grams if len(t) == 1]
        self.pairs = [t for t in grams if len(t) == 2 and t[0] != t[1]]
        self.doubled = [t for t in grams if len(t) == 2 and t[0] == t[1]]   # "aa" twice in "aaa"
        self.unigrams = unigrams
        probes = [(t, f"{_TERM}{t}{_COUNT}") for t in sorted(self.wanted)]  # count_packed's lookups
        self._probes = ([p for p in probes if not is_cjk(p[0])], [p for p in probes if is_cjk(p[0])])

    def __call__(self, text: str) -> Counter:
        out: Counter = Counter()
        if text.isascii():  # no CJK and no ’: the words alone (raw_tokens' ASCII way, lower-cased once)
            if self.latin:
                for tok, n in Counter(_ASCII_TOKEN_RE.findall(text.lower())).items():
                    if tok not in ENGLISH_STOPWORDS:
                        term = stem(tok)
                        if term in self.latin:
                            out[term] += n
            return out
        tokens = Counter(raw_tokens(text))
        latin, runs = self.latin, []
        for tok, n in tokens.items():
            if is_cjk(tok):
                runs.append(tok)
            elif latin and tok not in ENGLISH_STOPWORDS:
                term = stem(tok.replace("’", "'"))
                if term in latin:
                    out[term] += n
        if not runs or not (self.single or self.pairs or self.doubled):
            return out
        if sum(len(run) * tokens[run] for run in runs) < len(self.single) + len(self.pairs) + len(self.doubled):
            # less text than terms wanted (a long question, a short memory): list its grams
            wanted = self.wanted
            for run in runs:
                for gram in cjk_grams(run, unigrams=self.unigrams):
                    if gram in wanted:
                        out[gram] += tokens[run]
            return out
        # every occurrence of each run, one separator apart: a gram never spans two runs
        self._add_runs(out, "|".join(run for run in runs for _ in range(tokens[run])), lambda c: tokens.get(c, 0))
        return out

    def count_packed(self, packed: str) -> Counter | None:
        """``self(prose)`` plus the wanted ones among ``keys``, from :func:`pack_terms`'s
        string of them: the listed terms looked up, the CJK runs counted in. None when
        ``packed`` is not such a string."""
        if not isinstance(packed, str):
            return None
        latin, cut, rest = packed.partition(_CJK)
        listed_cjk, cut2, blob = rest.partition(_RUNS)
        if not (cut and cut2):
            return None
        out: Counter = Counter()
        for listed, probes in ((latin, self._probes[0]), (listed_cjk, self._probes[1])):
            if len(listed) > 1:
                for term, probe in probes:
                    i = listed.find(probe)
                    if i >= 0:
                        start = i + len(probe)
                        out[term] = int(listed[start:listed.index(_TERM, start)])
        if blob and (self.single or self.pairs or self.doubled):
            self._add_runs(out, blob, lambda c: blob.split("|").count(c))
        return out

    def _add_runs(self, out: Counter, blob: str, one_char_runs) -> None:
        """Add the wanted CJK terms' counts in ``blob``, CJK runs joined by ``|``."""
        for term in self.pairs:
            n = blob.count(term)
            if n:
                out[term] += n
        for term in self.single:
            n = blob.count(term) if self.unigrams else one_char_runs(term)
            if n:
                out[term] += n
        for term in self.doubled:
            n = sum(1 for i in range(len(blob) - 1) if blob.startswith(term, i))
            if n:
                out[term] += n


_TERM, _COUNT, _CJK, _RUNS = "\x1f", "\x1e", "\x1c", "\x1d"


def pack_terms(prose: str, keys: Iterable[str] = ()) -> str | None:
    """What a :class:`TermCounter` needs of a text to count in it later without analysing it
    again (:meth:`TermCounter.count_packed`), as one string: the counts of ``prose``'s
    non-CJK terms and of the given ``keys`` terms (those starting with a CJK character
    apart: a CJK query term is looked up only among them), then ``prose``'s CJK runs as they
    occur (a bigram or a character is counted in them, with or without unigrams). None when
    a term holds one of the separators."""
    counts: Counter = Counter()
    runs = []
    for tok in raw_tokens(prose):
        if is_cjk(tok):
            runs.append(tok)
        elif tok not in ENGLISH_STOPWORDS:
            counts[stem(tok.replace("’", "'"))] += 1
    counts.update(keys)
    if any(sep in t for t in counts for sep in (_TERM, _COUNT, _CJK, _RUNS)):
        return None
    listed = ["".join(f"{_TERM}{t}{_COUNT}{n}" for t, n in counts.items() if is_cjk(t) == cjk) + _TERM
              for cjk in (False, True)]
    return f"{listed[0]}{_CJK}{listed[1]}{_RUNS}{'|'.join(runs)}"
