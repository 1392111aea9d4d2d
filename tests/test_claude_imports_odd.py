"""``import --from claude-code`` with the CLAUDE.md files people write: the same heading under
two parents (``### Notes`` under Frontend and under Backend), two headings that read alike
once slugged. Every section is one memory; nothing is dropped unsaid or refused whole."""
from __future__ import annotations

import json

from conftest import cli

from memrepo.agents.claude_imports import _stable_id

CLAUDE_MD = """# Project

## Frontend
### Notes
Use pnpm, never npm.

## Backend
### Notes
Use uv for Python.

## Build & Test
make test

## Build Test
make build
"""


def test_repeated_and_look_alike_headings_each_keep_their_section(vault, tmp_path):
    root = tmp_path / "proj"
    root.mkdir()
    (root / "CLAUDE.md").write_text(CLAUDE_MD, encoding="utf-8")
    p = cli(vault.root, "import", "--from", "claude-code", str(root), "--json", "--no-index")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["imported"] == 4
    bodies = sorted(vault.get(r["id"]).body for r in vault.list() if r["id"].startswith("cc_"))
    assert bodies == ["Use pnpm, never npm.\n", "Use uv for Python.\n", "make build\n", "make test\n"]
    facts = [vault.get(r["id"]).meta["fact"] for r in vault.list() if r["id"].startswith("cc_")]
    assert len(set(facts)) == 4
    # a heading that occurs once keeps the id it always had, so earlier imports are not doubled
    assert vault.get(_stable_id("cc", "CLAUDE.md", "Build & Test")).body == "make test\n"
    again = json.loads(cli(vault.root, "import", "--from", "claude-code", str(root), "--json", "--no-index").stdout)
    assert again["imported"] == 0 and again["unchanged"] == 4
