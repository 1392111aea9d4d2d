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
