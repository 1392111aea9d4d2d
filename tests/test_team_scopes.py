"""Private and shared memory: a private memory stays in its agent's private vault,
invisible to other agents and refused to them by the write path and the hooks."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.conftest import git

MEMREPO = [sys.executable, "-m", "memrepo"]


def cli(root: Path, *args: str, agent: str | None = None, ok: bool = True) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if k != "MEMREPO_AGENT"}
    if agent:
        env["MEMREPO_AGENT"] = agent
    proc = subprocess.run([*MEMREPO, *args], cwd=root, capture_output=True, text=True, env=env)
    if ok:
        assert proc.returncode == 0, proc.stderr
    return proc


def test_private_memory_is_seen_only_by_its_agent(vault):
    root = vault.root
    out = cli(root, "--agent", "analyst", "add", "--scope", "private", "--summary", "我怀疑用户喜欢深色模式", "--json")
    mine = json.loads(out.stdout)["id"]
    shared = json.loads(cli(root, "add", "--summary", "team lunch is at noon", "--json").stdout)["id"]
    # the option works after the sub-command too, and from the environment
    assert mine in cli(root, "list", "--agent", "analyst").stdout
    assert mine in cli(root, "list", "--json", agent="analyst").stdout
    assert shared in cli(root, "list", "--agent=analyst").stdout
    for who in ("executor", None):
        args = ("--agent", who) if who else ()
        assert mine not in cli(root, *args, "list").stdout
        assert "nothing relevant" in cli(root, *args, "search", "深色模式").stdout
        assert cli(root, *args, "show", mine, ok=False).returncode != 0
    hits = json.loads(cli(root, "search", "深色模式", "--json", "--agent", "analyst").stdout)["hits"]
    assert [h["id"] for h in hits] == [mine]
    assert "private:analyst" in cli(root, "show", mine, "--agent", "analyst").stdout
    # the shared vault's git never holds it: not committed, not even untracked
    assert mine not in git(root, "log", "--all", "--format=%B") + git(root, "status", "--porcelain", "--untracked-files=all")
    assert "ok" in cli(root, "validate").stdout


def test_another_agents_private_scope_is_refused(vault):
    root = vault.root
    refused = cli(root, "--agent", "executor", "add", "--scope", "private:analyst", "--summary", "x", ok=False)
    assert refused.returncode == 5 and "scope" in refused.stderr and "analyst" in refused.stderr
    unnamed = cli(root, "add", "--scope", "private", "--summary", "x", ok=False)
    assert unnamed.returncode == 2 and "--agent" in unnamed.stderr
    assert cli(root, "list").stdout.strip() == "no memories match"


def test_private_scope_in_the_shared_vault_is_refused_by_write_path_and_hook(vault):
    from memrepo import api
    from memrepo.errors import InvalidMemory
    root = vault.root
    try:
        api.add(vault, {"summary": "sneaky", "scope": "private:analyst"})
        raise AssertionError("a private memory was written into the shared vault")
    except InvalidMemory as e:
        assert e.problems[0].field == "scope"
    cli(root, "add", "--summary", "shared one", "--id", "mem_20261201_shared")
    path = next(root.glob("memories/L1/*/mem_20261201_shared.md"))
    path.write_text(path.read_text().replace("scope: shared", "scope: \"private:analyst\""))
    git(root, "add", "-A")
    proc = subprocess.run(["git", "-C", str(root), "commit", "-m", "hand edit"], capture_output=True, text=True)
    assert proc.returncode != 0 and "scope" in proc.stderr


def test_other_agent_cannot_edit_private_vault_through_hooks(vault):
    root = vault.root
    mine = json.loads(cli(root, "--agent", "analyst", "add", "--scope", "private", "--summary", "note to self", "--json").stdout)["id"]
    private = root / ".memrepo/private/analyst"
    path = next(private.glob(f"memories/L1/*/{mine}.md"))
    path.write_text(path.read_text().replace("note to self", "edited by someone else"))
    git(private, "add", "-A")
    env = {**os.environ, "MEMREPO_AGENT": "executor"}
    proc = subprocess.run(["git", "-C", str(private), "commit", "-m", "edit"], capture_output=True, text=True, env=env)
    assert proc.returncode != 0 and "agent executor may not write or edit it" in proc.stderr
    env["MEMREPO_AGENT"] = "analyst"
    proc = subprocess.run(["git", "-C", str(private), "commit", "-m", "edit"], capture_output=True, text=True, env=env)
    assert proc.returncode == 0, proc.stderr


def test_import_and_validate_refuse_private_memories_in_the_shared_vault(vault, tmp_path):
    root = vault.root
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"summary": "sneaky", "scope": "private:analyst"}) + "\n")
    proc = cli(root, "import", str(lines), ok=False)
    assert proc.returncode == 5 and ":scope:" in proc.stderr
    cli(root, "add", "--summary", "shared one", "--id", "mem_20261201_shared2")
    path = next(root.glob("memories/L1/*/mem_20261201_shared2.md"))
    path.write_text(path.read_text().replace("scope: shared", 'scope: "private:analyst"'))
    git(root, "commit", "-qam", "smuggled past the hook", "--no-verify")
    proc = cli(root, "validate", ok=False)
    assert proc.returncode == 1 and "private scope" in proc.stdout + proc.stderr


def test_an_agents_recall_and_context_include_its_private_memories(vault):
    """The agent that wrote a private memory gets it back where agents read: recall each turn,
    context at session start, and the MCP tools; another agent does not."""
    root = vault.root
    cli(root, "--agent", "analyst", "add", "--scope", "private", "--kind", "preference", "--subject", "user",
        "--summary", "The user wants dark mode dashboards", "--body", "dark mode for every dashboard")
    cli(root, "add", "--summary", "The dashboards are built with Grafana", "--body", "grafana dashboards")
    mine = json.loads(cli(root, "recall", "which dashboards mode", "--json", agent="analyst").stdout)
    ids = {m["summary"] for m in mine["memories"]}
    assert "The user wants dark mode dashboards" in ids
    private = next(m for m in mine["memories"] if m["summary"].startswith("The user wants"))
    assert private["path"].startswith(".memrepo/private/analyst/memories/") and (root / private["path"]).is_file()
    theirs = json.loads(cli(root, "recall", "which dashboards mode", "--json", agent="executor").stdout)
    assert "The user wants dark mode dashboards" not in {m["summary"] for m in theirs["memories"]}
    assert "The user wants dark mode dashboards" in cli(root, "context", agent="analyst").stdout
    assert "The user wants dark mode dashboards" not in cli(root, "context", agent="executor").stdout
    assert "The user wants dark mode dashboards" not in cli(root, "context").stdout

