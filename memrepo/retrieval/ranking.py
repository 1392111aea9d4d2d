"""Ranking: one query over an open Whoosh searcher, as plain functions.

:func:`run_query` is the whole path: intent, the query plan (analysed terms within a postings
budget), filters, candidate collection, pseudo-relevance feedback, the re-rank (normalised
BM25F, same-session neighbours, heat) and the relevance floor. Every knob is a field of
:class:`Tuning`, measured on the dev benchmarks (bench/RESULTS.md).
"""
from __future__ import annotations

import math
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from dataclasses import field as dc_field
from typing import TYPE_CHECKING

from memrepo import text
from memrepo.retrieval import lookups, priors
from memrepo.retrieval.fields import SCORED, TERMS, rerank_texts
from memrepo.retrieval.filters import Filters, whoosh_queries
from memrepo.retrieval.query_text import query_counts
from memrepo.retrieval.snippets import snippet

if TYPE_CHECKING:  # pragma: no cover
    from memrepo.retrieval.stats import Stats

PARSED_FIELDS = ("text", "summary", "keys")   # default fields of the advanced syntax


@dataclass(frozen=True)
class SearchQuery:
    """A search request. ``text`` is free text unless ``advanced`` asks for Whoosh syntax."""
    text: str
    limit: int = 10
    subject: str | None = None
    layer: str | None = None
    kind: str | None = None
    tag: str | None = None
    since: str | None = None
    deep: bool = False
    history: bool = False
    advanced: bool = False
    intent: str | None = None   # the retrieval route (model.INTENTS); None: guessed from the text


@dataclass(frozen=True)
class Hit:
    """One ranked result."""
    id: str
    score: float
    path: str
    layer: str
    subject: str
    summary: str
    snippet: str
    status: str
    kind: str
    fact: str | None
    tags: tuple[str, ...]
    created: str | None
    keyword_score: float = 0.0            # idf-weighted share of the query's terms in the memory (0..1)
    semantic_score: float | None = None   # cosine of the memory's and the query's vectors
    body: str = dc_field(default="", repr=False, compare=False)  # the whole body, as indexed (not in --json)


@dataclass(frozen=True)
class SearchResult:
    """Hits (best first), whether nothing cleared the relevance floor, and the routed intent."""
    query: str
    hits: tuple[Hit, ...]
    nothing_relevant: bool
    intent: str
    semantic: str = "off"   # hybrid | building | off | unavailable
    semantic_progress: dict | None = None   # while building: {"ready", "total", "eta_s"} (vector_progress)

@dataclass(frozen=True)
class Tuning:
    """Ranking knobs (measured on the dev benchmarks; see bench/RESULTS.md).

    ``weights`` are folded into the one scored field at index time (a rebuild applies a
    change); the rest apply per query.
    """
    weights: tuple[tuple[str, float], ...] = (
        ("tagtext", 3.0), ("keys", 2.0), ("summary", 1.5), ("body", 1.0))
    exact_key_boost: float = 6.0
    pool: int = 60                 # candidates fetched before re-ranking (the priors re-order
                                   # them: 30 -> 60 with the priors, LoCoMo fold mean R@10 +1.0)
    neighbour: float = 0.3         # weight of the best same-session neighbour's score
    prf_docs: int = 3              # pseudo-relevance feedback: top docs used (0 = off)
    prf_terms: int = 10
    prf_weight: float = 0.3
    prf_max_cost: int = 1000       # no feedback pass when the first one scored more postings
    floor: float = 0.3             # best hit's idf-weighted share of query terms, else
                                   # "nothing relevant"
    hit_floor: float = 0.25        # each hit needs at least this fraction of that floor
    heat_gain: float = 0.5         # heat multiplies the score by at most 1 + heat_gain
    stop_df: float = 0.02          # learned stopwords apply only to terms in >= 2 % of docs
    query_unigrams: bool = False   # also search single CJK characters
    qtf_linear: bool = False       # a repeated query term counts 1 + log(count) (True: count)
    assistant_lines: float = 0.5   # in a transcript query, words of the assistant's turns
                                   # count this much (the user's own words name the memory)
    last_turn: float = 2.0         # ... and words of the user's last turn this much: the reply
                                   # answers it (fixed a priori, not tuned: bench/RESULTS.md)
    function_grams: bool = False   # CJK query grams holding a function character (我的, 很好)
                                   # are terms too (False: the glue between words is left out)
    k1: float = 1.2                # BM25 on the combined field
    b: float = 0.75
    # Cost control: Whoosh scores every posting of a searched term in pure Python (~3 us
    # each), so the terms given to it are the rarest ones whose document frequencies add up
    # to at most ``postings_budget`` (at most ``max_terms`` of them); the commoner terms only
    # re-rank the candidate pool (BM25 from the candidates' stored text) and count in the
    # relevance share. When even the rarest term is over budget, the ``common_terms`` rarest
    # are searched and Whoosh's block-max top-k skipping bounds the work.
    postings_budget: int = 2000
    max_terms: int = 64
    common_terms: int = 2
    # Hybrid ranking (when the vault's vectors are ready): the keyword side's weight per
    # intent (the cosine gets the rest), the nearest memories taken into a vector-led pool,
    # and the cosine that makes a memory relevant without a shared word (e.g. across
    # languages). Chosen on the dev halves: bench/RESULTS.md.
    mix_fact: float = 0.9
    mix_general: float = 0.45
    mix_howto: float = 0.45
    mix_history: float = 0.45
    mix_latin: float = 0.9         # at least this for a query mostly in Latin script
    semantic_pool: int = 60
    semantic_floor: float = 0.35  # unrelated texts score < 0.15, translations 0.4-0.65 (tests/test_semantic.py)
    semantic_user_only: bool = True  # embed only the user's turns of a transcript query
    # Priors (memrepo.retrieval.priors): a candidate's score is multiplied by 1 + the prior when
    # the question names one of its facets (speaker-caroline), names a period its events fall
    # in, or asks "when" and its text dates its event. 0 turns a cue off. Chosen on LoCoMo dev,
    # each fold's value on the other four conversations (the same in all five; MADial's
    # dialogues name no absolute date or facet: unchanged): bench/RESULTS.md, "Folds".
    facet_prior: float = 0.5
    date_prior: float = 2.0
    when_prior: float = 0.5


DEFAULT_TUNING = Tuning()


@dataclass(frozen=True)
class Semantic:
    """The query's vector and the vault's vectors (a :class:`memrepo.retrieval.vectors.Snapshot`).
    ``query`` may be a future of the vector (being encoded on another thread or process while the
    keywords are ranked): :meth:`vector` waits for it."""
    vectors: object
    query: object

    def vector(self):
        return self.query.result() if hasattr(self.query, "result") else self.query


@dataclass
class _Cand:
    docnum: int
    fields: dict
    bm25: float
    coverage: float
    score: float = 0.0
    seen: Counter | None = None    # the query's terms in the memory's text (_seen)
    keyword: float = 0.0           # bm25 / the pool's best while ranking; then the coverage (reported)
    cosine: float | None = None    # semantic similarity (hybrid ranking only)


@dataclass
class _Plan:
    """The query's analysed terms, their document frequencies and the searched subset."""
    terms: Mapping[str, float]     # every analysed term with its (weighted) count in the query
    df: dict[str, int]             # document frequency in the scored field (0: no memory)
    searched: dict[str, float]     # term -> query boost, the terms given to Whoosh
    n: int                         # documents in the index
    cost: int = 0                  # postings of the searched terms
    counters: dict[bool, text.TermCounter] = dc_field(default_factory=dict)

    def counter(self, unigrams: bool) -> text.TermCounter:
        """Counts the query's terms that some memory holds in a memory's text."""
        if unigrams not in self.counters:
            self.counters[unigrams] = text.TermCounter([t for t in self.terms if self.df.get(t)], unigrams=unigrams)
        return self.counters[unigrams]

    def idf(self, term: str) -> float:
        df = self.df.get(term, 0)
        return math.log(1.0 + (self.n - df + 0.5) / (df + 0.5))


def run_query(searcher, q: SearchQuery, stats: Stats | None, learned: frozenset[str],
              tuning: Tuning = DEFAULT_TUNING, semantic: Semantic | None = None) -> SearchResult:
    """Rank one query. With ``semantic`` the ranking is hybrid, routed by intent:
    a fact lookup is led by keywords and the vectors only re-rank its keyword candidates
    (unless they are fewer than the limit); a concept, how-to or history question also takes
    the nearest memories by vector into the pool. Each candidate's score mixes ``keyword / best keyword`` and the min-max cosine
    over the pool with the intent's keyword weight (``Tuning.mix_*``)."""
    from memrepo.retrieval.analysis import detect_intent
    intent = q.intent or detect_intent(q.text)
    history = q.history or intent == "history"
    plan = _plan(searcher, q.text, learned, tuning)
    if not plan.terms and not q.advanced and semantic is None:   # (with vectors: the nearest memories)
        return SearchResult(q.text, (), True, intent)
    filters = Filters.of(q, history)
    flt, mask = whoosh_queries(filters)
    wq = _build_query(searcher, q, plan, intent, tuning)
    cands = _collect(searcher, wq, flt, mask, tuning)
    if (tuning.prf_docs and cands and not q.advanced and intent in ("general", "howto")
            and plan.cost <= tuning.prf_max_cost):
        # feedback broadens natural questions; a fact lookup stays with its exact words
        extra = _feedback_terms(searcher, cands, plan, tuning)
        if extra:
            wq = _build_query(searcher, q, plan, intent, tuning, extra=extra)
            cands = _collect(searcher, wq, flt, mask, tuning)
    mix = None
    if semantic is not None and not q.advanced:
        mix = _mix_weight(tuning, intent, history, q.text)
        cands = _add_semantic(searcher, cands, semantic, filters, flt, mask, wq, tuning,
                              vector_led=intent != "fact" or len(cands) < q.limit)
    cues = None if q.advanced else priors.cues(q.text, plan.terms)
    cands = _rerank(searcher, cands, plan, stats, tuning, max(q.limit, 0), mix, cues)
    _calibrate(cands, mix)
    if history:  # the relevant versions, newest first: a timeline of what is shown
        cands.sort(key=lambda c: c.fields.get("created") or "", reverse=True)
    hits = tuple(_hit(c, q.text) for c in cands)
    return SearchResult(q.text, hits, not hits, intent, "hybrid" if mix is not None else "off")


def _calibrate(cands: list[_Cand], mix: float | None) -> None:
    """The reported scores: the ranking's fused value is relative (the best candidate's
    keyword side is 1 by construction), so it is rescaled to an absolute anchor, the best
    hit's own match: its idf-weighted share of the query terms (``keyword_score``), mixed
    with its raw cosine when the ranking is hybrid. The best hit scores that anchor (0..1,
    comparable across queries); the others keep their ratio to it, so the order is the
    ranking's order."""
    if not cands:
        return
    best = max(cands, key=lambda c: c.score)
    for c in cands:
        c.keyword = c.coverage if c.coverage >= 0 else c.keyword
    anchor = best.keyword
    if mix is not None:
        anchor = mix * anchor + (1.0 - mix) * max(best.cosine or 0.0, 0.0)
    scale = anchor / best.score if best.score > 0 else 0.0
    for c in cands:
        c.score *= scale


def _mix_weight(tuning: Tuning, intent: str, history: bool, query: str) -> float:
    """The keyword side's weight for this query (the rest goes to the cosine)."""
    if intent == "fact":
        a = tuning.mix_fact
    elif history:
        a = tuning.mix_history
    elif intent == "howto":
        a = tuning.mix_howto
    else:
        a = tuning.mix_general
    # the model ranks Chinese text far better than English (dev halves: cosine alone MADial
    # R@10 63.6, LoCoMo 32.9): a query mostly in Latin script leans on keywords
    cjk = sum(1 for ch in query if text.is_cjk(ch))
    latin = sum(1 for ch in query if ch.isascii() and ch.isalpha())
    if latin > cjk:
        a = max(a, tuning.mix_latin)
    return a


def _add_semantic(searcher, cands: list[_Cand], semantic: Semantic, filters: Filters,
                  flt, mask, wq, tuning: Tuning, *, vector_led: bool) -> list[_Cand]:
    """Give every candidate its cosine; when vector-led, add the nearest memories within the
    filters (the subject/layer/kind/status/tag/date pool in numpy; Whoosh's filter checks them
    again, as the vectors may lag the index by a change), each
    with the keyword query's score for it (as the collection gives it): a memory's keyword side
    is the same whether it came in by its words or by its vector."""
    vec = semantic.vectors
    cos = vec.cosines(semantic.vector(), [c.fields["id"] for c in cands])  # type: ignore[attr-defined]
    for c in cands:
        c.cosine = cos.get(c.fields["id"])
    if not vector_led:
        return cands
    have = {c.fields["id"] for c in cands}
    near = vec.top(semantic.vector(), tuning.semantic_pool, filters)  # type: ignore[attr-defined]
    allow, deny = _docset(searcher, flt), _docset(searcher, mask)
    added: list[_Cand] = []
    for mid, c in near:
        if mid in have:
            continue
        docnum = lookups.docnum_of(searcher, mid)
        if docnum is None or (allow is not None and docnum not in allow) or (deny and docnum in deny):
            continue
        added.append(_Cand(docnum, lookups.stored_fields(searcher, docnum), 0.0, -1.0, cosine=c))
    from memrepo.retrieval.collect import scores_of
    scores = scores_of(searcher, wq, field_b(tuning), tuning.k1, [c.docnum for c in added])
    for c in added:
        c.bm25 = scores.get(c.docnum, 0.0)
    return cands + added


def _plan(searcher, query: str, learned: frozenset[str], tuning: Tuning) -> _Plan:
    """Analysed query terms minus learned stopwords, and the affordable subset to search."""
    counts = query_counts(query, assistant_lines=tuning.assistant_lines, unigrams=tuning.query_unigrams,
                          last_turn=tuning.last_turn, function_grams=tuning.function_grams)
    n = max(searcher.doc_count(), 1)
    df = {t: lookups.doc_frequency(searcher, SCORED, t) for t in counts}
    if learned and counts:
        drop = {t for t in counts if t in learned and df[t] / n >= tuning.stop_df}
        kept = {t: c for t, c in counts.items() if t not in drop}
        counts = kept or counts
    qtf = (lambda c: float(c)) if tuning.qtf_linear else (
        lambda c: 1.0 + math.log(c) if c >= 1.0 else c)
    live = sorted((t for t in counts if df[t]), key=lambda t: (df[t], t))
    chosen, cost = [], 0
    for t in live[:tuning.max_terms]:
        if cost + df[t] > tuning.postings_budget:
            break
        chosen.append(t)
        cost += df[t]
    if not chosen:
        chosen = live[:tuning.common_terms]
        cost = sum(df[t] for t in chosen)
    return _Plan(counts, df, {t: qtf(counts[t]) for t in chosen}, n, cost)


def _build_query(searcher, q: SearchQuery, plan: _Plan, intent: str, tuning: Tuning,
                 extra: dict[str, float] | None = None):
    """The query's weighted terms ``[(field, text, boost)]``, or a parsed Whoosh query for the
    advanced syntax."""
    if q.advanced:
        parsed = _parse_advanced(searcher, q.text)
        if parsed is not None:
            return parsed
    terms = [(SCORED, t, b) for t, b in plan.searched.items()]
    if intent == "fact":
        from memrepo.retrieval.analysis import query_keys
        terms += [("keys", key, tuning.exact_key_boost) for key in dict.fromkeys(query_keys(q.text))]
    terms += [(SCORED, t, w) for t, w in (extra or {}).items()]
    return terms


def _parse_advanced(searcher, query: str):
    """Opt-in Whoosh syntax; a query that does not parse falls back to free text."""
    from whoosh.qparser import FieldAliasPlugin, MultifieldParser, OrGroup
    parser = MultifieldParser(list(PARSED_FIELDS), searcher.schema, group=OrGroup)
    parser.add_plugin(FieldAliasPlugin({"text": ["body", "tags", "tagtext"]}))
    try:
        return parser.parse(query)
    except Exception:
        return None


def _collect(searcher, query, flt, mask, tuning: Tuning) -> list[_Cand]:
    """The best ``tuning.pool`` candidates of ``query`` (weighted terms, or a parsed query)
    within the filter and outside the mask."""
    allow, deny = _docset(searcher, flt), _docset(searcher, mask)
    if allow is not None and not allow:
        return []
    if isinstance(query, list):
        from memrepo.retrieval.collect import top_docs
        found = top_docs(searcher, query, field_b(tuning), tuning.k1, tuning.pool, allow, deny or None)
        return [_Cand(docnum, lookups.stored_fields(searcher, docnum), score, -1.0) for docnum, score in found]
    results = searcher.search(query, limit=tuning.pool, filter=allow, mask=deny or None)
    return [_Cand(hit.docnum, hit.fields(), hit.score, -1.0) for hit in results]


def _docset(searcher, q) -> set[int] | None:
    """Documents of a filter query, cached with the searcher (Whoosh would build a bit set
    the size of the index on every search: ~1.5 ms at 10k memories)."""
    if q is None:
        return None
    cache = searcher.__dict__.setdefault("_memrepo_docsets", {})
    key = repr(q)
    docs = cache.get(key)
    if docs is None:
        if len(cache) >= 256:
            cache.clear()
        docs = cache[key] = set(searcher.docs_for_query(q))
    return docs


def _seen(c: _Cand, plan: _Plan, unigrams: bool) -> Counter:
    """How often each query term (that some memory holds) occurs in the memory (all of its
    text, tags and keys): from what the index stored of its terms, else from its text."""
    if c.seen is None:
        f = c.fields
        count = plan.counter(unigrams)
        seen = count.count_packed(f[TERMS]) if TERMS in f else None
        if seen is not None:
            c.seen = seen
            return seen
        from memrepo.retrieval.analysis import key_terms
        prose, keys = rerank_texts(f.get("summary") or "", f.get("body") or "",
                                   (f.get("meta") or {}).get("tags", ()), f.get("subject", ""), f.get("fact", ""))
        seen = count(prose)
        seen.update(t for t in key_terms(keys) if t in count.wanted)
        c.seen = seen
    return c.seen


def _coverage(c: _Cand, idf: dict[str, float], plan: _Plan, unigrams: bool) -> float:
    """Idf-weighted share of the query terms that occur in the memory (0..1)."""
    if c.coverage < 0:
        seen = _seen(c, plan, unigrams)
        total = sum(idf.values()) or 1.0
        c.coverage = sum(v for t, v in idf.items() if t in seen) / total
    return c.coverage


def _feedback_terms(searcher, cands: list[_Cand], plan: _Plan,
                    tuning: Tuning) -> dict[str, float]:
    """Pseudo-relevance feedback: frequent, rare-enough terms of the top documents."""
    tf: Counter = Counter()
    for c in cands[:tuning.prf_docs]:
        tf.update(set(text.terms(f"{c.fields.get('summary', '')} {c.fields.get('body', '')}")))
    scored = {}
    for t, k in tf.items():
        if t in plan.terms:
            continue
        df = plan.df.get(t)
        if df is None:
            df = plan.df[t] = lookups.doc_frequency(searcher, SCORED, t)
        scored[t] = k * plan.idf(t)
    best = sorted(scored, key=lambda t: (-scored[t], t))[:tuning.prf_terms]
    out, cost = {}, plan.cost  # the expansion shares the query's postings budget
    for t in sorted(best, key=lambda t: plan.df[t]):
        if cost + plan.df[t] > tuning.postings_budget:
            break
        out[t] = tuning.prf_weight
        cost += plan.df[t]
    return out


def _rerank(searcher, cands: list[_Cand], plan: _Plan, stats: Stats | None,
            tuning: Tuning, limit: int, mix: float | None = None,
            cues: priors.Cues | None = None) -> list[_Cand]:
    """Final order: normalised BM25F (mixed with the cosine when ``mix`` is the keyword
    weight), the question's priors, same-session support, heat; then the relevance floor."""
    if not cands:
        return cands
    # single CJK characters are terms only when the query is one (e.g. 库): analyse the
    # candidates' text with unigrams just then
    uni = any(len(t) == 1 and text.is_cjk(t) for t in plan.terms)
    skipped = [t for t in plan.terms if plan.df.get(t) and t not in plan.searched]
    if skipped:
        _score_skipped(searcher, cands, plan, skipped, uni, tuning)
    top = max(c.bm25 for c in cands) or 1.0
    for c in cands:
        c.score = c.keyword = c.bm25 / top
    if mix is not None:
        _mix(cands, mix)
    if cues is not None and not cues.quiet:
        _apply_priors(cands, cues, tuning)
    if tuning.neighbour:
        _add_neighbours(cands, tuning.neighbour)
    if stats is not None:
        _apply_heat(cands, stats, tuning.heat_gain)
    cands.sort(key=lambda c: (-c.score, c.fields["id"]))
    near = tuning.semantic_floor if mix is not None else 2.0  # a cosine never reaches 2

    def close(c: _Cand) -> bool:
        return c.cosine is not None and c.cosine >= near

    if not plan.terms:   # the advanced syntax as Whoosh matched it; a query without a term, by its vector
        return cands[:limit] if mix is None else [c for c in cands if close(c)][:limit]
    # terms no memory contains (e.g. bigrams across a Chinese word boundary) say nothing
    # about relevance: leave them out of the share
    idf = {t: plan.idf(t) for t in plan.terms if plan.df.get(t)}

    if not idf:
        idf = {}
    floor = min(tuning.floor, 1.5 / len(idf)) if idf else 2.0
    if not any(_coverage(c, idf, plan, uni) >= floor or close(c) for c in cands[:limit]):
        return []
    kept = []
    for c in cands:
        if _coverage(c, idf, plan, uni) >= floor * tuning.hit_floor or close(c):
            kept.append(c)
            if len(kept) >= limit:
                break
    return kept


def _mix(cands: list[_Cand], a: float) -> None:
    """score = a * keyword / best + (1 - a) * min-max cosine over the pool (a linear mix
    beat reciprocal-rank fusion on both dev halves of the retrieval benchmarks)."""
    sims = [c.cosine for c in cands if c.cosine is not None]
    if not sims:
        return
    lo, hi = min(sims), max(sims)
    for c in cands:
        if c.cosine is None:
            sem = 0.0
        else:   # one cosine, or all alike: each is the pool's best
            sem = (c.cosine - lo) / (hi - lo) if hi > lo else 1.0
        c.score = a * c.keyword + (1.0 - a) * sem


def _score_skipped(searcher, cands: list[_Cand], plan: _Plan, skipped: list[str],
                   unigrams: bool, tuning: Tuning) -> None:
    """Add the BM25 share of the common terms that were not searched, for the pool only."""
    k1, b = tuning.k1, tuning.b
    avg = max(searcher.avg_field_length(SCORED, 1.0), 1.0)
    from memrepo.retrieval.collect import field_lengths
    lengths = field_lengths(searcher, SCORED, [c.docnum for c in cands])
    weight = {t: plan.terms[t] * plan.idf(t) for t in skipped}   # once per term, not per candidate
    for c in cands:
        seen = _seen(c, plan, unigrams)
        length = lengths[c.docnum] or 1
        norm = k1 * (1.0 - b + b * length / avg)
        for t in skipped:
            tf = seen.get(t, 0)
            if tf:
                c.bm25 += weight[t] * tf * (k1 + 1.0) / (tf + norm)


def _apply_priors(cands: list[_Cand], cues: priors.Cues, tuning: Tuning) -> None:
    """What the question says beyond its words: a named facet, a named period, a "when"."""
    for c in cands:
        c.score *= priors.factor(c.fields, cues, facet=tuning.facet_prior, date=tuning.date_prior,
                                 when=tuning.when_prior)


def _add_neighbours(cands: list[_Cand], weight: float) -> None:
    """Memories of one session support each other (a question's answer spans turns)."""
    best: dict[str, list[float]] = {}
    for c in cands:
        g = c.fields.get("group")
        if g:
            best.setdefault(g, []).append(c.score)
    for c in cands:
        g = c.fields.get("group")
        if not g:
            continue
        others = sorted(best[g], reverse=True)
        others.remove(c.score)
        if others:
            c.score += weight * others[0]


def _apply_heat(cands: list[_Cand], stats: Stats, gain: float) -> None:
    created = {c.fields["id"]: c.fields.get("created") for c in cands}
    heat = stats.heat(list(created), created=created)
    for c in cands:
        h = heat.get(c.fields["id"], 0.0)
        c.score *= 1.0 + gain * (1.0 - math.exp(-h))


def field_b(tuning: Tuning) -> dict[str, float]:
    """BM25's length normalisation per field (``""``: every other field); none for the
    exact-key field: a memory with many keys is not "longer" in any sense that should dilute
    a key match."""
    return {"": tuning.b, "keys": 0.0}


def weighting(tuning: Tuning):
    """BM25F with Lucene's idf: Whoosh's default ``log(N/(df+1)) + 1`` over-weights terms
    that occur almost everywhere (measured: several points of R@10 on both benchmarks)."""
    from whoosh import scoring

    class LuceneBM25F(scoring.BM25F):
        def idf(self, searcher, fieldname, text):
            n = searcher.doc_count_all()
            df = searcher.doc_frequency(fieldname, text)
            return math.log(1.0 + (n - df + 0.5) / (df + 0.5))

    per_field = {f"{name}_B": b for name, b in field_b(tuning).items() if name}
    return LuceneBM25F(B=tuning.b, K1=tuning.k1, **per_field)


def _hit(c: _Cand, query: str) -> Hit:
    f = c.fields
    meta = f.get("meta") or {}
    return Hit(id=f["id"], score=round(c.score, 6), path=f.get("path", ""), layer=f.get("layer", ""),
               subject=f.get("subject", ""), summary=f.get("summary", ""),
               snippet=snippet(f.get("body") or f.get("summary", ""), query),
               status=f.get("status", ""), kind=f.get("kind", ""), fact=f.get("fact") or None,
               tags=tuple(meta.get("tags", ())), created=f.get("created"),
               keyword_score=round(c.keyword, 6),
               semantic_score=None if c.cosine is None else round(c.cosine, 6),
               body=f.get("body") or "")


