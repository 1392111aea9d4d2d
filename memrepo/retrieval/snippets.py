"""Snippets: a short window of a memory's body around the query's first match."""
from __future__ import annotations

import re
from functools import lru_cache

from memrepo import text

_EMPHASIS_RE = re.compile(r"\*\*|__")
WORD_PATTERN = rf"[{text.CJK}]+|[^\W_]+"
_ASCII_WORD_RE = re.compile(r"[A-Za-z0-9]+")  # the same words in ASCII text, without the CJK class's compile cost


def snippet(body: str, query: str, width: int = 160) -> str:
    """A short window of ``body`` around the first match, matches wrapped in ``**``."""
    wanted = set(text.terms(query))
    body = _EMPHASIS_RE.sub("", body or "")  # markdown emphasis would clash with ours
    if not body:
        return ""
    spans = []
    for m in (_ASCII_WORD_RE if body.isascii() else _word_re()).finditer(body):
        tok = m.group().lower()
        if text.is_cjk(tok):
            for i in range(len(tok) - 1):
                if tok[i:i + 2] in wanted:
                    spans.append((m.start() + i, m.start() + i + 2))
        elif text.stem(tok) in wanted:
            spans.append((m.start(), m.end()))
    start = max(spans[0][0] - width // 3, 0) if spans else 0
    end = min(start + width, len(body))
    out, pos = [], start
    for a, b in _merge(spans):
        if a < start or b > end:
            continue
        out += [body[pos:a], "**", body[a:b], "**"]
        pos = b
    out.append(body[pos:end])
    text_ = "".join(out).replace("\n", " ").strip()
    return ("…" if start > 0 else "") + text_ + ("…" if end < len(body) else "")


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    merged: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if merged and a <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(b, merged[-1][1]))
        else:
            merged.append((a, b))
    return merged


@lru_cache(maxsize=1)
def _word_re() -> re.Pattern[str]:
    return re.compile(WORD_PATTERN, re.UNICODE)
