"""The vault template: example memories pass the schema, and the README for hand editing exists."""
from __future__ import annotations

import os
import subprocess

import pytest
from conftest import git

from memrepo.model import canonical_path
from memrepo.resources import resource
from memrepo.review import validate
from memrepo.store import document, schema
from memrepo.store.checks import check_bytes

TEMPLATE = resource("template-vault")
EXAMPLES = sorted((TEMPLATE / "examples").glob("*.md"))


def test_there_are_varied_examples():
    assert len(EXAMPLES) >= 3
    metas = [document.load_bytes(p.read_bytes(), p.name).meta for p in EXAMPLES]
    assert len({m["layer"] for m in metas}) >= 3 and len({m["kind"] for m in metas}) >= 3
    text = "".join(p.read_text(encoding="utf-8") for p in EXAMPLES)
    assert any("\u4e00" <= ch <= "\u9fff" for ch in text)  # Chinese
    assert "The agent" in text or "the agent" in text       # English


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_passes_the_schema_and_every_file_check(path):
    memory, problems = check_bytes(f"examples/{path.name}", path.read_bytes())
    assert problems == [], [str(p) for p in problems]
    assert schema.check_front_matter(dict(memory.meta), path.name) == []
    assert path.stem == memory.id


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_is_in_canonical_form(path):
    """memrepo would write it byte for byte the same, so loading and saving makes no diff."""
    parsed = document.load_bytes(path.read_bytes(), path.name)
    assert document.render(parsed.meta, parsed.body, schema.field_order()).encode() == path.read_bytes()


def test_examples_copied_into_a_vault_commit_through_the_hook(vault):
    rels = []
    for path in EXAMPLES:
        meta = document.load_bytes(path.read_bytes(), path.name).meta
        rel = canonical_path(meta)
        (vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
        (vault.root / rel).write_bytes(path.read_bytes())
        rels.append(rel)
    assert validate.validate_paths(vault, [vault.root / r for r in rels]) == []
    git(vault.root, "add", *rels)
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_") or k.startswith("GIT_CONFIG")}
    proc = subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-m", "examples"], capture_output=True,
                          text=True, env=env)
    assert proc.returncode == 0, proc.stderr
    assert validate.validate_tree(vault) == []


def test_new_vault_carries_readme_and_examples(vault):
    assert (vault.root / "README.md").read_text(encoding="utf-8") == (TEMPLATE / "README.md").read_text(encoding="utf-8")
    assert sorted(p.name for p in (vault.root / "examples").glob("*.md")) == [p.name for p in EXAMPLES]
    assert "README.md" in git(vault.root, "ls-files").split()


def test_readme_explains_hand_editing():
    text = (TEMPLATE / "README.md").read_text(encoding="utf-8")
    for needle in ("memories/L1/YYYY-MM-DD/<id>.md", "archive/", "pending_review", "superseded", "rolled_back",
                   "git commit", "--no-verify", "git revert", "-m 1", "memrepo validate", "path:field: message",
                   "supersedes", "x-"):
        assert needle in text, needle
    fields = set(schema.field_order())
    documented = {f for f in fields if f"`{f}`" in text}
    assert documented == fields, sorted(fields - documented)
