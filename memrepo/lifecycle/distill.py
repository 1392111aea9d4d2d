"""Nightly distill: find L1 entries that say the same thing on distinct days or sessions.

Pure and deterministic: plain values in, plain values out, no I/O, no LLM. The vault layer
builds :class:`Entry` values from memory files, calls :func:`find_patterns` (L1 → L2) or
:func:`promote` (L2 → L3), and turns each :class:`Candidate` into a proposal.

Matching is linear-ish, never all-pairs:

0. small talk is left out (:mod:`memrepo.lifecycle.smalltalk`): greeting, thanks, farewell …
   sentences go, and in a conversation turn so do sentences about the listener; an entry with
   nothing left is not matched at all (``--explain`` groups them by kind);
1. every entry becomes a unit TF-IDF vector over :func:`content_terms` of its remaining
   summary (counted twice: it is the entry's gist) and body, plus pseudo-terms for its
   ``subject/fact`` key and its tags (not ``speaker-*``/``session-*``); terms on
   ``common_day_share`` of the days or more are dropped (they recur everywhere, so they say
   nothing about *which* thing recurs), and an entry left with fewer than two content words
   is left out too;
2. each entry is put into the buckets of its *signature* — its rarest terms, taken until the
   rest of its vector could no longer reach ``similarity`` (prefix filtering), plus its fact
   key — one set of buckets per speaker (``speaker-*`` tag, ``Name:`` label, ``author``), so
   two people saying the same thing never join. Inside a bucket an entry is compared only
   with its ``bucket_cap`` predecessors in time, and terms held by more than ``max_df`` of
   the entries are dropped after normalising (they dilute, never match), so the work is at
   most ``N · signature_size · bucket_cap`` comparisons;
3. pairs sharing :data:`MIN_SHARED_WORDS` content words (or a fact key) and scoring at least
   ``similarity`` (cosine, plus bonuses for a shared fact key and shared tags) are joined with
   union-find; chained clusters are split until coherent;
4. a cluster seen on ``min_occurrences`` distinct days (or sessions) whose members share
   content becomes a candidate, unless a :class:`KnownPattern` already covers it (idempotence,
   reinforcements). It reads as a statement (the speaker and the member sentence nearest the
   cluster's centroid), is scored by its evidence (days, similarity, shared words), and the
   best ``max_per_subject`` per subject (``max_per_run`` in all) are returned; the rest wait.

English and Chinese paraphrases match within their language; across languages only a shared
fact key (or shared tags) joins them: there is no dictionary or translation here.
"""
from __future__ import annotations

import hashlib
import math
import re
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from functools import lru_cache
from typing import Literal

from memrepo.config import DEFAULTS
from memrepo.lifecycle.smalltalk import CONVERSATIONAL, content_sentences
from memrepo.model import aware_time
from memrepo.text import ENGLISH_STOPWORDS, is_cjk, stem, terms

CountBy = Literal["day", "session", "day_or_session"]

# Characters that glue Chinese sentences together (又 "again", 了, 的 …): a bigram holding one
# is an artefact of where words meet, not content, and would only dilute the similarity.
_ZH_FUNCTION_CHARS = frozenset("的了又在是和也就都把被着过吗呢吧啊这那个我你他她它们再还很要让")
_FACT_PREFIX = "@fact:"
_TAG_PREFIX = "#"
_STRUCTURAL_TAGS = ("speaker-", "session-")
_NOT_SMALL_TALK = ("about the listener", "no content words")  # left out, but not for being small talk
_STOPWORDS = ENGLISH_STOPWORDS | CONVERSATIONAL
_STOP_STEMS = frozenset(stem(w) for w in CONVERSATIONAL)  # "likes" as well as "like"
_POSSESSIVE_RE = re.compile(r"['’]s\b", re.IGNORECASE)
# "[shared image: a photo of …]": a note about an attachment, not what the speaker says
_ATTACHMENT_RE = re.compile(r"\[(?:shared )?(?:image|photo|file|link|attachment)[^\]]*\]", re.IGNORECASE)
_SUMMARY_WEIGHT = 2  # the summary is the entry's gist; the body adds context and noise
FACT_BONUS = 0.5  # same subject/fact key: alone it nearly joins two entries
TAG_BONUS = 0.1  # per shared tag, at most two: helps, never joins on its own
MIN_SHARED_WORDS = 2  # English words or Chinese bigrams two entries must share to be joined
SPEAKER_SHARE = 0.75  # a common term said this much by one speaker is that speaker's topic (_speaker_terms)
_DISTILL = DEFAULTS["distill"]  # the defaults of the nightly runs live in the vault configuration
_PROMOTE = DEFAULTS["promote"]


@dataclass(frozen=True)
class Entry:
    """One memory as distill sees it (built by the vault layer from a memory file)."""

    id: str
    created: str  # ISO-8601 with time zone
    session: str | None
    subject: str
    fact: str | None
    kind: str
    summary: str
    body: str
    tags: tuple[str, ...]
    links: tuple[str, ...] = ()
    author: str | None = None


@dataclass(frozen=True)
class KnownPattern:
    """A pattern distill reported before: its key, members and what became of it.

    ``terms`` (optional) are the pattern's shared terms; they let a pattern whose members have
    all left the window still be recognised when it recurs with a different key.
    """

    key: str
    members: tuple[str, ...]
    status: Literal["proposed", "applied", "rejected"]
    terms: tuple[str, ...] = ()


@dataclass(frozen=True)
class Candidate:
    """A recurring pattern, ready to become a proposal for ``layer``."""

    id: str
    layer: str
    subject: str
    kind: str
    summary: str
    body: str
    members: tuple[str, ...]
    shared_terms: tuple[str, ...]
    shared_fact: str | None
    shared_tags: tuple[str, ...]
    days: tuple[str, ...]
    sessions: tuple[str, ...]
    occurrences: int
    explain: dict = field(compare=False, hash=False)
    speaker: str | None = None
    score: float = 0.0
    why: str = ""


@dataclass(frozen=True)
class Reinforcement:
    """New occurrences of a pattern that was already applied."""

    key: str
    new_members: tuple[str, ...]


@dataclass(frozen=True)
class Suppressed:
    """A recurring cluster not proposed because a known pattern covers it."""

    key: str
    status: str
    members: tuple[str, ...]


@dataclass(frozen=True)
class Skipped:
    """An entry distill could not use, and why."""

    id: str
    reason: str


@dataclass(frozen=True)
class DistillResult:
    """Everything one distill run found; every tuple is sorted.

    ``capped`` are patterns left for a later run by the per-subject and per-run caps (best
    first); ``small_talk`` counts the entries left out as small talk; ``near_misses`` (only
    with ``explain``) are groups that came close, with why they were dropped.
    """

    candidates: tuple[Candidate, ...]
    reinforcements: tuple[Reinforcement, ...]
    suppressed: tuple[Suppressed, ...]
    skipped: tuple[Skipped, ...]
    considered: int
    out_of_window: int
    capped: tuple[Candidate, ...] = ()
    small_talk: int = 0
    near_misses: tuple[dict, ...] = ()


@dataclass(frozen=True)
class _Doc:
    """A usable entry with its parsed time and term counts (internal)."""

    entry: Entry
    when: datetime
    day: str
    counts: dict[str, float]
    speaker: str  # lower case; "" when unknown
    sentences: tuple[str, ...]  # the content sentences (small talk removed)


def find_patterns(entries: Iterable[Entry], *, now: datetime,
                  window_days: int = _DISTILL["window_days"],
                  min_occurrences: int = _DISTILL["min_occurrences"],
                  count_by: CountBy = _DISTILL["count_by"],
                  similarity: float = _DISTILL["similarity"], known: Iterable[KnownPattern] = (),
                  layer: str = "L2", signature_size: int = 12, bucket_cap: int = 32,
                  max_df: float = 0.05, min_coherence: float = 0.6,
                  common_day_share: float = _DISTILL["common_day_share"],
                  max_per_subject: int = _DISTILL["max_per_subject"],
                  max_per_run: int = _DISTILL["max_per_run"],
                  stopwords: Iterable[str] = (), explain: bool = False,
                  speaker_share: float = SPEAKER_SHARE) -> DistillResult:
    """Find patterns recurring on ``min_occurrences`` distinct days (or sessions).

    ``similarity`` is the score two entries need to be joined: the cosine of their TF-IDF
    vectors, where a shared ``subject/fact`` key and shared tags count as heavy terms.
    ``count_by`` says what counts as a separate occurrence: distinct calendar days (in the
    entry's own time zone), distinct sessions, or whichever of the two is larger. Only entries
    created in ``(now - window_days, now]`` are considered. ``max_df`` is the share of entries
    (at least ``bucket_cap`` entries) above which a term is too common to say which thing
    recurs: it still dilutes an entry's vector but never makes two entries similar; so is a
    term seen on ``common_day_share`` of the days or more (terms that recur everywhere carry
    no content), and any of ``stopwords`` (e.g. search's learned stopwords) — unless one
    speaker says it: a common term held ``speaker_share`` or more by one speaker's entries
    (not a participant's name) is that speaker's recurring topic, a conversation's main topic.
    ``min_coherence`` is how close, on average, members must be to their cluster's centroid;
    a looser cluster (a chain of "User prefers X" / "User prefers Y" …) is split by raising
    the join threshold inside it until its parts are coherent.

    Small talk (:mod:`memrepo.lifecycle.smalltalk`) is left out before matching, and only
    entries of one speaker join. Candidates are ranked by evidence; at most
    ``max_per_subject`` per subject and ``max_per_run`` in all are returned, the rest are
    ``capped`` (they come back on the next run). ``explain`` adds near misses.
    """
    docs, skipped, out_of_window, chatter = _prepare(entries, now=now, window_days=window_days)
    too_common = max(bucket_cap, int(max_df * len(docs)))
    owned = _speaker_terms(docs, speaker_share)
    weights, df = _weigh(docs, too_common, (_everywhere(docs, common_day_share) - owned) | set(stopwords))
    docs, weights, thin = _drop_thin(docs, weights)
    chatter.extend(thin)
    pairs = _candidate_pairs(weights, df, [d.speaker for d in docs], threshold=similarity,
                             signature_size=signature_size, bucket_cap=bucket_cap)
    scores = _score_pairs(pairs, weights, similarity)
    clusters = _cluster(scores)
    inner = _split_scores(clusters, scores)
    known_list = sorted(known, key=lambda k: k.key)
    found, reinforcements, suppressed = [], [], []
    used: set[str] = set()
    for cluster, cluster_scores in zip(clusters, inner):
        for members, inner_scores in _coherent(cluster, cluster_scores, weights,
                                               similarity, min_coherence):
            group = [docs[i] for i in members]
            if _occurrences(group, count_by) < min_occurrences:
                continue
            if not _shared_terms([weights[i] for i in members]) and not _shared_fact(group):
                continue  # joined pair by pair, but nothing said by most of them: no pattern
            pattern = _describe(group, members, weights, inner_scores, layer=layer,
                                count_by=count_by, used=used)
            _route(pattern, known_list, found, reinforcements, suppressed)
    candidates, capped = _cap(found, max_per_subject, max_per_run)
    near = (_near_misses(docs, weights, df, chatter, candidates, capped, similarity=similarity,
                         min_occurrences=min_occurrences, count_by=count_by,
                         signature_size=signature_size, bucket_cap=bucket_cap)
            if explain else ())
    return DistillResult(
        candidates=tuple(sorted(candidates, key=lambda c: c.id)),
        reinforcements=tuple(sorted(reinforcements, key=lambda r: r.key)),
        suppressed=tuple(sorted(suppressed, key=lambda s: s.key)),
        skipped=tuple(sorted(skipped, key=lambda s: (s.id, s.reason))),
        considered=len(docs) + len(chatter), out_of_window=out_of_window,
        capped=tuple(capped), small_talk=len(chatter), near_misses=tuple(near))


def promote(entries: Iterable[Entry], *, now: datetime,
            window_days: int = _PROMOTE["window_days"],
            min_occurrences: int = _PROMOTE["min_occurrences"],
            count_by: CountBy = _PROMOTE["count_by"],
            similarity: float = _PROMOTE["similarity"],
            known: Iterable[KnownPattern] = ()) -> DistillResult:
    """L2 → L3: the same machinery with a longer window and a higher bar.

    A behavioural pattern must recur more often, over a longer span, before it is proposed as a
    principle; weekly human review still decides.
    """
    return find_patterns(entries, now=now, window_days=window_days,
                         min_occurrences=min_occurrences, count_by=count_by,
                         similarity=similarity, known=known, layer="L3")


# --- preparation -----------------------------------------------------------------------------

@dataclass(frozen=True)
class _Chatter:
    """An entry left out as small talk (internal): kept for ``--explain``."""

    entry: Entry
    day: str
    speaker: str
    kinds: tuple[str, ...]


def _prepare(entries: Iterable[Entry], *, now: datetime,
             window_days: int) -> tuple[list[_Doc], list[Skipped], int, list[_Chatter]]:
    """Parse dates and terms; drop malformed entries (reported), those outside the window,
    and small talk (returned apart)."""
    if now.tzinfo is None:
        raise ValueError("now must carry a time zone (e.g. datetime.now(timezone.utc))")
    start = now - timedelta(days=window_days)
    entries = sorted(entries, key=lambda e: (str(e.id), str(e.created)))
    names = frozenset(n for e in entries for n in _name_words(speaker_of(e)))
    docs, skipped, chatter, outside, seen = [], [], [], 0, set()
    for entry in entries:
        problem = _problem(entry, seen)
        when = None if problem else aware_time(entry.created)
        if not problem and when is None:
            problem = f"unparsable created date {entry.created!r} (need ISO-8601 with time zone)"
        if problem:
            skipped.append(Skipped(str(getattr(entry, "id", "") or "?"), problem))
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
            chatter.append(_Chatter(entry, day, speaker.lower(), tuple(kinds_s + kinds_b)))
            continue
        counts = _term_counts(entry, " ".join(summary), " ".join(body))
        if not counts and turn:  # "Yes, me too!" in a conversation: nothing to recur
            chatter.append(_Chatter(entry, day, speaker.lower(), ("no content words",)))
            continue
        if not counts:
            skipped.append(Skipped(entry.id, "no content terms in summary or body"))
            continue
        sentences = tuple(body or summary)  # a summary is often the body's first line, cut short
        docs.append(_Doc(entry, when, day, counts, speaker.lower(), sentences))
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
    return text[len(_LABEL_RE.match(text).group(0)):] if _label(text) else text


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
        counts[f"{_FACT_PREFIX}{entry.subject}/{entry.fact}"] += 3
    for tag in entry.tags or ():
        tag = str(tag).lstrip("#").lower()
        if not tag.startswith(_STRUCTURAL_TAGS):
            counts[_TAG_PREFIX + tag] += 1
    return dict(counts)


def _everywhere(docs: Sequence[_Doc], share: float) -> set[str]:
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
    return {t for t, seen in days.items() if len(seen) >= share * total and not t.startswith(_FACT_PREFIX)}


def _speaker_terms(docs: Sequence[_Doc], share: float) -> frozenset[str]:
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


def _drop_thin(docs: list[_Doc], weights: list[dict[str, float]]) -> tuple[list[_Doc], list[dict[str, float]], list[_Chatter]]:
    """Entries left with fewer than two content words once common terms are gone: small talk too."""
    kept_docs, kept_weights, thin = [], [], []
    for doc, vec in zip(docs, weights):
        words = sum(1 for t in vec if t[0] not in "@#" and (len(t) > 1 or not is_cjk(t)))
        if words >= 2 or any(t.startswith(_FACT_PREFIX) for t in vec):
            kept_docs.append(doc)
            kept_weights.append(vec)
        else:
            thin.append(_Chatter(doc.entry, doc.day, doc.speaker, ("no content words",)))
    return kept_docs, kept_weights, thin


def _weigh(docs: Sequence[_Doc], too_common: int,
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
                        if (df[t] <= too_common and t not in drop) or t.startswith(_FACT_PREFIX)})
    return vectors, df


# --- matching --------------------------------------------------------------------------------

def _candidate_pairs(weights: Sequence[dict[str, float]], df: Counter[str],
                     speakers: Sequence[str] | None, *, threshold: float, signature_size: int,
                     bucket_cap: int) -> list[tuple[int, int]]:
    """Pairs worth scoring: near in time and sharing two signature terms (or a fact key).

    One shared signature term is what prefix filtering guarantees; asking for two (a pair
    must share :data:`MIN_SHARED_WORDS` words anyway) cuts the pairs to score several-fold
    at large sizes, at the price of missing pairs whose second shared word is common.
    With ``speakers``, only entries of the same speaker meet (buckets are per speaker).
    """
    buckets: dict[tuple[str, str], list[int]] = defaultdict(list)
    pairs: list[tuple[int, int]] = []
    for i, vec in enumerate(weights):  # entries are in time order, so buckets are too
        hits: Counter[int] = Counter()
        who = speakers[i] if speakers is not None else ""
        for term in _signature(vec, df, threshold, signature_size):
            bucket = buckets[(who, term)]
            hits.update(bucket[-bucket_cap:] * (2 if term[0] == "@" else 1))
            bucket.append(i)
        pairs.extend((j, i) for j, count in hits.items() if count >= 2)
    return pairs


def _signature(vec: dict[str, float], df: Counter[str], threshold: float,
               size: int) -> list[str]:
    """The terms an entry is bucketed under (prefix filtering).

    Terms are taken rarest first until the weight left in the rest of the vector is below
    ``threshold``: two unit vectors whose cosine reaches ``threshold`` must then share a
    signature term (the classic all-pairs prefix filter). A term no other entry holds costs
    nothing (it is never bucketed); terms beyond ``size`` are left out, and a bucket is
    searched only ``bucket_cap`` entries back, to bound the work: the approximations.
    """
    left = sum(w * w for w in vec.values())
    limit = threshold * threshold
    # the fact key always: entries on one fact must meet however differently they are worded
    signature = [t for t in vec if t.startswith(_FACT_PREFIX) and df[t] >= 2]
    for term in sorted(vec, key=lambda t: (df[t], t)):
        if left < limit or len(signature) >= size:
            break
        left -= vec[term] * vec[term]
        if df[term] >= 2 and term not in signature:
            signature.append(term)
    return signature


def _score_pairs(pairs: Iterable[tuple[int, int]], weights: Sequence[dict[str, float]],
                 threshold: float) -> dict[tuple[int, int], float]:
    """Score each pair; keep those reaching ``threshold``.

    The score is the cosine plus :data:`FACT_BONUS` when both entries carry the same
    ``subject/fact`` key (they are about the same fact, however worded, in any language) and
    :data:`TAG_BONUS` per shared tag (at most two): people tag deliberately. Without a shared
    fact key a pair must share :data:`MIN_SHARED_WORDS` words: one name or one rare word in
    common ("Zelda Victorson: …" on three days) is a topic, not a pattern.
    """
    kept = {}
    for a, b in pairs:
        va, vb = weights[a], weights[b]
        score = 0.0
        tags = words = 0
        fact = False
        for term in va.keys() & vb.keys():  # set intersection runs in C
            score += va[term] * vb[term]
            first = term[0]  # pseudo-terms start with a character no word starts with
            if first == "@":
                fact = True
            elif first == "#":
                tags += 1
            elif len(term) > 1 or not is_cjk(term):
                words += 1
        if not fact and words < MIN_SHARED_WORDS:
            continue
        score += TAG_BONUS * min(tags, 2) + (FACT_BONUS if fact else 0.0)
        if score >= threshold:
            kept[(a, b)] = round(min(score, 1.0), 4)
    return kept


def _cluster(edges: Iterable[tuple[int, int]]) -> list[list[int]]:
    """Connected components (union-find) of ``edges``: sorted lists, sorted by first member."""
    parent: dict[int, int] = {}

    def find(x: int) -> int:
        parent.setdefault(x, x)
        while parent[x] != x:
            parent[x] = parent[parent[x]]
            x = parent[x]
        return x

    for a, b in sorted(edges):
        ra, rb = find(a), find(b)
        if ra != rb:
            parent[max(ra, rb)] = min(ra, rb)
    groups: dict[int, list[int]] = defaultdict(list)
    for node in sorted(parent):
        groups[find(node)].append(node)
    return [g for _, g in sorted(groups.items())]


def _coherent(members: list[int], scores: dict[tuple[int, int], float],
              weights: Sequence[dict[str, float]], threshold: float,
              min_coherence: float) -> list[tuple[list[int], dict[tuple[int, int], float]]]:
    """Split a chained cluster into coherent parts, raising the join threshold by 0.05 steps.

    Single-link clustering chains: A~B, B~C can join A and C that share only boiler-plate.
    Each part is returned with the pair scores inside it; parts of one member vanish.
    """
    done, todo = [], [(members, scores, threshold)]
    while todo:
        group, inner, level = todo.pop()
        if _coherence(group, weights) >= min_coherence:
            done.append((group, inner))
            continue
        level = round(level + 0.05, 4)
        strong = {pair: s for pair, s in inner.items() if s >= level}
        parts = _cluster(strong)
        todo.extend((part, part_scores, level)
                    for part, part_scores in zip(parts, _split_scores(parts, strong)))
    return sorted(done, key=lambda d: d[0])


def _coherence(members: Sequence[int], weights: Sequence[dict[str, float]]) -> float:
    """Mean cosine of the members' vectors with their (normalised) centroid."""
    centroid: dict[str, float] = defaultdict(float)
    for i in members:
        for term, w in weights[i].items():
            centroid[term] += w
    norm = math.sqrt(sum(w * w for w in centroid.values())) or 1.0
    total = 0.0
    for i in members:
        vec = weights[i]
        length = math.sqrt(sum(w * w for w in vec.values())) or 1.0
        total += sum(w * centroid[t] for t, w in vec.items()) / (norm * length)
    return total / len(members)


def _split_scores(clusters: Sequence[Sequence[int]],
                  scores: dict[tuple[int, int], float]) -> list[dict[tuple[int, int], float]]:
    """The pair scores inside each cluster (one pass over all scores)."""
    owner = {i: k for k, members in enumerate(clusters) for i in members}
    inner: list[dict[tuple[int, int], float]] = [{} for _ in clusters]
    for pair, score in scores.items():
        inner[owner[pair[0]]][pair] = score  # a scored pair always lies inside one cluster
    return inner


def _occurrences(group: Sequence[_Doc], count_by: CountBy) -> int:
    """How many separate occurrences a cluster has under ``count_by``."""
    days = len({d.day for d in group})
    sessions = len({_session_key(d) for d in group})
    if count_by == "day":
        return days
    if count_by == "session":
        return sessions
    if count_by == "day_or_session":
        return max(days, sessions)
    raise ValueError(f"count_by must be day, session or day_or_session, not {count_by!r}")


def _session_key(doc: _Doc) -> str:
    """The entry's session; an entry without one is its own session on its day."""
    return doc.entry.session or f"{doc.day}/{doc.entry.id}"


# --- describing and routing ------------------------------------------------------------------

def _describe(group: Sequence[_Doc], members: Sequence[int],
              weights: Sequence[dict[str, float]], inner: dict[tuple[int, int], float], *,
              layer: str, count_by: CountBy, used: set[str]) -> Candidate:
    """Turn a cluster into a candidate with a stable key, deterministic text and its evidence score."""
    vecs = [weights[i] for i in members]
    shared = _shared_terms(vecs)
    fact = _shared_fact(group)
    tags = _shared_tags(group)
    subjects = sorted({d.entry.subject for d in group})
    subject = subjects[0] if len(subjects) == 1 else "mixed"
    speaker = speaker_of(group[0].entry) or None
    key = _pattern_key(layer, subject, fact, shared, speaker)
    if key in used:  # two patterns with the same gist in one run: tell them apart by members
        key = _pattern_key(layer, subject, fact, [min(d.entry.id for d in group)], speaker)
    used.add(key)
    id_of = {i: d.entry.id for i, d in zip(members, group)}
    rep = _representative(group, members, inner)
    statement = _central_sentence(group, vecs) or " ".join((rep.entry.summary or "").split())
    ordered = sorted(group, key=lambda d: (d.when, d.entry.id))
    days = tuple(sorted({d.day for d in group}))
    sessions = tuple(sorted({d.entry.session for d in group if d.entry.session}))
    occurrences = _occurrences(group, count_by)
    zh = _is_chinese(group)
    mean_similarity = round(sum(inner.values()) / len(inner), 4) if inner else 0.0
    score = round(occurrences + mean_similarity + 0.1 * min(len(shared), 5), 3)
    why = (f"{speaker + ' ' if speaker else ''}on {len(days)} distinct days ({days[0]} to {days[-1]}); "
           f"{len(group)} entries share {', '.join(shared) or fact or '-'}; "
           f"mean similarity {mean_similarity:.2f}")
    summary = _summary_text(statement, speaker, occurrences, count_by, zh)
    body = _body_text(statement, speaker, shared, fact, tags, ordered, days, sessions, zh)
    explain = {
        "key_basis": _key_basis(subject, fact, shared, speaker),
        "count_by": count_by, "occurrences": occurrences,
        "representative": rep.entry.id, "speaker": speaker, "score": score, "why": why,
        "members": [{"id": d.entry.id, "created": d.entry.created, "session": d.entry.session,
                     "summary": d.entry.summary} for d in ordered],
        "shared_terms": list(shared), "shared_fact": fact, "shared_tags": list(tags),
        "similarities": [{"a": id_of[a], "b": id_of[b], "score": s}
                         for (a, b), s in sorted(inner.items())],
    }
    return Candidate(id=key, layer=layer, subject=subject, kind="pattern", summary=summary,
                     body=body, members=tuple(sorted(d.entry.id for d in group)),
                     shared_terms=shared, shared_fact=fact, shared_tags=tags, days=days,
                     sessions=sessions, occurrences=occurrences, explain=explain,
                     speaker=speaker, score=score, why=why)


def _central_sentence(group: Sequence[_Doc], vecs: Sequence[dict[str, float]]) -> str:
    """The member sentence closest to the members' centroid (ties: earliest): the statement."""
    centroid: Counter[str] = Counter()
    for vec in vecs:
        for term, w in vec.items():
            centroid[term] += w
    best, best_score = "", 0.0
    for doc in sorted(group, key=lambda d: (d.when, d.entry.id)):
        for sentence in doc.sentences:
            words = set(content_terms(sentence))
            if not words:
                continue
            score = sum(centroid[t] for t in words) / math.sqrt(len(words) + 2)
            if score > best_score + 1e-9:
                best, best_score = " ".join(sentence.split()), score
    return best


def _cap(found: list[Candidate], per_subject: int,
         per_run: int) -> tuple[list[Candidate], list[Candidate]]:
    """The best-evidenced candidates within the caps, and the rest (best first)."""
    kept, capped = [], []
    per: Counter[str] = Counter()
    for c in sorted(found, key=lambda c: (-c.score, c.id)):
        if per[c.subject] >= per_subject or len(kept) >= per_run:
            capped.append(c)
        else:
            per[c.subject] += 1
            kept.append(c)
    return kept, capped


def _near_misses(docs: Sequence[_Doc], weights: Sequence[dict[str, float]], df: Counter[str],
                 chatter: Sequence[_Chatter], candidates: Sequence[Candidate],
                 capped: Sequence[Candidate], *, similarity: float, min_occurrences: int,
                 count_by: CountBy, signature_size: int, bucket_cap: int,
                 limit: int = 20) -> list[dict]:
    """Groups that came close to a candidate, with why each was dropped (``--explain``).

    * small talk: one speaker's greetings, thanks … of one kind on enough days;
    * different speakers: entries that join only across speakers;
    * too few days: a group of one speaker on fewer than ``min_occurrences`` days;
    * below similarity: a group that joins only at a lower similarity than ``similarity``.
    """
    out: list[dict] = []
    by_kind: dict[tuple[str, str], list[_Chatter]] = defaultdict(list)
    for c in chatter:
        for kind in sorted(set(c.kinds)) or ["small talk"]:
            by_kind[(c.speaker, kind)].append(c)
    for (speaker, kind), group in sorted(by_kind.items()):
        days = sorted({c.day for c in group})
        if len(days) >= min_occurrences:
            reason = (f"not about the speaker ({kind})" if kind in _NOT_SMALL_TALK else f"small talk ({kind})")
            out.append({"reason": reason, "speaker": speaker or None, "days": len(days),
                        "members": [c.entry.id for c in group][:12],
                        "example": _clip(group[0].entry.summary or group[0].entry.body, 100)})
    taken = {m for c in (*candidates, *capped) for m in c.members}
    low = similarity * 0.7
    pairs = _candidate_pairs(weights, df, None, threshold=low, signature_size=signature_size,
                             bucket_cap=bucket_cap)
    scores = _score_pairs(pairs, weights, low)
    for members in _cluster(scores):
        group = [docs[i] for i in members]
        if sum(d.entry.id in taken for d in group) * 2 > len(group) or len(group) < 2:
            continue
        member_set = set(members)
        inside = {p: v for p, v in scores.items() if p[0] in member_set}
        same = {p: v for p, v in inside.items() if docs[p[0]].speaker == docs[p[1]].speaker}
        strong = {p: v for p, v in same.items() if v >= similarity}
        best = max((_occurrences([docs[i] for i in part], count_by) for part in _cluster(strong)), default=0)
        if best >= min_occurrences:
            continue  # its strong part is a pattern (or covered by one)
        occurrences = _occurrences(group, count_by)
        speakers = sorted({d.speaker for d in group})
        if len(speakers) > 1 and any(v >= similarity for p, v in inside.items() if p not in same) \
                and occurrences >= min_occurrences:
            reason = f"different speakers ({', '.join(s or '?' for s in speakers)}): one speaker alone recurs on {best} days"
        elif best >= 2 and occurrences < min_occurrences:
            reason = f"too few days ({occurrences} of {min_occurrences})"
        elif occurrences >= min_occurrences:
            top = max(same.values(), default=0.0)
            reason = f"below similarity (joins at {top:.2f} < {similarity:g})"
        else:
            continue
        out.append({"reason": reason, "speaker": speakers[0] if len(speakers) == 1 else None,
                    "days": len({d.day for d in group}), "members": [d.entry.id for d in group][:12],
                    "example": _clip(" ".join(group[0].sentences) or group[0].entry.summary, 100)})
    out.sort(key=lambda n: (-n["days"], n["reason"], n["members"]))
    return out[:limit]


def _shared_terms(vecs: Sequence[dict[str, float]], limit: int = 5) -> tuple[str, ...]:
    """Content terms held by at least half the members (and two), most widely held first."""
    held: Counter[str] = Counter()
    weight: Counter[str] = Counter()
    for vec in vecs:
        for term, w in vec.items():
            if not term.startswith((_FACT_PREFIX, _TAG_PREFIX)):
                held[term] += 1
                weight[term] += w
    need = max(2, math.ceil(len(vecs) / 2))
    # a single Chinese character says little on its own: words (bigrams) name the pattern
    ranked = sorted((t for t, c in held.items() if c >= need),
                    key=lambda t: (-held[t], len(t) == 1 and is_cjk(t), -round(weight[t], 6), t))
    words = [t for t in ranked if len(t) > 1]
    ranked = [t for t in ranked
              if not (len(t) == 1 and is_cjk(t) and any(t in w for w in words))]
    return tuple(ranked[:limit])


def _shared_fact(group: Sequence[_Doc]) -> str | None:
    """``subject/fact`` if at least half the members (and two) carry the same one."""
    facts = Counter(f"{d.entry.subject}/{d.entry.fact}" for d in group if d.entry.fact)
    if not facts:
        return None
    fact, count = min(facts.items(), key=lambda kv: (-kv[1], kv[0]))
    return fact if count >= max(2, math.ceil(len(group) / 2)) else None


def _shared_tags(group: Sequence[_Doc]) -> tuple[str, ...]:
    """Tags carried by at least half the members (and two), sorted."""
    # a session tag says when, not what: the pattern spans sessions
    tags = Counter(t for d in group for t in set(d.entry.tags or ()) if not str(t).startswith("session-"))
    need = max(2, math.ceil(len(group) / 2))
    return tuple(sorted(t for t, c in tags.items() if c >= need))


def _key_basis(subject: str, fact: str | None, shared: Sequence[str],
               speaker: str | None = None) -> str:
    """What identifies a pattern: its fact key if it has one, else its top shared terms.

    The top three terms are sorted alphabetically so a new member that reorders them by
    frequency does not change the key.
    """
    who = f"{speaker.lower()}@" if speaker else ""
    if fact:
        return f"fact:{who}{fact}"
    return f"terms:{who}{subject}:" + ",".join(sorted(shared[:3]))


def _pattern_key(layer: str, subject: str, fact: str | None, shared: Sequence[str],
                 speaker: str | None = None) -> str:
    """``pat_`` + a short hash of the key basis (stable across runs and new members)."""
    basis = f"{layer}|{_key_basis(subject, fact, shared, speaker)}"
    return "pat_" + hashlib.sha1(basis.encode("utf-8")).hexdigest()[:12]


def _representative(group: Sequence[_Doc], members: Sequence[int],
                    inner: dict[tuple[int, int], float]) -> _Doc:
    """The member most similar to the others (ties: earliest id): the pattern's wording."""
    total: Counter[int] = Counter()
    for (a, b), s in inner.items():
        total[a] += s
        total[b] += s
    best = min(range(len(members)),
               key=lambda k: (-round(total[members[k]], 6), group[k].entry.id))
    return group[best]


def _is_chinese(group: Sequence[_Doc]) -> bool:
    """True when most members' summaries are written in Chinese."""
    zh = sum(1 for d in group if any(is_cjk(ch) for ch in d.entry.summary or d.entry.body))
    return zh * 2 > len(group)


def _summary_text(statement: str, speaker: str | None, occurrences: int, count_by: CountBy,
                  zh: bool) -> str:
    """One line: how often it recurred, who said it, and the most central member sentence."""
    line = _clip(statement, 160)
    who = f"{speaker}: " if speaker else ""
    if zh:
        unit = {"day": "天", "session": "个会话"}.get(count_by, "次")
        return f"重复出现（{occurrences} {unit}）：{who}{line}"
    unit = {"day": "days", "session": "sessions"}.get(count_by, "occurrences")
    return f"Recurring ({occurrences} {unit}): {who}{line}"


def _clip(text: str, limit: int) -> str:
    text = " ".join((text or "").split())
    return text if len(text) <= limit else text[:limit - 1].rstrip() + "…"


def _body_text(statement: str, speaker: str | None, shared: Sequence[str], fact: str | None,
               tags: Sequence[str], ordered: Sequence[_Doc], days: Sequence[str],
               sessions: Sequence[str], zh: bool) -> str:
    """What / Why / Evidence sections; evidence links every member as ``[[id]]`` with an excerpt."""
    what = f"{speaker}: {statement}" if speaker else statement
    keys = ", ".join(shared) or "-"
    extra = "".join([f"; fact `{fact}`" if fact else "",
                     f"; tags {', '.join(tags)}" if tags else ""])
    if zh:
        why = (f"在 {len(days)} 个不同的日期（{', '.join(days)}）、{len(sessions)} 个会话中"
               f"重复出现；共同词：{keys}{extra}。由夜间蒸馏提出，需人工确认。")
    else:
        in_sessions = f" in {len(sessions)} sessions" if sessions else ""
        why = (f"Seen on {len(days)} distinct days ({', '.join(days)}){in_sessions}; "
               f"shared terms: {keys}{extra}. "
               "Proposed by the nightly distill; needs human review.")
    evidence = "\n".join(f"- [[{d.entry.id}]] {d.day}: {_clip(' '.join(d.sentences) or d.entry.summary, 120)}"
                         for d in ordered)
    return f"## What\n\n{what}\n\n## Why\n\n{why}\n\n## Evidence\n\n{evidence}\n"


def _route(pattern: Candidate, known: Sequence[KnownPattern], candidates: list,
           reinforcements: list, suppressed: list) -> None:
    """New pattern → candidate; applied → reinforcement; proposed/rejected → suppressed."""
    match = _match_known(pattern, known)
    if match is None:
        candidates.append(pattern)
        return
    new = tuple(m for m in pattern.members if m not in set(match.members))
    if match.status == "applied":
        if new:
            reinforcements.append(Reinforcement(match.key, new))
        return
    suppressed.append(Suppressed(match.key, match.status, pattern.members))


def _match_known(pattern: Candidate, known: Sequence[KnownPattern]) -> KnownPattern | None:
    """The known pattern this one is: same key, a shared member, or mostly the same terms."""
    members = set(pattern.members)
    for rule in (lambda k: k.key == pattern.id,
                 lambda k: bool(members & set(k.members)),
                 lambda k: _term_overlap(k.terms, pattern.shared_terms) >= 0.6):
        for k in known:
            if rule(k):
                return k
    return None


def _term_overlap(a: Sequence[str], b: Sequence[str]) -> float:
    """Jaccard overlap of two term lists (0 when either is empty)."""
    sa, sb = set(a), set(b)
    return len(sa & sb) / len(sa | sb) if sa and sb else 0.0


__all__ = ["Candidate", "DistillResult", "Entry", "KnownPattern", "Reinforcement", "Skipped",
           "Suppressed", "content_terms", "find_patterns", "promote"]
