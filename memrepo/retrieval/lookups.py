"""One memory's index document, read straight from an open searcher's segments.

A search reads a few dozen documents by number (its candidates' stored fields) and looks up the
memories its vectors bring in by id. Whoosh answers both through generic layers:
``document_number`` walks each segment's term table with a seek and a buffered read per probe
and opens a postings matcher behind a deletion filter (~200 us per id in a search at 100k
memories), ``stored_fields`` passes five readers and a seek and a buffered read on the column
file before it decompresses and unpickles (~80 us). Here, per segment of the Whoosh 3 codec
(others fall back to Whoosh's own calls):

- an id is unique, so its postings in a segment are one document, and the term table's entry
  of a term already holds its document frequency and its first document number: the table
  alone answers, probed with a positioned read (``os.pread``) per slot and one for the entry
  (Whoosh's postings only when one segment holds an id twice: one writer wrote it twice);
- a stored document is one positioned read of the column's bytes (no seek, no 8 KB buffer
  fill), decompressed and unpickled as Whoosh does.

Measured in a search at 100k memories: ~50 us per id and ~50 us per stored document
(bench/RESULTS.md, "Direct reads of the index"); what is left of the latter is zlib and pickle.

The answers are Whoosh's, document for document (tests/test_lookups.py compares them on an index
with several segments, deletions and a re-added id).
"""
from __future__ import annotations

import os
import struct
from bisect import bisect_right
from collections.abc import Callable
from typing import Any

_LOOKUPS = "_memrepo_lookups"  # per-searcher cache of the segments' readers
# a term's entry in the Whoosh 3 terms table starts with (flags, weight, doc frequency, min
# length, max length, max weight, first id, last id): whoosh.codec.whoosh3.W3TermInfo
_TERMINFO = struct.Struct("!BfIBBfII")
_NO_ID = 0xFFFFFFFF
DFS_KEPT = 50_000   # document frequencies remembered per segment of an open searcher
_SLOT = struct.Struct("!Iq")    # a hash table slot: (key hash, entry position)
_ENTRY = struct.Struct("!ii")   # an entry's head: (key length, data length)


def docnum_of(searcher, mid: str) -> int | None:
    """The document number of memory ``mid`` (``searcher.document_number(id=mid)``)."""
    key = searcher.schema["id"].to_bytes(mid)
    for seg in _segments(searcher)[1]:
        found = seg.first_live(key)
        if found is not None:
            return seg.base + found
    return None


def doc_frequency(searcher, field: str, term: str) -> int:
    """``searcher.doc_frequency(field, term)`` (deleted documents counted, as Whoosh counts
    them), each segment's answer read from its term table once per searcher."""
    return sum(seg.doc_frequency(field, term) for seg in _segments(searcher)[1])


def stored_fields(searcher, number: int) -> dict:
    """The stored fields of document ``number`` (``searcher.stored_fields(number)``)."""
    bases, segs = _segments(searcher)
    seg = segs[bisect_right(bases, number) - 1] if number >= 0 else None
    if seg is None or seg.read_stored is None:
        return searcher.stored_fields(number)
    return seg.stored(number - seg.base)


def prepare(searcher) -> None:
    """Set up the readers now (while every file the searcher needs is known to exist)."""
    _segments(searcher)


def _segments(searcher) -> tuple[list[int], list[_Segment]]:
    found = searcher.__dict__.get(_LOOKUPS)
    if found is None:
        segs = [_Segment(leaf, base) for leaf, base in searcher.reader().leaf_readers()]
        found = searcher.__dict__[_LOOKUPS] = ([seg.base for seg in segs], segs)
    return found


class _Segment:
    """The direct reads of one segment; ``None`` readers mean "ask Whoosh"."""

    def __init__(self, leaf, base: int) -> None:
        self.leaf, self.base = leaf, base
        self.table: Any = None                   # the terms file's hash table (Whoosh's HSH3)
        self.read_terms: Callable | None = None  # (position, length) -> bytes of the terms file
        self.id_prefix = b""
        self.read_stored: Callable | None = None
        self.keycoder: Callable | None = None    # (field, term bytes) -> the terms table's key
        self.dfs: dict[tuple[str, str], int] = {}
        self.names = frozenset(leaf.schema.names()) if getattr(leaf, "schema", None) else frozenset()
        for open_ in (self._open_terms, self._open_stored):
            try:
                open_()
            except (AttributeError, KeyError, TypeError, ValueError, OSError):
                pass  # another codec or storage: a reader left unset falls back to Whoosh

    def _open_terms(self) -> None:
        from whoosh.codec.whoosh3 import W3TermsReader
        from whoosh.filedb.filetables import OrderedHashReader
        terms = self.leaf._terms
        if type(terms) is not W3TermsReader or type(terms._tindex) is not OrderedHashReader:
            return
        prefix, read = terms._keycoder("id", b""), positioned_reader(terms._tindex.dbfile)
        self.table, self.read_terms, self.id_prefix, self.keycoder = terms._tindex, read, prefix, terms._keycoder

    def _open_stored(self) -> None:
        from whoosh.codec.whoosh3 import STORED_COLUMN, W3PerDocReader
        from whoosh.columns import CompressedBytesColumn, PickleColumn
        perdoc = self.leaf._perdoc
        if type(perdoc) is not W3PerDocReader:
            return
        column = perdoc._cached_reader("_stored", STORED_COLUMN)
        if type(column) is not PickleColumn.Reader or type(column._child) is not CompressedBytesColumn.Reader:
            return
        chars = column._child
        read = positioned_reader(chars._dbfile)
        offsets, lengths, start, decompress = chars._offsets, chars._lengths, chars._basepos, chars._decompress
        from pickle import loads

        def read_stored(docnum: int):
            length = lengths[docnum]
            return loads(decompress(read(start + offsets[docnum], length))) if length else None
        self.read_stored = read_stored

    def first_live(self, key: bytes) -> int | None:
        """The segment's first live document holding ``id`` term ``key``, or None."""
        if self.table is None or self.read_terms is None:
            return self._first_id(key)
        info = self._term_info(self.id_prefix + key)
        if info is None:
            return None
        df, first = (info[2], info[6]) if info else (0, _NO_ID)
        if df == 1 and first != _NO_ID:
            return None if self.leaf.is_deleted(first) else first
        return self._first_id(key)  # held twice: one writer wrote the id twice

    def doc_frequency(self, field: str, term: str) -> int:
        found = self.dfs.get((field, term))
        if found is None:
            if len(self.dfs) >= DFS_KEPT:
                self.dfs.clear()
            found = self.dfs[(field, term)] = self._doc_frequency(field, term)
        return found

    def _doc_frequency(self, field: str, term: str) -> int:
        if self.keycoder is None or field not in self.names:
            return self.leaf.doc_frequency(field, term)
        info = self._term_info(self.keycoder(field, self.leaf.schema[field].to_bytes(term)))
        if info is None:
            return 0
        return info[2] if info else self.leaf.doc_frequency(field, term)

    def _first_id(self, key: bytes) -> int | None:
        from whoosh.reading import TermNotFound
        try:
            return self.leaf.first_id("id", key)
        except TermNotFound:
            return None

    def _term_info(self, key: bytes) -> tuple | None:
        """The fixed head of ``key``'s entry in the terms table, None when it has none, ``()``
        when the entry is not what this reads.

        Whoosh's ``ranges_for_key``, read with a positioned read per slot and one for the
        entry (its lengths, key and term info are adjacent): the table is a hash of 256
        open-addressing tables, a slot holding (hash, entry position), an entry
        (key length, data length, key, data)."""
        table, read = self.table, self.read_terms
        assert table is not None and read is not None
        keyhash = table.hashfn(key)
        start, slots = table.tables[keyhash & 255]
        slot = (keyhash >> 8) % slots if slots else 0
        for _ in range(slots):
            slothash, itempos = _SLOT.unpack(read(start + slot * _SLOT.size, _SLOT.size))
            if not itempos:
                return None
            if slothash == keyhash:
                entry = read(itempos, _ENTRY.size + len(key) + _TERMINFO.size)
                keylen, datalen = _ENTRY.unpack_from(entry)
                if keylen == len(key) and entry[_ENTRY.size:_ENTRY.size + keylen] == key:
                    if datalen < _TERMINFO.size or len(entry) < _ENTRY.size + keylen + _TERMINFO.size:
                        return ()  # not a Whoosh 3 term info: ask Whoosh
                    return _TERMINFO.unpack_from(entry, _ENTRY.size + keylen)
            slot = (slot + 1) % slots
        return None

    def stored(self, docnum: int) -> dict:
        assert self.read_stored is not None
        fields = self.read_stored(docnum)
        if fields is None:
            return {}
        if not fields.keys() <= self.names:  # a field the schema no longer has (Whoosh drops it)
            fields = {name: value for name, value in fields.items() if name in self.leaf.schema}
        return fields


def positioned_reader(dbfile) -> Callable[[int, int], bytes]:
    """``dbfile.get`` (the bytes at a position) without its seek and buffered read, which fills
    an 8 KB buffer for the few bytes asked: a positioned read of a plain file, a slice of an
    in-memory one (a compound segment); Whoosh's own ``get`` otherwise."""
    buf = getattr(dbfile, "_buf", None)
    if buf is not None:
        return lambda pos, length: bytes(buf[pos:pos + length])
    fileno = getattr(getattr(dbfile, "file", None), "fileno", None)
    if fileno is None:
        return dbfile.get
    try:
        fileno()
    except (OSError, ValueError):
        return dbfile.get
    pread = os.pread
    # the descriptor asked for on every read: once the searcher is closed that fails, as
    # Whoosh's read would, instead of reading whatever file has reused the number since
    return lambda pos, length: pread(fileno(), length, pos)
