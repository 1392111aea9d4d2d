"""The demo's Claude session (scripts/claude_session.py, step 11 of `make demo`) runs end to end:
the SDK's memory-tool dispatch and the installed Claude Code hooks leave their commits, one
proposal, and a vault that validates."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from conftest import git, person_env

from memrepo import api

pytest.importorskip("anthropic", reason="the Anthropic SDK is the 'claude' extra: run 'make install-test'")

SCRIPT = Path(__file__).resolve().parent.parent / "scripts" / "claude_session.py"


def test_the_demo_session_leaves_commits_a_proposal_and_a_valid_vault(vault, tmp_path):
    p = subprocess.run([sys.executable, str(SCRIPT), str(vault.root), str(tmp_path / "claude")], capture_output=True,
                       text=True, env=person_env(), timeout=600)
    assert p.returncode == 0, p.stderr
    assert "would escape /memories directory" in p.stdout and "looks like a credential" in p.stdout
    assert "pending review in proposal" in p.stdout and "支付接口超时" in p.stdout
    log = git(vault.root, "log", "--format=%s", "main")
    assert log.count("memrepo: memory-create") == 2 and "memrepo: memory-rename" in log
    assert log.count("memrepo: flush cycle compact-") == 2  # the same compaction twice is filed once
    assert len(api.list_proposals(vault)) == 1
    assert "Do not restart the payment service" in p.stdout.rsplit("UserPromptSubmit", 1)[1]
    assert api.validate_tree(api.Vault(vault.root)) == []
