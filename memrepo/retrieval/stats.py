"""Recall statistics: heat scores and learned stopwords, in SQLite.

The database lives under the vault's git-ignored ``.memrepo/state/``: statistics are derived,
per machine, and never become commits. Everything here is deterministic given ``now``.

* A **recall** is one search in a session: the query's terms and the ids it returned.
* A **useful mark** says a memory helped (strong signal). A recall is *successful* for a
  memory when the same session marks that memory useful; a recall none of whose results is
  marked useful in its session is a *failure*.
* **Heat** = 0.2 per distinct session that recalled the memory + 1.0 per useful mark (one per
  session), decayed exponentially (half-life 30 days) since the last recall or mark.
  **Cooldown**: heat earned within 24 h of the memory's ``created`` counts at most 1.0, so a
  burst of early (possibly noisy or hostile) activity cannot pin a new memory to the top.
* **Learned stopwords**: terms of failed recalls in at least 3 distinct sessions and of no
  successful recall. The index drops them only when they also match many documents.
"""
from __future__ import annotations

import math
import sqlite3
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from pathlib import Path

from memrepo import text
from memrepo.model import epoch_seconds
from memrepo.store.sqlite import open_db

RECALL_WEIGHT = 0.2
USEFUL_WEIGHT = 1.0
HALF_LIFE_DAYS = 30.0
COOLDOWN = timedelta(hours=24)
COOLDOWN_CAP = 1.0
MIN_SESSIONS = 3

_SCHEMA = """
CREATE TABLE IF NOT EXISTS recall (rid INTEGER PRIMARY KEY, session TEXT NOT NULL,
    query TEXT NOT NULL, ts REAL NOT NULL);
CREATE TABLE IF NOT EXISTS recall_term (rid INTEGER NOT NULL, term TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS recall_hit (rid INTEGER NOT NULL, mem TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS useful (mem TEXT NOT NULL, session TEXT, ts REAL NOT NULL);
CREATE INDEX IF NOT EXISTS recall_hit_mem ON recall_hit(mem);
CREATE INDEX IF NOT EXISTS recall_hit_rid ON recall_hit(rid);
CREATE INDEX IF NOT EXISTS recall_term_term ON recall_term(term);
CREATE INDEX IF NOT EXISTS useful_mem ON useful(mem);
"""


# One step per schema version: MIGRATIONS[n] takes a version-n file to n+1. Version 0 is a
# new file, or one written before the schema had a version (same tables: the step is a no-op).
MIGRATIONS = (_SCHEMA,)
SCHEMA_VERSION = len(MIGRATIONS)


def _ts(now: datetime | None) -> float:
    return (now or datetime.now(UTC)).timestamp()


def _prepare(db: sqlite3.Connection) -> None:
    version = db.execute("PRAGMA user_version").fetchone()[0]
    if version > SCHEMA_VERSION:
        raise sqlite3.DatabaseError(f"schema version {version} is newer than this memrepo "
                                    f"({SCHEMA_VERSION}); upgrade memrepo")
    if version < SCHEMA_VERSION:
        with db:
            for step in MIGRATIONS[version:]:
                db.executescript(step)
            db.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
    db.execute("SELECT count(*) FROM recall").fetchone()


class Stats:
    """Recall log and derived heat / stopwords in one SQLite file (created on first use)."""

    def __init__(self, path: Path) -> None:
        self.path = Path(path)
        self._db: sqlite3.Connection | None = None
        self.notice: str | None = None  # set when a damaged file was kept aside

    @property
    def db(self) -> sqlite3.Connection:
        if self._db is None:
            # The recall history and useful marks exist nowhere else: a damaged file is
            # kept aside for a person to rescue, never deleted, and searches carry on.
            opened = open_db(self.path, _prepare, damaged="keep", timeout=10.0)
            if opened.kept is not None:
                self.notice = (f"recall statistics in {self.path.name} could not be read ({opened.error}); the file was "
                               f"kept as {opened.kept.name} and statistics start afresh")
            self._db = opened.db
        return self._db

    def close(self) -> None:
        if self._db is not None:
            self._db.close()
            self._db = None

    # ---- recording -------------------------------------------------------------------
    def record_recall(self, session: str, query: str, ids: Iterable[str],
                      now: datetime | None = None) -> None:
        """Log one search of ``session``: its query terms and the ids it returned."""
        with self.db as db:
            rid = db.execute("INSERT INTO recall(session, query, ts) VALUES (?, ?, ?)",
                             (session, query, _ts(now))).lastrowid
            db.executemany("INSERT INTO recall_term VALUES (?, ?)",
                           [(rid, t) for t in sorted(set(text.terms(query)))])
            db.executemany("INSERT INTO recall_hit VALUES (?, ?)",
                           [(rid, m) for m in dict.fromkeys(ids)])

    def mark_useful(self, id: str, session: str | None = None,
                    now: datetime | None = None) -> None:
        """Record that memory ``id`` helped (in ``session``, when known)."""
        with self.db as db:
            db.execute("INSERT INTO useful VALUES (?, ?, ?)", (id, session, _ts(now)))

    def forget(self, id: str) -> None:
        """Remove every statistic about memory ``id`` (it was deleted)."""
        with self.db as db:
            db.execute("DELETE FROM recall_hit WHERE mem = ?", (id,))
            db.execute("DELETE FROM useful WHERE mem = ?", (id,))

    # ---- heat ------------------------------------------------------------------------
    def heat(self, ids: Iterable[str], now: datetime | None = None,
             created: dict[str, str | None] | None = None) -> dict[str, float]:
        """Heat of each id (0 when never recalled); see the module docstring."""
        ids = list(dict.fromkeys(ids))
        if not ids:
            return {}
        now_ts = _ts(now)
        created = created or {}
        events = self._events(ids)
        return {m: _heat(events.get(m, []), now_ts, epoch_seconds(created.get(m))) for m in ids}

    def _events(self, ids: list[str]) -> dict[str, list[tuple[float, float]]]:
        """(time, weight) of each heat event: first recall per session, useful per session."""
        marks = ",".join("?" * len(ids))
        out: dict[str, list[tuple[float, float]]] = {}
        rows = self.db.execute(
            f"SELECT h.mem, MIN(r.ts) FROM recall_hit h JOIN recall r ON r.rid = h.rid "
            f"WHERE h.mem IN ({marks}) GROUP BY h.mem, r.session", ids)
        for mem, ts in rows:
            out.setdefault(mem, []).append((ts, RECALL_WEIGHT))
        rows = self.db.execute(
            f"SELECT mem, MIN(ts) FROM useful WHERE mem IN ({marks}) "
            f"GROUP BY mem, COALESCE(session, 'rowid:' || rowid)", ids)
        for mem, ts in rows:
            out.setdefault(mem, []).append((ts, USEFUL_WEIGHT))
        return out

    # ---- learned stopwords -----------------------------------------------------------
    def learned_stopwords(self, min_sessions: int = MIN_SESSIONS) -> frozenset[str]:
        """Terms of recalls that failed in ``min_sessions``+ distinct sessions and never
        succeeded (the cooldown rule: one session's noise is never adopted)."""
        rows = self.db.execute("""
            WITH ok AS (
                SELECT DISTINCT r.rid FROM recall r JOIN recall_hit h ON h.rid = r.rid
                JOIN useful u ON u.mem = h.mem AND u.session = r.session)
            SELECT t.term,
                   COUNT(DISTINCT CASE WHEN ok.rid IS NULL THEN r.session END) AS failed,
                   COUNT(ok.rid) AS succeeded
            FROM recall_term t JOIN recall r ON r.rid = t.rid
            LEFT JOIN ok ON ok.rid = r.rid
            GROUP BY t.term""")
        return frozenset(t for t, failed, ok in rows if failed >= min_sessions and ok == 0)


    # ---- for memory CI (recall checks proposed by distill) ---------------------------
    def useful_recalls(self) -> list[tuple[str, str, str, int, float]]:
        """(query, memory, session, rank, time) of every recall whose session then marked the
        memory it returned useful: the questions memory demonstrably answers. The rank is the
        memory's place among that recall's hits; oldest first."""
        rows = self.db.execute("""
            SELECT r.query, h.mem, r.session,
                   (SELECT COUNT(*) FROM recall_hit h2 WHERE h2.rid = h.rid AND h2.rowid <= h.rowid), r.ts
            FROM recall r JOIN recall_hit h ON h.rid = r.rid
            WHERE EXISTS (SELECT 1 FROM useful u WHERE u.mem = h.mem AND u.session = r.session)
            ORDER BY r.ts, r.rid, h.rowid""")
        return [(q, m, s, int(rank), float(ts)) for q, m, s, rank, ts in rows]

    # ---- for the lifecycle (influence decay, memory graph) ---------------------------
    def recall_summary(self) -> dict[str, tuple[int, str | None]]:
        """Per memory: (successful recalls, time of the last one) for influence decay.

        A recall counts as successful when its session marked the memory useful, or when
        nobody marks anything (a recall by itself is then the best signal there is); useful
        marks count as recalls too.
        """
        out: dict[str, tuple[int, float]] = {}
        rows = self.db.execute("""
            SELECT mem, COUNT(*), MAX(ts) FROM (
                SELECT h.mem AS mem, r.ts AS ts FROM recall_hit h JOIN recall r ON r.rid = h.rid
                UNION ALL SELECT mem, ts FROM useful) GROUP BY mem""")
        for mem, count, last in rows:
            out[mem] = (int(count), last)
        return {m: (c, datetime.fromtimestamp(t, UTC).isoformat() if t else None)
                for m, (c, t) in sorted(out.items())}

    def cooccurrences(self, min_count: int = 2) -> list[tuple[str, str, int]]:
        """Pairs of memories returned together by ``min_count``+ recalls: graph edges."""
        rows = self.db.execute("""
            SELECT a.mem, b.mem, COUNT(DISTINCT a.rid) FROM recall_hit a
            JOIN recall_hit b ON a.rid = b.rid AND a.mem < b.mem
            GROUP BY a.mem, b.mem HAVING COUNT(DISTINCT a.rid) >= ?
            ORDER BY a.mem, b.mem""", (min_count,))
        return [(a, b, int(n)) for a, b, n in rows]

def _heat(events: list[tuple[float, float]], now_ts: float, created_ts: float | None) -> float:
    if not events:
        return 0.0
    early = sum(w for ts, w in events
                if created_ts is not None and ts < created_ts + COOLDOWN.total_seconds())
    late = sum(w for ts, w in events
               if created_ts is None or ts >= created_ts + COOLDOWN.total_seconds())
    raw = min(early, COOLDOWN_CAP) + late
    last = max(ts for ts, _ in events)
    age_days = max(now_ts - last, 0.0) / 86400.0
    return raw * math.exp(-math.log(2) * age_days / HALF_LIFE_DAYS)
