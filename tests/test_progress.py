"""Progress bars: every long operation draws one on a terminal (stderr), and none
when stderr is not a terminal. The terminal path runs the CLI as a process on a pty."""
from __future__ import annotations

import json
import os
import re
import subprocess

import pytest
from conftest import MEMREPO, on_a_terminal, person_env

from memrepo.review import writes as memories

BAR = re.compile(r"\[[#.]{30}\] (\d+)/(\d+)")


@pytest.fixture
def busy_vault(vault, tmp_path):
    """A vault with L1 entries over several days (distill and decay have work to read)."""
    lines = [json.dumps({"summary": f"deploy check number {i}", "body": f"checked the deploy {i}",
                         "created": f"2026-11-{1 + i % 9:02d}T10:00:00+00:00"}) for i in range(40)]
    memories.import_jsonl(vault, _write(tmp_path / "seed.jsonl", lines))
    return vault.root


def _write(path, lines):
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return path


def _stderr_on_a_terminal(args: list[str]) -> str:
    return on_a_terminal([*MEMREPO, *args], stream="stderr", env=person_env(PYTHONPATH=os.getcwd()))


def _commands(root, tmp_path):
    more = _write(tmp_path / "more.jsonl", [json.dumps({"summary": f"more {i}", "body": "b"}) for i in range(5)])
    return {
        "validate": ["validate"],
        "distill": ["distill", "--dry-run", "--now", "2026-11-10"],
        "decay": ["decay", "--dry-run", "--now", "2026-11-10"],
        "reindex": ["reindex"],
        "import": ["import", str(more)],
    }


@pytest.mark.parametrize("label", ["validate", "distill", "decay", "reindex", "import"])
def test_a_long_operation_draws_a_bar_on_a_terminal_only(busy_vault, tmp_path, label):
    args = ["--vault", str(busy_vault), *_commands(busy_vault, tmp_path)[label]]
    shown = _stderr_on_a_terminal(args)
    bars = [(int(d), int(t)) for d, t in BAR.findall(shown)]
    assert f"{label} [" in shown and bars, f"no progress bar from memrepo {label}: {shown!r}"
    assert bars[-1][0] == bars[-1][1] > 0, "the bar ends full"
    piped = subprocess.run([*MEMREPO, *args], capture_output=True, text=True, env=person_env())
    assert piped.returncode in (0, 1) and not BAR.search(piped.stderr) and "\r" not in piped.stderr
