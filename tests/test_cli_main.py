"""One way in (memrepo/cli/main.py): the console entry point offers a per-turn command to the
resident server, else runs the typer app in this process; the tables every command line shares
(global options, per-turn commands) are declared once. The server's side is tests/test_daemon.py."""
from __future__ import annotations

import json
import subprocess
import sys

import typer
from conftest import MEMREPO, person_env

from memrepo import api
from memrepo.cli import app, client, options


def test_the_root_command_declares_the_global_options_of_the_one_table():
    root = typer.main.get_command(app.app)
    declared = {p.opts[0]: p for p in root.params}
    for flag, option in options.GLOBAL_OPTIONS.items():
        assert declared[flag].name == option.name and declared[flag].envvar == option.envvar
        assert declared[flag].is_flag is not option.takes_value
    assert options.VALUED == ("--vault", "--agent")


def test_the_per_turn_commands_are_commands_of_the_app():
    names = set(typer.main.get_command(app.app).commands)
    assert set(options.PER_TURN) <= names


def test_global_options_stand_anywhere():
    assert options.hoist_globals(["search", "tea", "--vault", "V", "--json", "--agent=a"]) == \
        (True, ["--vault", "V", "--agent=a"], ["search", "tea"])
    assert options.hoist_globals(["add", "--", "--json"]) == (False, [], ["add", "--", "--json"])
    assert options.command_of(["--vault", "V", "recall", "x"]) == "recall"


def test_only_per_turn_command_lines_are_offered_to_the_server(monkeypatch):
    monkeypatch.setenv("MEMREPO_DAEMON", "1")
    assert client.eligible(["--vault", "V", "search", "tea"]) == "search"
    assert client.eligible(["add", "--vault=V", "--summary", "x"]) == "add"
    assert client.eligible(["--json", "context"]) == "context"
    for argv in (["list"], ["search", "--help"], ["search", "--", "x"], ["--vault", "search", "list"], []):
        assert client.eligible(argv) is None, argv
    monkeypatch.setenv("MEMREPO_DAEMON", "0")
    assert client.eligible(["search", "tea"]) is None


def test_without_a_server_the_entry_point_runs_the_app_in_process(vault):
    api.add(vault, {"subject": "s1", "summary": "Drinks tea at noon"}, "tea body")
    proc = subprocess.run([*MEMREPO, "--vault", str(vault.root), "search", "tea", "--json"], capture_output=True,
                          text=True, env=person_env(MEMREPO_DAEMON="0"))
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["hits"][0]["summary"] == "Drinks tea at noon"


def test_the_entry_point_loads_only_what_the_command_needs(vault):
    """``memrepo --version`` and a usage error still work from the console script; a command
    line the server could answer loads the client and nothing else before asking it."""
    probe = ("import sys; from memrepo.cli import client, main; "
             "client.call = lambda argv, command='': 0; "
             "code = main.main(sys.argv[1:]); "
             "print(sorted(m for m in sys.modules if m.startswith(('memrepo', 'typer')))); raise SystemExit(code)")
    proc = subprocess.run([sys.executable, "-c", probe, "--vault", str(vault.root), "search", "tea"], capture_output=True,
                          text=True, env=person_env(MEMREPO_DAEMON="1"))
    assert proc.returncode == 0, proc.stderr
    assert eval(proc.stdout) == ["memrepo", "memrepo.cli", "memrepo.cli.client", "memrepo.cli.main", "memrepo.cli.options"]
    version = subprocess.run([*MEMREPO, "--version"], capture_output=True, text=True, env=person_env())
    assert version.returncode == 0 and version.stdout.startswith("memrepo ")
    typo = subprocess.run([*MEMREPO, "serch", "tea"], capture_output=True, text=True, env=person_env())
    assert typo.returncode == 2 and "No such command 'serch'" in typo.stderr
