"""What a query says: its terms, and the text its vector encodes.

An agent often searches with a stretch of its transcript. In one (two or more lines that
start with a speaker label, one of them an assistant), what the user said is what names the
memory: the assistant's lines count less as terms (:func:`query_counts`) and are left out of
the embedded text (:func:`semantic_text`).
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from memrepo import text

_SPEAKER_RE = re.compile(r"^\s*[*_]*([^\s:：*_]{1,24})[*_]*\s*[:：]")
ASSISTANTS = frozenset({"助手", "智能助手", "assistant", "ai", "bot", "agent", "model"})


def query_counts(query: str, *, assistant_lines: float, unigrams: bool) -> Mapping[str, float]:
    """Query terms with their (possibly fractional) counts. In a transcript the assistant's
    lines count ``assistant_lines`` each (``Tuning.assistant_lines``; ``unigrams``: single CJK
    characters too, ``Tuning.query_unigrams``)."""
    lines = query.splitlines()
    speakers = [m.group(1).lower() if m else None for m in map(_SPEAKER_RE.match, lines)]
    if assistant_lines == 1.0 or sum(s is not None for s in speakers) < 2 \
            or not any(s in ASSISTANTS for s in speakers):
        return Counter(text.terms(query, unigrams=unigrams))
    counts: dict[str, float] = {}
    speaker = None
    for line, who in zip(lines, speakers):
        speaker = who or speaker  # an unlabelled line continues the previous turn
        w = assistant_lines if speaker in ASSISTANTS else 1.0
        for t in text.terms(line, unigrams=unigrams):
            counts[t] = counts.get(t, 0.0) + w
    return counts


def semantic_text(query: str, *, user_only: bool = True) -> str:
    """The text of a query that is embedded. In a transcript (as :func:`query_counts` sees
    one) and with ``user_only`` (``Tuning.semantic_user_only``), the assistant's turns are
    left out and the speaker labels dropped."""
    lines = query.splitlines()
    speakers = [m.group(1).lower() if m else None for m in map(_SPEAKER_RE.match, lines)]
    if not user_only or sum(s is not None for s in speakers) < 2 \
            or not any(s in ASSISTANTS for s in speakers):
        return query
    kept, speaker = [], None
    for line, who, m in zip(lines, speakers, map(_SPEAKER_RE.match, lines)):
        speaker = who or speaker
        if speaker not in ASSISTANTS:
            kept.append((line[m.end():] if m else line).strip().strip('"“”'))
    return "\n".join(k for k in kept if k) or query
