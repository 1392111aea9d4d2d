"""Opening memrepo's SQLite files, and what happens when one cannot be read (with the
catalog and the recall statistics, the only users of sqlite3).

Two policies for a damaged or unreadable file: ``rebuild`` drops it (the catalog: derived
from git, rebuilt on the next sync), ``keep`` moves it aside as ``NAME.damaged-STAMP`` for a
person to rescue and starts afresh (the recall statistics exist nowhere else).
"""
from __future__ import annotations

import sqlite3
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Callable, Literal

_Isolation = Literal["DEFERRED", "EXCLUSIVE", "IMMEDIATE"] | None  # None: autocommit

_SUFFIXES = ("", "-wal", "-shm")


@dataclass
class Opened:
    db: sqlite3.Connection
    kept: Path | None = None             # where a damaged file was moved (policy "keep")
    error: sqlite3.DatabaseError | None = None   # why the file could not be opened


def open_db(path: Path, prepare: Callable[[sqlite3.Connection], None], *, damaged: Literal["rebuild", "keep"],
            timeout: float, isolation_level: _Isolation = "DEFERRED") -> Opened:
    """Connect to ``path`` in WAL mode and ``prepare`` it (schema, migrations, version checks:
    raise sqlite3.DatabaseError to refuse the file); on a DatabaseError apply the ``damaged``
    policy and open a fresh file once."""
    path.parent.mkdir(parents=True, exist_ok=True)
    try:
        return Opened(_connect(path, prepare, timeout, isolation_level))
    except sqlite3.DatabaseError as e:
        kept = None
        if damaged == "keep":
            kept = path.with_name(f"{path.name}.damaged-{datetime.now(UTC):%Y%m%dT%H%M%S%fZ}")
            for suffix in _SUFFIXES:
                source = Path(f"{path}{suffix}")
                if source.exists():
                    source.replace(Path(f"{kept}{suffix}"))
        else:
            for suffix in _SUFFIXES:
                Path(f"{path}{suffix}").unlink(missing_ok=True)
        return Opened(_connect(path, prepare, timeout, isolation_level), kept, e)


def _connect(path: Path, prepare: Callable[[sqlite3.Connection], None], timeout: float,
             isolation_level: _Isolation) -> sqlite3.Connection:
    db = sqlite3.connect(path, timeout=timeout, isolation_level=isolation_level)
    try:
        db.execute("PRAGMA journal_mode=WAL")
        prepare(db)
    except sqlite3.DatabaseError:
        db.close()
        raise
    return db
