"""Review: risk routing, proposals as branches, the review card, apply/reject, conflicts,
rollback by ``git revert`` and ``memrepo rollback``, provenance, pull requests through a remote."""
from __future__ import annotations

import hashlib
import json
import os
import subprocess

import pytest
from conftest import git, person_env
from typer.testing import CliRunner

from memrepo.cli.app import app
from memrepo.errors import Conflict, InvalidMemory, NotFound, UsageError
from memrepo.review import proposals, provenance, validate
from memrepo.review import writes as memories
from memrepo.store.vault import Vault

runner = CliRunner()



def snapshot(vault) -> dict:
    """Everything a failed review action must leave as it was."""
    files = {}
    for dirpath, _dirs, names in os.walk(vault.root):
        if "/.git" in dirpath + "/" or "/.memrepo/state" in dirpath or "/.memrepo/index" in dirpath:
            continue
        for name in names:
            p = os.path.join(dirpath, name)
            files[os.path.relpath(p, vault.root)] = hashlib.sha1(open(p, "rb").read()).hexdigest()
    return {"main": git(vault.root, "rev-parse", "main"), "head": git(vault.root, "rev-parse", "HEAD"),
            "status": git(vault.root, "status", "--porcelain"), "files": files,
            "refs": git(vault.root, "for-each-ref", "--format=%(refname) %(objectname)")}


def statuses(vault) -> dict[str, str]:
    return {r["id"]: r["status"] for r in vault.list()}


def old_fact(vault, memory_id="mem_old", summary="pool size 10"):
    return memories.add(vault, {"id": memory_id, "subject": "proj", "fact": "db.pool", "layer": "L2",
                                "kind": "knowledge", "summary": summary}, "Pool size is 10.")


def override(vault, memory_id="mem_new", summary="pool size 20", **extra):
    fields = {"id": memory_id, "subject": "proj", "fact": "db.pool", "layer": "L2", "kind": "knowledge",
              "summary": summary, "author": "agent-7", "evidence": ["logs/load-test.md#L10-L20"],
              "affects": ["connection pool sizing"], **extra}
    return memories.add(vault, fields, "Pool size is 20 after the load test.")


# ----------------------------------------------------------------- routing

@pytest.mark.parametrize("fields, reason", [
    ({"kind": "checkpoint", "summary": "step 3 done"}, "task checkpoint"),
    ({"kind": "preference", "subject": "user", "fact": "ui.theme", "summary": "dark"}, "low-impact preference"),
    ({"kind": "knowledge", "layer": "L2", "summary": "CI takes 4 minutes"}, "low-impact knowledge"),
])
def test_low_risk_commits_straight_to_main(vault, fields, reason):
    result = memories.add(vault, fields, "b")
    assert result.commit == vault.head() and result.proposal is None and result.status == "active"
    m = vault.get(result.id).meta
    assert (m["status"], m["risk"]) == ("active", "low") and reason in m["risk_reason"]
    assert proposals.list_proposals(vault) == []


@pytest.mark.parametrize("fields, reason", [
    ({"kind": "constraint", "layer": "L3", "summary": "never auto-publish"}, "policy constraint"),
    ({"kind": "permission", "layer": "L3", "summary": "may push to main"}, "permission boundary"),
    ({"kind": "knowledge", "source": "model-inference", "summary": "user is a night owl"}, "model-inferred"),
    ({"kind": "identity", "layer": "L4", "summary": "I am careful"}, "core identity"),
])
def test_high_risk_becomes_a_proposal(vault, fields, reason):
    head = vault.head()
    result = memories.add(vault, fields, "b")
    assert result.commit is None and result.proposal and result.status == "pending_review"
    assert reason in result.risk_reason
    assert vault.head() == head
    with pytest.raises(NotFound):
        vault.get(result.id)
    proposed = proposals.memories_of(vault, proposals.get(vault, result.proposal))
    assert [(m.id, m.meta["status"], m.meta["risk"]) for m in proposed] == [(result.id, "pending_review", "high")]
    assert reason in proposed[0].meta["risk_reason"]


def test_state_override_is_high_risk(vault):
    old_fact(vault)
    result = override(vault)
    assert result.proposal and result.supersedes == "mem_old"
    assert "state override: would supersede active mem_old" in result.risk_reason
    assert statuses(vault) == {"mem_old": "active"}


def test_risk_policy_is_configurable(vault):
    cfg = vault.root / ".memrepo/config.toml"
    cfg.write_text('[risk]\nhigh_kinds = ["policy"]\nsupersede_is_high = false\nhigh_tags = ["#权限"]\n')
    from memrepo.review import policy
    policy.accept(vault, why="relax risk policy")  # lowering review takes a person's acceptance
    v = Vault(vault.root)
    assert memories.add(v, {"kind": "constraint", "layer": "L3", "summary": "c"}, "").commit  # now low
    assert memories.add(v, {"kind": "knowledge", "tags": ["#权限"], "summary": "t"}, "").proposal  # tag is high
    old_fact(v)
    low_override = override(v)
    assert low_override.commit and "risk policy allows direct overrides" in low_override.risk_reason
    assert statuses(v)["mem_old"] == "superseded" and statuses(v)["mem_new"] == "active"
    assert validate.validate_tree(v) == []
    v.close()


def test_cli_add_json_reports_the_proposal(vault):
    out = runner.invoke(app, ["--vault", str(vault.root), "add", "--kind", "policy", "--layer", "L3",
                              "--summary", "review every deploy", "--body", "b", "--json"])
    assert out.exit_code == 0, out.output
    data = json.loads(out.stdout)
    assert data["proposal"] == f"prop_{data['id']}" and data["status"] == "pending_review" and "commit" not in data


# ----------------------------------------------------------------- proposal branch

def test_proposal_is_made_without_touching_checkout_or_index(vault):
    old_fact(vault)
    (vault.root / "scratch.txt").write_text("untracked\n")
    (vault.root / "staged.txt").write_text("staged\n")
    git(vault.root, "add", "staged.txt")
    mem = vault.root / "memories/L2/mem_old.md"
    mem.write_text(mem.read_text() + "unsaved edit\n")
    before = snapshot(vault)
    index_before = (vault.root / ".git/index").read_bytes()
    result = override(vault)
    after = snapshot(vault)
    assert {k: v for k, v in after.items() if k != "refs"} == {k: v for k, v in before.items() if k != "refs"}
    assert (vault.root / ".git/index").read_bytes() == index_before
    branch = f"proposal/{result.proposal}"
    assert git(vault.root, "rev-parse", f"{branch}^") == before["main"]
    assert git(vault.root, "rev-list", "--count", f"main..{branch}").strip() == "1"
    changed = git(vault.root, "diff-tree", "--no-commit-id", "--name-only", "-r", branch).split()
    assert changed == ["memories/L2/mem_new.md"]
    assert "status: pending_review" in git(vault.root, "show", f"{branch}:memories/L2/mem_new.md")


def test_review_card_has_the_five_answers_and_is_the_commit_message(vault):
    old_fact(vault)
    base = vault.head()
    result = override(vault)
    card = proposals.card(vault, result.proposal)
    assert "1. Triggered by: agent-7 (source: user)" in card
    assert "2. Supersedes: mem_old (active): pool size 10" in card
    assert "3. Evidence: logs/load-test.md#L10-L20" in card
    assert "4. Affects: connection pool sizing" in card
    assert f"5. Rollback point: {base}" in card
    message = git(vault.root, "log", "-1", "--format=%B", f"proposal/{result.proposal}")
    body = card.split("\n\n", 1)[1].strip()
    assert body in message
    assert proposals.card(vault, "mem_new") == card  # the memory id is accepted too
    shown = runner.invoke(app, ["--vault", str(vault.root), "review", result.proposal])
    assert shown.exit_code == 0 and "2. Supersedes: mem_old (active): pool size 10" in shown.stdout


def test_proposals_list_and_all(vault):
    a = memories.add(vault, {"kind": "constraint", "layer": "L3", "summary": "a"}, "")
    b = memories.add(vault, {"kind": "policy", "layer": "L3", "summary": "b"}, "")
    c = memories.add(vault, {"kind": "permission", "layer": "L3", "summary": "c"}, "")
    proposals.apply(vault, a.proposal)
    proposals.reject(vault, b.proposal, why="too broad", reviewer="lead")
    assert [p.id for p in proposals.list_proposals(vault)] == [c.proposal]
    every = {p.id: p for p in proposals.list_proposals(vault, include_closed=True)}
    assert (every[a.proposal].status, every[b.proposal].status, every[c.proposal].status) == ("applied", "rejected", "open")
    assert every[b.proposal].outcome["reason"] == "too broad" and every[b.proposal].outcome["by"] == "lead"
    out = runner.invoke(app, ["--vault", str(vault.root), "proposals", "--all", "--json"])
    assert out.exit_code == 0
    assert {p["id"]: p["status"] for p in json.loads(out.stdout)} == {a.proposal: "applied", b.proposal: "rejected", c.proposal: "open"}


# ----------------------------------------------------------------- apply / reject

def test_apply_overwrite_supersedes_in_one_merge_commit(vault):
    old_fact(vault)
    result = override(vault)
    main_before = vault.head()
    tip = git(vault.root, "rev-parse", f"proposal/{result.proposal}").strip()
    merge = proposals.apply(vault, result.proposal, reviewer="lead")
    assert git(vault.root, "rev-list", "--parents", "-n", "1", merge).split() == [merge, main_before, tip]
    assert git(vault.root, "diff", "--name-only", main_before, merge).split() == \
           ["memories/L2/mem_new.md", "memories/L2/mem_old.md"]
    old, new = vault.get("mem_old").meta, vault.get("mem_new").meta
    assert (old["status"], old["superseded_by"]) == ("superseded", "mem_new")
    assert (new["status"], new["supersedes"]) == ("active", "mem_old")
    assert validate.validate_tree(vault) == []
    assert git(vault.root, "status", "--porcelain") == ""
    assert git(vault.root, "branch", "--list", "proposal/*") == ""
    assert "Memrepo-Reviewer: lead" in git(vault.root, "log", "-1", "--format=%B", merge)


def test_apply_append_keeps_both(vault):
    old_fact(vault)
    rule = memories.add(vault, {"id": "mem_rule", "subject": "proj", "kind": "constraint", "layer": "L3",
                                "summary": "pool changes need a load test"}, "")
    proposals.apply(vault, rule.proposal, mode="append")
    assert statuses(vault) == {"mem_old": "active", "mem_rule": "active"}
    assert validate.validate_tree(vault) == []


def test_append_that_would_leave_two_active_versions_stops(vault):
    old_fact(vault)
    result = override(vault)
    before = snapshot(vault)
    with pytest.raises(Conflict, match="two active memories"):
        proposals.apply(vault, result.proposal, mode="append")
    assert snapshot(vault) == before


def test_reject_records_who_and_why_and_keeps_history(vault):
    old_fact(vault)
    result = override(vault)
    commit = git(vault.root, "rev-parse", f"proposal/{result.proposal}").strip()
    main = vault.head()
    out = runner.invoke(app, ["--vault", str(vault.root), "reject", result.proposal, "--why", "load test was on staging"])
    assert out.exit_code == 0, out.output
    assert vault.head() == main
    assert git(vault.root, "branch", "--list", "proposal/*") == ""
    ref = f"refs/memrepo/rejected/{result.proposal}"
    message = git(vault.root, "log", "-1", "--format=%B", ref)
    assert "load test was on staging" in message and "Memrepo-Reviewer: Test Person" in message
    assert git(vault.root, "merge-base", "--is-ancestor", commit, ref) == ""
    p = proposals.get(vault, result.proposal)
    assert p.status == "rejected" and p.outcome["reason"] == "load test was on staging"
    assert statuses(vault) == {"mem_old": "active"}
    assert "load test was on staging" in proposals.card(vault, result.proposal)


def test_reject_needs_a_reason(vault):
    result = memories.add(vault, {"kind": "policy", "layer": "L3", "summary": "p"}, "")
    with pytest.raises(UsageError):
        proposals.reject(vault, result.proposal, why="  ")
    assert proposals.get(vault, result.proposal).status == "open"


# ----------------------------------------------------------------- conflicts and faults

def hand_commit(vault, rel: str, old: str, new: str, message: str) -> None:
    path = vault.root / rel
    path.write_text(path.read_text().replace(old, new))
    git(vault.root, "add", rel)
    proc = subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-m", message], capture_output=True,
                          text=True, env=person_env())
    assert proc.returncode == 0, proc.stderr


def test_apply_stops_when_the_target_changed_since_the_proposal(vault):
    old_fact(vault)
    result = override(vault)
    hand_commit(vault, "memories/L2/mem_old.md", "summary: pool size 10", "summary: pool size 12", "retune pool")
    before = snapshot(vault)
    with pytest.raises(Conflict) as e:
        proposals.apply(vault, result.proposal)
    assert "mem_old changed since proposal" in str(e.value) and "retune pool" in str(e.value)
    assert "review" in str(e.value)
    assert snapshot(vault) == before


def test_apply_stops_when_another_proposal_for_the_fact_went_first(vault):
    old_fact(vault)
    first = override(vault, "mem_a", "pool size 20")
    second = override(vault, "mem_b", "pool size 30")
    proposals.apply(vault, first.proposal)
    before = snapshot(vault)
    with pytest.raises(Conflict, match="mem_old changed since proposal"):
        proposals.apply(vault, second.proposal)
    assert snapshot(vault) == before
    # two proposals for a brand-new fact: the second sees the first's version as active
    one = memories.add(vault, {"id": "mem_r1", "subject": "proj", "fact": "release.auto", "kind": "constraint",
                               "layer": "L3", "summary": "no auto publish"}, "")
    two = memories.add(vault, {"id": "mem_r2", "subject": "proj", "fact": "release.auto", "kind": "constraint",
                               "layer": "L3", "summary": "auto publish on Fridays"}, "")
    proposals.apply(vault, one.proposal)
    before = snapshot(vault)
    with pytest.raises(Conflict, match=r"mem_r1 became active .*another proposal was applied first"):
        proposals.apply(vault, two.proposal)
    assert snapshot(vault) == before
    assert validate.validate_tree(vault) == []


def test_unknown_twice_and_closed_proposals_give_clear_errors(vault):
    result = memories.add(vault, {"kind": "policy", "layer": "L3", "summary": "p"}, "")
    before = snapshot(vault)
    with pytest.raises(NotFound, match="no proposal 'prop_nope'"):
        proposals.apply(vault, "prop_nope")
    with pytest.raises(NotFound):
        proposals.reject(vault, "prop_nope", why="x")
    assert snapshot(vault) == before
    proposals.apply(vault, result.proposal)
    before = snapshot(vault)
    with pytest.raises(Conflict, match="already applied"):
        proposals.apply(vault, result.proposal)
    with pytest.raises(Conflict, match="already applied"):
        proposals.reject(vault, result.proposal, why="too late")
    assert snapshot(vault) == before
    other = memories.add(vault, {"kind": "policy", "layer": "L3", "summary": "q"}, "")
    proposals.reject(vault, other.proposal, why="no")
    before = snapshot(vault)
    with pytest.raises(Conflict, match="already rejected"):
        proposals.apply(vault, other.proposal)
    assert snapshot(vault) == before
    assert runner.invoke(app, ["--vault", str(vault.root), "apply", "prop_nope"]).exit_code == 3  # not found


def test_proposal_branch_edited_by_hand_into_an_invalid_state(vault):
    result = memories.add(vault, {"id": "mem_p", "kind": "policy", "layer": "L3", "summary": "p"}, "")
    branch = f"proposal/{result.proposal}"
    git(vault.root, "switch", "-q", branch)
    rel = "memories/L3/mem_p.md"
    path = vault.root / rel
    path.write_text(path.read_text().replace("kind: policy", "kind: gossip"))
    git(vault.root, "commit", "-q", "--no-verify", "-am", "oops")
    git(vault.root, "switch", "-q", "main")
    before = snapshot(vault)
    with pytest.raises(InvalidMemory) as e:
        proposals.apply(vault, result.proposal)
    assert f"{rel}:kind: 'gossip'" in str(e.value) and "nothing was applied" in str(e.value)
    assert snapshot(vault) == before


def test_dirty_working_tree_stops_apply(vault):
    old_fact(vault)
    result = override(vault)
    mem = vault.root / "memories/L2/mem_old.md"
    mem.write_text(mem.read_text() + "half-typed note\n")
    before = snapshot(vault)
    with pytest.raises(Conflict, match="uncommitted changes in memories/L2/mem_old.md"):
        proposals.apply(vault, result.proposal)
    assert snapshot(vault) == before


def test_detached_head_stops_writes(vault):
    result = memories.add(vault, {"kind": "policy", "layer": "L3", "summary": "p"}, "")
    git(vault.root, "switch", "-q", "--detach", "main")
    before = snapshot(vault)
    with pytest.raises(Conflict, match="HEAD is detached"):
        proposals.apply(vault, result.proposal)
    with pytest.raises(Conflict, match="HEAD is detached"):
        memories.add(vault, {"summary": "x"}, "")
    assert snapshot(vault) == before


def test_missing_remote_stops_push(vault):
    result = memories.add(vault, {"kind": "policy", "layer": "L3", "summary": "p"}, "")
    before = snapshot(vault)
    with pytest.raises(UsageError, match="no git remote 'origin'"):
        proposals.push_proposal(vault, result.proposal)
    assert snapshot(vault) == before


# ----------------------------------------------------------------- rollback

def revert(vault, *args: str) -> None:
    proc = subprocess.run(["git", "-C", str(vault.root), "revert", "--no-edit", *args], capture_output=True,
                          text=True, env=person_env())
    assert proc.returncode == 0, proc.stderr + proc.stdout


def test_git_revert_of_an_apply_merge_restores_the_previous_version(vault):
    old_fact(vault)
    result = override(vault)
    merge = proposals.apply(vault, result.proposal)
    revert(vault, "-m", "1", merge)
    assert statuses(vault) == {"mem_old": "active"}
    assert "superseded_by" not in vault.get("mem_old").meta
    assert validate.validate_tree(vault) == []
    assert git(vault.root, "status", "--porcelain") == ""
    by_commit: dict[str, set] = {}
    for v in provenance.fact_history(vault, "proj", "db.pool"):
        by_commit.setdefault(v.commit, set()).add((v.id, v.status))
    assert list(by_commit.values()) == [{("mem_old", "active")}, {("mem_old", "superseded"), ("mem_new", "active")},
                                        {("mem_old", "active"), ("mem_new", None)}]


def test_git_revert_of_an_add_commit(vault):
    first = memories.add(vault, {"id": "mem_a", "summary": "a"}, "")
    memories.add(vault, {"id": "mem_b", "summary": "b"}, "")
    revert(vault, first.commit)
    assert statuses(vault) == {"mem_b": "active"}
    assert validate.validate_tree(vault) == []


def test_rollback_undoes_an_applied_override(vault):
    old_fact(vault)
    result = override(vault)
    proposals.apply(vault, result.proposal)
    out = runner.invoke(app, ["--vault", str(vault.root), "rollback", "mem_new", "--why", "pool too big", "--json"])
    assert out.exit_code == 0, out.output
    commit = json.loads(out.stdout)["commit"]
    assert statuses(vault) == {"mem_old": "active", "mem_new": "rolled_back"}
    assert validate.validate_tree(vault) == []
    message = git(vault.root, "log", "-1", "--format=%B", commit)
    assert "pool too big" in message and "Memrepo-Action: rollback" in message
    versions = provenance.fact_history(vault, "proj", "db.pool")
    assert {(v.id, v.status) for v in versions if v.commit == commit} == {("mem_new", "rolled_back"), ("mem_old", "active")}
    assert ("mem_new", "active") in [(v.id, v.status) for v in versions if v.commit != commit]


def test_rollback_of_a_plain_add(vault):
    memories.add(vault, {"id": "mem_a", "subject": "s", "fact": "f", "summary": "a"}, "")
    provenance.rollback(vault, "mem_a")
    assert statuses(vault) == {"mem_a": "rolled_back"}
    assert validate.validate_tree(vault) == []


def test_rollback_refuses_when_later_changes_depend_on_it(vault):
    old_fact(vault)
    result = override(vault)
    proposals.apply(vault, result.proposal)
    hand_commit(vault, "memories/L2/mem_new.md", "summary: pool size 20", "summary: pool size 20 (peak)", "clarify peak")
    before = snapshot(vault)
    with pytest.raises(Conflict) as e:
        provenance.rollback(vault, "mem_new")
    assert "later changes depend on" in str(e.value) and "clarify peak" in str(e.value)
    assert snapshot(vault) == before


def test_why_answers_from_git_history(vault):
    old_fact(vault)
    result = override(vault)
    merge = proposals.apply(vault, result.proposal, reviewer="lead")
    data = provenance.why(vault, "mem_new").as_dict()
    assert data["written_by"] == "agent-7" and data["activated_in"] == merge and data["applied_by"] == "lead"
    assert data["proposal"]["id"] == result.proposal and data["proposal"]["status"] == "applied"
    assert data["supersedes"] == {"id": "mem_old", "summary": "pool size 10"}
    assert data["evidence"] == ["logs/load-test.md#L10-L20"]
    out = runner.invoke(app, ["--vault", str(vault.root), "why", "mem_new", "--json"])
    assert out.exit_code == 0 and json.loads(out.stdout)["applied_by"] == "lead"
    plain = provenance.why(vault, "mem_old").as_dict()
    assert plain["action"] == "add" and plain["proposal"] is None


def test_history_cli(vault):
    old_fact(vault)
    out = runner.invoke(app, ["--vault", str(vault.root), "history", "proj", "db.pool", "--json"])
    assert out.exit_code == 0 and [r["id"] for r in json.loads(out.stdout)] == ["mem_old"]
    assert json.loads(runner.invoke(app, ["--vault", str(vault.root), "history", "proj", "nope", "--json"]).stdout) == []


# ----------------------------------------------------------------- pull requests

def memory_state(root) -> dict[str, tuple]:
    """(status, supersedes, superseded_by) of every memory file committed on main."""
    v = Vault(root)
    try:
        return {r["id"]: (r["status"],) + tuple(v.get(r["id"]).meta.get(k) for k in ("supersedes", "superseded_by"))
                for r in v.list()}
    finally:
        v.close()


def test_push_then_forge_merge_equals_apply(vault, tmp_path):
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(vault.root, "remote", "add", "origin", str(bare))
    old_fact(vault)
    git(vault.root, "push", "-q", "origin", "main")
    result = override(vault)
    pushed = runner.invoke(app, ["--vault", str(vault.root), "proposals", "push", result.proposal])
    assert pushed.exit_code == 0, pushed.output
    branch = f"proposal/{result.proposal}"
    assert git(bare, "rev-parse", branch).strip() == git(vault.root, "rev-parse", branch).strip()

    clone = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(bare), str(clone))
    git(clone, "merge", "-q", "--no-ff", "-m", "Merge pull request #1", f"origin/{branch}")
    forge = memory_state(clone)

    proposals.apply(vault, result.proposal)
    assert forge == memory_state(vault.root) == {
        "mem_old": ("superseded", None, "mem_new"), "mem_new": ("active", "mem_old", None)}
    cloned = Vault(clone)
    from memrepo.team import sync
    assert sync.fetch_records(cloned) == []  # a plain clone takes memrepo's records ('hooks install' does)
    assert validate.validate_tree(cloned) == []
    cloned.close()


def test_add_with_push_and_merge_through_the_hooked_vault(vault, tmp_path):
    """A person merging the pushed branch in a vault with memrepo's hooks gets past pre-merge-commit."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(bare))
    git(vault.root, "remote", "add", "origin", str(bare))
    result = memories.add(vault, {"id": "mem_rule", "kind": "constraint", "layer": "L3", "summary": "r"}, "", push=True)
    branch = f"proposal/{result.proposal}"
    assert git(bare, "rev-parse", branch).strip()
    proc = subprocess.run(["git", "-C", str(vault.root), "merge", "--no-ff", "-m", "merge PR", branch],
                          capture_output=True, text=True, env=person_env())
    assert proc.returncode == 0, proc.stderr
    assert statuses(vault) == {"mem_rule": "active"}
    assert validate.validate_tree(vault) == []


def test_plain_merge_of_an_unactivated_proposal_is_refused_by_the_hook(vault):
    """Merging the raw proposal (pending_review) then flipping status by hand is the gate's job."""
    result = memories.add(vault, {"id": "mem_rule", "kind": "constraint", "layer": "L3", "summary": "r"}, "")
    git(vault.root, "merge", "-q", "--no-ff", "-m", "merge raw", f"proposal/{result.proposal}")
    assert statuses(vault) == {"mem_rule": "pending_review"}
    path = vault.root / "memories/L3/mem_rule.md"
    path.write_text(path.read_text().replace("status: pending_review", "status: active"))
    git(vault.root, "add", "memories")
    proc = subprocess.run(["git", "-C", str(vault.root), "commit", "-q", "-m", "activate by hand"],
                          capture_output=True, text=True, env=person_env())
    assert proc.returncode == 1 and "high-risk memory" in proc.stderr


# ----------------------------------------------------------------- import --propose

def test_import_propose_sends_the_whole_import_to_review(vault, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"id": f"mem_i{i}", "layer": "L2", "summary": f"item {i}"}) for i in range(3)) + "\n")
    head = vault.head()
    result = memories.import_jsonl(vault, src, propose=True)
    assert result.proposal and result.commit is None and vault.head() == head
    p = proposals.get(vault, result.proposal)
    assert sorted(p.ids) == ["mem_i0", "mem_i1", "mem_i2"]
    assert {m.meta["status"] for m in proposals.memories_of(vault, p)} == {"pending_review"}
    proposals.apply(vault, result.proposal)
    assert statuses(vault) == {"mem_i0": "active", "mem_i1": "active", "mem_i2": "active"}
    assert validate.validate_tree(vault) == []


@pytest.mark.xfail(strict=True, reason=(
    "known gap: git runs no verifying hook on 'git revert' (only prepare-commit-msg and post-commit), "
    "so reverting a rollback re-activates the old version beside the current one; needs a "
    "prepare-commit-msg gate for revert/cherry-pick ('memrepo hook prepare-commit-msg' in cli.py)"))
def test_hand_revert_of_a_rollback_commit_is_not_checked(vault):
    memories.add(vault, {"id": "mem_1", "subject": "proj", "fact": "db.pool", "layer": "L2", "summary": "10"}, "")
    undo = provenance.rollback(vault, "mem_1")
    memories.add(vault, {"id": "mem_2", "subject": "proj", "fact": "db.pool", "layer": "L2", "summary": "20"}, "")
    head = vault.head()
    proc = subprocess.run(["git", "-C", str(vault.root), "revert", "--no-edit", undo], capture_output=True,
                          text=True, env=person_env())
    if proc.returncode != 0:  # refused: fine, as long as nothing changed
        subprocess.run(["git", "-C", str(vault.root), "revert", "--abort"], capture_output=True, env=person_env())
        assert vault.head() == head
    assert validate.validate_tree(vault) == []


def test_rollback_of_one_imported_memory_keeps_the_rest_of_the_import(vault, tmp_path):
    src = tmp_path / "in.jsonl"
    src.write_text("\n".join(json.dumps({"id": f"mem_i{i}", "layer": "L2", "summary": f"item {i}"}) for i in range(3)) + "\n")
    memories.import_jsonl(vault, src)
    commit = provenance.rollback(vault, "mem_i1")
    assert statuses(vault) == {"mem_i0": "active", "mem_i1": "rolled_back", "mem_i2": "active"}
    assert git(vault.root, "diff", "--name-only", f"{commit}^", commit).split() == ["memories/L2/mem_i1.md"]
    assert validate.validate_tree(vault) == []


def test_rollback_of_one_memory_of_an_applied_batch_proposal(vault, tmp_path):
    old_fact(vault)
    src = tmp_path / "batch.jsonl"
    src.write_text(json.dumps({"id": "mem_b1", "layer": "L2", "summary": "b1"}) + "\n"
                   + json.dumps({"id": "mem_b2", "layer": "L2", "summary": "b2"}) + "\n")
    result = memories.import_jsonl(vault, src, propose=True)
    proposals.apply(vault, result.proposal)
    provenance.rollback(vault, "mem_b2")
    assert statuses(vault) == {"mem_old": "active", "mem_b1": "active", "mem_b2": "rolled_back"}
    assert validate.validate_tree(vault) == []


def test_teammate_pulls_a_proposal_merged_on_the_forge_into_a_diverged_main(vault, tmp_path):
    """git runs pre-merge-commit before writing MERGE_HEAD: the hook must still see what is merged."""
    bare = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(bare))
    git(vault.root, "remote", "add", "origin", str(bare))
    git(vault.root, "push", "-q", "origin", "main")
    teammate = tmp_path / "teammate"
    git(tmp_path, "clone", "-q", str(bare), str(teammate))
    from memrepo.review import hooks
    from memrepo.team import sync
    hooks.install(teammate)
    sync.install_driver(Vault(teammate))  # as 'memrepo hooks install' does: git pull brings memrepo's records
    result = memories.add(vault, {"id": "mem_rule", "kind": "constraint", "layer": "L3", "summary": "r"}, "", push=True)
    forge = tmp_path / "forge"
    git(tmp_path, "clone", "-q", str(bare), str(forge))
    git(forge, "merge", "-q", "--no-ff", "-m", "Merge pull request #7", f"origin/proposal/{result.proposal}")
    git(forge, "push", "-q", "origin", "main", f":proposal/{result.proposal}")  # merged and branch deleted
    mate = Vault(teammate)
    memories.add(mate, {"id": "mem_local", "summary": "teammate's own note"}, "")  # main has diverged
    proc = subprocess.run(["git", "-C", str(teammate), "pull", "-q", "--no-rebase"],
                          capture_output=True, text=True, env=person_env())
    assert proc.returncode == 0, proc.stderr
    assert statuses(mate) == {"mem_rule": "active", "mem_local": "active"}
    assert validate.validate_tree(mate) == []
    mate.close()
