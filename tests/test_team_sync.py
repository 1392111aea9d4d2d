"""memrepo sync: clones sharing a vault through a bare directory and through a
real `git daemon` on loopback; concurrent writers, conflicting facts, proposals travelling,
random interleavings, and a server killed mid-push."""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import time
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo import api
from memrepo.store.vault import Vault
from memrepo.team import propose as team_propose
from memrepo.team import sync as team_sync
from tests.conftest import git
from tests.test_team_scopes import cli

POLICY = '''
[arbitration]
default = "review"
rules = [ { match = "user/ui.*", policy = "latest" } ]
'''


def make_server(tmp: Path, name: str = "server.git") -> Path:
    server = tmp / name
    subprocess.run(["git", "init", "-q", "--bare", "-b", "main", str(server)], check=True)
    return server


def first_clone(tmp: Path, url: str) -> Path:
    vault = api.init(tmp / "a")
    config = vault.root / ".memrepo/config.toml"
    config.write_text(config.read_text().split("\n[arbitration]")[0] + POLICY)
    from memrepo.review import policy
    policy.accept(vault, why="arbitration policy")  # rules that skip review take a person's acceptance
    git(vault.root, "remote", "add", "origin", url)
    vault.close()
    cli(vault.root, "sync")
    return vault.root


def clone(tmp: Path, url: str, name: str) -> Path:
    root = tmp / name
    git(tmp, "clone", "-q", url, str(root))
    cli(root, "hooks", "install")
    return root


def tree(root: Path) -> str:
    return git(root, "rev-parse", "main^{tree}").strip()


def assert_converged(*roots: Path, server: Path | None = None) -> None:
    trees = {tree(r) for r in roots}
    assert len(trees) == 1, trees
    for r in roots:
        assert git(r, "status", "--porcelain").strip() == "", r
        proc = cli(r, "validate", ok=False)
        assert proc.returncode == 0, proc.stdout + proc.stderr
    if server is not None:
        assert git(server, "rev-parse", "main^{tree}").strip() in trees


def add(root: Path, *args: str, agent: str | None = None) -> str:
    return json.loads(cli(root, "add", *args, "--json", agent=agent).stdout)["id"]


@pytest.fixture
def daemon(tmp_path):
    """A real git server: `git daemon` on 127.0.0.1, a random free port, push enabled."""
    base = tmp_path / "srv"
    base.mkdir()
    make_server(base)
    procs = []

    def start(port: int | None = None) -> str:
        if port is None:
            with socket.socket() as s:
                s.bind(("127.0.0.1", 0))
                port = s.getsockname()[1]
        proc = subprocess.Popen(["git", "daemon", "--reuseaddr", "--listen=127.0.0.1", f"--port={port}",
                                 f"--base-path={base}", "--export-all", "--enable=receive-pack", str(base)],
                                stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
        procs.append(proc)
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.05)
        return f"git://127.0.0.1:{port}/server.git"

    def stop() -> None:
        for p in procs:
            try:  # 'git daemon' runs git-daemon as a child in its session: kill the whole group
                os.killpg(p.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
            p.wait()

    start.stop = stop
    start.server = base / "server.git"
    yield start
    stop()


def test_three_clones_through_git_daemon(tmp_path, daemon):
    url = daemon()
    a = first_clone(tmp_path, url)
    b, c = clone(tmp_path, url, "b"), clone(tmp_path, url, "c")
    acked = [add(a, "--summary", "analyst saw the login bug", "--tag", "#bug"),
             add(b, "--summary", "executor restarted the worker"),
             add(c, "--summary", "reviewer approved release 2.3")]
    secret = add(a, "--scope", "private", "--summary", "私下的推理：也许用户不喜欢弹窗", agent="analyst")
    for root in (a, b, c, a, b):
        cli(root, "sync")
    assert_converged(a, b, c, server=daemon.server)
    listed = cli(c, "list").stdout
    assert all(i in listed for i in acked)
    everything = git(daemon.server, "log", "--all", "-p", "--format=%B")
    assert secret not in everything and "私下的推理" not in everything
    assert secret not in cli(b, "--agent", "analyst", "list").stdout  # b's machine never had it


def test_conflicting_facts_latest_and_review(tmp_path):
    server = make_server(tmp_path)
    a = first_clone(tmp_path, str(server))
    b = clone(tmp_path, str(server), "b")
    dark = json.loads(cli(a, "--agent", "analyst", "propose", "--subject", "user", "--fact", "ui.theme",
                          "--summary", "dark", "--json").stdout)["id"]
    time.sleep(1.1)  # a later created stamp: 'latest' keeps b's
    light = json.loads(cli(b, "--agent", "executor", "propose", "--subject", "user", "--fact", "ui.theme",
                           "--summary", "light", "--json").stdout)["id"]
    pool_a = json.loads(cli(a, "--agent", "analyst", "propose", "--subject", "project", "--fact", "db.pool",
                            "--summary", "pool size 10", "--json").stdout)["id"]
    pool_b = json.loads(cli(b, "--agent", "executor", "propose", "--subject", "project", "--fact", "db.pool",
                            "--summary", "pool size 50", "--json").stdout)["id"]
    cli(a, "sync")
    out = json.loads(cli(b, "sync", "--json").stdout)
    assert out["integrated"] == "merge" and out["pushed"] and len(out["proposals"]) == 1
    cli(a, "sync")
    assert_converged(a, b, server=server)
    shown = {i: json.loads(cli(a, "show", i, "--json").stdout) for i in (dark, light, pool_a, pool_b)}
    assert shown[light]["status"] == "active" and shown[dark]["status"] == "superseded"
    assert shown[dark]["superseded_by"] == light
    assert shown[pool_a]["status"] == "active" and shown[pool_b]["status"] == "superseded"  # remote kept, local to review
    proposal = out["proposals"][0]
    assert proposal in cli(a, "proposals").stdout            # the proposal branch travelled
    card = cli(a, "review", proposal).stdout
    assert "pool size 50" in card and "pool size 10" in card
    cli(a, "apply", proposal)
    cli(a, "sync")
    back = json.loads(cli(b, "sync", "--json").stdout)
    assert proposal in back["adopted"] and proposal not in cli(b, "proposals").stdout
    assert_converged(a, b, server=server)
    active = json.loads(cli(b, "list", "--subject", "project", "--fact", "db.pool", "--status", "active", "--json").stdout)
    assert [r["summary"] for r in active] == ["pool size 50"]


def test_reinforcements_on_two_clones_merge_by_meaning(tmp_path):
    server = make_server(tmp_path)
    a = first_clone(tmp_path, str(server))
    held = json.loads(cli(a, "--agent", "analyst", "propose", "--subject", "user", "--fact", "lang",
                          "--summary", "中文回答", "--json").stdout)["id"]
    cli(a, "sync")
    b = clone(tmp_path, str(server), "b")
    cli(a, "--agent", "reviewer", "propose", "--subject", "user", "--fact", "lang", "--summary", "中文回答",
        "--evidence", "chat/9#L1")
    cli(b, "--agent", "executor", "propose", "--subject", "user", "--fact", "lang", "--summary", "中文回答！",
        "--evidence", "chat/7#L2", "--tag", "#语言")
    cli(a, "sync")
    cli(b, "sync")
    cli(a, "sync")
    assert_converged(a, b, server=server)
    m = json.loads(cli(a, "show", held, "--json").stdout)
    assert set(m["evidence"]) == {"chat/9#L1", "chat/7#L2"} and m["weight"] == 0.6
    assert {r.split()[0] for r in m["reinforced_by"]} == {"reviewer", "executor"}


def test_a_plain_git_pull_uses_the_merge_driver(tmp_path):
    server = make_server(tmp_path)
    a = first_clone(tmp_path, str(server))
    held = add(a, "--subject", "user", "--fact", "tz", "--summary", "UTC+8")
    cli(a, "sync")
    b = clone(tmp_path, str(server), "b")
    for root, link in ((a, "mem_x1"), (b, "mem_x2")):
        path = next(root.glob(f"memories/L1/*/{held}.md"))
        path.write_text(path.read_text().replace("scope: shared\n", f"scope: shared\nlinks:\n  - {link}\n"))
    # links must point at nothing in particular; the schema only wants ids
    git(a, "commit", "-qam", "link x1")
    git(a, "push", "-q", "origin", "main")
    git(b, "commit", "-qam", "link x2")
    git(b, "pull", "-q", "--no-rebase", "--no-edit", "origin", "main")
    text = next(b.glob(f"memories/L1/*/{held}.md")).read_text()
    assert "<<<<<<<" not in text and "mem_x1" in text and "mem_x2" in text


def test_server_killed_mid_push_loses_nothing(tmp_path, daemon):
    url = daemon()
    a = first_clone(tmp_path, url)
    lines = "\n".join(json.dumps({"summary": f"bulk memory {i}", "body": "x" * 2000}) for i in range(800))
    (tmp_path / "bulk.jsonl").write_text(lines + "\n")
    cli(a, "import", str(tmp_path / "bulk.jsonl"))
    head = git(a, "rev-parse", "main").strip()
    port = int(url.split(":")[2].split("/")[0])
    proc = subprocess.Popen([*cli.__globals__["MEMREPO"], "sync"], cwd=a, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(0.15)
    daemon.stop()
    proc.wait(timeout=60)
    assert git(a, "rev-parse", "main").strip() == head  # nothing lost locally, whatever happened
    daemon(port)
    cli(a, "sync")
    assert git(daemon.server, "rev-parse", "main").strip() == head
    b = clone(tmp_path, url, "b")
    assert_converged(a, b)


OPS = st.lists(st.tuples(st.sampled_from(["add", "fact", "sync"]), st.integers(0, 2), st.integers(0, 2)),
               min_size=3, max_size=8)


@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck))
@given(OPS)
def test_random_sync_interleavings_converge(tmp_path_factory, ops):
    tmp = tmp_path_factory.mktemp("prop")
    server = make_server(tmp)
    roots = [first_clone(tmp, str(server))]
    roots += [clone(tmp, str(server), n) for n in ("b", "c")]
    vaults = [Vault(r) for r in roots]
    acked: list[str] = []
    try:
        for op, who, value in ops:
            v = vaults[who]
            if op == "add":
                acked.append(api.add(v, {"summary": f"note {len(acked)} from {who}"}).id)
            elif op == "fact":
                key = {"subject": "user", "fact": "ui.size"} if value % 2 else {"subject": "project", "fact": "db.size"}
                r = team_propose.propose(v, {**key, "summary": f"size {value}"}, agent=f"agent{who}")
                acked.append(r.id)
            else:
                team_sync.sync(v)
        for _ in range(2):
            for v in vaults:
                assert team_sync.sync(v).pushed
    finally:
        for v in vaults:
            v.close()
    assert_converged(*roots, server=server)
    present = git(roots[0], "ls-tree", "-r", "--name-only", "main", "memories", "archive")
    proposals = git(roots[0], "log", "--all", "--format=%B")
    for memory_id in acked:  # written to main, or reinforced into an existing one, or kept on a proposal
        assert memory_id in present or memory_id in proposals


def _server_branches(server: Path) -> set[str]:
    return set(git(server, "for-each-ref", "--format=%(refname)", "refs/heads/proposal/").split())


def test_a_closed_proposals_branch_leaves_the_remote_it_was_pushed_to(tmp_path):
    """apply/reject delete the pushed proposal branch on its remote; unreachable then, the
    next sync does it; a branch someone moved on the remote is kept (compare-and-delete)."""
    server = make_server(tmp_path)
    a = first_clone(tmp_path, str(server))

    def proposal(summary: str) -> str:
        return json.loads(cli(a, "add", "--kind", "constraint", "--summary", summary, "--json").stdout)["proposal"]

    applied = proposal("Never deploy on Friday")
    cli(a, "proposals", "push", applied)
    assert _server_branches(server) == {f"refs/heads/proposal/{applied}"}
    out = cli(a, "apply", applied).stdout
    assert f"deleted branch origin/proposal/{applied}" in out and _server_branches(server) == set()

    rejected = proposal("Never deploy on Monday")
    cli(a, "sync")
    assert _server_branches(server) == {f"refs/heads/proposal/{rejected}"}
    server.rename(tmp_path / "away.git")
    out = json.loads(cli(a, "reject", rejected, "--why", "too strict", "--json").stdout)
    assert out["remote_branches"][f"origin/proposal/{rejected}"].startswith("kept: origin could not be reached")
    (tmp_path / "away.git").rename(server)
    synced = json.loads(cli(a, "sync", "--json").stdout)
    assert synced["deleted"] == [f"proposal/{rejected}"] and _server_branches(server) == set()
    assert git(server, "rev-parse", f"refs/memrepo/rejected/{rejected}").strip()  # the record stays

    moved = proposal("Never deploy at night")
    cli(a, "proposals", "push", moved)
    b = clone(tmp_path, str(server), "b")
    git(b, "fetch", "-q", "origin", f"proposal/{moved}:proposal/{moved}")
    git(b, "checkout", "-q", f"proposal/{moved}")
    (b / "NOTE.md").write_text("review note\n", encoding="utf-8")
    git(b, "add", "NOTE.md")
    git(b, "-c", "core.hooksPath=/dev/null", "commit", "-qm", "a reviewer's note")
    git(b, "push", "-q", "origin", f"proposal/{moved}")
    out = json.loads(cli(a, "reject", moved, "--why", "not now", "--json").stdout)
    assert out["remote_branches"][f"origin/proposal/{moved}"].startswith("rejected")
    assert f"refs/heads/proposal/{moved}" in _server_branches(server)  # the reviewer's work is kept
