"""OpenClaw workspaces in and out, and export to JSONL."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo import api

MEMORY_MD = """# Memory

## Gateway
- Always check the gateway config before a network change <!-- trigger: gateway setup, network safety --> <!-- importance: 9 -->
- The gateway runs on port 8443 <!-- project: github.com/org/gw -->

## Style
- User prefers answers in Chinese with English code comments
"""
USER_MD = """# User

## Directives
- Call me Lin <!-- observed: 2026-07-27 | status: active -->
- Use tabs for indentation <!-- observed: 2026-05-01 | status: superseded -->
"""
DAY1 = """# 2026-11-20

## 09:30 Payments incident
Payments API timed out; decided not to restart the service.

- Raised the connection pool to 50
"""
DAY2 = """- 复盘会议：下一步验收标准是 p95 小于 200 毫秒
"""


def workspace(root: Path) -> Path:
    (root / "memory").mkdir(parents=True)
    (root / "MEMORY.md").write_text(MEMORY_MD, encoding="utf-8")
    (root / "USER.md").write_text(USER_MD, encoding="utf-8")
    (root / "AGENTS.md").write_text("# Instructions (not memory)\n- be nice\n", encoding="utf-8")
    (root / "memory" / "2026-11-20.md").write_text(DAY1, encoding="utf-8")
    (root / "memory" / "2026-11-21-retro.md").write_text(DAY2, encoding="utf-8")
    return root


def memrepo(vault, *args, stdin: str | None = None):
    env = {**os.environ, "MEMREPO_VAULT": str(vault.root)}
    return subprocess.run([sys.executable, "-m", "memrepo", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=60)


def by_summary(vault) -> dict[str, dict]:
    return {r["summary"]: r for r in vault.list()}


def test_import_maps_files_layers_dates_and_inline_metadata(vault, tmp_path):
    r = api.import_openclaw(vault, workspace(tmp_path / "ws"))
    assert len(r.imported) == 8 and r.commit
    rows = by_summary(vault)
    gw = vault.get(rows["Always check the gateway config before a network change"]["id"])
    assert gw.meta["layer"] == "L3" and gw.meta["kind"] == "principle" and gw.meta["weight"] == 0.9
    assert gw.meta["tags"] == ["gateway setup", "network safety"] and "<!--" not in gw.body
    port = vault.get(rows["The gateway runs on port 8443"]["id"])
    assert port.meta["layer"] == "L2" and port.meta["x-openclaw-project"] == "github.com/org/gw"
    assert rows["User prefers answers in Chinese with English code comments"]["kind"] == "preference"
    lin = vault.get(rows["Call me Lin"]["id"])
    assert lin.meta["subject"] == "user" and lin.meta["created"].startswith("2026-07-27")
    assert rows["Use tabs for indentation"]["status"] == "superseded"
    day = vault.get(rows["Payments API timed out; decided not to restart the service."]["id"])
    assert day.meta["layer"] == "L1" and day.path.startswith("memories/L1/2026-11-20/")
    retro = vault.get(rows["复盘会议：下一步验收标准是 p95 小于 200 毫秒"]["id"])
    assert retro.meta["created"].startswith("2026-11-21") and retro.meta["session"] == "retro"
    assert all(r["kind"] != "constraint" for r in rows.values())
    assert api.validate_tree(vault) == []


def test_reimport_adds_nothing_and_an_edit_supersedes(vault, tmp_path):
    ws = workspace(tmp_path / "ws")
    api.import_openclaw(vault, ws)
    head = vault.head()
    again = api.import_openclaw(vault, ws)
    assert again.imported == () and again.commit is None and vault.head() == head
    (ws / "MEMORY.md").write_text(MEMORY_MD.replace("port 8443", "port 9443"), encoding="utf-8")
    edited = api.import_openclaw(vault, ws)
    assert len(edited.imported) == 1 and len(edited.superseded) == 1
    rows = by_summary(vault)
    assert rows["The gateway runs on port 8443"]["status"] == "superseded"
    assert rows["The gateway runs on port 9443"]["status"] == "active"


def test_export_writes_a_workspace_within_budgets_and_round_trips(vault, tmp_path):
    api.import_openclaw(vault, workspace(tmp_path / "ws"))
    api.add(vault, {"subject": "ops", "kind": "decision", "summary": "Keep nightly distill at 03:17"})
    out = tmp_path / "out"
    r = api.export_openclaw(vault, out)
    memory_md = (out / "MEMORY.md").read_text(encoding="utf-8")
    assert "## Gateway" in memory_md and "<!-- importance: 9 -->" in memory_md
    assert "<!-- trigger: gateway setup, network safety -->" in memory_md
    user_md = (out / "USER.md").read_text(encoding="utf-8")
    assert "Call me Lin" in user_md and "observed: 2026-07-27" in user_md and "tabs" not in user_md
    assert "Payments API timed out" in (out / "memory" / "2026-11-20.md").read_text(encoding="utf-8")
    assert r.left_out == 0 and all(len((out / f).read_text(encoding="utf-8")) <= 20000 for f in r.files)
    # export -> import into the same vault adds nothing
    again = api.import_openclaw(vault, out)
    assert again.imported == () and again.commit is None
    # and into a new vault gives the same active memories
    other = api.init(tmp_path / "v2")
    api.import_openclaw(other, out)
    summaries = lambda v: {r["summary"] for r in v.list(status="active")}  # noqa: E731
    assert summaries(other) == summaries(vault)


def test_export_keeps_within_the_budget_and_points_at_the_rest(vault, tmp_path):
    rows = [json.dumps({"layer": "L2", "kind": "pattern", "summary": f"Pattern number {i} " + "x" * 80}) for i in range(400)]
    (tmp_path / "many.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    api.import_jsonl(vault, tmp_path / "many.jsonl")
    r = api.export_openclaw(vault, tmp_path / "out")
    text = (tmp_path / "out" / "MEMORY.md").read_text(encoding="utf-8")
    assert len(text) <= 20000 and r.left_out > 0 and f"{r.left_out} more memories in memrepo" in text


def test_cli_import_from_openclaw_and_export(vault, tmp_path):
    ws = workspace(tmp_path / "ws")
    p = memrepo(vault, "import", "--from", "openclaw", str(ws), "--json")
    assert p.returncode == 0, p.stderr
    assert json.loads(p.stdout)["imported"] == 8
    p = memrepo(vault, "export", "--to", "openclaw", str(tmp_path / "out"))
    assert p.returncode == 0 and (tmp_path / "out" / "MEMORY.md").is_file()
    p = memrepo(vault, "export", "--to", "jsonl")
    lines = [json.loads(line) for line in p.stdout.splitlines()]
    assert p.returncode == 0 and len(lines) == 8 and all("body" in line for line in lines)
    p = memrepo(vault, "export", "--to", "jsonl", str(tmp_path / "all.jsonl"))
    other = api.init(tmp_path / "v3")
    api.import_jsonl(other, tmp_path / "all.jsonl")
    assert {r["id"] for r in other.list()} == {r["id"] for r in vault.list()}
    bad = memrepo(vault, "import", "--from", "openclaw", str(tmp_path / "nope"))
    assert bad.returncode != 0 and "not a directory" in bad.stderr and "Traceback" not in bad.stderr
    bad = memrepo(vault, "export", "--to", "yaml")
    assert bad.returncode != 0 and "openclaw" in bad.stderr


@pytest.mark.parametrize("name", ["memory.md"])
def test_legacy_memory_md_name(vault, tmp_path, name):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / name).write_text("## Notes\n- Prefer short answers\n", encoding="utf-8")
    assert len(api.import_openclaw(vault, ws).imported) == 1


def test_memories_imported_from_other_assistants_come_in_too(vault, tmp_path):
    """memory/imports/{codex,claude-code,hermes}/ holds what OpenClaw imported from other
    assistants: those entries are memories like MEMORY.md's, marked with their assistant."""
    ws = workspace(tmp_path / "ws")
    (ws / "memory" / "imports" / "codex").mkdir(parents=True)
    (ws / "memory" / "imports" / "codex" / "memories.md").write_text(
        "## Repo\n- The CI runs on GitHub Actions\n", encoding="utf-8")
    (ws / "memory" / "imports" / "claude-code").mkdir()
    (ws / "memory" / "imports" / "claude-code" / "notes.md").write_text(
        "- Always run the linter before committing <!-- importance: 8 -->\n", encoding="utf-8")
    (ws / "memory" / "imports" / "hermes").mkdir()
    (ws / "memory" / "imports" / "hermes" / "state.json").write_text("{}", encoding="utf-8")  # not markdown: left alone
    r = api.import_openclaw(vault, ws)
    assert len(r.imported) == 10
    rows = by_summary(vault)
    ci = vault.get(rows["The CI runs on GitHub Actions"]["id"])
    assert ci.meta["x-openclaw-import"] == "codex" and ci.meta["x-openclaw-file"] == "memory/imports/codex/memories.md"
    assert ci.meta["layer"] == "L2" and ci.meta["x-openclaw-section"] == "Repo"
    lint = vault.get(rows["Always run the linter before committing"]["id"])
    assert lint.meta["layer"] == "L3" and lint.meta["weight"] == 0.8 and lint.meta["x-openclaw-import"] == "claude-code"
    assert api.validate_tree(vault) == []
    assert api.import_openclaw(vault, ws).imported == ()
    notes = ws / "memory" / "imports" / "codex" / "memories.md"
    notes.write_text(notes.read_text(encoding="utf-8").replace("GitHub Actions", "Buildkite"), encoding="utf-8")
    edited = api.import_openclaw(vault, ws)
    assert len(edited.imported) == 1 and edited.superseded == (ci.id,)
