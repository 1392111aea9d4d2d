"""The command line as a script sees it: exit codes, JSON errors, global options anywhere.

Every exit code of the map in memrepo.errors is produced here by a real failure."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo.cli.app import main
from memrepo.review import proposals
from memrepo.review import writes as memories
from memrepo.store.vault import Vault

AWS_KEY = "AKIA" + "Q3EXAMPLE7ZZ4KPB"


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def json_error(out: str) -> dict:
    data = json.loads(out)
    assert set(data) == {"error"} and set(data["error"]) == {"code", "message", "problems"}, data
    return data["error"]


def test_zero_on_success_and_json_anywhere(vault, capsys):
    root = str(vault.root)
    for args in (["--vault", root, "--json", "add", "--summary", "a", "--body", "x"],
                 ["add", "--summary", "b", "--body", "x", "--json", "--vault", root],
                 ["--json", "add", "--vault", root, "--summary", "c", "--body", "x"]):
        code, out, err = run(capsys, *args)
        assert code == 0, err
        assert json.loads(out)["status"] == "active"
    code, out, _ = run(capsys, "list", "--vault", root, "--json")
    assert code == 0 and len(json.loads(out)) == 3
    code, out, _ = run(capsys, "--vault=" + root, "list")
    assert code == 0 and out.count("\n") >= 3


def test_one_when_a_check_finds_problems(vault, capsys):
    bad = vault.root / "memories" / "L1" / "mem_bad.md"
    bad.write_text("---\nid: mem_bad\n---\nbody\n", encoding="utf-8")
    code, out, _ = run(capsys, "--vault", str(vault.root), "validate", "--json")
    assert code == 1 and json.loads(out)["ok"] is False


@pytest.mark.parametrize("args", [["list", "--bogus"], ["show"], ["nosuchcommand"], ["add", "--weight", "heavy"]])
def test_two_for_usage_errors_text_and_json(vault, capsys, args):
    code, out, err = run(capsys, "--vault", str(vault.root), *args)
    assert code == 2 and out == "" and "Usage" in err
    code, out, err = run(capsys, "--vault", str(vault.root), *args, "--json")
    assert code == 2 and err == ""
    assert json_error(out)["code"] == "usage"


def test_three_for_not_found(vault, tmp_path, capsys):
    code, out, err = run(capsys, "--vault", str(vault.root), "show", "mem_nope")
    assert code == 3 and out == "" and err.startswith("error: no memory 'mem_nope'") and err.count("\n") == 1
    code, out, err = run(capsys, "show", "mem_nope", "--json", "--vault", str(vault.root))
    assert code == 3 and err == "" and json_error(out)["code"] == "not_found"
    assert run(capsys, "--vault", str(vault.root), "review", "prop_nope")[0] == 3
    assert run(capsys, "--vault", str(tmp_path / "nowhere"), "list")[0] == 3


def test_four_for_a_conflict(vault, capsys):
    added = memories.add(vault, {"subject": "proj", "fact": "rule", "kind": "constraint", "summary": "s"}, "b")
    proposals.apply(vault, added.proposal)
    code, out, err = run(capsys, "--vault", str(vault.root), "apply", added.proposal, "--json")
    assert code == 4 and json_error(out)["code"] == "conflict" and "already applied" in json_error(out)["message"]
    code, _, err = run(capsys, "init", str(vault.root))
    assert code == 4 and "already holds a memrepo vault" in err


def test_five_for_invalid_data_with_problems(vault, tmp_path, capsys):
    code, out, err = run(capsys, "--vault", str(vault.root), "add", "--summary", "s", "--body", f"key {AWS_KEY}", "--json")
    error = json_error(out)
    assert code == 5 and err == "" and error["code"] == "invalid"
    assert error["problems"] and {"path", "field", "line", "message"} == set(error["problems"][0])
    assert error["message"] == "nothing was written"
    src = tmp_path / "in.jsonl"
    src.write_text('{"summary": "fine"}\nnot json\n{"summary": "ok", "kind": "gossip"}\n', encoding="utf-8")
    code, out, _ = run(capsys, "--vault", str(vault.root), "import", str(src), "--json")
    error = json_error(out)
    assert code == 5 and [(Path(p["path"]).name, p["line"]) for p in error["problems"]] == [("in.jsonl", 2), ("in.jsonl", 3)]


HOLDER = """
import sys
from memrepo.store.vault import Vault
v = Vault(sys.argv[1])
with v.lock():
    print("held", flush=True)
    sys.stdin.readline()
"""


def test_seventy_five_when_busy_after_lock_timeout(vault, tmp_path):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1]), "MEMREPO_LOCK_TIMEOUT": "0.2"}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(vault.root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        proc = subprocess.run([sys.executable, "-m", "memrepo", "--json", "add", "--vault", str(vault.root),
                               "--summary", "blocked"], capture_output=True, text=True, env=env)
    finally:
        holder.communicate("\n")
    assert proc.returncode == 75 and proc.stderr == ""
    assert json_error(proc.stdout)["code"] == "busy"


def test_version_and_hidden_hook_group(capsys):
    from memrepo import __version__
    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"memrepo {__version__}"
    code, out, _ = run(capsys, "--help")
    assert code == 0 and "hooks" in out and " hook " not in out and "Exit codes:" in out
    assert run(capsys, "hook", "--help")[0] == 0  # hidden, still there for the shims


def test_the_vault_option_still_reads_the_environment(vault, capsys, monkeypatch):
    monkeypatch.setenv("MEMREPO_VAULT", str(vault.root))
    code, out, _ = run(capsys, "list", "--json")
    assert code == 0 and json.loads(out) == []
    assert Vault.find(explicit=str(vault.root)).root == vault.root
