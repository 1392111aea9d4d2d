"""The strict loader and the canonical writer: byte-stable round trips, Chinese, dates."""
from __future__ import annotations

import datetime as dt
import string

import pytest
from conftest import git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo.review import writes as memories
from memrepo.store import document, schema
from memrepo.store.document import DocumentError, parse, render
from memrepo.store.vault import render_bytes

ORDER = schema.field_order()

CANONICAL = """\
---
id: mem_20261129_abcd23
layer: L1
kind: preference
subject: 用户
fact: ui.theme
summary: 用户偏好深色模式，不要浅色主题
status: active
source: user
author: 张三
scope: shared
tags:
  - "#偏好"
  - UI
created: "2026-11-29T09:30:00+00:00"
---
## What
用户在所有编辑器中使用深色主题。

Mixed English 和中文 text, 配置数据库连接池.
"""


def test_canonical_file_round_trips_byte_for_byte():
    parsed = parse(CANONICAL, "x.md")
    assert parsed.meta["summary"] == "用户偏好深色模式，不要浅色主题"
    assert parsed.meta["tags"] == ["#偏好", "UI"]
    assert render(parsed.meta, parsed.body, ORDER) == CANONICAL


def test_render_orders_keys_by_schema_then_extensions_sorted():
    meta = {"x-zeta": "1", "summary": "s", "id": "a1", "x-alpha": "2", "layer": "L2"}
    text = render(meta, "", ORDER)
    keys = [line.split(":")[0] for line in text.splitlines()[1:-1]]
    assert keys == ["id", "layer", "summary", "x-alpha", "x-zeta"]


def test_ambiguous_strings_are_quoted_and_read_back_as_strings():
    tricky = ["yes", "no", "null", "~", "1.5", "007", "2026-11-29", "- item", "a: b", "x #y", "[1]",
              "{a}", "@at", "", " lead", "trail ", "tab\there", "line\nbreak", "'quote'", '"dq"', "*ref", "&anc"]
    meta = {"id": "a1", "tags": tricky}
    parsed = parse(render(meta, "", ORDER), "x.md")
    assert parsed.meta["tags"] == tricky


def test_body_is_kept_exactly_with_one_final_newline():
    body = "第一行\n\n--- not a fence ---\n---\n  indented\n"
    text = render({"id": "a1"}, body, ORDER)
    assert parse(text, "x.md").body == body
    assert render({"id": "a1"}, body + "\n\n\n", ORDER) == text  # trailing blank lines trimmed


def test_timestamps_stay_text_not_datetime():
    text = "---\nid: a1\ncreated: 2026-11-29T09:30:00+08:00\nexpires: 2026-12-01\n---\n"
    meta = parse(text, "x.md").meta
    assert meta["created"] == "2026-11-29T09:30:00+08:00"
    assert meta["expires"] == "2026-12-01"  # not a date object: the schema reports it as not a date-time


def test_datetimes_given_to_the_write_path_are_normalised(vault):
    naive = dt.datetime(2026, 11, 29, 9, 30)
    aware = dt.datetime(2026, 11, 29, 9, 30, tzinfo=dt.timezone(dt.timedelta(hours=8)))
    memory = memories.build({"id": "mem_dates", "created": naive, "expires": aware, "updated": dt.date(2026, 12, 1)},
                             "body", author="a")
    assert memory.meta["created"] == "2026-11-29T09:30:00+00:00"
    assert memory.meta["expires"] == "2026-11-29T09:30:00+08:00"
    assert memory.meta["updated"] == "2026-12-01T00:00:00+00:00"
    result = memories.add(vault, {"id": "mem_dates", "created": naive, "summary": "dated"}, "b")
    stored = vault.get(result.id)
    assert stored.meta["created"] == "2026-11-29T09:30:00+00:00"
    assert schema.check_front_matter(dict(stored.meta), stored.path) == []


def test_load_and_save_of_an_unchanged_memory_makes_no_diff(vault):
    result = memories.add(vault, {"subject": "用户", "kind": "preference", "fact": "ui.theme",
                                  "summary": "用户偏好深色模式", "tags": ["#偏好", "ui"],
                                  "evidence": ["notes/a.md#L1-L3"], "weight": 0.5}, "## What\n深色。\n")
    path = vault.root / result.path
    before = path.read_bytes()
    loaded = vault.get(result.id)
    assert render_bytes(loaded) == before
    path.write_bytes(render_bytes(document_roundtrip(before, result.path)))
    assert git(vault.root, "status", "--porcelain") == ""


def document_roundtrip(data: bytes, path: str):
    from memrepo.model import Memory
    parsed = document.load_bytes(data, path)
    return Memory(parsed.meta, parsed.body, path)


def test_file_must_end_front_matter():
    with pytest.raises(DocumentError) as e:
        parse("---\nid: a\nno close\n", "m.md")
    assert e.value.problem.path == "m.md"
    assert "closing '---'" in e.value.problem.message


# ----------------------------------------------------------------- property

_text = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=40)
_scalars = st.one_of(
    _text,
    st.sampled_from(["yes", "No", "null", "1.0", "0x10", "1e3", "2026-11-29", "12:30", "- a", "? q", ": c",
                     "#t", "深色模式", "配置数据库连接池", "a\u2028b", "a\x85b", "\x7f", "\ufeff", "---", "...", "!tag"]),
    st.integers(min_value=-10**12, max_value=10**12),
    st.floats(allow_nan=False),
    st.booleans(),
    st.none(),
)
_keys = st.one_of(st.sampled_from(ORDER),
                  st.text(alphabet=string.ascii_lowercase + "_-", min_size=1, max_size=8).map(lambda s: "x-" + s))
_values = st.one_of(_scalars, st.lists(_scalars.filter(lambda v: v is not None), max_size=4))
_bodies = st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=200)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(meta=st.dictionaries(_keys, _values, min_size=1, max_size=8), body=_bodies)
def test_render_parse_render_is_byte_stable(meta, body):
    first = render(meta, body, ORDER)
    parsed = parse(first, "p.md")
    assert render(parsed.meta, parsed.body, ORDER) == first


@settings(max_examples=200, deadline=None)
@given(meta=st.dictionaries(_keys, _values, min_size=1, max_size=8), body=_bodies)
def test_parse_reads_back_what_render_wrote(meta, body):
    parsed = parse(render(meta, body, ORDER), "p.md")
    assert parsed.meta == meta
    assert parsed.body.rstrip("\n") == body.rstrip("\n")


# The writer decides "plain or quoted" without importing YAML; it must agree with PyYAML.
@settings(max_examples=600, deadline=None)
@given(st.one_of(
    st.text(alphabet="0123456789abcdefxXoOnNyYtTrRuUeEsSlL.+-_:~<=i ", max_size=12),
    st.sampled_from(["1.5", "1e3", "1.0e+3", ".inf", "-.Inf", ".NaN", "0b101", "0o17", "017", "0x1F",
                      "190:20:30", "1_000", "yes", "No", "ON", "off", "null", "~", "<<", "=", "2026-01-01"])))
def test_plain_scalar_rule_matches_pyyaml(text):
    import yaml
    yaml_says_str = yaml.SafeLoader.resolve(yaml.SafeLoader, yaml.ScalarNode, text, (True, False)) in (
        "tag:yaml.org,2002:str", "tag:yaml.org,2002:timestamp")
    assert (not document._OTHER_TYPE_RE.match(text)) == yaml_says_str
