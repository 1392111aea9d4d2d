"""git is asked once per operation, not once per memory or proposal.

Each case runs the same operation on a vault with 5 and with 40 items and counts the real git
processes it starts (``git_calls`` puts a counting ``git`` first on PATH): the counts must not
grow with the number of items.
"""
from __future__ import annotations

import json

from conftest import git
from typer.testing import CliRunner

from memrepo.cli.app import app
from memrepo.lifecycle import distill_run
from memrepo.review import proposals, provenance, validate
from memrepo.review import writes as memories
from memrepo.store.vault import Vault

SMALL, BIG = 5, 40


def fresh(tmp_path, name: str) -> Vault:
    from memrepo import api
    return api.init(tmp_path / name)


def batch_proposal(vault: Vault, n: int, tmp_path, *, prefix: str = "mem_b", **extra) -> str:
    src = tmp_path / f"{vault.root.name}-{prefix}.jsonl"
    src.write_text("".join(json.dumps({"id": f"{prefix}{i}", "layer": "L2", "summary": f"item {i}", **extra}) + "\n"
                           for i in range(n)))
    return memories.import_jsonl(vault, src, propose=True).proposal


def assert_flat(small: list[str], big: list[str], what: str) -> None:
    assert len(big) <= len(small), (
        f"{what}: {len(small)} git processes at {SMALL} items, {len(big)} at {BIG}:\n" + "\n".join(big))


def test_review_of_a_proposal_reads_its_memories_in_one_go(tmp_path, git_calls):
    runner = CliRunner()
    counts = []
    for n in (SMALL, BIG):
        vault = fresh(tmp_path, f"v{n}")
        pid = batch_proposal(vault, n, tmp_path)
        args = ["--vault", str(vault.root), "review", pid, "--json"]
        runner.invoke(app, args)  # warm the per-process caches (identity, git paths) as a long-lived process has them
        counts.append(git_calls.calls(runner.invoke, app, args))
        assert len(json.loads(runner.invoke(app, args).stdout)["memories_detail"]) == n
    assert_flat(*counts, "review")


def test_apply_of_a_batch_proposal(tmp_path, git_calls):
    counts = []
    for n in (SMALL, BIG):
        vault = fresh(tmp_path, f"v{n}")
        memories.add(vault, {"id": "mem_warm", "layer": "L2", "summary": "warm"}, "")
        pid = batch_proposal(vault, n, tmp_path)
        counts.append(git_calls.calls(proposals.apply, vault, pid))
        assert {r["status"] for r in vault.list()} == {"active"} and len(vault.list()) == n + 1
    assert_flat(*counts, "apply")


def many_proposals(vault: Vault, n: int, tmp_path) -> None:
    """``n`` one-memory proposals: two applied, two rejected, the rest open."""
    for i in range(n):
        pid = batch_proposal(vault, 1, tmp_path, prefix=f"mem_p{i}_")
        if i in (1, 4):
            proposals.apply(vault, pid)
        elif i in (2, 3):
            proposals.reject(vault, pid, why="not now")


def test_get_by_memory_id_reads_every_proposal_at_once(tmp_path, git_calls):
    counts = []
    for n in (SMALL, BIG):
        vault = fresh(tmp_path, f"v{n}")
        many_proposals(vault, n, tmp_path)
        counts.append(git_calls.calls(proposals.get, vault, "mem_p0_0"))
        assert proposals.get(vault, "mem_p0_0").status == "open"
        assert proposals.get(vault, "mem_p4_0").status == "applied"
        assert proposals.get(vault, "mem_p2_0").status == "rejected"
        listed = git_calls.calls(proposals.list_proposals, vault, include_closed=True)
        counts[-1] += listed
        assert len(proposals.list_proposals(vault, include_closed=True)) == n
    assert_flat(*counts, "proposals.get by memory id and list_proposals --all")


def test_known_patterns_do_not_grow_with_review_history(tmp_path, git_calls):
    counts = []
    for n in (SMALL, BIG):
        vault = fresh(tmp_path, f"v{n}")
        for i in range(n):
            pattern = memories.build({"id": f"pat_{i}", "layer": "L2", "kind": "pattern", "subject": "proj",
                                      "summary": f"pattern {i}", "status": "pending_review"}, "",
                                     author="memrepo-distill", source="distill")
            with vault.lock():
                pid = proposals.create(vault, [pattern], reason="distill").id
            if i % 2:
                proposals.reject(vault, pid, why="not a pattern")
        counts.append(git_calls.calls(distill_run.known_patterns, vault))
        known = distill_run.known_patterns(vault)
        assert len(known) == n and {k.status for k in known} == {"proposed", "rejected"}
    assert_flat(*counts, "known_patterns")


def test_fact_history_reads_every_version_in_one_go(tmp_path, git_calls):
    counts = []
    for n in (SMALL, BIG):
        vault = fresh(tmp_path, f"v{n}")
        memories.add(vault, {"id": "mem_f", "subject": "proj", "fact": "db.pool", "layer": "L2",
                             "summary": "pool 0"}, "")
        path = vault.root / vault.catalog().path_of("mem_f")
        for i in range(1, n):
            path.write_text(path.read_text().replace(f"pool {i - 1}", f"pool {i}"))
            git(vault.root, "commit", "-q", "-a", "-m", f"pool {i}")
        counts.append(git_calls.calls(provenance.fact_history, vault, "proj", "db.pool"))
        history = provenance.fact_history(vault, "proj", "db.pool")
        assert [v.summary for v in history] == [f"pool {i}" for i in range(n)]
    assert_flat(*counts, "fact_history")


def test_the_hook_checks_staged_files_in_one_go(tmp_path, git_calls):
    counts = []
    for n in (SMALL, BIG):
        vault = fresh(tmp_path, f"v{n}")
        src = tmp_path / f"{n}.jsonl"
        src.write_text("".join(json.dumps({"id": f"mem_h{i}", "layer": "L2", "summary": f"item {i}",
                                           "proposal": f"prop_h{i}"}) + "\n" for i in range(n)))
        memories.import_jsonl(vault, src)
        for i in range(n):
            path = vault.root / vault.catalog().path_of(f"mem_h{i}")
            path.write_text(path.read_text().replace(f"item {i}", f"item {i} edited"))
        git(vault.root, "add", "memories")
        counts.append(git_calls.calls(validate.check_staged, vault))
        assert validate.check_staged(vault) == []
    assert_flat(*counts, "the pre-commit check of staged files")
