"""``prune``: tool-result pruning that keeps the evidence so that a long session
stays small without losing what a tool returned.

Tool results are temporary reference; they should not ride along in every turn. Old, large
results are soft-trimmed (head + ``…`` + tail); if the transcript is still over the hard
ratio of its original size, the oldest are cleared to a placeholder. Every trimmed or cleared
result is first saved in full as evidence, and its placeholder names the pointer.

Never touched: anything before the first user message, the last N assistant turns and what
follows them (their tool results), and non-text blocks; in Claude Code's transcript JSONL, the
lines that are not messages and the side chains. The input file is not changed.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

from memrepo.agents import evidence
from memrepo.agents.transcript import Transcript, load_transcript, text_of
from memrepo.errors import UsageError
from memrepo.store.vault import Vault

CLEARED = "[Old tool result content cleared; full result: {pointer}]"
TRIMMED = "\n…\n"
TRIM_NOTE = "\n[tool result trimmed from {chars:,} characters; full result: {pointer}]"


@dataclass(frozen=True)
class Options:
    keep_last_assistants: int = 3
    soft_chars: int = 4000
    head: int = 1500
    tail: int = 1500
    hard_ratio: float = 0.5

    def check(self) -> None:
        if min(self.keep_last_assistants, self.soft_chars, self.head, self.tail) < 0:
            raise UsageError("--keep-last-assistants, --soft-chars, --head and --tail must be 0 or more")
        if not 0 < self.hard_ratio <= 1:
            raise UsageError("--hard-ratio must be above 0 and at most 1")


@dataclass(eq=False)
class _Slot:
    """One tool result's text inside the transcript: where it is and how to replace it."""
    message: int
    holder: Any       # the dict or list holding the text
    key: Any          # its key/index there
    text: str

    def set(self, value: str) -> None:
        self.holder[self.key] = value


@dataclass(frozen=True)
class Pruned:
    transcript: Any
    chars_before: int
    chars_after: int
    trimmed: tuple[dict[str, Any], ...] = ()
    cleared: tuple[dict[str, Any], ...] = ()
    commit: str | None = None
    outside_git: tuple[str, ...] = field(default_factory=tuple)
    jsonl: bool = False
    redacted: tuple[dict[str, Any], ...] = ()   # results stored with credentials replaced

    def text(self) -> str:
        """The pruned transcript in the form it came in (JSON, or one object per line)."""
        return Transcript(self.transcript, self.jsonl).render()

    def report(self) -> dict[str, Any]:
        return {"chars_before": self.chars_before, "chars_after": self.chars_after, "trimmed": list(self.trimmed),
                "cleared": list(self.cleared), "evidence_commit": self.commit, "outside_git": list(self.outside_git),
                "redacted": list(self.redacted)}


def size(messages: list[dict[str, Any]]) -> int:
    """Characters of text in the transcript (message text and tool results)."""
    return sum(len(text_of(m.get("content"))) for m in messages)


def _slots(messages: list[dict[str, Any]], start: int, end: int) -> list[_Slot]:
    """Tool-result texts of messages[start:end], oldest first (non-text blocks are skipped)."""
    found = []
    for i in range(start, end):
        m = messages[i]
        content = m.get("content")
        if m.get("role") == "tool":
            found += _text_slots(i, m, "content")
        elif isinstance(content, list):
            for block in content:
                if isinstance(block, dict) and block.get("type") == "tool_result":
                    found += _text_slots(i, block, "content")
    return found


def _text_slots(i: int, holder: dict, key: str) -> list[_Slot]:
    value = holder.get(key)
    if isinstance(value, str):
        return [_Slot(i, holder, key, value)] if value else []
    if isinstance(value, list):
        return [_Slot(i, b, "text", b["text"]) for b in value
                if isinstance(b, dict) and b.get("type") == "text" and isinstance(b.get("text"), str) and b["text"]]
    return []


def protected_bounds(messages: list[dict[str, Any]], keep_last_assistants: int) -> tuple[int, int]:
    """[start, end): the part of the transcript pruning may touch."""
    start = next((i for i, m in enumerate(messages) if m.get("role") == "user"), len(messages))
    assistants = [i for i, m in enumerate(messages) if m.get("role") == "assistant"]
    if keep_last_assistants == 0:
        end = len(messages)
    elif len(assistants) >= keep_last_assistants:
        end = assistants[-keep_last_assistants]
    else:
        end = assistants[0] if assistants else len(messages)
    return start, max(start, end)


def prune_text(vault: Vault, text: str | bytes, options: Options | None = None, *, where: str = "stdin") -> Pruned:
    """:func:`prune` of a transcript given as text (or its bytes, UTF-8): message JSON or Claude
    Code's JSONL. Bytes that are not UTF-8 are a UsageError naming the line."""
    from memrepo.store.jsontext import BadJson, text_of
    try:
        text = text_of(text, where=where)
    except BadJson as e:
        raise UsageError(str(e)) from None
    return prune(vault, load_transcript(text, where=where), options)


def prune(vault: Vault, transcript: Any, options: Options | None = None) -> Pruned:
    """The pruned copy of ``transcript`` (message JSON as loaded, or a :class:`Transcript`);
    the evidence is saved first."""
    options = options or Options()
    options.check()
    given = transcript if isinstance(transcript, Transcript) else Transcript(transcript)
    out = copy.deepcopy(given.data)
    messages = Transcript(out, given.jsonl).messages()
    before = size(messages)
    start, end = protected_bounds(messages, options.keep_last_assistants)
    slots = _slots(messages, start, end)
    stored: dict[int, evidence.Stored] = {}   # slot -> its text as evidence keeps it (scanned, redacted)

    def pointer_of(s: _Slot) -> str:
        if id(s) not in stored:
            stored[id(s)] = evidence.as_stored(vault, s.text, where=f"transcript message {s.message}")
        return stored[id(s)].pointer
    trimmed, cleared, touched = [], [], []
    for s in slots:
        if len(s.text) > options.soft_chars and len(s.text) > options.head + options.tail + len(TRIMMED):
            tail = s.text[-options.tail:] if options.tail else ""
            s.set(s.text[:options.head] + TRIMMED + tail + TRIM_NOTE.format(chars=len(s.text), pointer=pointer_of(s)))
            trimmed.append(s)
            touched.append(s)
    target = options.hard_ratio * before
    current = size(messages)
    for s in slots:
        if current <= target:
            break
        was = len(text_of(s.holder[s.key])) if isinstance(s.holder[s.key], str) else 0
        placeholder = CLEARED.format(pointer=pointer_of(s))
        if was <= len(placeholder):
            continue
        s.set(placeholder)
        current -= was - len(placeholder)
        cleared.append(s)
        if all(t is not s for t in touched):
            touched.append(s)
    saved, commit = evidence.save_evidence(vault, [stored[id(s)] for s in touched]) if touched else ([], None)
    where = {id(s): v for s, v in zip(touched, saved)}
    def row(s: _Slot) -> dict[str, Any]:
        return {"message": s.message, "chars": len(s.text), "evidence": pointer_of(s), "path": where[id(s)].path}
    outside = tuple(dict.fromkeys(v.pointer for v in saved if not v.in_git))
    gone = {id(s) for s in cleared}
    redacted = tuple({"message": s.message, "evidence": pointer_of(s), "rules": list(stored[id(s)].rules)}
                     for s in touched if stored[id(s)].rules)
    return Pruned(out, before, size(messages), tuple(row(s) for s in trimmed if id(s) not in gone),
                  tuple(row(s) for s in cleared), commit, outside, given.jsonl, redacted)
