"""Distill's first step: what each entry says, as weighted terms.

Entries are parsed (dates, speaker), small talk is left out (:mod:`memrepo.lifecycle.smalltalk`),
and each remaining entry becomes a unit TF-IDF vector over :func:`content_terms` of its summary
(counted twice) and body, plus pseudo-terms for its ``subject/fact`` key and its tags; terms
that recur everywhere are dropped (:func:`everywhere`, :func:`weigh`), and an entry left with
fewer than two content words is small talk too (:func:`drop_thin`).
"""
from __future__ import annotations

import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from functools import lru_cache

from memrepo.lifecycle.distill_values import Entry, Skipped
from memrepo.lifecycle.smalltalk import CONVERSATIONAL, content_sentences
from memrepo.model import aware_time
from memrepo.text import ENGLISH_STOPWORDS, is_cjk, stem, terms

_ZH_FUNCTION_CHARS = frozenset("的了又在是和也就都把被着过吗呢吧啊这那个我你他她它们再还很要让")
FACT_PREFIX = "@fact:"
TAG_PREFIX = "#"
_STRUCTURAL_TAGS = ("speaker-", "session-")
NOT_SMALL_TALK = ("about the listener", "no content words")  # left out, but not for being small talk
_STOPWORDS = ENGLISH_STOPWORDS | CONVERSATIONAL
_STOP_STEMS = frozenset(stem(w) for w in CONVERSATIONAL)  # "likes" as well as "like"
_POSSESSIVE_RE = re.compile(r"['’]s\b", re.IGNORECASE)
_ATTACHMENT_RE = re.compile(r"\[(?:shared )?(?:image|photo|file|link|attachment)[^\]]*\]", re.IGNORECASE)
_SUMMARY_WEIGHT = 2  # the summary is the entry's gist; the body adds context and noise
SPEAKER_SHARE = 0.75  # a common term said this much by one speaker is that speaker's topic (speaker_terms)


@dataclass(frozen=True)
class Doc:
    """A usable entry with its parsed time and term counts."""

    entry: Entry
    when: datetime
    day: str
    counts: dict[str, float]
    speaker: str  # lower case; "" when unknown
    sentences: tuple[str, ...]  # the content sentences (small talk removed)


@dataclass(frozen=True)
class Chatter:
    """An entry left out as small talk (internal): kept for ``--explain``."""

    entry: Entry
    day: str
    speaker: str
    kinds: tuple[str, ...]


def prepare(entries: Iterable[Entry], *, now: datetime,
             window_days: int) -> tuple[list[Doc], list[Skipped], int, list[Chatter]]:
    """Parse dates and terms; drop malformed entries (reported), those outside the window,
    and small talk (returned apart)."""
    if now.tzinfo is None:
        raise ValueError("now must carry a time zone (e.g. datetime.now(timezone.utc))")
    start = now - timedelta(days=window_days)
    entries = sorted(entries, key=lambda e: (str(e.id), str(e.created)))
    names = frozenset(n for e in entries for n in _name_words(speaker_of(e)))
    docs: list[Doc] = []
    skipped: list[Skipped] = []
    chatter: list[Chatter] = []
    outside, seen = 0, set[str]()
    for entry in entries:
        problem = _problem(entry, seen)
        when = None if problem else aware_time(entry.created)
        if when is None:
            skipped.append(Skipped(str(getattr(entry, "id", "") or "?"), problem or
                                   f"unparsable created date {entry.created!r} (need ISO-8601 with time zone)"))
            continue
        seen.add(entry.id)
        if not start < when <= now:
            outside += 1
            continue
        speaker = speaker_of(entry)
        turn = bool(speaker) and speaker != (entry.author or "")  # a conversation turn
        summary, kinds_s = content_sentences(_unlabelled(entry.summary or ""), names, turn=turn)
        body, kinds_b = content_sentences(_unlabelled(entry.body or ""), names, turn=turn)
        day = when.date().isoformat()
        if not summary and not body and not entry.fact:
            chatter.append(Chatter(entry, day, speaker.lower(), tuple(kinds_s + kinds_b)))
            continue
        counts = _term_counts(entry, " ".join(summary), " ".join(body))
        if not counts and turn:  # "Yes, me too!" in a conversation: nothing to recur
            chatter.append(Chatter(entry, day, speaker.lower(), ("no content words",)))
            continue
        if not counts:
            skipped.append(Skipped(entry.id, "no content terms in summary or body"))
            continue
        sentences = tuple(body or summary)  # a summary is often the body's first line, cut short
        docs.append(Doc(entry, when, day, counts, speaker.lower(), sentences))
    docs.sort(key=lambda d: (d.when, d.entry.id))
    return docs, skipped, outside, chatter


_LABEL_RE = re.compile(r"^\s*([^\W\d_][\w'’.-]*(?: [^\W\d_][\w'’.-]*){0,2})\s*[:：]\s+")
_NOT_SPEAKERS = frozenset("note notes summary decision context update todo question answer why what "
                          "evidence fix bug error warning result reason example see".split())


def speaker_of(entry: Entry) -> str:
    """Who said it: a ``speaker-*`` tag, the transcript's ``Name:`` label, or the author ("" if none).

    Entries of different speakers never join: "I love pottery" said by two people is two facts.
    """
    for tag in entry.tags or ():
        tag = str(tag).lstrip("#")
        if tag.lower().startswith("speaker-") and len(tag) > 8:
            return tag[8:].replace("-", " ").title()
    label = _label(entry.body or "") or _label(entry.summary or "")
    return label or str(entry.author or "")


def _label(text: str) -> str:
    match = _LABEL_RE.match(text)
    if not match or match.group(1).lower() in _NOT_SPEAKERS:
        return ""
    return match.group(1)


def _unlabelled(text: str) -> str:
    """``text`` without a leading ``Name:`` transcript label."""
    match = _LABEL_RE.match(text) if _label(text) else None
    return text[len(match.group(0)):] if match else text


def _name_words(speaker: str) -> list[str]:
    return [w for w in speaker.lower().split() if w]


def _problem(entry: Entry, seen: set[str]) -> str | None:
    """Why ``entry`` cannot be used, or None."""
    if not entry.id:
        return "missing id"
    if entry.id in seen:
        return "duplicate id"
    if not entry.created:
        return "missing created date"
    if not (entry.summary or "").strip() and not (entry.body or "").strip():
        return "empty summary and body"
    return None


def content_terms(text: str) -> list[str]:
    """``memrepo.text.terms`` for matching paraphrases.

    Chinese paraphrases share characters more than bigrams (深色模式 / 深色主题), so single
    characters count too; grams holding a function character are dropped. English possessives
    lose their ``'s``; contractions (can't, I'll, that's) and the vocabulary of conversation
    (:data:`~memrepo.lifecycle.smalltalk.CONVERSATIONAL`: great, thanks, wait …) are no content.
    """
    text = _ATTACHMENT_RE.sub(" ", _POSSESSIVE_RE.sub("", text))
    return [t for t in terms(text, stopwords=_STOPWORDS, unigrams=True)
            if "'" not in t and t not in _STOP_STEMS and _is_content(t)]


@lru_cache(maxsize=200_000)
def _is_content(term: str) -> bool:
    """False for short numbers and Chinese grams holding a function character (cached)."""
    if term.isdigit():
        return len(term) > 2  # "39", "10": counts and list numbers, not things
    return not (is_cjk(term) and any(ch in _ZH_FUNCTION_CHARS for ch in term))


def _term_counts(entry: Entry, summary: str, body: str) -> dict[str, float]:
    """Weighted term counts of an entry's content sentences, with fact key and tags as pseudo-terms.

    ``speaker-*`` and ``session-*`` tags say who and when, not what: they are not terms.
    """
    counts: Counter[str] = Counter()
    for term in content_terms(summary):
        counts[term] += _SUMMARY_WEIGHT
    for term in content_terms(body):
        counts[term] += 1
    if not counts and not entry.fact:
        return {}
    if entry.fact:
        counts[f"{FACT_PREFIX}{entry.subject}/{entry.fact}"] += 3
    for tag in entry.tags or ():
        tag = str(tag).lstrip("#").lower()
        if not tag.startswith(_STRUCTURAL_TAGS):
            counts[TAG_PREFIX + tag] += 1
    return dict(counts)


def everywhere(docs: Sequence[Doc], share: float) -> set[str]:
    """Terms seen on at least ``share`` of the days (with ten days or more to tell).

    A word a person uses every other day ("love", "great", a friend's name) carries no content:
    it cannot say which thing recurs.
    """
    days: dict[str, set[str]] = defaultdict(set)
    for doc in docs:
        for term in doc.counts:
            days[term].add(doc.day)
    total = len({d.day for d in docs})
    if total < 10 or share >= 1:
        return set()
    return {t for t, seen in days.items() if len(seen) >= share * total and not t.startswith(FACT_PREFIX)}


def speaker_terms(docs: Sequence[Doc], share: float) -> frozenset[str]:
    """Terms one speaker holds ``share`` or more of (counted in entries), names excepted, when
    that speaker says less than ``share`` of everything (else any term of theirs would pass).

    A word both people use on most days ("love", "great", the other's name) says nothing about
    which thing recurs; a word one of them uses on most days ("studio", said by the one opening
    a dance studio) is what that person keeps coming back to: the conversation's main topic,
    which the everywhere rule would otherwise drop (measured: also exempting such terms from
    ``max_df`` found fewer topics). A log with one voice has no such terms.
    """
    if share > 1:
        return frozenset()
    holders: dict[str, Counter[str]] = defaultdict(Counter)
    volume: Counter[str] = Counter()
    for doc in docs:
        if doc.speaker:
            volume[doc.speaker] += 1
            for term in doc.counts:
                holders[term][doc.speaker] += 1
    total = sum(volume.values())
    minor = {s for s, n in volume.items() if n < share * total}
    names = {t for s in volume for t in content_terms(s)}
    out = set()
    for term, by in holders.items():
        who, most = by.most_common(1)[0]
        if who in minor and most >= share * sum(by.values()) and term not in names and term[0] not in "@#":
            out.add(term)
    return frozenset(out)


def drop_thin(docs: list[Doc], weights: list[dict[str, float]]) -> tuple[list[Doc], list[dict[str, float]], list[Chatter]]:
    """Entries left with fewer than two content words once common terms are gone: small talk too."""
    kept_docs, kept_weights, thin = [], [], []
    for doc, vec in zip(docs, weights):
        words = sum(1 for t in vec if t[0] not in "@#" and (len(t) > 1 or not is_cjk(t)))
        if words >= 2 or any(t.startswith(FACT_PREFIX) for t in vec):
            kept_docs.append(doc)
            kept_weights.append(vec)
        else:
            thin.append(Chatter(doc.entry, doc.day, doc.speaker, ("no content words",)))
    return kept_docs, kept_weights, thin


def weigh(docs: Sequence[Doc], too_common: int,
           drop: set[str]) -> tuple[list[dict[str, float]], Counter[str]]:
    """TF-IDF vectors (sub-linear tf, smoothed idf) and document frequencies.

    Each vector is normalised over all its terms, then terms held by more than
    ``too_common`` entries, or in ``drop``, are dropped: they say nothing about *which* thing
    recurs (the article's learned stop words), yet an entry made mostly of them stays far from
    others instead of looking like a near-duplicate of every other such entry.
    """
    df: Counter[str] = Counter()
    for doc in docs:
        df.update(doc.counts.keys())
    n = len(docs)
    idf = {t: math.log((n + 1) / (f + 1)) + 1 for t, f in df.items()}
    vectors = []
    for doc in docs:
        vec = {t: (1 + math.log(c)) * idf[t] for t, c in doc.counts.items()}
        norm = math.sqrt(sum(w * w for w in vec.values())) or 1.0
        vectors.append({t: w / norm for t, w in vec.items()
                        if (df[t] <= too_common and t not in drop) or t.startswith(FACT_PREFIX)})
    return vectors, df
