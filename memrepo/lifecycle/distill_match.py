"""Distill's second step: which entries say the same thing, linear-ish, never all pairs.

Each entry is bucketed under its *signature* (its rarest terms, prefix filtering, plus its fact
key), one set of buckets per speaker, and compared only with its ``bucket_cap`` predecessors in
a bucket (:func:`candidate_pairs`); pairs sharing :data:`MIN_SHARED_WORDS` content words (or a
fact key) and scoring ``similarity`` are joined with union-find (:func:`score_pairs`,
:func:`cluster`), and chained clusters are split until coherent (:func:`coherent`).
"""
from __future__ import annotations

import math
from collections import Counter, defaultdict
from collections.abc import Iterable, Sequence

from memrepo.lifecycle.distill_terms import FACT_PREFIX, Doc
from memrepo.lifecycle.distill_values import CountBy
from memrepo.text import is_cjk

FACT_BONUS = 0.5  # same subject/fact key: alone it nearly joins two entries
TAG_BONUS = 0.1  # per shared tag, at most two: helps, never joins on its own
MIN_SHARED_WORDS = 2  # English words or Chinese bigrams two entries must share to be joined


def candidate_pairs(weights: Sequence[dict[str, float]], df: Counter[str],
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
    signature = [t for t in vec if t.startswith(FACT_PREFIX) and df[t] >= 2]
    for term in sorted(vec, key=lambda t: (df[t], t)):
        if left < limit or len(signature) >= size:
            break
        left -= vec[term] * vec[term]
        if df[term] >= 2 and term not in signature:
            signature.append(term)
    return signature


def score_pairs(pairs: Iterable[tuple[int, int]], weights: Sequence[dict[str, float]],
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


def cluster(edges: Iterable[tuple[int, int]]) -> list[list[int]]:
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


def coherent(members: list[int], scores: dict[tuple[int, int], float],
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
        parts = cluster(strong)
        todo.extend((part, part_scores, level)
                    for part, part_scores in zip(parts, split_scores(parts, strong)))
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


def split_scores(clusters: Sequence[Sequence[int]],
                  scores: dict[tuple[int, int], float]) -> list[dict[tuple[int, int], float]]:
    """The pair scores inside each cluster (one pass over all scores)."""
    owner = {i: k for k, members in enumerate(clusters) for i in members}
    inner: list[dict[tuple[int, int], float]] = [{} for _ in clusters]
    for pair, score in scores.items():
        inner[owner[pair[0]]][pair] = score  # a scored pair always lies inside one cluster
    return inner


def occurrences(group: Sequence[Doc], count_by: CountBy) -> int:
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


def _session_key(doc: Doc) -> str:
    """The entry's session; an entry without one is its own session on its day."""
    return doc.entry.session or f"{doc.day}/{doc.entry.id}"
