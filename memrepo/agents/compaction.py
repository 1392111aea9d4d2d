"""Compaction without an extra model call: the compactor is handed memrepo's flush template, and
the summary it writes is filed as the session's L1 checkpoint through ``flush``.

Claude Code's hooks reference (v2.1.239) gives a PreCompact hook no way to add instructions to
the compaction (its stdout goes to the debug log; it can only block), while the compactor reads
the conversation's context, where a SessionStart hook's stdout lands. So the template reaches
the compactor through :func:`compaction_instructions`, printed at session start (``flush --prompt
--hook``), and after compaction :func:`file_summary` takes the summary from the PostCompact
payload's ``compact_summary`` (or, at SessionStart with source ``compact``, from the
transcript's last ``isCompactSummary`` line) and files its ``memrepo checkpoint`` section.
A summary without the section, or whose section is a raw dump flush would refuse, is kept
whole as evidence and filed as a short checkpoint that points at it; such a summary holding a
credential is refused before anything is written. The cycle is a hash of the summary, so one compaction is filed once however often
its hooks fire; an empty summary, or any other event, files nothing.
"""
from __future__ import annotations

import re
from typing import Any

from memrepo.agents import flush as flushing
from memrepo.errors import InvalidMemory, Problem
from memrepo.model import check_choice
from memrepo.resources import resource
from memrepo.store.vault import Vault

MARKER = "memrepo checkpoint"
_HEADING = re.compile(r"^\s*#{1,6}\s*(.+?)\s*$")
_GIST_CHARS = 600


def compaction_instructions(lang: str = "en", vault: Vault | None = None) -> str:
    """What the compactor is asked to add to its summary (the vault's own copy when it has one)."""
    check_choice("lang", lang, flushing.PROMPT_LANGS)
    name = f"prompts/compact.{lang}.md"
    if vault is not None and (vault.root / name).is_file():
        return (vault.root / name).read_text(encoding="utf-8")
    return (resource("template-vault") / name).read_text(encoding="utf-8")


def checkpoint_section(summary: str) -> str:
    """The template part of a compaction summary: from the ``memrepo checkpoint`` heading (or
    the first template heading) to the first heading that is not the template's; "" if none."""
    lines = summary.splitlines()
    start = None
    for i, line in enumerate(lines):
        heading = _HEADING.match(line)
        if heading and MARKER in heading.group(1).lower():
            start = i + 1
            break
    if start is None:
        start = next((i for i, line in enumerate(lines)
                      if (h := _HEADING.match(line)) and flushing.section_of(h.group(1))), None)
    if start is None:
        return ""
    kept: list[str] = []
    for line in lines[start:]:
        heading = _HEADING.match(line)
        if heading and not flushing.section_of(heading.group(1)) and kept:
            break
        kept.append(line)
    return "\n".join(kept).strip()


def summary_of(payload: dict[str, Any]) -> str:
    """The compaction summary a hook payload carries or points to ("" when there is none)."""
    event = payload.get("hook_event_name")
    given = payload.get("compact_summary")
    if isinstance(given, str):
        return given.strip()
    if event == "SessionStart" and payload.get("source") == "compact" and isinstance(payload.get("transcript_path"), str):
        from memrepo.agents.transcript import read_transcript
        return read_transcript(payload["transcript_path"]).compact_summary()
    return ""


def file_summary(vault: Vault, summary: str, *, session: str | None, author: str | None = None) -> flushing.FlushResult:
    """File a compaction summary as the session's L1 checkpoint (once per summary)."""
    summary = summary.strip()
    import hashlib  # here: every command line imports this module through memrepo.api
    cycle = "compact-" + hashlib.sha256(summary.encode("utf-8")).hexdigest()[:12]
    if not summary:
        return flushing.FlushResult(0, cycle, session, reason="nothing to flush")
    section = checkpoint_section(summary)
    if section and not _over_caps(vault, "kind: checkpoint\n" + section):
        text = "kind: checkpoint\n" + section
    else:   # no template, or pages under its headings: the whole summary as evidence, a short pointer
        _refuse_credentials(summary)
        text = _pointer_entry(vault, summary)
    return flushing.flush(vault, text, cycle=cycle, session=session, author=author)


def _over_caps(vault: Vault, text: str) -> bool:
    """True when flush would refuse ``text`` as a raw dump (its section and entry caps)."""
    limits = vault.config.section("flush")
    return any(flushing.check(entry, limits) for entry in flushing.parse(text))


def _refuse_credentials(summary: str) -> None:
    """A summary kept whole as evidence is committed as it is: one holding a credential is
    refused before anything is written (the checkpoint would be refused for it anyway)."""
    from memrepo.store import secretscan
    found = secretscan.scan(summary)
    if found:
        raise InvalidMemory([Problem("compaction summary", f"line {f.line}", f.message()) for f in found],
                            "nothing was kept, not even as evidence")


def _pointer_entry(vault: Vault, summary: str) -> str:
    """A short checkpoint for a summary written without the template: its opening lines, and
    the whole summary kept as evidence it points at."""
    from memrepo.agents import evidence
    (saved,), _commit = evidence.save_evidence(vault, [summary], why="a compaction summary")
    gist = " ".join(summary.split())
    gist = gist if len(gist) <= _GIST_CHARS else gist[:_GIST_CHARS - 1].rstrip() + "…"
    return (f"kind: checkpoint\n## What\nCompaction summary ({len(summary):,} characters): {gist}\n"
            f"## Evidence\n{saved.pointer}\n")


def file_compaction(vault: Vault, payload: dict[str, Any], *, author: str | None = None) -> flushing.FlushResult:
    """:func:`file_summary` for what a Claude Code hook sent (PostCompact, or SessionStart after
    a compaction); any other payload files nothing."""
    return file_summary(vault, summary_of(payload), session=payload.get("session_id"), author=author)
