"""Memory values: the front matter and body of one memory, and where its file lives.

A :class:`Memory` is immutable. ``meta`` holds the front-matter mapping exactly as the schema
defines it (timestamps as ISO-8601 strings); helpers derive the canonical file location
from it, so layout rules live in one place.
"""
from __future__ import annotations

import datetime as dt
import os
import re
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import Any, Mapping


@dataclass(frozen=True)
class Field:
    """One front-matter field, declared once for every part of memrepo that handles fields.

    The schema (``schema/memory.schema.json``) says what a valid value is, and validation uses
    it; this table says what the rest of memrepo does with the field: the command line's options
    of ``add`` and ``propose`` and the MCP ``memory_write`` parameters (``given_by``), the import
    of other tools' notes (``foreign``), the merge of two clones' edits (``merge``), the catalog's
    columns (``catalog``). A test keeps the two in step (names, order, enums, bounds), so a plain
    field is added here and in the schema, nowhere else.
    """

    name: str
    type: str   # text (one line), id, choice, number, time (ISO-8601 with a zone), list (of text), ids (of memories)
    help: str = ""
    choices: tuple[str, ...] = ()
    minimum: float | None = None
    maximum: float | None = None
    max_length: int | None = None
    given_by: tuple[str, ...] = ()  # whose callers may give it: "add", "propose" (CLI options), "memory_write" (MCP)
    option: str = ""                # its command-line option, when not --<name> (a list's is repeatable)
    agent_choices: tuple[str, ...] = ()  # the choices an agent may give over MCP, when fewer than ``choices``
    foreign: bool = False           # read from other tools' notes (memrepo import DIR)
    merge: str = "newer"            # two clones' edits of one memory: union, larger, newer (the one updated last)
    catalog: str = ""               # a catalog column: "key" (for the invariants) or "listed" (also in `memrepo list`)
    required: bool = False          # every memory has it (the schema's "required")
    default: Any = None             # what a memory without it has (``Memory.<name>``)

    @property
    def flag(self) -> str:
        return self.option or f"--{self.name.replace('_', '-')}"

    @property
    def many(self) -> bool:
        return self.type in ("list", "ids")


_ALL = ("add", "propose", "memory_write")
LAYERS = ("L1", "L2", "L3", "L4")
STATUSES = ("active", "pending_review", "superseded", "rejected", "archived", "rolled_back")
SOURCES = ("user", "model-inference", "tool", "import", "distill", "flush", "agent")
KINDS = ("event", "checkpoint", "decision", "constraint", "policy", "permission", "preference", "state",
         "knowledge", "pattern", "principle", "identity")

FIELDS: tuple[Field, ...] = (  # in the schema's order, which is the order of a memory file's front matter
    Field("id", "id", "Id to use (default: generated).", given_by=("add", "propose"), foreign=True, catalog="listed",
          required=True),
    Field("layer", "choice", "L1 daily log (default), L2 patterns, L3 principles, L4 identity.", LAYERS,
          given_by=_ALL, foreign=True, catalog="listed", required=True),
    Field("kind", "choice", "What it is: " + ", ".join(KINDS) + " (default: by layer).", KINDS, given_by=_ALL,
          foreign=True, catalog="listed", required=True),
    Field("subject", "text", "The entity the memory is about (default: general; a shared fact needs it).",
          max_length=200, given_by=_ALL, foreign=True, catalog="listed", required=True),
    Field("fact", "text", "Fact key within the subject (release.auto_publish): at most one active memory per "
          "(subject, fact).", max_length=200, given_by=_ALL, foreign=True, catalog="listed"),
    Field("summary", "text", "One line (default: the first line of the body).", max_length=500, given_by=_ALL,
          foreign=True, catalog="listed", required=True),
    Field("status", "choice", "", STATUSES, foreign=True, catalog="listed", required=True),
    Field("risk", "choice", "", ("low", "high"), catalog="listed"),
    Field("risk_reason", "text"),
    Field("source", "choice", "Where it comes from: user (default), model-inference (a conclusion of the model), "
          "tool, import, distill, flush.", SOURCES, given_by=_ALL, agent_choices=("user", "model-inference", "tool"),
          foreign=True, catalog="listed", required=True),
    Field("author", "text", "Who triggered it (default: $MEMREPO_AUTHOR, the agent, or git user.name).",
          max_length=200, given_by=("add",), foreign=True),
    Field("scope", "text", "shared (default) or private (the acting agent's own: never shared).", given_by=("add",),
          foreign=True, default="shared"),
    Field("session", "text", "The agent session it comes from.", max_length=200, given_by=_ALL, foreign=True),
    Field("supersedes", "id", catalog="key"),
    Field("superseded_by", "id", catalog="key"),
    Field("rollback_point", "text"),
    Field("proposal", "text", catalog="key"),
    Field("evidence", "list", "Pointer: path#L1-L9, memory id, commit, URL (repeatable).", given_by=_ALL,
          foreign=True, merge="union", default=()),
    Field("affects", "list", "Behaviour this memory changes (repeatable).", given_by=("add", "propose"), foreign=True,
          merge="union", default=()),
    Field("links", "ids", "Related memory id (repeatable).", given_by=_ALL, option="--link", foreign=True,
          merge="union", default=()),
    Field("cites", "ids", "Memory id this one was derived from (repeatable).", given_by=("propose",), option="--cite",
          merge="union", default=()),
    Field("reinforced_by", "list", merge="union", default=()),
    Field("tags", "list", "Business tag (repeatable).", given_by=_ALL, option="--tag", foreign=True, merge="union",
          default=()),
    Field("weight", "number", "Base weight 0..1 (protects keystone memories from decay).", minimum=0, maximum=1,
          given_by=("add", "propose"), foreign=True, merge="larger", catalog="listed"),
    Field("confidence", "number", "How sure the writer is, 0..1 (shared knowledge needs it).", minimum=0, maximum=1,
          given_by=_ALL, foreign=True),
    Field("created", "time", foreign=True, catalog="listed", required=True),
    Field("updated", "time", foreign=True),
    Field("expires", "time", "ISO-8601 date-time after which the memory is cleaned up.", given_by=("add",),
          foreign=True),
)
FIELD: dict[str, Field] = {f.name: f for f in FIELDS}
CHOICES: dict[str, tuple[str, ...]] = {f.name: f.choices for f in FIELDS if f.type == "choice"}


def given_by(writer: str) -> tuple[Field, ...]:
    """The fields the callers of ``writer`` ("add", "propose", "memory_write") may give."""
    return tuple(f for f in FIELDS if writer in f.given_by)


# Values of options that are not front-matter fields: a search's retrieval route (default: guessed
# from the query) and how an applied proposal meets the memory it replaces.
INTENTS = ("fact", "general", "howto", "history")
MERGE_MODES = ("overwrite", "append")
DATE_FORMS = "YYYY-MM-DD, or an ISO-8601 date-time with a zone such as 2026-12-01T09:30:00+00:00 or ...Z"
MEMORIES_DIR = "memories"
ARCHIVE_DIR = "archive"
MEMORY_ROOTS = (MEMORIES_DIR, ARCHIVE_DIR)
ID_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,127}$")
_ID_ALPHABET = "abcdefghijkmnpqrstuvwxyz23456789"


def is_valid_id(value: object) -> bool:
    """File-name safe: letters, digits, ``_ . -``; no ``/``, no ``..``, at most 128 chars."""
    return isinstance(value, str) and bool(ID_RE.match(value)) and ".." not in value


def new_id(now: dt.datetime | None = None) -> str:
    """A fresh id like ``mem_20261129_7k3p9x``: sortable by day, random enough to not collide."""
    now = now or dt.datetime.now(dt.UTC)
    # 32 symbols, so each random byte maps onto them uniformly (os.urandom: the secrets
    # module would cost every CLI call 5 ms of imports for the same bytes).
    suffix = "".join(_ID_ALPHABET[b % len(_ID_ALPHABET)] for b in os.urandom(6))
    return f"mem_{now:%Y%m%d}_{suffix}"


def now_iso() -> str:
    """The current time as the front matter stores it (UTC, seconds)."""
    return dt.datetime.now(dt.UTC).replace(microsecond=0).isoformat()


def normalise_timestamp(value: Any) -> Any:
    """A datetime (or date) becomes ISO-8601 text; a naive datetime is taken as UTC."""
    if isinstance(value, dt.datetime):
        if value.tzinfo is None:
            value = value.replace(tzinfo=dt.UTC)
        return value.isoformat()
    if isinstance(value, dt.date):
        return dt.datetime(value.year, value.month, value.day, tzinfo=dt.UTC).isoformat()
    return value


def parse_time(text: object, *, naive_as_utc: bool) -> dt.datetime | None:
    """The one ISO-8601 reader: an aware datetime from text (``Z`` allowed; a date is its
    midnight), or None when it cannot be read. A time without a zone is taken as UTC with
    ``naive_as_utc``, else refused (None) rather than guessed."""
    try:
        when = dt.datetime.fromisoformat(str(text).strip().replace("Z", "+00:00"))
    except ValueError:
        return None
    if when.tzinfo is None:
        return when.replace(tzinfo=dt.UTC) if naive_as_utc else None
    return when


def aware_time(text: object) -> dt.datetime | None:
    """An aware datetime from ISO-8601 text (``Z`` allowed), or None: unreadable or naive
    times are refused rather than guessed."""
    return parse_time(text, naive_as_utc=False)


def epoch_seconds(text: str | None) -> float | None:
    """Seconds since the epoch of ISO-8601 text (a date or a naive time is taken as UTC),
    or None when there is none or it cannot be read."""
    when = parse_time(text, naive_as_utc=True) if text else None
    return when.timestamp() if when else None


def check_choice(name: str, value: Any, choices: tuple[str, ...] | None = None) -> Any:
    """``value`` when it is one of ``choices`` (default: the schema's values for ``name``);
    else a UsageError naming the accepted values and, for a near miss, the one meant."""
    choices = choices or CHOICES[name]
    if value is None or value in choices:
        return value
    from memrepo.errors import UsageError
    text = str(value)
    near = [c for c in choices if c.lower() == text.lower()]
    if not near:
        import difflib
        near = difflib.get_close_matches(text, choices, n=1, cutoff=0.6)
    hint = f"; did you mean {near[0]!r}?" if near else ""
    raise UsageError(f"--{name} {text!r} is not one of {', '.join(choices)}{hint}")


def parse_when(name: str, value: Any) -> dt.datetime | None:
    """A date (taken as 00:00 UTC) or an ISO-8601 date-time with a zone, for options such as
    ``--since``; anything else is a UsageError listing the accepted forms."""
    if value is None:
        return None
    text = str(value).strip()
    when = None
    if re.fullmatch(r"\d{4}-\d{2}-\d{2}", text):
        try:
            day = dt.date.fromisoformat(text)
        except ValueError:
            day = None
        when = dt.datetime(day.year, day.month, day.day, tzinfo=dt.UTC) if day else None
    elif "T" in text or " " in text:
        when = aware_time(text)
    if when is None:
        from memrepo.errors import UsageError
        raise UsageError(f"--{name} {text!r} is not a date: use {DATE_FORMS}")
    return when


def parse_timestamp(value: str) -> dt.datetime:
    """An ISO-8601 time (naive: UTC); ValueError when it cannot be read."""
    parsed = parse_time(value, naive_as_utc=True)
    if parsed is None:
        raise ValueError(f"{value!r} is not an ISO-8601 date-time")
    return parsed


def canonical_path(meta: Mapping[str, Any]) -> str:
    """Vault-relative path a memory with this front matter belongs at.

    ``memories/L1/YYYY-MM-DD/<id>.md`` for the daily log (date of ``created``),
    ``memories/Ln/<id>.md`` above it, and the same under ``archive/`` when archived.
    """
    top = ARCHIVE_DIR if meta.get("status") == "archived" else MEMORIES_DIR
    layer = meta.get("layer", "L1")
    if layer == "L1":
        day = str(meta.get("created", ""))[:10] or "undated"
        return f"{top}/L1/{day}/{meta['id']}.md"
    return f"{top}/{layer}/{meta['id']}.md"


def is_memory_path(path: str) -> bool:
    """True for a path where memory files live (``memories/**.md`` or ``archive/**.md``)."""
    return path.endswith(".md") and path.split("/", 1)[0] in (MEMORIES_DIR, ARCHIVE_DIR) and "/" in path


@dataclass(frozen=True)
class Memory:
    """One memory: front matter, markdown body and its vault-relative path."""

    meta: Mapping[str, Any]
    body: str = ""
    path: str = ""
    blob: str | None = field(default=None, compare=False)

    def __post_init__(self):
        object.__setattr__(self, "meta", MappingProxyType(dict(self.meta)))
        if not self.path and "id" in self.meta:
            object.__setattr__(self, "path", canonical_path(self.meta))

    def __getattr__(self, name: str) -> Any:  # convenient read access: memory.subject
        meta = object.__getattribute__(self, "meta")
        if name in meta:
            return meta[name]
        if name in _OPTIONAL_DEFAULTS:
            return _OPTIONAL_DEFAULTS[name]
        raise AttributeError(name)

    @property
    def id(self) -> str:
        return self.meta["id"]

    @property
    def key(self) -> tuple[Any, Any] | None:
        """(subject, fact) when the memory carries a fact key: at most one active per key."""
        fact = self.meta.get("fact")
        return (self.meta.get("subject"), fact) if fact else None

    def evolve(self, **changes: Any) -> Memory:
        """A copy with front-matter fields changed (``None`` removes a field); path follows."""
        meta = dict(self.meta)
        for k, v in changes.items():
            if v is None:
                meta.pop(k, None)
            else:
                meta[k] = v
        return replace(self, meta=meta, path=canonical_path(meta), blob=None)


_OPTIONAL_DEFAULTS: dict[str, Any] = {f.name: f.default for f in FIELDS if not f.required}
