"""Exit codes tell the truth about a write, and a retried write never doubles it: a write that
was committed says so (whatever happened to the checkout after), a write nothing recorded says
"nothing was written", and a write given an idempotency key (``--request-id``) returns the
first write's result when it is run again."""
from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from pathlib import Path

import pytest
from conftest import MEMREPO, cli, git, person_env

from memrepo import api
from memrepo.errors import UsageError
from memrepo.review import writes

README = (Path(__file__).resolve().parent.parent / "README.md").read_text(encoding="utf-8")


def commits(root: Path) -> int:
    return int(git(root, "rev-list", "--count", "main").strip())


# ------------------------------------------------------------ git's index taken after the commit

def test_a_write_committed_while_gits_index_is_taken_says_committed(vault):
    journal = vault.root / ".git" / "memrepo-journal.json"
    lock = vault.root / ".git" / "index.lock"
    stop = threading.Event()

    def persons_git_takes_the_index():  # the moment memrepo's write has started
        while not stop.is_set():
            if journal.exists():
                lock.write_bytes(b"")
                return
            time.sleep(0.0005)
    watcher = threading.Thread(target=persons_git_takes_the_index)
    watcher.start()
    try:
        proc = cli(vault.root, "add", "--subject", "proj", "--summary", "the build uses make", "--json")
    finally:
        stop.set()
        watcher.join()
    assert lock.exists(), "the race was not reproduced"
    assert proc.returncode == 0, proc.stderr
    result = json.loads(proc.stdout)
    assert result["commit"] == git(vault.root, "rev-parse", "main").strip()
    assert "index.lock" in proc.stderr and "Traceback" not in proc.stderr
    lock.unlink()
    assert cli(vault.root, "list").returncode == 0          # the next command finishes the checkout
    assert git(vault.root, "status", "--porcelain") == ""


# ------------------------------------------------------------ --request-id

def test_a_retried_add_with_the_same_request_id_writes_once(vault):
    first = cli(vault.root, "add", "--summary", "deploys need a green CI", "--request-id", "job-42.1", "--json")
    assert first.returncode == 0, first.stderr
    before = commits(vault.root)
    again = cli(vault.root, "add", "--summary", "deploys need a green CI", "--request-id", "job-42.1", "--json")
    assert again.returncode == 0 and json.loads(again.stdout) == json.loads(first.stdout)
    assert commits(vault.root) == before
    assert "Memrepo-Request: job-42.1" in git(vault.root, "log", "-1", "--format=%B", "main")
    other = cli(vault.root, "add", "--summary", "deploys need a green CI", "--request-id", "job-43", "--json")
    assert json.loads(other.stdout)["id"] != json.loads(first.stdout)["id"]


def test_a_retried_high_risk_add_returns_its_proposal(vault):
    first = writes.add(vault, {"kind": "constraint", "summary": "no friday deploys"}, "", request_id="r-7")
    again = writes.add(vault, {"kind": "constraint", "summary": "no friday deploys"}, "", request_id="r-7")
    assert again == first and first.proposal
    assert [p.id for p in api.list_proposals(vault)] == [first.proposal]


@pytest.mark.parametrize("key", ["", "has space", "../x", "a" * 200, "x\n"])
def test_a_request_id_is_a_short_plain_name(vault, key):
    with pytest.raises(UsageError, match="request"):
        writes.add(vault, {"summary": "x"}, "", request_id=key)


def test_a_retried_propose_with_the_same_request_id_is_not_a_reinforcement(vault):
    args = ["--agent", "analyst", "propose", "--subject", "user", "--fact", "ui.theme", "--summary", "dark",
            "--request-id", "p-1", "--json"]
    first = json.loads(cli(vault.root, *args).stdout)
    again = json.loads(cli(vault.root, *args).stdout)
    assert first["outcome"] == "written" and again == first
    assert "reinforced_by" not in vault.get(first["id"]).meta


def test_mcp_memory_write_takes_a_request_id(vault):
    from mcp.shared.memory import create_connected_server_and_client_session

    from memrepo.mcp.server import build_server
    server = build_server(str(vault.root), "agent-7")

    async def main():
        async with create_connected_server_and_client_session(server) as client:
            args = {"summary": "payments p95 is 200 ms", "source": "tool", "request_id": "turn-9"}
            first = await client.call_tool("memory_write", args)
            again = await client.call_tool("memory_write", args)
            return json.loads(first.content[0].text), json.loads(again.content[0].text)
    try:
        first, again = asyncio.run(main())
    finally:
        server._memrepo_state.close()
    assert first == again and first["commit"]


# ------------------------------------------------------------ the background server killed mid-add

@pytest.fixture
def served(tmp_path):
    runtime = tempfile.mkdtemp(prefix="mrx-", dir="/tmp")
    vault = api.init(tmp_path / "v")
    vault.close()
    env = {"MEMREPO_DAEMON": "1", "MEMREPO_RUNTIME_DIR": runtime}
    assert subprocess.run([*MEMREPO, "--vault", str(vault.root), "daemon", "start"], env=person_env(**env),
                          capture_output=True).returncode == 0
    yield vault.root, env
    subprocess.run([*MEMREPO, "daemon", "stop"], env=person_env(**env), capture_output=True)
    shutil.rmtree(runtime, ignore_errors=True)


def test_a_server_killed_after_committing_an_add_answers_the_commit(served):
    root, env = served
    before = commits(root)
    proc = subprocess.run([*MEMREPO, "--vault", str(root), "add", "--summary", "written once", "--body", "b", "--json"],
                          capture_output=True, text=True, env=person_env(MEMREPO_FAULT="commit-after-refs-moved", **env))
    assert proc.returncode == 0, (proc.returncode, proc.stderr)
    result = json.loads(proc.stdout)
    assert commits(root) == before + 1 and result["commit"] == git(root, "rev-parse", "main").strip()
    assert git(root, "status", "--porcelain") == ""


def test_a_server_killed_before_writing_says_nothing_was_written(served):
    root, env = served
    before = commits(root)
    proc = subprocess.run([*MEMREPO, "--vault", str(root), "add", "--summary", "never written", "--body", "b"],
                          capture_output=True, text=True, env=person_env(MEMREPO_FAULT="add-checked", **env))
    assert proc.returncode == 75 and "nothing was written" in proc.stderr, proc.stderr
    assert commits(root) == before


# ------------------------------------------------------------ the documented table

def test_the_readme_table_says_main_moved_is_busy():
    table = {line.split("|")[1].strip(): line for line in README.splitlines() if line.startswith("| ") and "`" in line}
    assert "main moved" not in table["4"] and "main moved" in table["75"]
    assert "request-id" in README
    assert os.path.exists(Path(__file__).resolve().parent.parent / "docs" / "trust.md")
