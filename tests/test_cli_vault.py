"""The vault commands (memrepo/cli/commands/vault.py) as a person or a script meets them:
bounded options, tables that fit the terminal, a removed memory that says where to look."""
from __future__ import annotations

import json
import os
import sys

from conftest import cli, git, on_a_terminal

from memrepo import api
from memrepo.cli import output
from memrepo.cli.app import main


def test_an_option_value_out_of_its_range_is_a_usage_error(vault):
    """--weight and --confidence are 0..1: a value outside is a usage error (2), before any check runs."""
    for option in ("--weight", "--confidence"):
        for value in ("2", "-0.5"):
            proc = cli(vault.root, "add", "--summary", "heavy", "--body", "b", option, value)
            assert proc.returncode == 2, (option, value, proc.stderr)
            assert f"Invalid value for '{option}'" in proc.stderr and "0<=x<=1" in proc.stderr
            proc = cli(vault.root, "add", "--summary", "heavy", "--body", "b", option, value, "--json")
            assert proc.returncode == 2 and json.loads(proc.stdout)["error"]["code"] == "usage"
    proc = cli(vault.root, "propose", "--agent", "a", "--kind", "knowledge", "--summary", "s", "--confidence", "7")
    assert proc.returncode == 2
    assert vault.list() == []
    assert cli(vault.root, "add", "--summary", "fine", "--body", "b", "--weight", "1").returncode == 0


def _listed(vault, columns: int) -> list[str]:
    env = {**os.environ, "COLUMNS": str(columns), "PYTHONPATH": os.getcwd(), "MEMREPO_DAEMON": "0"}
    env.pop("NO_COLOR", None)
    shown = on_a_terminal([sys.executable, "-m", "memrepo", "--vault", str(vault.root), "list"], env=env)
    return shown.replace("\033[1m", "").replace("\033[0m", "").replace("\r", "").splitlines()


def test_list_fits_a_narrow_terminal_header_included(vault):
    api.add(vault, {"subject": "project-alpha", "fact": "db.pool.max_connections", "summary": "Pool " * 20}, "b")
    lines = _listed(vault, 60)
    assert lines[0].startswith("ID ") and lines[0].endswith("…"), lines
    assert all(output.display_width(line) <= 60 for line in lines), [output.display_width(line) for line in lines]
    wide = _listed(vault, 200)
    assert wide[0].endswith("SUMMARY") and all(output.display_width(line) <= 200 for line in wide)


def test_show_of_a_reverted_memory_names_memrepo_history(vault):
    added = api.add(vault, {"id": "mem_plain", "subject": "proj", "summary": "No fact here"}, "b")
    git(vault.root, "revert", "--no-edit", added.commit)
    commit = git(vault.root, "rev-parse", "HEAD").strip()
    proc = cli(vault.root, "show", "mem_plain")
    assert proc.returncode == 3 and "memrepo history mem_plain" in proc.stderr and f"git show {commit[:12]}" in proc.stderr
    history = cli(vault.root, "history", "mem_plain", "--json")
    assert history.returncode == 0, history.stderr
    versions = json.loads(history.stdout)
    assert [v["change"] for v in versions] == ["A", "D"] and versions[0]["summary"] == "No fact here"
    assert cli(vault.root, "history", "mem_never").returncode == 3


def test_import_lists_bad_lines_in_line_order(vault, tmp_path, capsys):
    src = tmp_path / "in.jsonl"
    lines = ['{"summary": "ok"}'] * 12
    lines[1] = '{"summary": "s", "kind": "gossip"}'   # a schema problem
    lines[9] = "not json"                              # a parse problem, found earlier
    lines[10] = '{"summary": "s", "layer": "L9"}'
    src.write_text("\n".join(lines) + "\n", encoding="utf-8")
    code = main(["--vault", str(vault.root), "import", str(src)])
    err = capsys.readouterr().err
    numbers = [int(line.split(":line ")[1].split(":")[0]) for line in err.splitlines() if ":line " in line]
    assert code == 5 and numbers == sorted(numbers) and {2, 10, 11} <= set(numbers), err
