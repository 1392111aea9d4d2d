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
3. pairs sharing :data:`~memrepo.lifecycle.distill_match.MIN_SHARED_WORDS` content words (or a fact key) and scoring at least
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

from collections.abc import Iterable
from datetime import datetime

from memrepo.config import DEFAULTS
from memrepo.lifecycle import distill_match as matching
from memrepo.lifecycle.distill_describe import cap, describe, near_misses, route, shared_fact, shared_terms
from memrepo.lifecycle.distill_terms import (
    SPEAKER_SHARE,
    content_terms,
    drop_thin,
    everywhere,
    prepare,
    speaker_of,
    speaker_terms,
    weigh,
)
from memrepo.lifecycle.distill_values import (
    Candidate,
    CountBy,
    DistillResult,
    Entry,
    KnownPattern,
    Reinforcement,
    Skipped,
    Suppressed,
)

_DISTILL = DEFAULTS["distill"]  # the defaults of the nightly runs live in the vault configuration
_PROMOTE = DEFAULTS["promote"]


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
    docs, skipped, out_of_window, chatter = prepare(entries, now=now, window_days=window_days)
    too_common = max(bucket_cap, int(max_df * len(docs)))
    owned = speaker_terms(docs, speaker_share)
    weights, df = weigh(docs, too_common, (everywhere(docs, common_day_share) - owned) | set(stopwords))
    docs, weights, thin = drop_thin(docs, weights)
    chatter.extend(thin)
    pairs = matching.candidate_pairs(weights, df, [d.speaker for d in docs], threshold=similarity,
                                     signature_size=signature_size, bucket_cap=bucket_cap)
    scores = matching.score_pairs(pairs, weights, similarity)
    clusters = matching.cluster(scores)
    inner = matching.split_scores(clusters, scores)
    known_list = sorted(known, key=lambda k: k.key)
    found: list[Candidate] = []
    reinforcements: list[Reinforcement] = []
    suppressed: list[Suppressed] = []
    used: set[str] = set()
    for cluster, cluster_scores in zip(clusters, inner):
        for members, inner_scores in matching.coherent(cluster, cluster_scores, weights,
                                                       similarity, min_coherence):
            group = [docs[i] for i in members]
            if matching.occurrences(group, count_by) < min_occurrences:
                continue
            if not shared_terms([weights[i] for i in members]) and not shared_fact(group):
                continue  # joined pair by pair, but nothing said by most of them: no pattern
            pattern = describe(group, members, weights, inner_scores, layer=layer,
                               count_by=count_by, used=used)
            route(pattern, known_list, found, reinforcements, suppressed)
    candidates, capped = cap(found, max_per_subject, max_per_run)
    near = (near_misses(docs, weights, df, chatter, candidates, capped, similarity=similarity,
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


__all__ = ["Candidate", "CountBy", "DistillResult", "Entry", "KnownPattern", "Reinforcement", "Skipped",
           "Suppressed", "content_terms", "find_patterns", "promote", "speaker_of"]
