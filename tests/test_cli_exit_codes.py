"""Every error maps to one documented exit code: each class of memrepo.errors has
the code its family documents, and each code is produced by a real failure through the CLI,
as text (one line on stderr) and as JSON (on stdout, same exit code)."""
from __future__ import annotations

import inspect
import json
from pathlib import Path

import pytest
from conftest import git

from memrepo import api, errors
from memrepo.cli.app import EXIT_CODES_HELP, main
from memrepo.review import writes as memories

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")
CLASSES = [c for _, c in inspect.getmembers(errors, inspect.isclass) if issubclass(c, errors.MemrepoError)]


@pytest.mark.parametrize("cls", CLASSES, ids=[c.__name__ for c in CLASSES])
def test_each_error_class_has_one_documented_code(cls):
    assert errors.EXIT_CODES[cls.code] == cls.exit_code
    assert f"| {cls.exit_code} | `{cls.code}` |" in README, f"the README's table lacks exit {cls.exit_code}"
    assert f"{cls.exit_code} " in EXIT_CODES_HELP


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def _git_failed(vault, tmp_path):
    git(vault.root, "remote", "add", "gone", str(tmp_path / "no-such-remote"))
    return ["sync", "--remote", "gone"]


def _validate_found(vault, tmp_path):
    path = vault.root / "memories" / "L1" / "broken.md"
    path.write_text("---\nid: broken\n---\nno front matter to speak of\n", encoding="utf-8")
    return ["validate"]


def _not_found(vault, tmp_path):
    return ["show", "mem_nobody_has"]


def _no_vault(vault, tmp_path):
    (tmp_path / "empty").mkdir()
    return ["--vault", str(tmp_path / "empty"), "list"]


def _already_applied(vault, tmp_path):
    proposal = memories.add(vault, {"kind": "constraint", "summary": "never deploy on Friday"}, "x").proposal
    api.apply(vault, proposal)
    return ["apply", proposal]


def _vault_exists(vault, tmp_path):
    return ["init", str(vault.root)]


def _bad_import_line(vault, tmp_path):
    f = tmp_path / "in.jsonl"
    f.write_text('{"summary": "fine", "body": "x"}\n{"kind": "gossip", "summary": "bad"}\n', encoding="utf-8")
    return ["import", str(f)]


def _bad_config(vault, tmp_path):
    with open(vault.root / ".memrepo" / "config.toml", "a", encoding="utf-8") as f:
        f.write('\n[distill]\nsimilarity = "high"\n')
    return ["list"]


def _ref_locked(vault, tmp_path):
    (vault.root / ".git" / "refs" / "heads" / "main.lock").write_text("")
    return ["add", "--summary", "blocked", "--body", "x"]


CASES = [  # (how to fail, exit code, JSON code, the error's family)
    (_git_failed, 1, "failed", errors.GitError),
    (_validate_found, 1, None, None),
    (_not_found, 3, "not_found", errors.NotFound),
    (_no_vault, 3, "not_found", errors.VaultNotFound),
    (_already_applied, 4, "conflict", errors.Conflict),
    (_vault_exists, 4, "conflict", errors.VaultExists),
    (_bad_import_line, 5, "invalid", errors.InvalidData),
    (_bad_config, 5, "invalid", errors.ConfigError),
    (_ref_locked, 75, "busy", errors.GitLocked),
]


@pytest.mark.parametrize("make, exit_code, code, family", CASES, ids=[c[0].__name__.strip("_") for c in CASES])
def test_each_failure_exits_with_its_code_in_text_and_json(vault, tmp_path, capsys, make, exit_code, code, family):
    args = make(vault, tmp_path)
    prefix = [] if args[0] == "--vault" else ["--vault", str(vault.root)]
    status, out, err = run(capsys, *prefix, *args)
    assert status == exit_code, err
    assert out == "" and err.strip(), (out, err)
    if code is None:  # a check that ran and found problems: its report, not an error object
        return
    if code not in ("invalid",):
        assert err.count("\n") == 1 and err.startswith("error: "), f"not one line: {err!r}"
    status, out, err = run(capsys, *prefix, *args, "--json")
    error = json.loads(out)["error"]
    assert status == exit_code and error["code"] == code and err == ""
    assert family.exit_code == exit_code and family.code == code


def test_usage_error_and_a_typo_in_a_command_exit_two(vault, capsys):
    assert run(capsys, "--vault", str(vault.root), "list", "--layer", "L9")[0] == 2
    assert run(capsys, "--vault", str(vault.root), "lsit")[0] == 2
    status, out, _ = run(capsys, "--vault", str(vault.root), "list", "--no-such-option", "--json")
    assert status == 2 and json.loads(out)["error"]["code"] == "usage"
