"""The Python API: every documented name resolves to its owner, lazily, and works end to end."""
from __future__ import annotations

import subprocess
import sys

import pytest

import memrepo
from memrepo import api


@pytest.mark.parametrize("name", sorted(api._OWNERS))
def test_every_api_name_resolves_to_a_callable_in_its_owner(name):
    value = getattr(api, name)
    assert callable(value)
    assert value.__module__ == api._OWNERS[name]


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError):
        api.no_such_operation  # noqa: B018
    with pytest.raises(AttributeError):
        memrepo.no_such_operation  # noqa: B018


def test_importing_the_api_loads_no_service():
    code = ("import sys, memrepo.api; "
            "print(sorted(m for m in sys.modules if m.startswith('memrepo.') and m != 'memrepo.api'))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_package_re_exports_the_api(tmp_path):
    vault = memrepo.init(tmp_path / "v")
    r = memrepo.add(vault, {"subject": "user", "kind": "preference", "summary": "Likes green tea"}, "body")
    assert r.status == "active" and r.commit
    assert vault.get(r.id).meta["summary"] == "Likes green tea"
    hits, _ = api.search(vault, "green tea", limit=3)
    assert [h.id for h in hits.hits][:1] == [r.id]
