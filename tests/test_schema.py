"""The schema file is the single definition of front matter: it must itself be valid."""
import json

import jsonschema

from memrepo.resources import schema_path
from memrepo.store import schema


def test_schema_file_is_valid_json_schema_2020_12():
    data = json.loads(schema_path().read_text(encoding="utf-8"))
    assert data["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    jsonschema.Draft202012Validator.check_schema(data)


def test_canonical_field_order_follows_the_schema():
    order = schema.field_order()
    assert order[:4] == ("id", "layer", "kind", "subject")
    assert set(order) == set(schema.schema()["properties"])


def test_date_time_format_is_really_checked():
    base = {"id": "m1", "layer": "L1", "kind": "event", "subject": "s", "summary": "x",
            "status": "active", "source": "user"}
    assert schema.check_front_matter({**base, "created": "2026-11-29T09:30:00+00:00"}, "p") == []
    for bad in ("2026-11-29", "2026-11-29T09:30:00", "yesterday"):
        problems = schema.check_front_matter({**base, "created": bad}, "p")
        assert [p.field for p in problems] == ["created"], bad


# ------------------------------------------------------------------ fast acceptance

from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

VALID = {"id": "mem_20261129_ab12cd", "layer": "L2", "kind": "preference", "subject": "user",
         "fact": "ui.theme", "summary": "深色模式", "status": "active", "risk": "low", "source": "user",
         "author": "agent-7", "scope": "private:agent-7", "tags": ["#界面", "ui"], "links": ["mem_a"],
         "weight": 0.5, "confidence": 1, "created": "2026-11-29T09:30:00+00:00", "x-extra": {"any": [1]}}
FIELDS = sorted(schema.schema()["properties"]) + ["x-custom", "unknown", "x-"]
VALUES = st.one_of(
    st.none(), st.booleans(), st.integers(-3, 3), st.floats(allow_nan=False, min_value=-2, max_value=2),
    st.sampled_from(["", "L1", "L9", "active", "archived", "user", "import", "a..b", "a/b", "ok-id_1.x",
                     "2026-11-29T09:30:00+00:00", "2026-11-29", "line\nbreak", " ", "private:x", "shared",
                     "deadbeef", "#tag", "数据库"]),
    st.lists(st.sampled_from(["a", "a", "b", "mem_x", "", "x/y", "line\nbreak"]), max_size=3),
    st.dictionaries(st.sampled_from(["k", "id"]), st.integers(), max_size=2))


@settings(max_examples=400, deadline=None)
@given(st.dictionaries(st.sampled_from(FIELDS), VALUES, max_size=4), st.lists(st.sampled_from(FIELDS), max_size=3))
def test_fast_acceptance_never_accepts_what_jsonschema_rejects(changes, dropped):
    meta = {**VALID, **changes}
    for key in dropped:
        meta.pop(key, None)
    if schema.accepts(meta):
        assert list(schema._validator().iter_errors(meta)) == []


def test_fast_acceptance_accepts_valid_documents():
    assert schema.accepts(VALID)
    assert list(schema._validator().iter_errors(VALID)) == []
    minimal = {k: VALID[k] for k in ("id", "layer", "kind", "subject", "summary", "status", "source", "created")}
    assert schema.accepts(minimal)
