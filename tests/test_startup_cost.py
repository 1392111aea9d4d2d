"""What every command pays before its work: patterns rewritten to compile cheaply
must match exactly what the forms they replaced matched, on every character."""
from __future__ import annotations

import re

from memrepo import text
from memrepo.store import document

# The readable forms, kept as the specification (each costs milliseconds to compile per process).
PLAIN_SPEC = re.compile("^[A-Za-z0-9_\u00a0-\ufffd][A-Za-z0-9_ .,/@+()#%\u00a0-\ufffd-]*$")
UNSAFE_SPEC = re.compile("[^\x09\x0a\x0d\x20-\x7e\xa0-\ud7ff\ue000-\ufefe\uff00-\ufffd\U00010000-\U0010ffff]|[\u2028\u2029]")
CJK_SPEC = re.compile(rf"[{text.CJK}]")

CODE_POINTS = [*range(0x10000), 0x10000, 0x1F600, 0x2A6D6, 0xE0001, 0x10FFFF]


def test_the_plain_scalar_pattern_matches_what_it_replaced():
    for cp in CODE_POINTS:
        c = chr(cp)
        for s in (c, c + "a", "a" + c, "a" + c + "\n"):
            assert bool(PLAIN_SPEC.match(s)) == bool(document._PLAIN_RE.match(s)), hex(cp)


def test_the_escape_pattern_matches_what_it_replaced():
    for cp in CODE_POINTS:
        assert bool(UNSAFE_SPEC.search(chr(cp))) == bool(document._UNSAFE_IN_QUOTES.search(chr(cp))), hex(cp)


def test_is_cjk_takes_the_cjk_ranges():
    for cp in CODE_POINTS:
        assert text.is_cjk(chr(cp) + "x") == bool(CJK_SPEC.match(chr(cp))), hex(cp)
    assert not text.is_cjk("")
