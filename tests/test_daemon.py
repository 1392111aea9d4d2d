"""The resident server (memrepo/cli/client.py, memrepo/cli/server.py): search, recall and context answered warm, with
the same bytes on stdout and stderr and the same exit code as in-process.

Everything runs as real processes: ``python -m memrepo`` with ``MEMREPO_DAEMON=1`` and a private
runtime folder, against the same call with ``MEMREPO_DAEMON=0``. Which process answered is read
from the server's own count of the calls it answered (``memrepo daemon status --json``). Every
server a test starts is stopped afterwards (``memrepo daemon stop``, then by pid).
"""
from __future__ import annotations

import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from conftest import MEMREPO, on_a_terminal, person_env

from memrepo.cli import client as daemon

PIDS: set[int] = set()


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[-1].split()[0] != b"Z"
    except OSError:
        return False


@pytest.fixture(scope="module")
def rt():
    """A private runtime folder (short: a socket path holds at most 107 bytes)."""
    folder = tempfile.mkdtemp(prefix="mrd-", dir="/tmp")
    yield folder
    subprocess.run([*MEMREPO, "daemon", "stop"], env={**os.environ, "MEMREPO_RUNTIME_DIR": folder},
                   capture_output=True)
    for pid in PIDS:
        if _alive(pid):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(scope="module")
def shared(tmp_path_factory, rt):
    """One vault with three memories for the whole module (the server stays up between tests)."""
    home = tmp_path_factory.mktemp("dhome")
    (home / ".gitconfig").write_text("[user]\n\tname = Test Person\n\temail = test@example.invalid\n"
                                     "[init]\n\tdefaultBranch = main\n", encoding="utf-8")
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("GIT_")},
           "HOME": str(home), "GIT_CONFIG_GLOBAL": str(home / ".gitconfig"), "GIT_CONFIG_NOSYSTEM": "1",
           "MEMREPO_SEMANTIC": "0", "MEMREPO_DAEMON": "0"}
    env.pop("MEMREPO_VAULT", None)
    root = tmp_path_factory.mktemp("dvault") / "vault"
    subprocess.run([*MEMREPO, "init", str(root)], env=env, check=True, capture_output=True)
    for subject, summary, body in [("infra", "The database pool holds 20 connections", "Raised from 10 after the outage."),
                                   ("deploy", "Roll back with the blue-green switch", "Never redeploy over a failed release."),
                                   ("user", "Answers stay short", "The user reads on a phone.")]:
        subprocess.run([*MEMREPO, "--vault", str(root), "add", "--subject", subject, "--kind", "knowledge",
                        "--summary", summary, "--body", body], env=env, check=True, capture_output=True)
    subprocess.run([*MEMREPO, "--vault", str(root), "search", "pool"], env=env, check=True, capture_output=True)
    return root


@pytest.fixture
def on(rt, monkeypatch):
    monkeypatch.setenv("MEMREPO_RUNTIME_DIR", rt)
    return rt


def run(*args: str, served: bool = True, stdin: bytes | None = None, cwd: str | Path | None = None,
        exe: list[str] = MEMREPO, **extra: str) -> tuple[int, bytes, bytes]:
    env = person_env(MEMREPO_DAEMON="1" if served else "0", **extra)
    proc = subprocess.run([*exe, *args], input=stdin, capture_output=True, env=env, cwd=cwd)
    return proc.returncode, proc.stdout, proc.stderr


def servers() -> list[dict]:
    found = daemon.servers()
    PIDS.update(s["pid"] for s in found)
    return found


def server(timeout: float = 30.0, *, other_than: int | None = None) -> dict:
    """The one server running (waiting for it to come up)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = [s for s in servers() if s["pid"] != other_than]
        if found:
            assert len(found) == 1, found
            return found[0]
        time.sleep(0.05)
    raise AssertionError("no background server came up")


def stop_all() -> None:
    daemon.stop(every_install=True)
    assert servers() == []


def started(shared) -> dict:
    """A running server for this code (started by a first, in-process call when none runs)."""
    if not servers():
        assert run("--vault", str(shared), "search", "pool")[0] == 0
    return server()


def test_a_cold_call_starts_the_server_and_the_next_call_is_answered_by_it(shared, on):
    stop_all()
    cold = run("--vault", str(shared), "search", "database pool")
    assert cold[0] == 0 and b"database pool" in cold[1]
    first = server()
    assert first["requests"] == 0
    warm = run("--vault", str(shared), "search", "database pool")
    assert warm == cold
    again = server()
    assert (again["pid"], again["requests"]) == (first["pid"], 1)
    assert subprocess.run([*MEMREPO, "daemon", "status", "--json"], capture_output=True,
                          env=person_env(MEMREPO_DAEMON="1")).stdout.decode().startswith('{"running": true')


PAYLOAD = json.dumps({"prompt": "how many connections does the database pool hold?", "session_id": "s-1"}).encode()

# (argv, stdin, answered by the server): the server runs the same typer app, usage errors included
SAME = [
    (["search", "database pool"], None, True),
    (["search", "rollback release", "--json"], None, True),
    (["--json", "search", "answers", "--limit", "1"], None, True),
    (["recall", "why roll back with blue-green?", "--budget", "800"], None, True),
    (["recall", "--json", "database connections"], None, True),
    (["recall", "--budget", "600"], b"what does the user read on?\n", True),
    (["recall", "--hook"], PAYLOAD, True),
    (["recall", "--hook", "--json"], PAYLOAD, True),
    (["context", "--budget", "2000"], None, True),
    (["context", "--json"], None, True),
    (["search", "--limit", "many", "pool"], None, True),
    (["search"], None, True),
    (["recall", "--budget"], None, True),
    (["recall", "--hook", "--budjet", "2000"], PAYLOAD, True),
]


@pytest.mark.parametrize("argv, stdin, answered", SAME, ids=[" ".join(a) for a, _, _ in SAME])
def test_the_same_bytes_and_exit_code_as_in_process(shared, on, argv, stdin, answered):
    before = started(shared)
    args = ["--vault", str(shared), *argv]
    expected = run(*args, served=False, stdin=stdin)
    assert run(*args, stdin=stdin) == expected
    after = server()
    assert after["pid"] == before["pid"]
    assert (after["requests"] - before["requests"], after["fallbacks"] - before["fallbacks"]) == \
        ((1, 0) if answered else (0, 1))


@pytest.mark.parametrize("argv", [["--vault", "/nonexistent/vault", "search", "x"],
                                  ["--json", "--vault", "/nonexistent/vault", "recall", "x"],
                                  ["search", "x"]], ids=["missing vault", "missing vault --json", "no vault here"])
def test_errors_are_the_same_as_in_process(shared, on, tmp_path, argv):
    before = started(shared)
    expected = run(*argv, served=False, cwd=tmp_path)
    assert expected[0] in (2, 3) and (expected[1] + expected[2]).strip()
    assert run(*argv, cwd=tmp_path) == expected
    assert server()["requests"] == before["requests"] + 1


def test_a_commit_by_another_process_is_seen_on_the_next_call(shared, on):
    started(shared)
    assert run("--vault", str(shared), "search", "zeppelin")[1] == b"nothing relevant\n"
    assert run("--vault", str(shared), "add", "--subject", "infra", "--summary", "The zeppelin hangar is cold",
               "--body", "b", served=False)[0] == 0
    found = run("--vault", str(shared), "search", "zeppelin", "--json")
    assert found == run("--vault", str(shared), "search", "zeppelin", "--json", served=False)
    assert json.loads(found[1])["hits"][0]["summary"] == "The zeppelin hangar is cold"


def test_each_call_brings_its_own_environment_and_terminal(shared, on, tmp_path):
    before = started(shared)
    env = person_env(MEMREPO_DAEMON="1")
    plain = on_a_terminal([*MEMREPO, "--vault", str(shared), "search", "pool"], env={**env, "NO_COLOR": "1"})
    bold = on_a_terminal([*MEMREPO, "--vault", str(shared), "search", "pool"], env=env)
    assert "\033[1m" in bold and "\033[1m" not in plain and "pool" in plain
    by_env = run("search", "pool", cwd=tmp_path, MEMREPO_VAULT=str(shared))
    assert by_env[0] == 0 and by_env == run("search", "pool", cwd=tmp_path, served=False, MEMREPO_VAULT=str(shared))
    assert server()["requests"] == before["requests"] + 3


def test_edited_code_never_talks_to_the_old_server(shared, on, tmp_path):
    """A copy of the package gets its own server; once a file of the copy changes, its calls
    run in-process (not on the old server), which then exits by itself."""
    main = started(shared)
    shutil.copytree(Path(daemon.__file__).parents[1], tmp_path / "pkg" / "memrepo",
                    ignore=shutil.ignore_patterns("__pycache__"))
    copy = {"PYTHONPATH": str(tmp_path / "pkg")}
    args = ("--vault", str(shared), "search", "pool")
    expected = run(*args, served=False)
    assert run(*args, cwd=tmp_path, **copy) == expected
    other = server(other_than=main["pid"])
    assert run(*args, cwd=tmp_path, **copy) == expected
    assert daemon.ask("status", other["socket"])["requests"] == 1
    edited = tmp_path / "pkg" / "memrepo" / "cli" / "call.py"
    os.utime(edited, ns=(edited.stat().st_mtime_ns + 10**9,) * 2)
    assert run(*args, cwd=tmp_path, **copy) == expected
    deadline = time.monotonic() + 10
    while _alive(other["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(other["pid"]) and not os.path.exists(other["socket"])
    edited_copy = server(other_than=main["pid"])  # the edited copy started its own
    assert edited_copy["pid"] != other["pid"] and edited_copy["requests"] == 0
    daemon.ask("stop", edited_copy["socket"])
    while _alive(edited_copy["pid"]):
        time.sleep(0.02)
    assert server()["requests"] == main["requests"]  # the main server never saw these calls


def test_a_server_killed_between_calls_is_replaced(shared, on):
    first = started(shared)
    os.kill(first["pid"], signal.SIGKILL)
    while _alive(first["pid"]):
        time.sleep(0.02)
    args = ("--vault", str(shared), "search", "pool")
    assert run(*args) == run(*args, served=False)
    second = server(other_than=first["pid"])
    assert second["requests"] == 0
    assert run(*args)[0] == 0 and server()["requests"] == 1


def test_a_server_killed_mid_call_is_one_line_and_exit_75(shared, on):
    pid = started(shared)["pid"]
    proc = subprocess.Popen([*MEMREPO, "--vault", str(shared), "recall", "--hook"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=person_env(MEMREPO_DAEMON="1"))
    deadline = time.monotonic() + 20
    while not os.readlink(f"/proc/{pid}/fd/0").startswith("pipe:"):  # the server reads the caller's stdin
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(PAYLOAD, timeout=30)
    assert (proc.returncode, out, err.decode()) == (75, b"", daemon.STOPPED_MESSAGE + "\n")


def test_an_idle_server_exits_and_removes_its_socket(shared, on):
    stop_all()
    assert run("--vault", str(shared), "context", MEMREPO_DAEMON_IDLE="1")[0] == 0
    found = server()
    deadline = time.monotonic() + 15
    while _alive(found["pid"]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(found["pid"]) and os.listdir(on) == []


def test_the_daemon_commands(shared, on):
    def memrepo(*args: str, **extra: str):
        proc = subprocess.run([*MEMREPO, "daemon", *args], capture_output=True, text=True,
                              env=person_env(**{"MEMREPO_DAEMON": "1", **extra}))
        return proc.returncode, proc.stdout, proc.stderr

    pid = started(shared)["pid"]
    code, out, _ = memrepo("status", "--json")
    assert code == 0 and json.loads(out)["pid"] == pid
    assert memrepo("stop", "--json")[:2] == (0, json.dumps({"stopped": [pid]}) + "\n")
    assert memrepo("status")[:2] == (0, "not running\n")
    code, out, _ = memrepo("start", "--json")
    assert code == 0 and json.loads(out)["running"] and json.loads(out)["requests"] == 0
    PIDS.add(json.loads(out)["pid"])
    code, _, err = memrepo("start", MEMREPO_DAEMON="0")
    assert code == 2 and "MEMREPO_DAEMON=0" in err
    assert run("--vault", str(shared), "search", "pool", served=False)[0] == 0
    assert server()["requests"] == 0  # MEMREPO_DAEMON=0: not asked


def _log(root: Path) -> list[str]:
    return subprocess.run(["git", "-C", str(root), "log", "--format=%an|%s", "main"], capture_output=True, text=True,
                          env=person_env(), check=True).stdout.splitlines()


def test_add_through_the_server_writes_once_as_the_caller(shared, on, tmp_path):
    """The git identity and MEMREPO_AUTHOR are the caller's, per call (no identity kept from an earlier call)."""
    before = started(shared)
    identities = []
    for name in ("Ada Caller", "Bob Caller"):
        config = tmp_path / f"{name.split()[0]}.gitconfig"
        config.write_text(f"[user]\n\tname = {name}\n\temail = {name.split()[0].lower()}@example.invalid\n", encoding="utf-8")
        identities.append({"GIT_CONFIG_GLOBAL": str(config), "MEMREPO_AUTHOR": name.split()[0].lower()})
    log = _log(shared)
    for i, env in enumerate(identities):
        code, out, err = run("--vault", str(shared), "add", "--subject", "infra", "--summary", f"Served write {i}",
                             "--json", stdin=b"a body from stdin\n", **env)
        assert (code, err) == (0, b"")
        result = json.loads(out)
        assert result["status"] == "active" and result["commit"]
        text = (shared / result["path"]).read_text(encoding="utf-8")
        assert f"author: {env['MEMREPO_AUTHOR']}" in text and "a body from stdin" in text
    assert server()["requests"] == before["requests"] + 2
    new = _log(shared)[:len(_log(shared)) - len(log)]
    assert [line.split("|")[0] for line in new] == ["Bob Caller", "Ada Caller"]
    in_process = run("--vault", str(shared), "add", "--subject", "infra", "--summary", "In-process write", served=False)
    served = run("--vault", str(shared), "add", "--subject", "infra", "--summary", "Served write")
    pattern = rb"mem_\d{8}_[a-z0-9]{6} active \(low risk: .*\) -> commit [0-9a-f]{12}\n"
    assert re.fullmatch(pattern, in_process[1]) and re.fullmatch(pattern, served[1])
    assert re.sub(rb"mem_\w+|[0-9a-f]{12}", b"X", in_process[1]) == re.sub(rb"mem_\w+|[0-9a-f]{12}", b"X", served[1])
    files = run("--vault", str(shared), "add", "--file", str(tmp_path / "none.md"))
    assert files == run("--vault", str(shared), "add", "--file", str(tmp_path / "none.md"), served=False)


def test_a_server_killed_during_add_says_so_and_nothing_is_half_written(shared, on):
    pid = started(shared)["pid"]
    log = _log(shared)
    proc = subprocess.Popen([*MEMREPO, "--vault", str(shared), "add", "--summary", "Never written"],
                            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            env=person_env(MEMREPO_DAEMON="1"))
    deadline = time.monotonic() + 20
    while not os.readlink(f"/proc/{pid}/fd/0").startswith("pipe:"):  # reading the body from the caller's stdin
        assert time.monotonic() < deadline and proc.poll() is None
        time.sleep(0.01)
    os.kill(pid, signal.SIGKILL)
    out, err = proc.communicate(b"the body", timeout=30)
    from memrepo.cli.commands.vault import STOPPED_UNWRITTEN
    assert (proc.returncode, out, err.decode()) == (75, b"", STOPPED_UNWRITTEN + "\n")
    assert _log(shared) == log
    assert run("--vault", str(shared), "add", "--summary", "Written after", "--body", "b")[0] == 0
    assert len(_log(shared)) == len(log) + 1  # no lock or journal left behind by the killed write


def test_a_call_runs_in_process_while_the_server_is_busy_with_another(shared, on):
    """One call at a time: a call that finds the server busy for a second runs in-process
    (never twice), and the busy call still finishes on the server."""
    before = started(shared)
    held = subprocess.Popen([*MEMREPO, "--vault", str(shared), "recall", "--hook"], stdin=subprocess.PIPE,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=person_env(MEMREPO_DAEMON="1"))
    deadline = time.monotonic() + 20
    while not os.readlink(f"/proc/{before['pid']}/fd/0").startswith("pipe:"):  # held: waiting for its stdin
        assert time.monotonic() < deadline and held.poll() is None
        time.sleep(0.01)
    args = ("--vault", str(shared), "search", "pool")
    assert run(*args) == run(*args, served=False)
    out, err = held.communicate(PAYLOAD, timeout=30)
    assert (held.returncode, out, err) == run("--vault", str(shared), "recall", "--hook", served=False, stdin=PAYLOAD)
    after = server()
    assert (after["pid"], after["requests"]) == (before["pid"], before["requests"] + 1)


def _default_utf8_mode() -> str:
    return subprocess.run([sys.executable, "-c", "import sys; print(sys.flags.utf8_mode)"], capture_output=True,
                          text=True, env=person_env()).stdout.strip()


def _daemon(*args: str, **extra: str) -> tuple[int, str, str]:
    proc = subprocess.run([*MEMREPO, "daemon", *args], capture_output=True, text=True,
                          env=person_env(**{"MEMREPO_DAEMON": "1", **extra}))
    return proc.returncode, proc.stdout, proc.stderr


def test_status_lists_every_server_and_stop_keeps_to_this_install(shared, on, tmp_path):
    """One server per install and environment: status lists them all (install, environment,
    idle time); stop stops this install's, --all the others too."""
    stop_all()
    mine = started(shared)
    other_env = {"PYTHONUTF8": "0" if _default_utf8_mode() == "1" else "1"}
    assert run("--vault", str(shared), "search", "pool", **other_env)[0] == 0
    shutil.copytree(Path(daemon.__file__).parents[1], tmp_path / "pkg" / "memrepo",
                    ignore=shutil.ignore_patterns("__pycache__"))
    assert run("--vault", str(shared), "search", "pool", cwd=tmp_path, PYTHONPATH=str(tmp_path / "pkg"))[0] == 0
    deadline = time.monotonic() + 30
    while len(servers()) < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    code, out, _ = _daemon("status", "--json")
    listed = json.loads(out)["servers"]
    assert code == 0 and len(listed) == 3, listed
    assert {s["package"] for s in listed} == {str(Path(daemon.__file__).parents[1]), str(tmp_path / "pkg" / "memrepo")}
    assert sorted(s["this_install"] for s in listed) == [False, True, True]
    assert len({json.dumps(s["environment"], sort_keys=True) for s in listed if s["this_install"]}) == 2
    assert all("idle_seconds" in s and s["environment"]["python"] for s in listed)
    code, text, _ = _daemon("status")
    assert text.count("pid ") == 3 and text.count("(this install)") == 2 and text.count("(another install)") == 1
    code, out, _ = _daemon("stop", "--json")
    stopped = set(json.loads(out)["stopped"])
    assert mine["pid"] in stopped and len(stopped) == 2
    assert [s["package"] for s in servers()] == [str(tmp_path / "pkg" / "memrepo")]
    assert len(json.loads(_daemon("stop", "--all", "--json")[1])["stopped"]) == 1
    assert servers() == []


def test_asking_the_status_does_not_keep_a_server_alive(shared, on):
    stop_all()
    assert run("--vault", str(shared), "context", MEMREPO_DAEMON_IDLE="2")[0] == 0
    pid = server()["pid"]
    deadline = time.monotonic() + 15
    while _alive(pid) and time.monotonic() < deadline:
        assert _daemon("status")[0] == 0
        time.sleep(0.2)
    assert not _alive(pid), "status kept resetting the idle timer"


def _deleted_files(pid: int, under: Path) -> list[str]:
    found = []
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(under)) and target.endswith("(deleted)"):
            found.append(target)
    return found


def test_the_server_keeps_a_few_vaults_and_lets_go_of_removed_ones(shared, on, tmp_path):
    """A bounded set of vaults stays warm (least recently used dropped); a vault whose folder is
    gone or replaced is let go whole: no descriptor to its deleted files stays open."""
    pid = started(shared)["pid"]
    roots = []
    for i in range(6):
        root = tmp_path / f"throwaway{i}"
        assert run("init", str(root), served=False)[0] == 0
        assert run("--vault", str(root), "add", "--summary", f"Throw-away note {i}", "--body", "b", served=False)[0] == 0
        code, out, _ = run("--vault", str(root), "search", "throw-away note")
        assert code == 0 and b"Throw-away note" in out
        roots.append(root)
    kept = daemon.ask("status", server()["socket"])["vaults"]
    assert 1 <= len(kept) <= 4 and kept[-1] == str(roots[-1]), kept
    for root in roots:
        shutil.rmtree(root)
    replaced = roots[-1]
    assert run("init", str(replaced), served=False)[0] == 0  # the same folder made again: another vault
    assert run("--vault", str(replaced), "search", "anything")[0] == 0
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        kept = daemon.ask("status", server()["socket"])["vaults"]
        if set(kept) <= {str(replaced)} and not _deleted_files(pid, tmp_path):
            break
        time.sleep(0.2)
    assert set(kept) <= {str(replaced)}, kept
    assert _deleted_files(pid, tmp_path) == []
    assert server()["pid"] == pid


def test_the_demo_stops_the_servers_it_started():
    """make demo's script starts servers in its own runtime folder and stops them on the way out."""
    bin_dir = Path(sys.executable).parent
    short = tempfile.mkdtemp(prefix="dm-", dir="/tmp")  # a socket path holds at most 107 bytes
    env = person_env(PATH=f"{bin_dir}{os.pathsep}{os.environ['PATH']}", MEMREPO_DAEMON="1", MEMREPO_SEMANTIC="0",
                     TMPDIR=short)
    env.pop("MEMREPO_RUNTIME_DIR", None)
    script = Path(__file__).resolve().parents[1] / "scripts" / "demo.sh"
    proc = subprocess.run(["bash", str(script)], capture_output=True, text=True, env=env, timeout=600)
    assert proc.returncode == 0, proc.stderr[-2000:]
    pids = [int(p) for p in re.findall(r"^pid (\d+):", proc.stdout, re.M)]
    assert pids, "the demo's last step shows its server"
    deadline = time.monotonic() + 10
    while any(_alive(p) for p in pids) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not any(_alive(p) for p in pids), "a server the demo started outlived it"
    shutil.rmtree(short, ignore_errors=True)
