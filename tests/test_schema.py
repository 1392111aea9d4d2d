"""The schema file is the single definition of front matter: it must itself be valid."""
import json

import jsonschema

from memrepo import schema
from memrepo.resources import schema_path


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
