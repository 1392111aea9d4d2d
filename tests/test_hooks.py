"""A person edits memories in a text editor and commits with plain git: the hooks decide."""
from __future__ import annotations

import json
import subprocess

import pytest
from conftest import git, person_env
from typer.testing import CliRunner

from memrepo.cli.app import app
from memrepo.review import writes as memories

runner = CliRunner()



def commit(root, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run(["git", "-C", str(root), "commit", "-q", *args], capture_output=True, text=True,
                          env=person_env())


def memory_text(memory_id: str, *, layer="L2", kind="knowledge", subject="proj", fact=None, status="active",
                source="user", extra: str = "", body="body\n") -> str:
    lines = ["---", f"id: {memory_id}", f"layer: {layer}", f"kind: {kind}", f"subject: {subject}"]
    if fact:
        lines.append(f"fact: {fact}")
    lines += [f"summary: about {memory_id}", f"status: {status}", f"source: {source}",
              'created: "2026-11-29T09:30:00+00:00"']
    lines += [ln for ln in extra.splitlines() if ln]
    return "\n".join(lines) + "\n---\n" + body


def write(vault, rel: str, text: str) -> str:
    target = vault.root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")
    return rel


def state(vault):
    return git(vault.root, "rev-parse", "HEAD"), git(vault.root, "status", "--porcelain")


def test_valid_hand_edit_commits(vault):
    added = memories.add(vault, {"id": "mem_tea", "subject": "user", "kind": "preference", "summary": "Likes tea"}, "Tea.")
    path = vault.root / added.path
    path.write_text(path.read_text().replace("Tea.", "Tea, green, no sugar. 绿茶。"), encoding="utf-8")
    new = write(vault, "memories/L2/mem_hand.md", memory_text("mem_hand"))
    git(vault.root, "add", added.path, new)
    proc = commit(vault.root, "-m", "hand edits")
    assert proc.returncode == 0, proc.stderr
    assert git(vault.root, "status", "--porcelain") == ""
    assert "绿茶" in vault.get("mem_tea").body
    assert vault.get("mem_hand").meta["status"] == "active"


def test_invalid_hand_edit_is_refused_with_every_problem(vault):
    write(vault, "memories/L2/mem_one.md", memory_text("mem_one").replace("layer: L2", "layer: L5"))
    write(vault, "memories/L2/mem_two.md", memory_text("mem_two", extra="weight: 7"))
    git(vault.root, "add", "memories")
    before = state(vault)
    proc = commit(vault.root, "-m", "bad")
    assert proc.returncode == 1
    lines = [ln.strip() for ln in proc.stderr.splitlines()]
    assert "memories/L2/mem_one.md:layer: 'L5' is not one of L1, L2, L3, L4" in lines
    assert any(ln.startswith("memories/L2/mem_two.md:weight: ") for ln in lines)
    assert state(vault) == before


def test_commit_all_and_partial_commit_are_checked_too(vault):
    """`git commit -a` and `git commit PATH` use a temporary index (GIT_INDEX_FILE)."""
    added = memories.add(vault, {"id": "mem_x", "layer": "L2", "summary": "x"}, "b")
    path = vault.root / added.path
    path.write_text(path.read_text().replace("status: active", "status: finished"))
    before = state(vault)
    assert commit(vault.root, "-am", "all").returncode == 1
    proc = commit(vault.root, "-m", "partial", "--", added.path)
    assert proc.returncode == 1 and f"{added.path}:status:" in proc.stderr
    assert state(vault) == before


def test_only_one_active_per_subject_fact_across_files(vault):
    memories.add(vault, {"id": "mem_v1", "subject": "proj", "fact": "ui.theme", "layer": "L2", "summary": "dark"}, "")
    write(vault, "memories/L2/mem_v2.md", memory_text("mem_v2", fact="ui.theme"))
    git(vault.root, "add", "memories")
    before = state(vault)
    proc = commit(vault.root, "-m", "second active")
    assert proc.returncode == 1
    assert "memories/L2/mem_v2.md:status: another memory is already active for (proj, ui.theme): mem_v1" in proc.stderr
    assert state(vault) == before


def test_two_new_active_files_for_one_fact_in_one_commit(vault):
    git(vault.root, "switch", "-q", "-c", "drafts")  # off main: the review gate does not apply, the invariant does
    write(vault, "memories/L2/mem_a.md", memory_text("mem_a", fact="db.pool"))
    write(vault, "memories/L2/mem_b.md", memory_text("mem_b", fact="db.pool"))
    git(vault.root, "add", "memories")
    proc = commit(vault.root, "-m", "two")
    assert proc.returncode == 1 and "already active for (proj, db.pool)" in proc.stderr


def test_supersedes_must_be_consistent_in_the_same_commit(vault):
    memories.add(vault, {"id": "mem_old", "subject": "proj", "fact": "db.pool", "layer": "L2", "summary": "10"}, "")
    git(vault.root, "switch", "-q", "-c", "drafts")
    write(vault, "memories/L2/mem_new.md", memory_text("mem_new", fact="db.pool", extra="supersedes: mem_old"))
    git(vault.root, "add", "memories")
    proc = commit(vault.root, "-m", "half a supersede")
    assert proc.returncode == 1
    assert "memories/L2/mem_new.md:supersedes: mem_old must be status 'superseded' with superseded_by: mem_new" in proc.stderr
    old = vault.root / "memories/L2/mem_old.md"
    old.write_text(old.read_text().replace("status: active", "status: superseded\nsuperseded_by: mem_new"))
    git(vault.root, "add", "memories")
    proc = commit(vault.root, "-m", "whole supersede")
    assert proc.returncode == 0, proc.stderr


def test_supersedes_pointing_nowhere_and_deleting_an_old_version(vault):
    git(vault.root, "switch", "-q", "-c", "drafts")
    write(vault, "memories/L2/mem_n.md", memory_text("mem_n", fact="f", extra="supersedes: mem_ghost"))
    git(vault.root, "add", "memories")
    proc = commit(vault.root, "-m", "ghost")
    assert proc.returncode == 1 and "memories/L2/mem_n.md:supersedes: mem_ghost does not exist" in proc.stderr
    git(vault.root, "rm", "-q", "--cached", "memories/L2/mem_n.md")
    # a consistent pair, committed; then deleting the old version is refused
    write(vault, "memories/L2/mem_o.md", memory_text("mem_o", fact="g", status="superseded", extra="superseded_by: mem_p"))
    write(vault, "memories/L2/mem_p.md", memory_text("mem_p", fact="g", extra="supersedes: mem_o"))
    git(vault.root, "add", "memories/L2/mem_o.md", "memories/L2/mem_p.md")
    assert commit(vault.root, "-m", "pair").returncode == 0
    git(vault.root, "rm", "-q", "memories/L2/mem_o.md")
    proc = commit(vault.root, "-m", "delete old")
    assert proc.returncode == 1
    assert "memories/L2/mem_p.md:supersedes: points at mem_o" in proc.stderr and "never deleted" in proc.stderr


@pytest.mark.parametrize("kind, source, layer, why", [
    ("constraint", "user", "L2", "policy constraint"),
    ("permission", "user", "L2", "permission boundary"),
    ("knowledge", "model-inference", "L2", "model-inferred"),
    ("identity", "user", "L4", "core identity"),
])
def test_high_risk_memory_cannot_become_active_by_a_plain_commit_on_main(vault, kind, source, layer, why):
    rel = write(vault, f"memories/{layer}/mem_risky.md", memory_text("mem_risky", layer=layer, kind=kind, source=source))
    git(vault.root, "add", rel)
    before = state(vault)
    proc = commit(vault.root, "-m", "sneak it in")
    assert proc.returncode == 1
    assert f"{rel}:status: high-risk memory" in proc.stderr and why in proc.stderr and "--no-verify" in proc.stderr
    assert state(vault) == before
    # pending_review is fine: it takes no effect
    write(vault, rel, memory_text("mem_risky", layer=layer, kind=kind, source=source, status="pending_review"))
    git(vault.root, "add", rel)
    assert commit(vault.root, "-m", "for review").returncode == 0


def test_hand_override_of_an_active_fact_on_main_is_refused_but_no_verify_overrides(vault):
    memories.add(vault, {"id": "mem_old", "subject": "proj", "fact": "db.pool", "layer": "L2", "summary": "10"}, "")
    old = vault.root / "memories/L2/mem_old.md"
    old.write_text(old.read_text().replace("status: active", "status: superseded\nsuperseded_by: mem_new"))
    write(vault, "memories/L2/mem_new.md", memory_text("mem_new", fact="db.pool", extra="supersedes: mem_old"))
    git(vault.root, "add", "memories")
    before = state(vault)
    proc = commit(vault.root, "-m", "override by hand")
    assert proc.returncode == 1 and "state override" in proc.stderr
    assert state(vault) == before
    proc = commit(vault.root, "--no-verify", "-m", "deliberate override")
    assert proc.returncode == 0
    assert git(vault.root, "log", "-1", "--format=%s").strip() == "deliberate override"
    from memrepo.review import validate
    # --no-verify passes the hook but not the audit, until the commit says why
    assert [(p.path, p.field) for p in validate.validate_tree(vault)] == [("memories/L2/mem_new.md", "status")]
    proc = commit(vault.root, "--amend", "--no-verify", "-m", "deliberate override\n\nMemrepo-Override: pool size agreed in standup")
    assert proc.returncode == 0
    assert validate.validate_tree(vault) == []
    assert [o.reason for o in validate.validate_vault(vault).overrides] == ["pool size agreed in standup"]


def test_editing_an_already_active_high_risk_memory_is_allowed(vault):
    added = memories.add(vault, {"id": "mem_rule", "kind": "constraint", "layer": "L3", "summary": "No auto publish"}, "")
    from memrepo.review import proposals
    proposals.apply(vault, added.proposal)
    path = vault.root / "memories/L3/mem_rule.md"
    path.write_text(path.read_text() + "Typo fixed.\n")
    git(vault.root, "add", "memories")
    assert commit(vault.root, "-m", "typo").returncode == 0


def test_unrelated_files_are_not_checked(vault):
    write(vault, "notes/todo.md", "---\nnot: [valid\n")
    git(vault.root, "add", "notes")
    assert commit(vault.root, "-m", "notes").returncode == 0


def test_stray_file_under_memories_is_refused(vault):
    write(vault, "memories/L2/readme.txt", "hello")
    git(vault.root, "add", "memories")
    proc = commit(vault.root, "-m", "stray")
    assert proc.returncode == 1 and "memories/L2/readme.txt:(file): only <id>.md" in proc.stderr


# ----------------------------------------------------------------- memrepo validate

def test_validate_exit_codes_and_json(vault, monkeypatch):
    root = str(vault.root)
    ok = runner.invoke(app, ["--vault", root, "validate", "--json"])
    assert ok.exit_code == 0 and json.loads(ok.stdout) == {"ok": True, "problems": [], "overrides": []}
    good = write(vault, "memories/L2/mem_good.md", memory_text("mem_good"))
    bad = write(vault, "memories/L2/mem_bad.md", memory_text("mem_bad", kind="gossip", extra="confidence: 2"))
    monkeypatch.chdir(vault.root)
    assert runner.invoke(app, ["validate", good]).exit_code == 0
    out = runner.invoke(app, ["validate", "--json", good, bad])
    assert out.exit_code == 1
    problems = json.loads(out.stdout)["problems"]
    assert {(p["path"], p["field"]) for p in problems} == {(bad, "kind"), (bad, "confidence")}
    text = runner.invoke(app, ["validate"])
    assert text.exit_code == 1
    assert f"{bad}:kind: 'gossip' is not one of" in text.output
    folder = runner.invoke(app, ["validate", "--json", "memories/L2"])
    assert folder.exit_code == 1 and len(json.loads(folder.stdout)["problems"]) == 2
    missing = runner.invoke(app, ["validate", "memories/L2/nope.md"])
    assert missing.exit_code == 1 and "does not exist" in missing.output


def test_validate_paths_checks_against_the_committed_vault(vault):
    from memrepo.review import validate
    memories.add(vault, {"id": "mem_v1", "subject": "proj", "fact": "ui.theme", "layer": "L2", "summary": "dark"}, "")
    rel = write(vault, "memories/L2/mem_v2.md", memory_text("mem_v2", fact="ui.theme"))
    problems = validate.validate_paths(vault, [vault.root / rel])
    assert [(p.path, p.field) for p in problems] == [(rel, "status")]
    assert [(p.path, p.field) for p in validate.validate_tree(vault)] == \
           sorted([(rel, "status"), ("memories/L2/mem_v1.md", "status")])
