"""The vault's configuration: ``.memrepo/config.toml`` (committed, reviewed like code).

Read with the standard library's tomllib; every key has a default here, so an empty file is a
valid configuration and a new key never breaks an old vault. The defaults are also the schema:
on load every value must have its default's type (an integer is a number too) and lie in its
range or set of values (``CHOICES``, ``RANGES``); a wrong value is a :class:`ConfigError` that
names the key and what is accepted. An unknown table or key is a :class:`ConfigWarning` (a
warning, not an error, so an older memrepo still reads a newer vault) naming the nearest key.
"""
from __future__ import annotations

import tomllib
import warnings
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.errors import ConfigError, ConfigWarning, Problem
from memrepo.model import KINDS, LAYERS, SOURCES, STATUSES

CONFIG_PATH = ".memrepo/config.toml"

DEFAULTS: dict[str, dict[str, Any]] = {
    "vault": {"main_branch": "main", "lock_timeout": 30.0},
    "risk": {
        # The article's high-risk classes: policy constraints, permission boundaries,
        # state overrides (anything superseding an active memory), model-inferred conclusions.
        "high_kinds": ["constraint", "policy", "permission"],
        "high_sources": ["model-inference"],
        "high_layers": ["L4"],
        "supersede_is_high": True,
        "high_tags": [],
    },
    # The pre-compaction flush: entries are "short, hard, reusable"; raw text goes to evidence.
    "flush": {"section_chars": 1200, "entry_chars": 4000, "section_lines": 20},
    # Tool results kept as evidence: larger files stay out of git, in .memrepo/evidence/.
    # secrets: what a credential found in one does: "redact" (stored as [REDACTED:<rule>]) or
    # "refuse" (nothing is pruned or stored; the command names the message and the rule).
    "evidence": {"max_file_bytes": 1048576, "secrets": "redact"},
    # Nightly distill (L1 -> L2): entries saying the same thing on min_occurrences distinct days
    # (count_by: day, session or day_or_session) within window_days; similarity is the score
    # two entries need to be joined (memrepo.lifecycle.distill.find_patterns).
    # common_day_share: a term seen on this share of the days or more carries no content;
    # max_per_subject / max_per_run: candidates proposed per night, best evidence first (the rest wait).
    "distill": {"window_days": 30, "min_occurrences": 3, "count_by": "day", "similarity": 0.2,
                "common_day_share": 0.35, "max_per_subject": 10, "max_per_run": 30},
    # Promotion (L2 -> L3): the same machinery, a longer window and a higher bar.
    "promote": {"window_days": 90, "min_occurrences": 5, "count_by": "day_or_session", "similarity": 0.3,
                "common_day_share": 0.35, "max_per_subject": 10, "max_per_run": 30},
    # Influence decay (memrepo.lifecycle.decay):
    # activity = alpha * own + beta * linked + gamma * base.
    "decay": {
        "alpha": 0.5,  # own recall activity: still the largest single signal
        "beta": 0.3,  # activity lent by memories that rely on this one
        "gamma": 0.2,  # static base weight: the guaranteed floor
        "half_life_days": 90.0,  # own activity halves every quarter without a recall (slow)
        "recall_saturation": 10,  # recalls at which the count factor reaches 1 (log scale)
        # summed incoming strength x activity that counts as full: one hot memory linking to
        # another is then enough to keep it out of the archive
        "link_saturation": 1.5,
        "hub_out_strength": 5.0,  # a memory pointing at more than this spreads its lending
        "rounds": 20,  # propagation rounds at most (each linear in edges)
        "tolerance": 1e-5,  # stop when no activity moves more than this (scores show 3 places)
        "archive_threshold": 0.08,  # below: archive (unless protected)
        "delete_threshold": 0.02,  # below, and isolated and unweighted: deletion candidate
        "keystone_weight": 0.8,  # base weight at or above this: never archived by decay
        "keystone_links": 3,  # linked from this many active memories: never archived
        "grace_days": 30.0,  # younger memories have had no chance to be recalled yet
        "protected_layers": ["L4"],  # identity is never decayed away
        "lending_statuses": ["active"],  # only live memories lend activity
    },
    # Monthly clean-up of expired memories: "demote" (L2-L4 back to L1, L1 archived) or "archive".
    "cleanup": {"policy": "demote"},
    # Claude's memory tool (memrepo.agents.memory_tool): the longest file it writes, and what
    # delete does ("archive": the memory moves to archive/; "remove": the file goes; git keeps both).
    "memory_tool": {"max_file_chars": 16000, "delete": "archive"},
    # Search: semantic = false turns the meaning-based half of the ranking off (keywords only);
    # ann_above: vector snapshots of this many rows get an ANN index (0: the default, 20,000).
    "search": {"semantic": True, "ann_above": 0},
    # How a proposal to the shared pool that contradicts the active value of a fact is decided
    # (memrepo.team.propose): latest (newer wins), authority (agents ranked highest first),
    # review (a person). rules: [{match = "subject/fact-glob", policy = "..."}], first match wins.
    "arbitration": {"default": "review", "authority": [], "rules": [],
                    "duplicate_similarity": 0.85,  # a proposal this close to the active value reinforces it
                    "reinforce_step": 0.1},        # weight a reinforcement adds (capped at 1.0)
}


# Keys without a default (absent means "not set"), with their type.
OPTIONAL: dict[str, dict[str, type]] = {"vault": {"owner": str}}
# Keys whose values come from a fixed set (for a list: each item).
CHOICES: dict[tuple[str, str], tuple[str, ...]] = {
    ("risk", "high_kinds"): KINDS, ("risk", "high_sources"): SOURCES, ("risk", "high_layers"): LAYERS,
    ("distill", "count_by"): ("day", "session", "day_or_session"),
    ("promote", "count_by"): ("day", "session", "day_or_session"),
    ("decay", "protected_layers"): LAYERS, ("decay", "lending_statuses"): STATUSES,
    ("cleanup", "policy"): ("demote", "archive"),
    ("evidence", "secrets"): ("redact", "refuse"),
    ("memory_tool", "delete"): ("archive", "remove"),
    ("arbitration", "default"): ("latest", "authority", "review"),
}
# Keys whose shape their owner checks, with the file and key in its message (a list of tables).
OWNER_CHECKED: set[tuple[str, str]] = {("arbitration", "rules")}
_FRACTIONS = ("similarity", "common_day_share", "alpha", "beta", "gamma", "archive_threshold", "delete_threshold",
              "keystone_weight", "tolerance")
# Numbers: (lowest, highest) accepted; every other number must be >= 0.
RANGES: dict[tuple[str, str], tuple[float, float | None]] = {
    **{(t, k): (0.0, 1.0) for t in ("distill", "promote", "decay") for k in _FRACTIONS if k in DEFAULTS[t]},
    **{(t, k): (1, None) for t in ("distill", "promote") for k in ("window_days", "min_occurrences", "max_per_subject", "max_per_run")},
    ("arbitration", "duplicate_similarity"): (0.0, 1.0), ("arbitration", "reinforce_step"): (0.0, 1.0),
    ("decay", "rounds"): (1, None), ("decay", "half_life_days"): (0.001, None),
    ("memory_tool", "max_file_chars"): (1, None),
}


def _nearest(word: str, known) -> str:
    import difflib
    near = difflib.get_close_matches(word, list(known), n=1, cutoff=0.5)
    return f"; did you mean {near[0]!r}?" if near else ""


def _type_name(value: Any) -> str:
    if isinstance(value, bool):
        return "true or false"
    if isinstance(value, float | int):
        return "a number"
    if isinstance(value, list):
        return "a list of texts"
    return "a text"


def _accepts(default: Any, value: Any) -> bool:
    if isinstance(default, bool) or isinstance(value, bool):
        return isinstance(default, bool) and isinstance(value, bool)
    if isinstance(default, float):
        return isinstance(value, int | float)
    if isinstance(default, list):
        return isinstance(value, list) and all(isinstance(v, str) for v in value)
    return isinstance(value, type(default))


def check(data: dict[str, Any]) -> tuple[list[Problem], list[str]]:
    """Problems (wrong type, out of range, not one of the values) and warnings (unknown tables
    and keys, with the nearest known name) of a parsed config.toml."""
    problems: list[Problem] = []
    notes: list[str] = []
    known_tables = set(DEFAULTS) | set(OPTIONAL)
    for table, values in data.items():
        if not isinstance(values, dict):
            problems.append(Problem(CONFIG_PATH, table, f"must be a [{table}] table, not {_type_name(values)}"))
            continue
        if table not in known_tables:
            notes.append(f"{CONFIG_PATH}: unknown table [{table}] is ignored{_nearest(table, known_tables)}")
            continue
        defaults, optional = DEFAULTS.get(table, {}), OPTIONAL.get(table, {})
        for key, value in values.items():
            where = f"{table}.{key}"
            if key not in defaults and key not in optional:
                notes.append(f"{CONFIG_PATH}: unknown key {where} is ignored{_nearest(key, [*defaults, *optional])}")
                continue
            default = defaults[key] if key in defaults else optional[key]()
            if (table, key) in OWNER_CHECKED:
                continue
            if not _accepts(default, value):
                problems.append(Problem(CONFIG_PATH, where, f"must be {_type_name(default)} (default {default!r}), not {value!r}"))
                continue
            choices = CHOICES.get((table, key))
            items = value if isinstance(value, list) else [value]
            wrong = [v for v in items if choices and v not in choices]
            if wrong and choices:
                problems.append(Problem(CONFIG_PATH, where, f"{wrong[0]!r} is not one of {', '.join(choices)}"))
            elif isinstance(value, int | float) and not isinstance(value, bool):
                low, high = RANGES.get((table, key), (0, None))
                if value != value or value < low or (high is not None and value > high):
                    span = f"between {low} and {high}" if high is not None else f"at least {low}"
                    problems.append(Problem(CONFIG_PATH, where, f"must be {span}, not {value!r}"))
    return problems, notes


@dataclass(frozen=True)
class Config:
    data: dict[str, dict[str, Any]] = field(default_factory=dict)

    def section(self, name: str) -> dict[str, Any]:
        merged = dict(DEFAULTS.get(name, {}))
        merged.update(self.data.get(name, {}))
        return merged

    def get(self, section: str, key: str, default: Any = None) -> Any:
        return self.section(section).get(key, default)


def load(root: Path) -> Config:
    path = root / CONFIG_PATH
    if (root / CONFIG_PATH).parent.is_symlink() or path.is_symlink():
        raise ConfigError([Problem(CONFIG_PATH, "(file)", (
            "is read through a symlink; memrepo never follows links inside the vault (a clone or pull of someone "
            "else's vault can make them point at any file): replace the link with the file itself"))])
    if not path.exists():
        return Config()
    data, problems, notes = parse_bytes(path.read_bytes())
    if problems and problems[0].field == "(file)":
        raise ConfigError(problems)
    for note in notes:
        warnings.warn(note, ConfigWarning, stacklevel=2)
    if problems:
        raise ConfigError(problems, "fix .memrepo/config.toml (the README's Lifecycle section lists every key)")
    return Config(data)


def parse_bytes(raw: bytes) -> tuple[dict[str, Any], list[Problem], list[str]]:
    """A config.toml's bytes as (data, problems, warnings): what :func:`load` reads from the
    working tree, and what a sync checks in a commit before it lands."""
    try:
        data = tomllib.loads(raw.decode("utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        return {}, [Problem(CONFIG_PATH, "(file)", f"{e}; fix the file (TOML syntax) and retry")], []
    problems, notes = check(data)
    return data, problems, notes


# ------------------------------------------------------------------ the review policy
#
# The keys that decide what goes to review are themselves reviewed: a change that sends less
# to review (a "weakening") takes effect only once a person accepts it (memrepo.review.policy);
# until then the stricter value stays in force. A change that sends more to review applies at once.

POLICY_LISTS = ("high_kinds", "high_sources", "high_layers", "high_tags")
_ARBITRATION_RANK = {"latest": 0, "authority": 1, "review": 2}


def parse_policy_text(text: str) -> Config:
    """A config.toml's text as a Config for comparing policies (unreadable: the defaults)."""
    try:
        data = tomllib.loads(text)
    except (tomllib.TOMLDecodeError, ValueError):
        return Config()
    problems, _notes = check(data)
    return Config({t: v for t, v in data.items() if isinstance(v, dict)}) if not problems else Config()


def policy_weakenings(old: Config, new: Config) -> list[tuple[str, str]]:
    """(key, what changed) for every way ``new`` sends less to review than ``old``."""
    found: list[tuple[str, str]] = []
    o, n = old.section("risk"), new.section("risk")
    for key in POLICY_LISTS:
        lost = [v for v in o.get(key) or () if v not in (n.get(key) or ())]
        if lost:
            found.append((f"risk.{key}", f"no longer lists {', '.join(map(str, lost))}"))
    if o.get("supersede_is_high") and not n.get("supersede_is_high"):
        found.append(("risk.supersede_is_high", "true -> false (overrides of an active fact skip review)"))
    oa, na = old.section("arbitration"), new.section("arbitration")
    if _ARBITRATION_RANK.get(str(na.get("default")), 2) < _ARBITRATION_RANK.get(str(oa.get("default")), 2):
        found.append(("arbitration.default", f"{oa.get('default')!r} -> {na.get('default')!r}"))
    old_rules, new_rules = list(oa.get("rules") or []), list(na.get("rules") or [])
    added = [r for r in new_rules if r not in old_rules]
    dropped = [r for r in old_rules if r not in new_rules]
    if any(not isinstance(r, dict) or r.get("policy") != "review" for r in added) or \
            any(isinstance(r, dict) and r.get("policy") == "review" for r in dropped):
        found.append(("arbitration.rules", "rules that let conflicts skip review were added or review rules removed"))
    uses_authority = na.get("default") == "authority" or any(isinstance(r, dict) and r.get("policy") == "authority"
                                                             for r in new_rules)
    if uses_authority and list(oa.get("authority") or []) != list(na.get("authority") or []):
        found.append(("arbitration.authority", "the ranking that lets an agent override another changed"))
    found += _decay_weakenings(old.section("decay"), new.section("decay"))
    return found


# What keeps a reviewed memory from being archived by decay without a person: losing a
# protected layer, or raising a keystone bar, lets decay take more of them.
_KEYSTONE_KEYS = ("keystone_weight", "keystone_links")


def _decay_weakenings(o: dict[str, Any], n: dict[str, Any]) -> list[tuple[str, str]]:
    found = []
    lost = [v for v in o.get("protected_layers") or () if v not in (n.get("protected_layers") or ())]
    if lost:
        found.append(("decay.protected_layers", f"no longer lists {', '.join(map(str, lost))} (decay may archive them)"))
    for key in _KEYSTONE_KEYS:
        if _number(n.get(key)) > _number(o.get(key)):
            found.append((f"decay.{key}", f"{o.get(key)} -> {n.get(key)} (fewer memories are kept from decay)"))
    return found


def _number(value: Any) -> float:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0.0


def strictest(current: Config, baseline: Config) -> Config:
    """``current`` with every weakening relative to ``baseline`` undone: the lists of high-risk
    classes united, supersede_is_high kept on, the arbitration rules of ``baseline`` whenever
    ``current``'s would let more conflicts skip review, decay's protected layers united and its
    keystone bars kept at the lower."""
    data = {table: dict(values) for table, values in current.data.items()}
    o, n = baseline.section("risk"), current.section("risk")
    risk = data.setdefault("risk", {})
    for key in POLICY_LISTS:
        risk[key] = list(dict.fromkeys([*(o.get(key) or []), *(n.get(key) or [])]))
    risk["supersede_is_high"] = bool(o.get("supersede_is_high")) or bool(n.get("supersede_is_high"))
    od, nd = baseline.section("decay"), current.section("decay")
    decay = data.setdefault("decay", {})
    decay["protected_layers"] = list(dict.fromkeys([*(od.get("protected_layers") or []), *(nd.get("protected_layers") or [])]))
    for key in _KEYSTONE_KEYS:
        decay[key] = od.get(key) if _number(nd.get(key)) > _number(od.get(key)) else nd.get(key)
    if any(key.startswith("arbitration.") for key, _ in policy_weakenings(baseline, current)):
        base = baseline.section("arbitration")
        arbitration = data.setdefault("arbitration", {})
        for key in ("default", "rules", "authority"):
            arbitration[key] = base[key]
    return Config(data)
