"""What a query says: its terms, and the text its vector encodes.

An agent often searches with a stretch of its transcript. In one (two or more lines that
start with a speaker label, one of them an assistant: :func:`is_transcript`), what the user
said is what names the memory: the assistant's lines count less as terms (:func:`query_counts`)
and are left out of the embedded text (:func:`semantic_text`); the user's last turn, the one the
next reply answers, counts more. In Chinese, a bigram holding a function character (我的, 了一,
很好) is the glue between words, as "the" or "my" is in English: it is no query term.
"""
from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping

from memrepo import text

_SPEAKER_RE = re.compile(r"^\s*[*_]*([^\s:：*_]{1,24})[*_]*\s*[:：]")
ASSISTANTS = frozenset({"助手", "智能助手", "assistant", "ai", "bot", "agent", "model"})


def _speakers(lines: list[str]) -> list[str | None]:
    return [m.group(1).lower() if m else None for m in map(_SPEAKER_RE.match, lines)]


def _is_transcript(speakers: list[str | None]) -> bool:
    return sum(s is not None for s in speakers) >= 2 and any(s in ASSISTANTS for s in speakers)


def is_transcript(query: str) -> bool:
    """Whether ``query`` is a stretch of a conversation with an assistant (two or more lines
    that start with a speaker label, one of them an assistant's)."""
    return _is_transcript(_speakers(query.splitlines()))


def query_counts(query: str, *, assistant_lines: float, unigrams: bool, last_turn: float = 1.0,
                 function_grams: bool = True) -> Mapping[str, float]:
    """Query terms with their (possibly fractional) counts. In a transcript the assistant's
    lines count ``assistant_lines`` each (``Tuning.assistant_lines``) and the user's last turn
    ``last_turn`` (``Tuning.last_turn``); ``unigrams``: single CJK characters too
    (``Tuning.query_unigrams``). Without ``function_grams`` (``Tuning.function_grams``), CJK
    grams holding a function character are left out, unless nothing else is left."""
    lines = query.splitlines()
    speakers = _speakers(lines)
    if not _is_transcript(speakers) or (assistant_lines == 1.0 and last_turn == 1.0):
        counts: Mapping[str, float] = Counter(text.terms(query, unigrams=unigrams))
    else:
        counts = _weighted_counts(lines, speakers, assistant_lines, last_turn, unigrams)
    if function_grams:
        return counts
    return {t: c for t, c in counts.items() if not text.is_function_gram(t)} or counts


def _weighted_counts(lines: list[str], speakers: list[str | None], assistant_lines: float,
                     last_turn: float, unigrams: bool) -> dict[str, float]:
    """A transcript's terms, each line weighted by who said it and whether it is the user's last turn."""
    owner, speaker, turn = [], None, -1
    for who in speakers:
        if who is not None:  # an unlabelled line continues the previous turn
            speaker, turn = who, turn + 1
        owner.append((speaker, turn))
    user_turns = [t for s, t in owner if s not in ASSISTANTS]
    last = max(user_turns) if user_turns else None
    counts: dict[str, float] = {}
    for line, (speaker, turn) in zip(lines, owner):
        w = assistant_lines if speaker in ASSISTANTS else last_turn if turn == last else 1.0
        for t in text.terms(line, unigrams=unigrams):
            counts[t] = counts.get(t, 0.0) + w
    return counts


def semantic_text(query: str, *, user_only: bool = True) -> str:
    """The text of a query that is embedded. In a transcript (:func:`is_transcript`) and with
    ``user_only`` (``Tuning.semantic_user_only``), the assistant's turns are left out and the
    speaker labels dropped."""
    lines = query.splitlines()
    speakers = _speakers(lines)
    if not user_only or not _is_transcript(speakers):
        return query
    kept, speaker = [], None
    for line, who, m in zip(lines, speakers, map(_SPEAKER_RE.match, lines)):
        speaker = who or speaker
        if speaker not in ASSISTANTS:
            kept.append((line[m.end():] if m else line).strip().strip('"“”'))
    return "\n".join(k for k in kept if k) or query
