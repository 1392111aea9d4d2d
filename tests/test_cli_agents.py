"""The agent commands (memrepo/cli/commands/agents.py) as agent runtimes run them: in hook mode
(--hook) every failure is one line on stderr and exit 1, usage errors included, because Claude
Code reads exit 2 from a prompt hook as "block the prompt"."""
from __future__ import annotations

import json

import pytest
from conftest import cli

from memrepo import api

PAYLOAD = json.dumps({"prompt": "what is the pool size?", "session_id": "s-1", "hook_event_name": "UserPromptSubmit"})


@pytest.mark.parametrize("args", [
    ["recall", "--hook", "--budjet", "2000"],
    ["recall", "--hook", "--budget", "2k"],
    ["recall", "--hook", "--budget", "-1"],
    ["recall", "--hook", "--intent", "facts"],
    ["recall", "--budget", "0", "--hook"],
    ["context", "--hook", "--budget", "0"],
    ["context", "--hook", "stray"],
    ["recall", "--hook", "--json", "--budget", "x"],
], ids=" ".join)
def test_a_usage_error_in_hook_mode_is_one_line_and_exit_1(vault, args):
    proc = cli(vault.root, *args, stdin=PAYLOAD)
    assert proc.returncode == 1, (proc.returncode, proc.stderr)
    assert proc.stdout == "" and proc.stderr.count("\n") == 1 and proc.stderr.startswith("memrepo: "), proc.stderr


def test_other_failures_in_hook_mode_are_one_line_and_exit_1(vault, tmp_path):
    bad_json = cli(vault.root, "recall", "--hook", stdin="{not json")
    no_vault = cli(tmp_path / "nowhere", "context", "--hook", stdin="{}")
    for proc in (bad_json, no_vault):
        assert (proc.returncode, proc.stdout, proc.stderr.count("\n")) == (1, "", 1), proc.stderr
    assert "not JSON" in bad_json.stderr and "nowhere" in no_vault.stderr


def test_hook_mode_still_answers_and_the_same_errors_outside_it_exit_2(vault):
    api.add(vault, {"subject": "db", "summary": "The pool size is 20"}, "b")
    ok = cli(vault.root, "recall", "--hook", stdin=PAYLOAD)
    assert ok.returncode == 0 and "pool size is 20" in ok.stdout and ok.stderr == ""
    assert cli(vault.root, "recall", "tea", "--budjet", "2000").returncode == 2
    assert cli(vault.root, "context", "--budget", "0").returncode == 2
