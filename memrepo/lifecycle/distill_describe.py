"""Distill's last step: a recurring cluster described as a candidate, routed and capped.

A cluster reads as a statement (its speaker and the member sentence nearest its centroid), gets
a stable key and an evidence score, and is proposed, counted as a reinforcement of a pattern
already applied, or suppressed by one already proposed or rejected (:func:`route`); the best
``max_per_subject`` per subject (``max_per_run`` in all) are returned (:func:`cap`). With
``--explain``, :func:`near_misses` says which groups came close and why they were dropped.
"""
from __future__ import annotations

import hashlib
import math
from collections import Counter, defaultdict
from collections.abc import Sequence

from memrepo.lifecycle import distill_match as matching
from memrepo.lifecycle.distill_terms import FACT_PREFIX, NOT_SMALL_TALK, TAG_PREFIX, Chatter, Doc, content_terms, speaker_of
from memrepo.lifecycle.distill_values import Candidate, CountBy, KnownPattern, Reinforcement, Suppressed
from memrepo.text import is_cjk


def describe(group: Sequence[Doc], members: Sequence[int],
              weights: Sequence[dict[str, float]], inner: dict[tuple[int, int], float], *,
              layer: str, count_by: CountBy, used: set[str]) -> Candidate:
    """Turn a cluster into a candidate with a stable key, deterministic text and its evidence score."""
    vecs = [weights[i] for i in members]
    shared = shared_terms(vecs)
    fact = shared_fact(group)
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
    occurrences = matching.occurrences(group, count_by)
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


def _central_sentence(group: Sequence[Doc], vecs: Sequence[dict[str, float]]) -> str:
    """The member sentence closest to the members' centroid (ties: earliest): the statement."""
    centroid: dict[str, float] = defaultdict(float)
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


def cap(found: list[Candidate], per_subject: int,
         per_run: int) -> tuple[list[Candidate], list[Candidate]]:
    """The best-evidenced candidates within the caps, and the rest (best first)."""
    kept: list[Candidate] = []
    capped: list[Candidate] = []
    per: Counter[str] = Counter()
    for c in sorted(found, key=lambda c: (-c.score, c.id)):
        if per[c.subject] >= per_subject or len(kept) >= per_run:
            capped.append(c)
        else:
            per[c.subject] += 1
            kept.append(c)
    return kept, capped


def near_misses(docs: Sequence[Doc], weights: Sequence[dict[str, float]], df: Counter[str],
                 chatter: Sequence[Chatter], candidates: Sequence[Candidate],
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
    by_kind: dict[tuple[str, str], list[Chatter]] = defaultdict(list)
    for c in chatter:
        for kind in sorted(set(c.kinds)) or ["small talk"]:
            by_kind[(c.speaker, kind)].append(c)
    for (speaker, kind), said in sorted(by_kind.items()):
        days = sorted({c.day for c in said})
        if len(days) >= min_occurrences:
            reason = (f"not about the speaker ({kind})" if kind in NOT_SMALL_TALK else f"small talk ({kind})")
            out.append({"reason": reason, "speaker": speaker or None, "days": len(days),
                        "members": [c.entry.id for c in said][:12],
                        "example": _clip(said[0].entry.summary or said[0].entry.body, 100)})
    taken = {m for c in (*candidates, *capped) for m in c.members}
    low = similarity * 0.7
    pairs = matching.candidate_pairs(weights, df, None, threshold=low, signature_size=signature_size,
                                     bucket_cap=bucket_cap)
    scores = matching.score_pairs(pairs, weights, low)
    for members in matching.cluster(scores):
        group = [docs[i] for i in members]
        if sum(d.entry.id in taken for d in group) * 2 > len(group) or len(group) < 2:
            continue
        member_set = set(members)
        inside = {p: v for p, v in scores.items() if p[0] in member_set}
        same = {p: v for p, v in inside.items() if docs[p[0]].speaker == docs[p[1]].speaker}
        strong = {p: v for p, v in same.items() if v >= similarity}
        best = max((matching.occurrences([docs[i] for i in part], count_by) for part in matching.cluster(strong)), default=0)
        if best >= min_occurrences:
            continue  # its strong part is a pattern (or covered by one)
        occurrences = matching.occurrences(group, count_by)
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


def shared_terms(vecs: Sequence[dict[str, float]], limit: int = 5) -> tuple[str, ...]:
    """Content terms held by at least half the members (and two), most widely held first."""
    held: Counter[str] = Counter()
    weight: dict[str, float] = defaultdict(float)
    for vec in vecs:
        for term, w in vec.items():
            if not term.startswith((FACT_PREFIX, TAG_PREFIX)):
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


def shared_fact(group: Sequence[Doc]) -> str | None:
    """``subject/fact`` if at least half the members (and two) carry the same one."""
    facts = Counter(f"{d.entry.subject}/{d.entry.fact}" for d in group if d.entry.fact)
    if not facts:
        return None
    fact, count = min(facts.items(), key=lambda kv: (-kv[1], kv[0]))
    return fact if count >= max(2, math.ceil(len(group) / 2)) else None


def _shared_tags(group: Sequence[Doc]) -> tuple[str, ...]:
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


def _representative(group: Sequence[Doc], members: Sequence[int],
                    inner: dict[tuple[int, int], float]) -> Doc:
    """The member most similar to the others (ties: earliest id): the pattern's wording."""
    total: dict[int, float] = defaultdict(float)
    for (a, b), s in inner.items():
        total[a] += s
        total[b] += s
    best = min(range(len(members)),
               key=lambda k: (-round(total[members[k]], 6), group[k].entry.id))
    return group[best]


def _is_chinese(group: Sequence[Doc]) -> bool:
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
               tags: Sequence[str], ordered: Sequence[Doc], days: Sequence[str],
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


def route(pattern: Candidate, known: Sequence[KnownPattern], candidates: list,
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
