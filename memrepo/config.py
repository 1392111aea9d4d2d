"""The vault's configuration: ``.memrepo/config.toml`` (committed, reviewed like code).

Read with the standard library's tomllib; every key has a default here, so an empty file is a
valid configuration and a new key never breaks an old vault.
"""
from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memrepo.errors import MemrepoError

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
    "evidence": {"max_file_bytes": 1048576},
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
    # Influence decay (memrepo.lifecycle.decay, seed 003 section 3.3):
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
}


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
    if not path.exists():
        return Config()
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
        raise MemrepoError(f"{CONFIG_PATH}: {e}; fix the file (TOML syntax) and retry") from None
    bad = [k for k, v in data.items() if not isinstance(v, dict)]
    if bad:
        raise MemrepoError(f"{CONFIG_PATH}:{bad[0]}: expected a [{bad[0]}] table")
    return Config(data)
