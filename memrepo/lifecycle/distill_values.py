"""The values distill takes and gives: an L1 (or L2) entry, a known pattern, a candidate and
what else one run found. Plain frozen data; the algorithm is :mod:`memrepo.lifecycle.distill`."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

CountBy = Literal["day", "session", "day_or_session"]


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
