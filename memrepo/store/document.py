"""Memory files as text (owner of YAML): a strict loader and a canonical, byte-stable writer.

A memory file is ``---\\n<YAML mapping>---\\n<markdown body>``. python-frontmatter (and PyYAML's
safe loader under it) accepts things a shared memory must not: duplicate keys (last one wins
silently), anchors and aliases (an alias bomb explodes when walked), dates turned into
``datetime`` objects, and its writer sorts keys and strips the final newline. So reading goes
through a stricter loader, and writing through :func:`render`, which emits keys in the schema's
order with a fixed quoting style, so ``render(parse(render(x))) == render(x)`` byte for byte.
"""
from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from memrepo.errors import Problem

MAX_FILE_BYTES = 256 * 1024
"""A memory file larger than this is refused: memories hold pointers, not raw dumps."""

OPEN = "---\n"
_CLOSE_RE = re.compile(r"^---[ \t]*$", re.MULTILINE)


class DocumentError(ValueError):
    """A file that cannot be read as a memory; ``problem`` says where and why."""

    def __init__(self, problem: Problem):
        self.problem = problem
        super().__init__(str(problem))


_PLAIN_TAGS = frozenset(f"tag:yaml.org,2002:{t}" for t in ("str", "int", "float", "bool", "null", "seq", "map"))


def _anchor_line(yaml, head: str, loader) -> int | None:
    """The line of the first ``&anchor`` in the front matter (an anchor with no alias is still
    refused: the reader drops it, so the next save would silently change the file)."""
    for event in yaml.parse(head, Loader=loader):
        if getattr(event, "anchor", None):
            return event.start_mark.line
    return None


@lru_cache(maxsize=1)
def _loader():
    """The strict loader class, built on first use: writing a memory never imports YAML."""
    import yaml

    base: type = getattr(yaml, "CSafeLoader", yaml.SafeLoader)  # libyaml when present: 10x faster

    class StrictLoader(base):
        """Safe loading without aliases, duplicate keys or implicit timestamps."""

        def construct_object(self, node, deep=False):
            # Without aliases every node is constructed once; a second visit means *alias.
            if node in self.constructed_objects or node in self.recursive_objects:
                raise yaml.constructor.ConstructorError(
                    None, None, "anchors and aliases (&name / *name) are not allowed in memories", node.start_mark)
            if node.tag not in _PLAIN_TAGS:
                raise yaml.constructor.ConstructorError(
                    None, None, f"YAML tags (!!type) are not allowed in memories ({node.tag.replace('tag:yaml.org,2002:', '!!')}): "
                    "write the plain value (text, number, true/false, list or mapping)",
                    node.start_mark)
            return super().construct_object(node, deep=deep)

        def construct_mapping(self, node, deep=False):
            if isinstance(node, yaml.MappingNode):
                seen: set = set()
                for key_node, _ in node.value:
                    if not isinstance(key_node, yaml.ScalarNode):
                        raise yaml.constructor.ConstructorError(
                            None, None, "a key must be plain text, not a list or a mapping", key_node.start_mark)
                    key = key_node.value
                    if key in seen:
                        raise yaml.constructor.ConstructorError(
                            None, None, f"duplicate key {key!r}: keep one", key_node.start_mark)
                    seen.add(key)
            return super().construct_mapping(node, deep=deep)

    # Timestamps stay strings so that what validation sees is what the file says.
    StrictLoader.yaml_implicit_resolvers = {
        ch: [(tag, rx) for tag, rx in resolvers if tag != "tag:yaml.org,2002:timestamp"]
        for ch, resolvers in yaml.SafeLoader.yaml_implicit_resolvers.items()
    }
    return yaml, StrictLoader


@dataclass(frozen=True)
class Parsed:
    """A memory file split into its front matter and body."""

    meta: dict[str, Any]
    body: str


def decode(data: bytes, path: str) -> str:
    """UTF-8 text of a memory file, or a DocumentError naming the file and the line."""
    if len(data) > MAX_FILE_BYTES:
        raise DocumentError(Problem(path, "(file)", (
            f"{len(data)} bytes is over the {MAX_FILE_BYTES}-byte cap; keep raw logs "
            "elsewhere and point to them in 'evidence'")))
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as e:
        line = data[:e.start].count(b"\n") + 1
        raise DocumentError(Problem(path, f"line {line}", (
            f"byte {data[e.start]:#04x} is not UTF-8; re-save the file as UTF-8"))) from None
    if text.startswith("\ufeff"):
        raise DocumentError(Problem(path, "line 1", "starts with a byte-order mark; save as UTF-8 without BOM"))
    return text


def parse(text: str, path: str) -> Parsed:
    """Split and strictly load a memory file; raises DocumentError with the line."""
    if not text.startswith(OPEN):
        raise DocumentError(Problem(path, "line 1", "must start with a '---' front-matter line"))
    close = _CLOSE_RE.search(text, len(OPEN) - 1)
    if close is None or close.start() == 0:
        raise DocumentError(Problem(path, "(front matter)", "no closing '---' line after the front matter"))
    head = text[len(OPEN):close.start()]
    body = text[close.end():]
    body = body[1:] if body.startswith("\n") else body
    yaml, loader = _loader()
    try:
        meta = yaml.load(head, Loader=loader)  # noqa: S506 - strict safe loader
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = f"line {mark.line + 2}" if mark is not None else "(front matter)"
        problem = getattr(e, "problem", None) or str(e)
        if "could not determine a constructor" in problem:
            problem += "; YAML tags (!!type) are not allowed in memories: write the plain value"
        elif "not allowed in memories" not in problem and "keep one" not in problem:
            problem += "; fix the front matter so it is plain 'key: value' YAML (quote text with ':' or '#')"
        raise DocumentError(Problem(path, line, f"YAML error: {problem}")) from None
    if "&" in head:
        line_no = _anchor_line(yaml, head, loader)
        if line_no is not None:
            raise DocumentError(Problem(path, f"line {line_no + 2}", (
                "YAML error: anchors and aliases (&name / *name) are not allowed in memories; write the value itself")))
    if not isinstance(meta, dict):
        raise DocumentError(Problem(path, "(front matter)", (
            f"front matter must be a mapping of 'key: value' lines, not {type(meta).__name__}")))
    bad_keys = [k for k in meta if not isinstance(k, str)]
    if bad_keys:
        raise DocumentError(Problem(path, "(front matter)", f"keys must be text, got {bad_keys[0]!r}"))
    return Parsed(meta, body)


def load_bytes(data: bytes, path: str) -> Parsed:
    return parse(decode(data, path), path)


def load_yaml(text: str, path: str) -> tuple[Any, dict[tuple, int]]:
    """A whole YAML file read as strictly as front matter (no aliases, tags or duplicate keys;
    timestamps stay text), with the line (1-based) where each mapping value and list item
    starts, keyed by its place in the document (``("checks", 0, "expect")``): a check of the
    data can then name the line. Raises DocumentError naming the line."""
    yaml, loader_class = _loader()
    lines: dict[tuple, int] = {}
    try:
        if "&" in text and (line_no := _anchor_line(yaml, text, loader_class)) is not None:
            raise DocumentError(Problem(path, f"line {line_no + 1}", (
                "YAML error: anchors and aliases (&name / *name) are not allowed; write the value itself")))
        loader = loader_class(text)
        try:   # one parse: the node tree gives the lines, then the (strict) constructor the data
            node = loader.get_single_node()
            _node_lines(node, (), lines)
            data = loader.construct_document(node) if node is not None else None
        finally:
            loader.dispose()
    except yaml.YAMLError as e:
        mark = getattr(e, "problem_mark", None) or getattr(e, "context_mark", None)
        line = f"line {mark.line + 1}" if mark is not None else "(file)"
        raise DocumentError(Problem(path, line, f"YAML error: {getattr(e, 'problem', None) or e}")) from None
    return data, lines


def _node_lines(node, where: tuple, lines: dict[tuple, int]) -> None:
    if node is None:
        return
    lines[where] = node.start_mark.line + 1
    if node.id == "mapping":
        for key, value in node.value:
            if key.id == "scalar":   # a list or mapping as a key: the constructor refuses it, naming the line
                _node_lines(value, (*where, key.value), lines)
    elif node.id == "sequence":
        for i, item in enumerate(node.value):
            _node_lines(item, (*where, i), lines)


# ------------------------------------------------------------------ writing

# Plain text: a first character in [A-Za-z0-9_\u00a0-\ufffd], the rest also space . , / @ + ( ) # % -.
# Written as the characters left out: a class spanning most of the BMP costs milliseconds to
# compile on every start (re builds its table a character at a time), a few short ranges do
# not; a test checks both forms agree on every code point.
_PLAIN_RE = re.compile("^[^\x00-\x2f\x3a-\x40\x5b-\x5e\x60\x7b-\x9f\ufffe\uffff\U00010000-\U0010ffff]"
                       "[^\x00-\x1f!\"$&'*:;<=>?\\[\\\\\\]^`{|}~\x7f-\x9f\ufffe\uffff\U00010000-\U0010ffff]*$")
_RESERVED = re.compile(
    r"^(?:~|null|Null|NULL|true|True|TRUE|false|False|FALSE|yes|Yes|YES|no|No|NO|on|On|ON|off|Off|OFF|y|Y|n|N)$")


# PyYAML's implicit resolvers (YAML 1.1) for bool, null, float, int, merge and value, as its
# resolver.py writes them; timestamps are left out because memrepo reads them as text. A test
# checks this against PyYAML itself, so the writer needs no YAML import.
_OTHER_TYPE_RE = re.compile(r"""^(?:yes|Yes|YES|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF
    |~|null|Null|NULL|
    |[-+]?(?:[0-9][0-9_]*)\.[0-9_]*(?:[eE][-+][0-9]+)?
    |\.[0-9][0-9_]*(?:[eE][-+][0-9]+)?
    |[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+\.[0-9_]*
    |[-+]?\.(?:inf|Inf|INF)
    |\.(?:nan|NaN|NAN)
    |[-+]?0b[0-1_]+
    |[-+]?0[0-7_]+
    |[-+]?(?:0|[1-9][0-9_]*)
    |[-+]?0x[0-9a-fA-F_]+
    |[-+]?[1-9][0-9_]*(?::[0-5]?[0-9])+
    |<<|=)$""", re.X)


def _is_plain_safe(s: str) -> bool:
    """True when ``s`` can be written unquoted and reads back as the same string."""
    if not s or s != s.strip() or not _PLAIN_RE.match(s) or _RESERVED.match(s):
        return False
    if ": " in s or " #" in s or "\u2028" in s or "\u2029" in s or "\x85" in s:
        return False
    # The pattern above leaves only characters with no block-context meaning, so what is left
    # to ask is whether YAML would read the text as another type (1.5, true, null, 0x1F).
    return not _OTHER_TYPE_RE.match(s)


# Characters YAML refuses in a file (control characters, U+FFFE/FFFF, lone surrogates) or
# folds inside quotes as line breaks (NEL, LS, PS, BOM): json.dumps(ensure_ascii=False) leaves
# them raw, so they are written as \\uXXXX escapes, which YAML reads back as the same text.
_UNSAFE_IN_QUOTES = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u2028\u2029\ud800-\udfff\ufeff\ufffe\uffff]")


def _quoted(text: str) -> str:
    return _UNSAFE_IN_QUOTES.sub(lambda m: f"\\u{ord(m.group()):04x}", json.dumps(text, ensure_ascii=False))


def _float(value: float) -> str:
    """A float as YAML 1.1 reads it back as a float: '1e-05' would come back as text."""
    if math.isnan(value):
        return ".nan"
    if math.isinf(value):
        return ".inf" if value > 0 else "-.inf"
    text = repr(value)
    mantissa, _, exponent = text.partition("e")
    if exponent:
        mantissa = mantissa if "." in mantissa else mantissa + ".0"
        text = f"{mantissa}e{exponent if exponent[0] in '+-' else '+' + exponent}"
    return text


def scalar(value: Any) -> str:
    """One YAML scalar in canonical style (plain when unambiguous, else JSON double quotes)."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        return _float(value)
    text = str(value)
    return text if _is_plain_safe(text) else _quoted(text)


def flow(value: Any) -> str:
    """A nested value (a mapping, or a list inside a list) in YAML flow style: JSON's shape,
    keys sorted, every text quoted, numbers as :func:`scalar` writes them (``1e-05`` unquoted
    would read back as text), so it reads back as the same value, byte-stable."""
    if isinstance(value, dict):
        items = sorted(value.items(), key=lambda kv: (not isinstance(kv[0], str), str(kv[0])))
        return "{" + ", ".join(f"{flow(k) if isinstance(k, str) else scalar(k)}: {flow(v)}" for k, v in items) + "}"
    if isinstance(value, list | tuple):
        return "[" + ", ".join(flow(v) for v in value) + "]"
    if isinstance(value, str):
        return _quoted(value)
    return scalar(value)


def _item(value: Any) -> str:
    return flow(value) if isinstance(value, dict | list | tuple) else scalar(value)


def render_meta(meta: dict[str, Any], order: tuple[str, ...]) -> str:
    """Front matter in canonical order: known keys as ordered, then extension keys sorted."""
    keys = [k for k in order if k in meta] + sorted(k for k in meta if k not in order)
    lines: list[str] = []
    for key in keys:
        value = meta[key]
        if isinstance(value, list | tuple):
            if not value:
                lines.append(f"{key}: []")
                continue
            lines.append(f"{key}:")
            lines.extend(f"  - {_item(v)}" for v in value)
        elif isinstance(value, dict):
            lines.append(f"{key}: {flow(value)}")
        else:
            lines.append(f"{key}: {scalar(value)}")
    return "\n".join(lines) + "\n"


def render(meta: dict[str, Any], body: str, order: tuple[str, ...]) -> str:
    """The canonical text of a memory file (always ends with exactly one newline)."""
    body = body.rstrip("\n")
    text = OPEN + render_meta(meta, order) + "---\n"
    return text + (body + "\n" if body else "")
