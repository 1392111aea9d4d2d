"""Property tests: hand-edited front matter and import lines, generated at random,
always end in a clear ``path:field: message`` error or a valid vault, never a traceback."""
from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

import yaml
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from memrepo import api
from memrepo.errors import MemrepoError, Problem
from memrepo.review import validate
from memrepo.review import writes as memories
from memrepo.store.checks import check_bytes

KEYS = ["id", "layer", "kind", "subject", "fact", "summary", "status", "source", "created", "updated", "tags",
        "links", "evidence", "affects", "supersedes", "superseded_by", "weight", "confidence", "risk", "scope",
        "expires", "x-note", "unknown"]
SCALARS = st.one_of(
    st.none(), st.booleans(), st.integers(-10, 10**12), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=30), st.sampled_from(["mem_a", "L2", "active", "superseded", "knowledge", "constraint", "user",
                                           "2026-11-01T00:00:00+00:00", "2026-13-45", "proj", "x.y", "\ud800", "a\x00b"]))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(st.lists(inner, max_size=3),
                                                        st.dictionaries(st.text(max_size=5), inner, max_size=2)),
                      max_leaves=6)
META = st.dictionaries(st.sampled_from(KEYS), VALUES, max_size=12)
SNIPPETS = st.sampled_from(["tags: 5", "tags:", "evidence: 1.5", "kind: [a]", "x: !!binary aGk=", "x: !!set {a: null}",
                            "created: !!timestamp 2026-01-01", "summary: &a x", "summary: *a", "weight: .nan",
                            "subject: {a: 1}", "id: mem_a\nid: mem_b", ": bad", "- list", "x: '\\ud800'",
                            'x: "\\ud800"', "x: !!python/name:os.system", "  indented: 1", "x: [unclosed"])


def check_never_raises(path: str, data: bytes) -> list[Problem]:
    memory, problems = check_bytes(path, data)
    for p in problems:
        assert isinstance(p, Problem) and p.path == path and "\n" not in str(p), str(p)
    return problems


@settings(max_examples=120, deadline=None)
@given(meta=META, body=st.text(max_size=40))
def test_random_front_matter_gives_problems_or_a_valid_memory(meta, body):
    try:
        head = yaml.safe_dump(meta, allow_unicode=True)
    except (yaml.YAMLError, UnicodeEncodeError):
        return
    data = ("---\n" + head + "---\n" + body).encode("utf-8", "surrogatepass")
    check_never_raises("memories/L2/mem_a.md", data)


@settings(max_examples=120, deadline=None)
@given(lines=st.lists(SNIPPETS, min_size=1, max_size=4), body=st.binary(max_size=20))
def test_hand_typed_yaml_snippets_give_problems(lines, body):
    base = ["id: mem_a", "layer: L2", "kind: knowledge", "subject: proj", "summary: s", "status: active",
            "source: user", "created: 2026-11-01T00:00:00+00:00"]
    data = ("---\n" + "\n".join(base + lines) + "\n---\n").encode() + body
    check_never_raises("memories/L2/mem_a.md", data)


class _Vault:
    def __init__(self):
        self.tmp = Path(tempfile.mkdtemp(prefix="memrepo-prop-in-"))
        self.vault = api.init(self.tmp / "v")


@settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(records=st.lists(st.one_of(META, st.dictionaries(st.sampled_from(["body", "summary", "layer"]), VALUES)),
                        min_size=1, max_size=3))
@example(records=[{"id": {"\n": "\ud800"}}])  # a field name with a line break, in a one-line problem
def test_random_import_lines_end_in_an_error_or_a_valid_vault(records):
    v = _Vault()
    try:
        src = v.tmp / "in.jsonl"
        lines = []
        for record in records:
            try:
                lines.append(json.dumps(record, ensure_ascii=True, allow_nan=True))
            except (TypeError, ValueError):
                return
        src.write_text("\n".join(lines) + "\n", encoding="utf-8")
        head = v.vault.head()
        try:
            memories.import_jsonl(v.vault, src)
        except MemrepoError as e:
            assert v.vault.head() == head, str(e)
            for p in getattr(e, "problems", []):
                assert "\n" not in str(p)
        assert validate.validate_tree(v.vault) == []
    finally:
        v.vault.close()
        shutil.rmtree(v.tmp, ignore_errors=True)
