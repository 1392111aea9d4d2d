"""The fast path of the command line (memrepo/cli/fast.py) answers exactly as the typer app does.

Every command line below runs twice on the same vault state: once through the console entry
point's fast path, once through the typer app; stdout, stderr and the exit code must be equal
(commit ids, generated ids and timestamps aside). Lines the fast path must leave to typer are
checked to reach typer.
"""
from __future__ import annotations

import io
import json
import re
import shutil
import subprocess
import sys

import pytest
from conftest import MEMREPO, person_env

from memrepo.cli import app, fast, spec
from memrepo.cli.commands import state

V = "VAULT"  # replaced by the vault's path


def test_the_option_table_is_generated_from_the_typer_declarations():
    assert spec.COMMANDS == app.fast_spec(), "memrepo/cli/spec.py is stale: run `make cli-spec`"
    assert app.SPEC_FILE.read_text(encoding="utf-8") == app.spec_text(), "run `make cli-spec`"
    globals_valued = tuple(p["opts"][0] for p in spec.COMMANDS[""] if p["kind"] == "option" and not p["flag"])
    assert globals_valued == app.GLOBAL_OPTIONS


# (argv, stdin, does the fast path take it?)
CASES = [
    (["--vault", V, "add", "--subject", "s1", "--summary", "hello tea", "--body", "b"], "", True),
    (["add", "--summary", "x", "--body", "y", "--json", "--vault", V], "", True),
    (["--json", "add", "--vault=" + V, "--summary", "from stdin"], "the body on stdin\n", True),
    (["--vault", V, "add", "--summary", "tagged", "--tag", "a", "--tag", "b", "--link", "mem_x", "--weight", "0.5",
      "--confidence", "0.9", "--expires", "2027-01-01", "--kind", "event", "--layer", "L1", "--source", "tool"], "", True),
    (["--vault", V, "add", "--subject", "user", "--fact", "ui.theme", "--kind", "preference", "--summary", "dark"], "", True),
    (["--vault", V, "add", "--id", "mem_20260101_aaaaaa", "--summary", "again", "--body", "b"], "", True),
    (["--vault", V, "add", "--id", "mem_20260101_aaaaaa", "--summary", "again", "--body", "b", "--json"], "", True),
    (["--vault", V, "add", "--summary", "bad body"], b"\xff\xfe", True),
    (["--vault", V, "add", "--summary", "ghp_" + "A" * 36, "--body", "leak"], "", True),
    (["--vault", V + "/nowhere", "add", "--summary", "x", "--body", "y"], "", True),
    (["--vault", V, "add", "--summary", "x", "--body", "y", "--agent", "Not An Agent!"], "", True),
    (["--vault", V, "add", "--kind", "decisoin", "--summary", "x"], "", False),
    (["--vault", V, "add", "--expires", "tomorrow", "--summary", "x"], "", False),
    (["--vault", V, "add", "--weight", "heavy", "--summary", "x"], "", False),
    (["--vault", V, "add", "--weight", "heavy", "--summary", "x", "--json"], "", False),
    (["--vault", V, "add", "--bogus"], "", False),
    (["--vault", V, "add", "--summary"], "", False),
    (["--vault", V, "add", "--push=yes", "--summary", "x"], "", False),
    (["--vault", V, "add", "stray", "--summary", "x"], "", False),
    (["--vault", V, "add", "--file", "nowhere.md"], "", False),
    (["--vault", V, "add", "--help"], "", False),
    (["--vault", V, "--version", "add"], "", False),
    (["--vault", V, "add", "--", "--summary"], "", False),
    (["--vault", V, "search", "tea"], "", True),
    (["search", "tea", "--json", "--vault", V], "", True),
    (["--vault", V, "search", "-k", "1", "--layer", "L1", "--kind", "event", "--since", "2026-01-01", "tea"], "", True),
    (["--vault", V, "search", "--deep", "--history", "--subject", "s1", "--tag", "a", "tea", "--json"], "", True),
    (["--vault", V, "search", "zzzqqq unrelated"], "", True),
    (["--vault", V, "search", "tea", "--session", "s-1", "--log"], "", True),
    (["--vault", V, "search", "tea", "--advanced"], "", True),
    (["--vault", V, "search"], "", False),
    (["--vault", V, "search", "--json"], "", False),
    (["--vault", V, "search", "--limit", "0", "tea"], "", False),
    (["--vault", V, "search", "-k5", "tea"], "", False),
    (["--vault", V, "search", "--since", "last week", "tea"], "", False),
    (["--vault", V, "search", "--layer", "l9", "tea"], "", False),
    (["--vault", V, "search", "tea", "coffee"], "", False),
    (["--vault", V, "recall", "what about tea?"], "", True),
    (["--vault", V, "recall", "--budget", "60", "--json", "tea"], "", True),
    (["--vault", V, "recall", "--subject", "s1"], "tea please\n", True),
    (["--vault", V, "recall", "--hook"], json.dumps({"prompt": "tea?", "session_id": "s-9"}), True),
    (["--vault", V, "recall", "--hook"], "not json", True),
    (["--vault", V, "recall", "--budget", "0", "tea"], "", False),
    (["--vault", V, "context"], "", True),
    (["--vault", V, "context", "--budget", "80", "--subject", "user", "--json"], "", True),
    (["--vault", V, "context", "--hook"], "{}", True),
    (["--vault", V, "context", "--hook"], "[1,", True),
    (["--vault", V, "hook", "pre-commit"], "", True),
    (["--vault", V, "hook", "pre-merge-commit", "--json"], "", True),
    (["--vault", V, "hook", "pre-commit", "x"], "", False),
    (["--vault", V, "list"], "", False),
    ([], "", False),
]

_VOLATILE = [(re.compile(r"\b[0-9a-f]{12,40}\b"), "<commit>"), (re.compile(r"mem_\d{8}_[0-9a-z]{6}"), "<id>"),
             (re.compile(r"prop_[0-9a-z_]+"), "<proposal>"),
             (re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d+)?(Z|[+-]\d{2}:\d{2})"), "<time>")]


def _normal(text: str) -> str:
    for pattern, repl in _VOLATILE:
        text = pattern.sub(repl, text)
    return text


@pytest.fixture(scope="module")
def template(tmp_path_factory):
    """A vault with a few memories, made once, closed; every run gets a fresh copy of it."""
    from memrepo import api
    home = tmp_path_factory.mktemp("home")
    (home / ".gitconfig").write_text("[user]\n\tname = Test Person\n\temail = test@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    with pytest.MonkeyPatch.context() as mp:  # as conftest's isolated_env, for the whole module
        mp.setenv("HOME", str(home))
        mp.setenv("GIT_CONFIG_NOSYSTEM", "1")
        mp.setenv("GIT_CONFIG_GLOBAL", str(home / ".gitconfig"))
        mp.setenv("MEMREPO_SEMANTIC", "0")
        for key in ("MEMREPO_VAULT", "MEMREPO_AUTHOR", "MEMREPO_AGENT", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
            mp.delenv(key, raising=False)
        vault = api.init(tmp_path_factory.mktemp("template") / "vault")
        api.add(vault, {"subject": "s1", "kind": "event", "summary": "Drinks tea at noon", "tags": ["a"]}, "tea body")
        api.add(vault, {"subject": "user", "fact": "ui.lang", "kind": "preference", "summary": "Answers in tea-English"}, "")
        api.search(vault, "tea")  # the index is built: no "building the search index" notice
        vault.close()
    return vault.root


def _run(entry, argv, stdin, capsys, monkeypatch):
    monkeypatch.delenv("MEMREPO_AGENT", raising=False)
    data = stdin.encode() if isinstance(stdin, str) else stdin
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(data), encoding="utf-8"))
    state.json, state.vault_path, state.agent = False, None, None
    code = entry(argv)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("argv, stdin, fast_path", CASES, ids=[" ".join(c[0])[:60] or "(none)" for c in CASES])
def test_fast_path_and_typer_answer_alike(template, tmp_path, capsys, monkeypatch, argv, stdin, fast_path):
    root = tmp_path / "run"
    argv = [a.replace(V, str(root)) for a in argv]
    monkeypatch.chdir(tmp_path)
    writes = bool({"add", "--log", "--session", "--hook"} & set(argv))  # each run needs the same vault state
    results = []
    for entry in (fast.run, app.main):
        if writes or not root.exists():
            shutil.rmtree(root, ignore_errors=True)
            shutil.copytree(template, root, symlinks=True)
        if "hook" in argv:
            monkeypatch.chdir(root)
        code, out, err = _run(entry, argv, stdin, capsys, monkeypatch)
        if entry is fast.run and not fast_path:  # left to typer, untouched: the entry point runs typer
            assert (code, out, err) == (None, "", ""), f"the fast path took {argv}"
            return
        assert code is not None, f"the fast path left {argv} to typer"
        written = sorted(_normal(f"{f.relative_to(root)}\n{f.read_text(encoding='utf-8')}")
                         for f in (root / "memories").rglob("*.md"))  # what the options said, as written
        results.append((code, _normal(out), _normal(err), written))
    assert results[0] == results[1]


def test_the_console_script_runs_the_fast_path_without_typer(template):
    root = str(template)
    probe = ("import sys; from memrepo.cli.fast import main; code = main(sys.argv[1:]); "
             "assert 'typer' not in sys.modules, 'typer imported'; raise SystemExit(code)")
    for argv in (["--vault", root, "add", "--summary", "quick", "--body", "b"], ["--vault", root, "search", "tea"],
                 ["--vault", root, "recall", "tea"], ["--vault", root, "context", "--json"]):
        proc = subprocess.run([sys.executable, "-c", probe, *argv], capture_output=True, text=True, env=person_env())
        assert proc.returncode == 0, proc.stderr
    for env in ({}, {"MEMREPO_CLI_FAST": "0"}):
        proc = subprocess.run([*MEMREPO, "--vault", root, "search", "tea", "--json"], capture_output=True, text=True,
                              env=person_env(**env))
        assert proc.returncode == 0 and json.loads(proc.stdout)["hits"], proc.stderr
