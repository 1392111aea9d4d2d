"""``install claude-code`` / ``uninstall claude-code`` against settings files a careless user
has: a symlinked ``.mcp.json`` (dotfiles), a read-only settings file, ``hooks`` that is not an
object of events. Each is refused with one line naming the file, and nothing is half-written."""
from __future__ import annotations

import json
import os

import pytest
from test_claude_code_install import MCP, SETTINGS, run


@pytest.fixture
def project(tmp_path, vault):
    root = tmp_path / "project"
    (root / ".claude").mkdir(parents=True)
    (root / ".claude" / "settings.json").write_text(json.dumps(SETTINGS, indent=2), encoding="utf-8")
    return root


def snapshot(root):
    return {p.relative_to(root).as_posix(): (os.readlink(p) if p.is_symlink() else p.read_bytes())
            for p in sorted(root.rglob("*")) if p.is_file() or p.is_symlink()}


def test_a_symlinked_mcp_file_stops_install_before_anything_is_written(project, vault, tmp_path):
    (tmp_path / "dotfiles-mcp.json").write_text(json.dumps(MCP), encoding="utf-8")
    (project / ".mcp.json").symlink_to(tmp_path / "dotfiles-mcp.json")
    before = snapshot(project)
    p = run(project, "--vault", str(vault.root), "install", "claude-code")
    assert p.returncode == 4 and ".mcp.json" in p.stderr and "symlink" in p.stderr and "Traceback" not in p.stderr
    assert len(p.stderr.strip().splitlines()) == 1
    assert snapshot(project) == before        # the hooks were written before the link was found


def test_a_read_only_settings_file_is_left_as_it_is(project, vault):
    (project / ".claude" / "settings.json").chmod(0o444)
    before = snapshot(project)
    p = run(project, "--vault", str(vault.root), "install", "claude-code")
    assert p.returncode == 4 and "read-only" in p.stderr and "settings.json" in p.stderr, p.stderr
    assert snapshot(project) == before and not (project / ".mcp.json").exists()


@pytest.mark.parametrize("hooks", ["x", [["SessionStart", 1]], {"SessionStart": {"matcher": "x"}}, {"Stop": 3}])
def test_hooks_that_are_not_an_object_of_lists_are_refused_not_replaced(project, vault, hooks):
    """A hand-edited ``hooks`` of the wrong shape is the person's to fix: install said nothing
    and replaced it (or died with a ValueError), and uninstall then deleted the file."""
    (project / ".claude" / "settings.json").write_text(json.dumps({"model": "opus", "hooks": hooks}), encoding="utf-8")
    before = snapshot(project)
    p = run(project, "--vault", str(vault.root), "install", "claude-code")
    assert p.returncode == 2 and "settings.json" in p.stderr and "hooks" in p.stderr and "Traceback" not in p.stderr, p.stderr
    assert snapshot(project) == before
