"""JSON that comes from outside (an import line, a transcript, a hook payload, a batch of
queries), parsed so that no input can end in a traceback.

``json.loads`` raises more than ``JSONDecodeError``: ``RecursionError`` for 100,000 nested
brackets, ``ValueError`` for an integer of more than 4,300 digits, ``UnicodeDecodeError``
for bytes that are not UTF-8; and a document it does accept can be nested deep enough that
copying or rendering it later overflows the stack. :func:`loads` turns all of these into one
:class:`BadJson` (a ``ValueError``) whose message names the place and says what to send.
"""
from __future__ import annotations

import json
from typing import Any

MAX_DEPTH = 100  # nesting no memory, transcript or query needs; deeper is refused


class BadJson(ValueError):
    """Input that is not a JSON document memrepo can take; the message says why, ``reason`` is
    the JSON parser's own words when it was a syntax error (``"Extra data"``: more than one value)."""

    def __init__(self, message: str, reason: str = ""):
        super().__init__(message)
        self.reason = reason


def text_of(data: str | bytes, *, where: str) -> str:
    """``data`` as text; :class:`BadJson` naming ``where`` and the line of a byte that is not UTF-8."""
    if isinstance(data, str):
        return data
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise BadJson(f"{where}: byte {data[e.start]:#04x} on line {line} is not UTF-8; send UTF-8 JSON") from None


def loads(data: str | bytes, *, where: str, max_depth: int = MAX_DEPTH) -> Any:
    """The JSON value of ``data``; :class:`BadJson` naming ``where`` for anything else."""
    data = text_of(data, where=where)
    try:
        value = json.loads(data)
    except json.JSONDecodeError as e:
        raise BadJson(f"{where} is not JSON ({e.msg} at line {e.lineno} column {e.colno})", e.msg) from None
    except RecursionError:
        raise BadJson(f"{where}: nested deeper than {max_depth} levels; send flat JSON") from None
    except ValueError as e:  # an integer with more digits than Python converts
        raise BadJson(f"{where}: {str(e).split(';')[0]}; send numbers of ordinary size") from None
    if _depth_over(value, max_depth):
        raise BadJson(f"{where}: nested deeper than {max_depth} levels; send flat JSON")
    return value


def _depth_over(value: Any, limit: int) -> bool:
    """True when ``value`` nests lists and objects more than ``limit`` deep (no recursion)."""
    stack = [(value, 1)]
    while stack:
        item, depth = stack.pop()
        if isinstance(item, dict):
            children = list(item.values())
        elif isinstance(item, list):
            children = item
        else:
            continue
        if depth > limit:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, dict | list))
    return False
