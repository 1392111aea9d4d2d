"""The catalog: a derived SQLite table of every memory's key fields, synced from git.

Cross-file invariants (unique ids, one active per fact) and ``list`` must not re-read 100,000
files on every write or commit. The catalog remembers which commit it reflects and catches up
by asking git what changed since (``git diff-tree``), reading only those blobs. It lives in
the git-ignored ``.memrepo/state/`` and can be deleted at any time: it is rebuilt from git.
"""
from __future__ import annotations

import sqlite3
from dataclasses import fields
from pathlib import Path
from typing import Iterable

from memrepo.errors import Problem
from memrepo.model import FIELDS, MEMORY_ROOTS, Memory
from memrepo.store import document, git
from memrepo.store.checks import Row, reader_problem
from memrepo.store.sqlite import open_db

# The columns are the fields the field table marks for the catalog (memrepo.model.FIELDS):
# "key" ones for the invariants (a Row), "listed" ones also for `memrepo list`.
_FIELDS = tuple(f for f in FIELDS if f.catalog)
_TABLE = ("path", *(f.name for f in _FIELDS), "blob", "error")
_ROW = tuple(f.name for f in fields(Row))
_LISTED = ("id", "path", *(f.name for f in _FIELDS if f.catalog == "listed" and f.name != "id"))
_SCHEMA = f"""
CREATE TABLE IF NOT EXISTS memory (
    path TEXT PRIMARY KEY, {", ".join(f"{f.name} {'REAL' if f.type == 'number' else 'TEXT'}" for f in _FIELDS)},
    blob TEXT, error TEXT);
CREATE INDEX IF NOT EXISTS memory_id ON memory(id);
CREATE INDEX IF NOT EXISTS memory_fact ON memory(subject, fact, status);
CREATE INDEX IF NOT EXISTS memory_sup ON memory(supersedes);
CREATE INDEX IF NOT EXISTS memory_supby ON memory(superseded_by);
CREATE INDEX IF NOT EXISTS memory_error ON memory(path) WHERE error IS NOT NULL;
CREATE TABLE IF NOT EXISTS state (key TEXT PRIMARY KEY, value TEXT);
"""
# 3: rows only of files the schema accepts; the columns named: another set of columns is another
# catalog, rebuilt from git
VERSION = "4:" + ",".join(_TABLE)


class Catalog:
    """Rows of every memory at one commit; implements :class:`memrepo.store.checks.Rows`."""

    def __init__(self, root: Path, db_path: Path):
        self.root = root
        self.db_path = db_path
        db_path.parent.mkdir(parents=True, exist_ok=True)
        self.db = self._open()

    def _open(self) -> sqlite3.Connection:
        # Derived state: a damaged or outdated catalog is dropped and rebuilt from git.
        return open_db(self.db_path, self._prepare, damaged="rebuild", timeout=30, isolation_level=None).db

    @classmethod
    def _prepare(cls, db: sqlite3.Connection) -> None:
        db.executescript(_SCHEMA)
        if cls._get(db, "version") not in (None, VERSION):
            raise sqlite3.DatabaseError("old catalog version")

    @staticmethod
    def _get(db: sqlite3.Connection, key: str) -> str | None:
        row = db.execute("SELECT value FROM state WHERE key=?", (key,)).fetchone()
        return row[0] if row else None

    @property
    def commit(self) -> str | None:
        return self._get(self.db, "commit")

    def close(self) -> None:
        self.db.close()

    # ------------------------------------------------------------- syncing

    def sync(self, commit: str | None) -> None:
        """Bring the rows to ``commit`` by reading only what git says changed.

        The stamp the changes are based on is read again inside the transaction that writes
        them: when another process synced meanwhile, this one starts over from its stamp, so
        one commit's rows never end up under another commit's stamp.
        """
        while True:
            current = self.commit
            if commit == current:
                return
            if commit is None:
                self._replace_all([], None)
                return
            try:
                changes = git.diff_tree(self.root, current, commit, MEMORY_ROOTS)
            except Exception:
                changes = git.diff_tree(self.root, None, commit, MEMORY_ROOTS)
                current = None
            if self._apply_changes(changes, commit, based_on=current):
                return

    def _apply_changes(self, changes: list[git.Change], commit: str, *, based_on: str | None) -> bool:
        """Write the rows of ``changes`` (a full listing when ``based_on`` is None); False, with
        nothing written, when the stamp no longer is ``based_on``."""
        # One batched read: a sync or a checkout can bring thousands of files at once.
        blobs = git.read_blobs(self.root, [ch.sha for ch in changes if ch.status != "D" and ch.path.endswith(".md")])
        upserts, deletes = [], []
        for ch in changes:
            if ch.status == "D":
                deletes.append(ch.path)
            elif ch.path.endswith(".md"):
                upserts.append(_row_values(ch.path, blobs[ch.sha], ch.sha, ch.mode))
        self.db.execute("BEGIN IMMEDIATE")
        try:
            if based_on is not None and self._get(self.db, "commit") != based_on:
                self.db.execute("ROLLBACK")
                return False
            if based_on is None:
                self.db.execute("DELETE FROM memory")
            self.db.executemany("DELETE FROM memory WHERE path=?", [(p,) for p in deletes])
            self._insert(upserts)
            self.db.execute("INSERT OR REPLACE INTO state VALUES ('commit', ?)", (commit,))
            self.db.execute("INSERT OR REPLACE INTO state VALUES ('version', ?)", (VERSION,))
            self.db.execute("COMMIT")
            return True
        except BaseException:
            self.db.execute("ROLLBACK")
            raise

    def _insert(self, values: list[tuple]) -> None:
        self.db.executemany(f"INSERT OR REPLACE INTO memory ({','.join(_TABLE)}) VALUES ({','.join('?' * len(_TABLE))})",
                            values)

    def _replace_all(self, values: list[tuple], commit: str | None) -> None:
        self.db.execute("BEGIN IMMEDIATE")
        self.db.execute("DELETE FROM memory")
        self._insert(values)
        self.db.execute("INSERT OR REPLACE INTO state VALUES ('commit', ?)", (commit,))
        self.db.execute("COMMIT")

    def record(self, memories: Iterable[Memory], deleted_paths: Iterable[str], old: str | None, new: str) -> None:
        """Apply a commit memrepo itself just made, without re-reading it from git."""
        self.db.execute("BEGIN IMMEDIATE")
        if self._get(self.db, "commit") != old:
            self.db.execute("ROLLBACK")
            self.sync(new)
            return
        self.db.executemany("DELETE FROM memory WHERE path=?", [(p,) for p in deleted_paths])
        self._insert([_memory_values(m, None) for m in memories])
        self.db.execute("INSERT OR REPLACE INTO state VALUES ('commit', ?)", (new,))
        self.db.execute("INSERT OR REPLACE INTO state VALUES ('version', ?)", (VERSION,))
        self.db.execute("COMMIT")

    # -------------------------------------------------------------- reading

    def _rows(self, where: str, args: tuple) -> list[Row]:
        sql = f"SELECT {','.join(_ROW)} FROM memory WHERE {where} AND error IS NULL"
        return [Row(*r) for r in self.db.execute(sql, args)]

    def with_id(self, memory_id: str) -> list[Row]:
        return self._rows("id=?", (memory_id,))

    def active_for(self, subject: str, fact: str) -> list[Row]:
        return self._rows("subject=? AND fact=? AND status='active'", (subject, fact))

    def referencing(self, memory_id: str) -> list[Row]:
        return self._rows("(supersedes=? OR superseded_by=?)", (memory_id, memory_id))

    def path_of(self, memory_id: str) -> str | None:
        rows = self.with_id(memory_id)
        return rows[0].path if rows else None

    def query(self, **filters: str | None) -> list[dict]:
        """Rows matching equal-filters (layer, kind, status, subject, fact), ordered by creation."""
        where, args = _where(filters)
        cols = _LISTED
        sql = f"SELECT {','.join(cols)} FROM memory WHERE {where} ORDER BY created, path"
        return [dict(zip(cols, r)) for r in self.db.execute(sql, args)]

    def page(self, *, offset: int, limit: int, paths: set[str] | None = None,
             **filters: str | None) -> tuple[list[dict], int]:
        """One page of the rows :meth:`query` matches (``paths``: only these), newest first,
        and how many match in all: a browser pages through 100,000 rows without loading them."""
        if paths is not None:
            rows = [r for r in self.query(**filters) if r["path"] in paths][::-1]
            return rows[offset:offset + limit], len(rows)
        where, args = _where(filters)
        total = self.db.execute(f"SELECT count(*) FROM memory WHERE {where}", args).fetchone()[0]
        cols = _LISTED
        sql = f"SELECT {','.join(cols)} FROM memory WHERE {where} ORDER BY created DESC, path DESC LIMIT ? OFFSET ?"
        return [dict(zip(cols, r)) for r in self.db.execute(sql, [*args, limit, offset])], total

    def active_with_fact_prefix(self, prefix: str) -> list[dict]:
        """Active memories whose fact key starts with ``prefix`` (id, path, fact), one range
        scan in SQLite: Claude's memory-tool files are found without listing the vault."""
        end = prefix[:-1] + chr(ord(prefix[-1]) + 1)
        sql = ("SELECT id, path, fact FROM memory WHERE error IS NULL AND status='active' AND fact >= ? AND fact < ? "
               "ORDER BY path")
        return [dict(zip(("id", "path", "fact"), r)) for r in self.db.execute(sql, (prefix, end))]

    def standing(self, layers: tuple[str, ...], kinds: tuple[str, ...], subject: str | None = None) -> list[dict]:
        """Active memories of ``layers`` (any subject) or of ``kinds`` (of ``subject`` when
        given): what an agent reads at session start. Rows as :meth:`query` gives them."""
        cols = ("id", "path", "layer", "kind", "subject", "weight")
        sql = (f"SELECT {','.join(cols)} FROM memory WHERE error IS NULL AND status='active' AND "
               f"(layer IN ({','.join('?' * len(layers))}) OR (kind IN ({','.join('?' * len(kinds))})"
               f"{' AND subject=?' if subject is not None else ''})) ORDER BY created, path")
        args = (*layers, *kinds, *((subject,) if subject is not None else ()))
        return [dict(zip(cols, r)) for r in self.db.execute(sql, args)]

    def errors(self) -> list[Problem]:
        """The memory files on main readers skip, each with its (first) problem."""
        return [Problem(p, *(e.split("\t", 1) if "\t" in e else ("(file)", e)))
                for p, e in self.db.execute("SELECT path, error FROM memory WHERE error IS NOT NULL ORDER BY path")]

    def count(self) -> int:
        return self.db.execute("SELECT count(*) FROM memory WHERE error IS NULL").fetchone()[0]


def _memory_values(m: Memory, blob: str | None) -> tuple:
    return (m.path, *(_column(f.type, m.meta.get(f.name)) for f in _FIELDS), blob, None)


def _column(kind: str, value: object) -> object:
    """A field's value as its column keeps it (a number that is not one: none)."""
    if kind == "number":
        return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
    return value


def _failed(path: str, blob: str, error: str) -> tuple:
    return (path, *([None] * len(_FIELDS)), blob, error)


def _row_values(path: str, data: bytes, blob: str, mode: str) -> tuple:
    if mode == "120000":
        return _failed(path, blob, "is a symlink; memories must be regular files")
    try:
        parsed = document.load_bytes(data, path)
    except document.DocumentError as e:
        return _failed(path, blob, e.problem.message)
    problem = reader_problem(path, parsed.meta)
    if problem is not None:  # any file can be on main; a row holds only what the schema allows
        return _failed(path, blob, f"{problem.field}\t{problem.message}")
    return _memory_values(Memory(parsed.meta, parsed.body, path), blob)


def _where(filters: dict[str, str | None]) -> tuple[str, list[str]]:
    """The WHERE clause (readable rows whose columns equal the given values) and its arguments."""
    clauses, args = ["error IS NULL"], []
    for key, value in filters.items():
        if value is not None:
            if key not in _TABLE:
                raise ValueError(f"the catalog has no column {key!r}")
            clauses.append(f"{key}=?")
            args.append(value)
    return " AND ".join(clauses), args
