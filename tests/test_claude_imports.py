"""``import --from claude-code [DIR]`` and ``import --from mcp-memory FILE``, as real processes:
one memory per section, rule file, topic file or entity; dates kept where given; re-runnable
without duplicates; an edited item updated in place."""
from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

from conftest import MEMREPO, cli, git, person_env

from memrepo import api
from memrepo.agents.claude_imports import project_memory_dir

CLAUDE_MD = """# Project alpha

## Build
Run `make test` before every commit.

## Style
- Four spaces, no tabs.
- 中文注释可以，但标识符用英文。
"""
TOPIC = """---
name: user_role
description: Senior backend engineer, prefers Go and short answers
type: user
modified: 2026-08-01T10:00:00Z
---
The user is a senior backend engineer. Prefers Go; wants short answers.
"""
FEEDBACK = """---
name: feedback_testing
description: Run the integration tests against a real database
type: feedback
---
Never mock the database in integration tests; a mocked test hid a broken migration once.
"""
GRAPH = [
    {"type": "entity", "name": "Lin_Wei", "entityType": "person", "observations": ["Speaks fluent Mandarin", "Leads the payments team"]},
    {"type": "entity", "name": "Payments", "entityType": "team", "observations": ["Owns the payments API"]},
    {"type": "relation", "from": "Lin_Wei", "to": "Payments", "relationType": "leads"},
]


def project(tmp_path: Path) -> Path:
    root = tmp_path / "alpha"
    (root / ".claude" / "rules").mkdir(parents=True)
    (root / "CLAUDE.md").write_text(CLAUDE_MD, encoding="utf-8")
    (root / "CLAUDE.local.md").write_text("## Me\nCall me Lin.\n", encoding="utf-8")
    (root / ".claude" / "rules" / "api-design.md").write_text(
        "---\npaths: [\"src/api/**\"]\n---\n# API design\nEvery endpoint returns JSON errors.\n", encoding="utf-8")
    memory = project_memory_dir(root)
    memory.mkdir(parents=True)
    (memory / "user_role.md").write_text(TOPIC, encoding="utf-8")
    (memory / "feedback_testing.md").write_text(FEEDBACK, encoding="utf-8")
    (memory / "MEMORY.md").write_text("- [User role](user_role.md) — senior backend engineer\n"
                                      "- [Testing](feedback_testing.md) — real database\n"
                                      "- The staging dashboard is at https://grafana.example.invalid/d/pay\n", encoding="utf-8")
    return root


def rows(vault, origin: str) -> list[dict]:
    return [vault.get(r["id"]).meta | {"body": vault.get(r["id"]).body} for r in vault.list()
            if r["id"].startswith(origin)]


def test_import_from_claude_code_maps_sections_rules_and_auto_memory(vault, tmp_path):
    root = project(tmp_path)
    p = cli(vault.root, "import", "--from", "claude-code", str(root), "--json", "--no-index")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["imported"] == 7
    by_summary = {m["summary"]: m for m in rows(vault, "cc_")}
    build = by_summary["Build"]
    assert build["layer"] == "L3" and build["kind"] == "policy" and build["subject"] == "alpha"
    assert build["body"] == "Run `make test` before every commit.\n" and build["x-claude-code-file"] == "CLAUDE.md"
    assert "中文注释可以，但标识符用英文。" in by_summary["Style"]["body"]
    assert by_summary["Me"]["subject"] == "user" and by_summary["Me"]["kind"] == "preference"
    rule = by_summary["API design"]
    assert rule["x-claude-code-paths"] == "src/api/**" and "JSON errors" in rule["body"]
    role = by_summary["Senior backend engineer, prefers Go and short answers"]
    assert role["subject"] == "user" and role["x-claude-code-type"] == "user"
    assert role["created"].startswith("2026-08-01T10:00:00") and "---" not in role["body"]
    assert by_summary["Run the integration tests against a real database"]["kind"] == "preference"
    assert "The staging dashboard is at https://grafana.example.invalid/d/pay" in by_summary  # an index line of its own
    assert not any("User role" in s for s in by_summary)  # index lines pointing at topic files are not memories
    assert api.validate_tree(vault) == []
    # again: nothing; an edited section: updated in place, its old text in history
    head = vault.head()
    again = cli(vault.root, "import", "--from", "claude-code", str(root), "--json", "--no-index")
    assert json.loads(again.stdout)["imported"] == 0 and json.loads(again.stdout)["unchanged"] == 7
    assert vault.head() == head
    (root / "CLAUDE.md").write_text(CLAUDE_MD.replace("make test", "make check"), encoding="utf-8")
    edited = json.loads(cli(vault.root, "import", "--from", "claude-code", str(root), "--json", "--no-index").stdout)
    assert edited["imported"] == 0 and edited["updated"] == [build["id"]]
    assert vault.get(build["id"]).body == "Run `make check` before every commit.\n"
    assert "make test" in git(vault.root, "log", "-p", "main", "--", vault.get(build["id"]).path)


def test_import_from_an_auto_memory_folder_itself_and_from_the_current_folder(vault, tmp_path):
    root = project(tmp_path)
    p = cli(vault.root, "import", "--from", "claude-code", str(project_memory_dir(root)), "--no-index")
    assert p.returncode == 0, p.stderr
    assert len(rows(vault, "cc_")) == 3
    subjects = {m["subject"] for m in rows(vault, "cc_")}
    assert subjects == {"user", "alpha"}
    here = subprocess.run([*MEMREPO, "--vault", str(vault.root), "import", "--from", "claude-code", "--no-index", "--json"],
                          cwd=root, capture_output=True, text=True, env=person_env())
    assert here.returncode == 0, here.stderr
    assert json.loads(here.stdout)["imported"] == 4 and json.loads(here.stdout)["unchanged"] == 3


def test_import_from_claude_code_refuses_links_and_says_when_there_is_nothing(vault, tmp_path):
    root = tmp_path / "p"
    root.mkdir()
    (tmp_path / "secret.md").write_text("## Keys\nroot password is hunter2hunter2\n", encoding="utf-8")
    (root / "CLAUDE.md").symlink_to(tmp_path / "secret.md")
    p = cli(vault.root, "import", "--from", "claude-code", str(root))
    assert p.returncode == 5 and "CLAUDE.md" in p.stderr and "symlink" in p.stderr
    (root / "CLAUDE.md").unlink()
    p = cli(vault.root, "import", "--from", "claude-code", str(root))
    assert p.returncode == 3 and "nothing to import" in p.stderr


def test_import_from_mcp_memory_entities_observations_relations(vault, tmp_path):
    graph = tmp_path / "memory.jsonl"
    graph.write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in GRAPH), encoding="utf-8")
    p = cli(vault.root, "import", "--from", "mcp-memory", str(graph), "--json", "--no-index")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["imported"] == 2
    lin, team = (next(m for m in rows(vault, "mcpm_") if m["subject"] == name) for name in ("Lin_Wei", "Payments"))
    assert lin["summary"] == "Lin_Wei (person)" and lin["kind"] == "knowledge"
    assert lin["body"] == "- Speaks fluent Mandarin\n- Leads the payments team\n- leads → Payments\n"
    assert lin["links"] == [team["id"]] and "- leads ← Lin_Wei" in team["body"]
    assert cli(vault.root, "import", "--from", "mcp-memory", str(graph), "--json").stdout.count('"imported": 0') == 1
    GRAPH[0]["observations"].append("Prefers written decisions")
    graph.write_text("".join(json.dumps(g, ensure_ascii=False) + "\n" for g in GRAPH), encoding="utf-8")
    again = json.loads(cli(vault.root, "import", "--from", "mcp-memory", str(graph), "--json", "--no-index").stdout)
    assert again["updated"] == [lin["id"]] and again["imported"] == 0
    assert "Prefers written decisions" in vault.get(lin["id"]).body
    assert api.validate_tree(vault) == []


def test_a_broken_knowledge_graph_line_is_named(vault, tmp_path):
    graph = tmp_path / "memory.jsonl"
    graph.write_text(json.dumps(GRAPH[1]) + "\n{broken\n" + json.dumps({"type": "thing"}) + "\n", encoding="utf-8")
    head = vault.head()
    p = cli(vault.root, "import", "--from", "mcp-memory", str(graph))
    assert p.returncode == 5 and re.search(r"memory\.jsonl:line 2", p.stderr) and "line 3" in p.stderr
    assert vault.head() == head
    p = cli(vault.root, "import", "--from", "mcp-memory")
    assert p.returncode == 2 and "memory.jsonl" in p.stderr
    assert os.environ.get("HOME")
