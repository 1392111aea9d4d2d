"""The front-matter schema (owner of jsonschema).

``schema/memory.schema.json`` is the single definition; this module loads it once, builds one
reusable validator (70 µs a document, 40x faster than ``jsonschema.validate`` per call) and
turns its errors into :class:`~memrepo.errors.Problem` values. ``format: date-time`` is
checked by our own function because jsonschema skips it silently without an extra package.
"""
from __future__ import annotations

import json
from functools import lru_cache
from typing import Any

from memrepo.errors import Problem
from memrepo.model import aware_time
from memrepo.resources import schema_path


def is_timestamp(value: object) -> bool:
    """True for an ISO-8601 date-time string with a time zone."""
    return isinstance(value, str) and "T" in value and value == value.strip() and aware_time(value) is not None


@lru_cache(maxsize=1)
def schema() -> dict[str, Any]:
    return json.loads(schema_path().read_text(encoding="utf-8"))


@lru_cache(maxsize=1)
def field_order() -> tuple[str, ...]:
    """Front-matter keys in the order the schema declares them: the canonical file order."""
    return tuple(schema()["properties"])


@lru_cache(maxsize=1)
def _validator():
    import jsonschema

    checker = jsonschema.FormatChecker(formats=())
    checker.checks("date-time")(is_timestamp)
    # The schema file itself is checked against the 2020-12 metaschema by the test suite;
    # doing it here would cost every hook run and every write 35 ms.
    return jsonschema.Draft202012Validator(schema(), format_checker=checker)


def _field_of(error) -> str:
    path = [str(p) for p in error.absolute_path]
    if error.validator == "required":
        return error.message.split("'")[1] if "'" in error.message else "(front matter)"
    if error.validator == "additionalProperties" and not path:
        return ",".join(sorted(_unexpected(error))) or "(front matter)"
    return ".".join(path) or "(front matter)"


def _unexpected(error) -> list[str]:
    allowed = set(error.schema.get("properties", {}))
    return [k for k in error.instance if k not in allowed and not str(k).startswith("x-")]


_TYPE_NAMES = {"array": "a list ('- item' lines or [a, b])", "string": "text", "number": "a number",
               "integer": "a whole number", "object": "a mapping", "boolean": "true or false"}


def _message(error) -> str:
    v = error.validator
    if v == "enum":
        return f"{error.instance!r} is not one of {', '.join(map(str, error.validator_value))}"
    if v == "format":
        return f"{error.instance!r} is not an ISO-8601 date-time with a time zone (e.g. 2026-11-29T09:30:00+00:00)"
    if v == "additionalProperties":
        return "unknown key; use a listed field or prefix your own keys with 'x-'"
    if v == "required":
        return "is required"
    if v == "pattern":
        return f"{error.instance!r} has characters that are not allowed here"
    if v == "type":
        wanted = error.validator_value if isinstance(error.validator_value, list) else [error.validator_value]
        return f"must be {' or '.join(_TYPE_NAMES.get(t) or str(t) for t in wanted)}, not {error.instance!r}"
    if v == "not":
        return f"{error.instance!r} may not contain '..'"
    return error.message


def check_front_matter(meta: dict[str, Any], path: str) -> list[Problem]:
    """Every schema violation of ``meta`` as a Problem, sorted by field.

    A valid document is recognised by :func:`accepts` without importing jsonschema (half the
    start-up of every write and hook run); jsonschema, the reference, explains the rest.
    """
    if accepts(meta):
        return []
    errors = _validator().iter_errors(meta)
    problems = [Problem(path, _field_of(e), _message(e)) for e in errors]
    return sorted(set(problems))


@lru_cache(maxsize=4)
def _file_validator(name: str):
    """A validator for another schema file of ``schema/`` (e.g. ``checks.schema.json``)."""
    import jsonschema

    from memrepo.resources import resource
    data = json.loads((resource("schema") / name).read_text(encoding="utf-8"))
    return jsonschema.Draft202012Validator(data)


def check_against(name: str, doc: Any) -> list[tuple[tuple, str]]:
    """Every violation of ``doc`` against the schema file ``name`` as (where in the document,
    message), in document order; for ``anyOf``/``oneOf`` the alternative that came closest."""
    found = {_explain(error) for error in _file_validator(name).iter_errors(doc)}
    return sorted(found, key=lambda f: (tuple(map(str, f[0])), f[1]))


def _explain(error) -> tuple[tuple, str]:
    where = tuple(error.absolute_path)
    if error.validator in ("anyOf", "oneOf") and error.context:
        if all(e.validator == "required" for e in error.context):
            return where, "needs " + " or ".join(repr(e.message.split("'")[1]) for e in error.context)
        branches: dict[Any, list] = {}
        for e in error.context:
            branches.setdefault(e.relative_schema_path[0], []).append(e)
        shaped = [errs for errs in branches.values() if not any(e.validator == "type" and not e.path for e in errs)]
        if len(shaped) == 1:  # the one alternative of the right shape: its complaint is the useful one
            return _explain(max(shaped[0], key=lambda e: len(e.absolute_path)))
        wanted = [e.validator_value for errs in branches.values() for e in errs if e.validator == "type"]
        names = [_TYPE_NAMES.get(t, str(t)) if isinstance(t, str) else "/".join(t) for t in wanted]
        return where, f"must be {' or '.join(dict.fromkeys(names))}, not {error.instance!r}"
    if error.validator == "required":
        return where, f"{error.message.split(chr(39))[1]!r} is required"
    if error.validator == "additionalProperties":
        extra = sorted(k for k in error.instance if k not in error.schema.get("properties", {}))
        return where, f"unknown key {', '.join(map(repr, extra))}; known keys: {', '.join(error.schema.get('properties', {}))}"
    return where, _message(error)


# ------------------------------------------------------------------ fast acceptance
#
# A small interpreter for the JSON Schema keywords this schema file uses. It only ever says
# "valid" when every keyword it met is one it knows and holds; anything else ("don't know")
# sends the document to jsonschema, so it can make checking faster but never laxer.

_IGNORED = frozenset({"$schema", "$id", "title", "description", "$defs"})
_TYPES = {"string": lambda v: isinstance(v, str), "object": lambda v: isinstance(v, dict),
          "array": lambda v: isinstance(v, list), "boolean": lambda v: isinstance(v, bool),
          "null": lambda v: v is None,
          "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
          "number": lambda v: isinstance(v, int | float) and not isinstance(v, bool)}


class _Unsure(Exception):
    """The fast path met something it does not model: let jsonschema decide."""


def accepts(meta: Any) -> bool:
    """True only when ``meta`` is certainly valid against the schema file."""
    try:
        return _holds(schema(), meta)
    except _Unsure:
        return False


@lru_cache(maxsize=4096)
def _regex(pattern: str):
    import re
    return re.compile(pattern)


def _resolve(ref: str) -> dict[str, Any]:
    if not ref.startswith("#/$defs/"):
        raise _Unsure(ref)
    return schema()["$defs"][ref.removeprefix("#/$defs/")]


def _holds(node: dict[str, Any], value: Any) -> bool:
    for key, arg in node.items():
        if key in _IGNORED:
            continue
        check = _KEYWORDS.get(key)
        if check is None:
            raise _Unsure(key)
        if not check(node, arg, value):
            return False
    return True


def _object(node, _arg, value) -> bool:
    if not isinstance(value, dict):
        return "type" not in node  # the type keyword reports it
    props = node.get("properties", {})
    patterns = node.get("patternProperties", {})
    for key, item in value.items():
        matched = [sub for pat, sub in patterns.items() if _regex(pat).search(key)]
        if key in props:
            matched.append(props[key])
        if not matched and node.get("additionalProperties", True) is False:
            return False
        if not all(_holds(sub, item) for sub in matched):
            return False
    return all(k in value for k in node.get("required", ()))


def _str_rule(test):
    return lambda _n, arg, v: not isinstance(v, str) or test(arg, v)


def _num_rule(test):
    return lambda _n, arg, v: not _TYPES["number"](v) or test(arg, v)


def _unique(_n, arg, v) -> bool:
    if not arg or not isinstance(v, list):
        return True
    if not all(isinstance(x, str) for x in v):
        raise _Unsure("uniqueItems over non-strings")
    return len(set(v)) == len(v)


def _type(_n, arg, v) -> bool:
    names = arg if isinstance(arg, list) else [arg]
    if any(n not in _TYPES for n in names):
        raise _Unsure(f"type {arg}")
    return any(_TYPES[n](v) for n in names)


def _enum(_n, arg, v) -> bool:
    if isinstance(v, bool | int | float) and not isinstance(v, str):
        raise _Unsure("enum over numbers")  # JSON Schema equality differs from Python's here
    return any(type(v) is type(a) and v == a for a in arg)


def _format(_n, arg, v) -> bool:
    if arg != "date-time":
        raise _Unsure(f"format {arg}")
    return not isinstance(v, str) or is_timestamp(v)


_KEYWORDS = {
    "type": _type,
    "enum": _enum,
    "properties": _object, "patternProperties": lambda *a: True, "additionalProperties": lambda *a: True,
    "required": lambda n, arg, v: "properties" in n or not isinstance(v, dict) or all(k in v for k in arg),
    "pattern": _str_rule(lambda p, v: bool(_regex(p).search(v))),
    "minLength": _str_rule(lambda n, v: len(v) >= n),
    "maxLength": _str_rule(lambda n, v: len(v) <= n),
    "minimum": _num_rule(lambda n, v: v >= n),
    "maximum": _num_rule(lambda n, v: v <= n),
    "items": lambda _n, sub, v: not isinstance(v, list) or all(_holds(sub, x) for x in v),
    "uniqueItems": _unique,
    "$ref": lambda _n, ref, v: _holds(_resolve(ref), v),
    "not": lambda _n, sub, v: not _holds(sub, v),
    "format": _format,
}
