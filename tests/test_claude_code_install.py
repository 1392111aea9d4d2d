"""``memrepo install claude-code`` / ``uninstall claude-code`` as real processes: merged into
existing settings without losing a key, idempotent, absolute paths, exactly undone; the hooks
it writes run as Claude Code runs them (a shell, the payload on stdin); the plugin folder in
the repository says the same."""
from __future__ import annotations

import json
import os
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
from conftest import MEMREPO, person_env

from memrepo import api
from memrepo.agents import claude_code

REPO = Path(__file__).resolve().parent.parent
SETTINGS = {"permissions": {"allow": ["Bash(npm test)"], "deny": ["Read(.env)"]}, "model": "claude-sonnet-5",
            "env": {"FOO": "1"},
            "hooks": {"UserPromptSubmit": [{"hooks": [{"type": "command", "command": "echo keep-me"}]}],
                      "PreToolUse": [{"matcher": "Bash", "hooks": [{"type": "command", "command": "./check.sh"}]}]}}
MCP = {"mcpServers": {"github": {"type": "http", "url": "https://api.githubcopilot.com/mcp/"}}}


def run(cwd: Path, *args: str, stdin: str | None = None, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run([*MEMREPO, *args], cwd=cwd, input=stdin, capture_output=True, text=True,
                          env=person_env(**env), timeout=120)


@pytest.fixture
def project(tmp_path, vault):
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")
    (root / ".mcp.json").write_text(json.dumps(MCP), encoding="utf-8")
    return root


def handlers(settings: dict, event: str) -> list[dict]:
    return [h for g in settings["hooks"].get(event, []) for h in g["hooks"]]


def test_install_merges_is_idempotent_and_uninstall_undoes_it_exactly(project, vault):
    p = run(project, "--vault", str(vault.root), "install", "claude-code", "--json")
    assert p.returncode == 0, p.stderr
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    for key in ("permissions", "model", "env"):
        assert settings[key] == SETTINGS[key]
    assert handlers(settings, "PreToolUse") == handlers(SETTINGS, "PreToolUse")
    assert handlers(settings, "UserPromptSubmit")[0]["command"] == "echo keep-me"
    ours = {e: [shlex.split(h["command"]) for h in handlers(settings, e) if claude_code.is_ours(h)]
            for e in claude_code.HOOKS}
    assert {e: [argv[3:] for argv in cmds] for e, cmds in ours.items()} == claude_code.HOOKS
    assert "PreCompact" not in settings["hooks"]
    for cmds in ours.values():
        for argv in cmds:
            assert Path(argv[0]).is_absolute() and os.access(argv[0], os.X_OK)
            assert argv[1:3] == ["--vault", str(vault.root)]
    servers = json.loads((project / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]
    assert servers["github"] == MCP["mcpServers"]["github"]
    assert Path(servers["memrepo"]["command"]).is_absolute() and "mcp" in servers["memrepo"]["args"]
    # again: nothing changes, byte for byte
    before = {f: f.read_bytes() for f in (project / ".claude" / "settings.json", project / ".mcp.json")}
    again = run(project, "--vault", str(vault.root), "install", "claude-code", "--json")
    assert again.returncode == 0 and json.loads(again.stdout)["changed"] == []
    assert {f: f.read_bytes() for f in before} == before
    # uninstall: back to what the person had
    gone = run(project, "uninstall", "claude-code")
    assert gone.returncode == 0, gone.stderr
    assert json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8")) == SETTINGS
    assert json.loads((project / ".mcp.json").read_text(encoding="utf-8")) == MCP


def test_the_installed_hooks_run_as_claude_code_runs_them(project, vault):
    api.add(vault, {"subject": "ops", "kind": "decision", "summary": "Never restart the payment service in an incident"})
    assert run(project, "--vault", str(vault.root), "install", "claude-code").returncode == 0
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    command = {tuple(shlex.split(h["command"])[3:]): h["command"]
               for e in claude_code.HOOKS for h in handlers(settings, e) if claude_code.is_ours(h)}
    env = {k: v for k, v in person_env().items() if k != "MEMREPO_VAULT"}
    env["PATH"] = "/usr/bin:/bin"  # absolute paths: memrepo need not be on PATH

    def hook(tail, payload):
        return subprocess.run(["sh", "-c", command[tail]], cwd=project, input=json.dumps(payload),
                              capture_output=True, text=True, env=env, timeout=120)
    common = {"session_id": "s-1", "transcript_path": str(project / "t.jsonl"), "cwd": str(project)}
    out = hook(("recall", "--hook"), {**common, "hook_event_name": "UserPromptSubmit", "prompt": "may I restart payments?"})
    assert out.returncode == 0 and "Never restart the payment service" in out.stdout
    out = hook(("context", "--hook"), {**common, "hook_event_name": "SessionStart", "source": "startup"})
    assert out.returncode == 0
    out = hook(("flush", "--prompt", "--hook"), {**common, "hook_event_name": "SessionStart", "source": "compact"})
    assert out.returncode == 0 and "memrepo checkpoint" in out.stdout
    summary = "# memrepo checkpoint\n## What\nThe pool was raised to 50.\n## Next\nWatch p95.\n"
    out = hook(("flush", "--hook"), {**common, "hook_event_name": "PostCompact", "trigger": "auto", "compact_summary": summary})
    assert out.returncode == 0 and out.stdout == "", out.stderr
    assert any(r["summary"] == "The pool was raised to 50." for r in api.Vault(vault.root).list())


def test_user_scope_keeps_claude_codes_own_file_and_its_mode(tmp_path, vault):
    home = Path(os.environ["HOME"])
    state = {"numStartups": 12, "oauthAccount": {"emailAddress": "a@example.invalid"}, "projects": {"/x": {"allowedTools": []}},
             "mcpServers": {"other": {"type": "stdio", "command": "other-server", "args": []}}}
    (home / ".claude.json").write_text(json.dumps(state), encoding="utf-8")
    (home / ".claude.json").chmod(0o600)
    p = run(tmp_path, "--vault", str(vault.root), "install", "claude-code", "--user")
    assert p.returncode == 0, p.stderr
    written = json.loads((home / ".claude.json").read_text(encoding="utf-8"))
    assert {k: v for k, v in written.items() if k != "mcpServers"} == {k: v for k, v in state.items() if k != "mcpServers"}
    assert set(written["mcpServers"]) == {"other", "memrepo"}
    assert stat.S_IMODE((home / ".claude.json").stat().st_mode) == 0o600
    assert handlers(json.loads((home / ".claude" / "settings.json").read_text(encoding="utf-8")), "PostCompact")
    assert run(tmp_path, "uninstall", "claude-code", "--user").returncode == 0
    assert json.loads((home / ".claude.json").read_text(encoding="utf-8")) == state
    assert not (home / ".claude" / "settings.json").exists()  # memrepo made it, memrepo removed it


def test_install_refuses_what_it_cannot_merge_and_changes_nothing(project, vault):
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"memrepo": {"command": "some-other-tool"}}}), encoding="utf-8")
    before = (project / ".claude" / "settings.json").read_bytes()
    p = run(project, "--vault", str(vault.root), "install", "claude-code")
    assert p.returncode == 4 and "memrepo" in p.stderr and "Traceback" not in p.stderr
    assert (project / ".claude" / "settings.json").read_bytes() == before
    (project / ".claude" / "settings.json").write_text("{ not json", encoding="utf-8")
    p = run(project, "--vault", str(vault.root), "install", "claude-code")
    assert p.returncode == 2 and "settings.json" in p.stderr and "Traceback" not in p.stderr
    assert (project / ".claude" / "settings.json").read_text(encoding="utf-8") == "{ not json"


def test_the_plugin_folder_says_what_install_writes():
    plugin = REPO / "claude-code-plugin"
    manifest = json.loads((plugin / ".claude-plugin" / "plugin.json").read_text(encoding="utf-8"))
    assert manifest["name"] == "memrepo" and set(manifest["userConfig"]) == {"memrepo", "vault"}
    hooks = json.loads((plugin / "hooks" / "hooks.json").read_text(encoding="utf-8"))["hooks"]
    found = {e: [h["args"][2:] for g in groups for h in g["hooks"]] for e, groups in hooks.items()}
    assert found == claude_code.HOOKS
    for groups in hooks.values():
        for h in (h for g in groups for h in g["hooks"]):
            assert h["command"] == "${user_config.memrepo}" and h["args"][:2] == ["--vault", "${user_config.vault}"]
    server = json.loads((plugin / ".mcp.json").read_text(encoding="utf-8"))["mcpServers"]["memrepo"]
    assert server["command"] == "${user_config.memrepo}" and server["args"][-3:] == ["mcp", "--agent", "claude-code"]


def test_the_library_never_needs_the_cli(tmp_path, vault):
    change = api.install_claude_code(program=[sys.executable, "-m", "memrepo"], vault=vault.root, project=tmp_path)
    assert Path(change.settings).is_file() and Path(change.mcp).is_file()
    assert api.uninstall_claude_code(project=tmp_path).server is True
    assert not Path(change.settings).exists() and not Path(change.mcp).exists()
