"""The review commands (memrepo/cli/commands/review.py): where a pending or reverted memory is,
what happened to an applied proposal."""
from __future__ import annotations

import json

from conftest import git

from memrepo.cli.app import main
from memrepo.review import proposals
from memrepo.review import writes as memories


def run(capsys, *args: str) -> tuple[int, str, str]:
    code = main(list(args))
    out = capsys.readouterr()
    return code, out.out, out.err


def json_error(out: str) -> dict:
    return json.loads(out)["error"]


def test_show_log_why_say_where_a_pending_or_reverted_memory_is(vault, capsys):
    pending = memories.add(vault, {"id": "mem_rule", "subject": "proj", "fact": "rule", "kind": "constraint",
                                   "summary": "s"}, "b")
    for command in ("show", "log", "why"):
        code, _, err = run(capsys, "--vault", str(vault.root), command, "mem_rule")
        assert code == 3 and f"pending in proposal {pending.proposal}: memrepo review {pending.proposal}" in err, err
    added = memories.add(vault, {"id": "mem_gone", "subject": "proj", "fact": "port", "summary": "port 80"}, "b")
    git(vault.root, "revert", "--no-edit", added.commit)  # by hand: the file leaves main
    commit = git(vault.root, "rev-parse", "HEAD").strip()
    code, out, _ = run(capsys, "--vault", str(vault.root), "show", "mem_gone", "--json")
    message = json_error(out)["message"]
    assert code == 3 and f"reverted in {commit[:12]}: see memrepo history proj port (or memrepo history mem_gone)" in message
    code, _, err = run(capsys, "--vault", str(vault.root), "show", "mem_never")
    assert code == 3 and "no memory 'mem_never'" in err


def test_proposals_all_says_an_applied_proposal_was_rolled_back_or_reverted(vault, capsys):
    from memrepo.review import provenance
    one = memories.add(vault, {"id": "mem_r1", "subject": "p", "fact": "a", "kind": "constraint", "summary": "s"}, "b")
    two = memories.add(vault, {"id": "mem_r2", "subject": "p", "fact": "b", "kind": "constraint", "summary": "s"}, "b")
    applied_one = proposals.apply(vault, one.proposal)
    applied_two = proposals.apply(vault, two.proposal)
    rolled = provenance.rollback(vault, "mem_r1", reason="wrong")
    git(vault.root, "revert", "--no-edit", "-m", "1", applied_two)
    reverted = git(vault.root, "rev-parse", "HEAD").strip()
    listed = {p.id: p for p in proposals.list_proposals(vault, include_closed=True)}
    assert listed[one.proposal].outcome["reverted"]["commit"] == rolled and applied_one
    assert listed[one.proposal].outcome["reverted"]["action"] == "rollback"
    assert listed[two.proposal].outcome["reverted"] == {**listed[two.proposal].outcome["reverted"],
                                                        "commit": reverted, "action": "revert"}
    code, out, _ = run(capsys, "--vault", str(vault.root), "proposals", "--all")
    assert code == 0 and f"applied, rolled back in {rolled[:12]}" in out and f"applied, reverted in {reverted[:12]}" in out
