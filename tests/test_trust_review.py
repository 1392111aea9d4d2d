"""The review gate: hand-written files go through review, a proposal merged on a forge counts
as applied, an id pending in an open proposal is taken."""
from __future__ import annotations

import json

import pytest
from conftest import cli, git, person_git

from memrepo import api
from memrepo.errors import InvalidMemory, NotFound, UsageError
from memrepo.review import proposals, validate
from memrepo.review import writes as memories


def write_hand(path, memory_id: str | None = "mem_h", **meta) -> str:
    """A memory file as a person writes it in an editor: front matter and a body."""
    fields = {"id": memory_id, "layer": "L2", "kind": "knowledge", "subject": "proj",
              "summary": f"{memory_id} by hand", **meta}
    body = fields.pop("body", "Written by hand.\n")
    lines = ["---"] + [f"{k}: {v}" for k, v in fields.items() if v is not None] + ["---", body]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("\n".join(lines), encoding="utf-8")
    return str(path)


def open_ids(vault) -> list[str]:
    return [i for p in proposals.list_proposals(vault) for i in p.ids]


# ---- case 10: memrepo add --file

def test_a_high_risk_hand_file_becomes_a_proposal_never_active_on_main(vault, tmp_path):
    path = write_hand(tmp_path / "rule.md", "mem_rule", kind="constraint", status="active")
    head = vault.head()
    [w] = memories.add_files(vault, [path]).written
    assert w.proposal and w.status == "pending_review" and w.commit is None
    assert vault.head() == head
    with pytest.raises(NotFound, match="pending in proposal"):
        vault.get("mem_rule")
    proposals.apply(vault, w.proposal)
    assert vault.get("mem_rule").meta["status"] == "active"
    assert validate.validate_tree(vault) == []


def test_a_pending_review_hand_file_goes_to_review_whatever_its_risk(vault, tmp_path):
    path = write_hand(tmp_path / "note.md", "mem_note", status="pending_review")
    [w] = api.add_files(vault, [path]).written
    assert w.proposal and "pending_review" in w.risk_reason
    assert open_ids(vault) == ["mem_note"]


def test_a_low_risk_hand_file_commits_like_add(vault, tmp_path):
    path = write_hand(tmp_path / "ok.md", "mem_ok", layer="L1", kind="event")
    [w] = memories.add_files(vault, [path]).written
    assert w.commit == vault.head() and w.status == "active"
    memory = vault.get("mem_ok")
    assert memory.meta["author"] == "Test Person" and memory.body.strip() == "Written by hand."


def test_a_hand_file_with_an_existing_id_is_refused(vault, tmp_path):
    memories.add(vault, {"id": "mem_taken", "summary": "first"}, "")
    head = vault.head()
    path = write_hand(tmp_path / "again.md", "mem_taken", layer="L1", kind="event")
    with pytest.raises(InvalidMemory, match="already exists") as e:
        memories.add_files(vault, [path])
    assert str(e.value).startswith(f"{path}:id:")
    assert vault.head() == head


def test_one_bad_file_and_nothing_is_written_unless_skip_invalid(vault, tmp_path):
    good = write_hand(tmp_path / "a.md", "mem_a", layer="L1", kind="event")
    rule = write_hand(tmp_path / "b.md", "mem_b", kind="constraint")
    bad = write_hand(tmp_path / "c.md", "mem_c", tags=5)
    worse = write_hand(tmp_path / "d.md", "mem_d", status="superseded")
    head = vault.head()
    with pytest.raises(InvalidMemory) as e:
        memories.add_files(vault, [good, rule, bad, worse])
    text = str(e.value)
    assert f"{bad}:tags:" in text and f"{worse}:status:" in text and "--skip-invalid" in text
    assert vault.head() == head and open_ids(vault) == []
    result = memories.add_files(vault, [good, rule, bad, worse], skip_invalid=True)
    assert [w.id for w in result.written] == ["mem_a", "mem_b"]
    assert {p.path for p in result.skipped} == {bad, worse}
    assert open_ids(vault) == ["mem_b"] and vault.get("mem_a").meta["status"] == "active"


def test_a_folder_of_hand_files_and_duplicate_ids_in_it(vault, tmp_path):
    folder = tmp_path / "notes"
    write_hand(folder / "one.md", "mem_1", layer="L1", kind="event")
    write_hand(folder / "sub" / "two.md", "mem_2", layer="L1", kind="event")
    write_hand(folder / "three.md", None, layer="L1", kind="event", summary="no id given")
    result = memories.add_files(vault, [folder])
    assert len(result.written) == 3 and {"mem_1", "mem_2"} <= {w.id for w in result.written}
    write_hand(folder / "x.md", "mem_x", layer="L1", kind="event")
    write_hand(folder / "y.md", "mem_x", layer="L1", kind="event")
    with pytest.raises(InvalidMemory, match="ids must be unique"):
        memories.add_files(vault, [folder / "x.md", folder / "y.md"])
    with pytest.raises(NotFound):
        memories.add_files(vault, [tmp_path / "missing.md"])


def test_cli_add_file_as_a_process(vault, tmp_path):
    ok = write_hand(tmp_path / "ok.md", "mem_ok", layer="L1", kind="event")
    rule = write_hand(tmp_path / "rule.md", "mem_rule", kind="constraint")
    proc = cli(vault.root, "add", "--file", ok, "--file", rule, "--json")
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert [w["status"] for w in out["written"]] == ["active", "pending_review"]
    assert out["written"][1]["proposal"] == "prop_mem_rule"
    bad = write_hand(tmp_path / "bad.md", "mem_bad", evidence=1.5)
    proc = cli(vault.root, "add", "--file", bad)
    assert proc.returncode == 5 and proc.stderr.startswith(f"{bad}:evidence:") and "Traceback" not in proc.stderr
    proc = cli(vault.root, "add", "--file", bad, "--kind", "event")
    assert proc.returncode == 2 and "--kind cannot be combined with --file" in proc.stderr


def test_the_hook_names_add_file_and_add_file_takes_the_staged_file_over(vault):
    path = "memories/L2/mem_rule.md"
    write_hand(vault.root / path, "mem_rule", kind="constraint", status="active", created="2026-11-01T00:00:00+00:00",
               source="user")
    git(vault.root, "add", path)
    proc = person_git(vault.root, "commit", "-m", "a rule")
    assert proc.returncode == 1 and f"memrepo add --file {path}" in proc.stderr
    proc = cli(vault.root, "add", "--file", str(vault.root / path))
    assert proc.returncode == 0, proc.stderr
    assert "prop_mem_rule" in proc.stdout and f"took over {path}" in proc.stdout
    assert not (vault.root / path).exists()
    assert git(vault.root, "status", "--porcelain") == ""
    assert cli(vault.root, "validate").returncode == 0
    proposals.apply(vault, "prop_mem_rule")
    assert (vault.root / path).exists() and git(vault.root, "status", "--porcelain") == ""


def test_a_low_risk_hand_file_in_the_vault_is_committed_at_its_place(vault):
    path = "memories/L1/mem_ev.md"
    write_hand(vault.root / path, "mem_ev", layer="L1", kind="event", created="2026-11-01T00:00:00+00:00")
    git(vault.root, "add", path)
    [w] = memories.add_files(vault, [vault.root / path]).written
    assert w.commit and w.path == "memories/L1/2026-11-01/mem_ev.md" and (vault.root / w.path).exists()
    assert not (vault.root / path).exists()  # taken over: the memory lives at its canonical place
    assert git(vault.root, "status", "--porcelain") == ""


# ---- case 1 gap: an id pending in an open proposal is taken

def test_an_id_pending_in_an_open_proposal_is_refused_everywhere(vault, tmp_path):
    pending = memories.add(vault, {"id": "mem_p", "kind": "constraint", "subject": "release", "summary": "no auto-publish"}, "")
    head = vault.head()
    with pytest.raises(InvalidMemory, match=f"pending in proposal {pending.proposal}"):
        memories.add(vault, {"id": "mem_p", "kind": "event", "summary": "sneaks in"}, "")
    lines = tmp_path / "in.jsonl"
    lines.write_text(json.dumps({"id": "mem_p", "summary": "also sneaks in", "kind": "event"}) + "\n")
    with pytest.raises(InvalidMemory, match=f"pending in proposal {pending.proposal}"):
        memories.import_jsonl(vault, lines)
    hand = write_hand(tmp_path / "p.md", "mem_p", layer="L1", kind="event")
    with pytest.raises(InvalidMemory, match=f"pending in proposal {pending.proposal}"):
        memories.add_files(vault, [hand])
    assert vault.head() == head
    proc = cli(vault.root, "add", "--id", "mem_p", "--summary", "cli too", stdin="")
    assert proc.returncode == 5 and pending.proposal in proc.stderr


def test_an_id_pending_in_a_pushed_proposal_is_refused(vault, tmp_path):
    remote = tmp_path / "remote.git"
    git(tmp_path, "init", "-q", "--bare", str(remote))
    git(vault.root, "remote", "add", "origin", str(remote))
    pending = memories.add(vault, {"id": "mem_q", "kind": "constraint", "subject": "release", "summary": "rule"}, "",
                           push=True)
    assert proposals.get(vault, pending.proposal).tip != proposals.get(vault, pending.proposal).commit
    with pytest.raises(InvalidMemory, match=f"pending in proposal {pending.proposal}"):
        memories.add(vault, {"id": "mem_q", "kind": "event", "summary": "sneaks in"}, "")
    assert proposals.open_ids(vault) == {"mem_q": pending.proposal}


def test_usage_errors_of_add_files(vault, tmp_path):
    (tmp_path / "empty").mkdir()
    with pytest.raises(UsageError, match="no memory files"):
        memories.add_files(vault, [tmp_path / "empty"])


# ---- case 11: a pushed proposal merged on a forge is applied

def pushed_rule(vault, tmp_path):
    """Propose a rule and push it to a bare 'forge'; a second clone of the forge to merge it in."""
    forge = tmp_path / "forge.git"
    git(tmp_path, "init", "-q", "--bare", str(forge))
    git(vault.root, "remote", "add", "origin", str(forge))
    git(vault.root, "push", "-q", "origin", "main")
    pending = memories.add(vault, {"id": "mem_rule", "kind": "constraint", "subject": "release",
                                   "summary": "never auto-publish"}, "", push=True)
    other = tmp_path / "other"
    git(tmp_path, "clone", "-q", str(forge), str(other))
    return pending, other


def merged_on_forge(vault, tmp_path, how: str) -> str:
    """Propose a rule, push it, merge it on the 'forge' from a second clone, bring main back."""
    pending, other = pushed_rule(vault, tmp_path)
    git(other, "merge", "-q", "--no-ff", "-m", "Merge pull request #1 from proposal/prop_mem_rule",
        f"origin/proposal/{pending.proposal}")
    git(other, "push", "-q", "origin", "main", f":refs/heads/proposal/{pending.proposal}")  # the forge deletes the branch
    if how == "pull":
        git(vault.root, "pull", "-q", "--ff-only", "origin", "main")
    else:
        proc = cli(vault.root, "sync")
        assert proc.returncode == 0, proc.stderr
    return pending.proposal


@pytest.mark.parametrize("how", ["pull", "sync"])
def test_a_proposal_merged_on_a_forge_is_applied(vault, tmp_path, how):
    pid = merged_on_forge(vault, tmp_path, how)
    assert vault.get("mem_rule").meta["status"] == "active"
    assert cli(vault.root, "validate").returncode == 0
    proc = cli(vault.root, "proposals", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    [listed] = json.loads(cli(vault.root, "proposals", "--all", "--json").stdout)
    assert listed["id"] == pid and listed["status"] == "applied"
    why = json.loads(cli(vault.root, "why", "mem_rule", "--json").stdout)
    assert why["proposal"]["id"] == pid and why["proposal"]["status"] == "applied"
    assert why["action"] != "hand commit"
    proc = cli(vault.root, "apply", pid)
    assert proc.returncode == 4 and "already applied" in proc.stderr
    assert cli(vault.root, "reject", pid, "--why", "late").returncode == 4


def test_rolling_back_a_memory_a_rollback_restored_keeps_the_fact_active(vault):
    from memrepo.errors import Conflict
    from memrepo.review import provenance
    memories.add(vault, {"id": "mem_v1", "subject": "proj", "fact": "ui.theme", "kind": "knowledge",
                         "layer": "L2", "summary": "dark"}, "")
    r = memories.add(vault, {"id": "mem_v2", "subject": "proj", "fact": "ui.theme", "kind": "knowledge",
                             "layer": "L2", "summary": "light"}, "")
    proposals.apply(vault, r.proposal)
    provenance.rollback(vault, "mem_v2")
    assert vault.get("mem_v1").meta["status"] == "active"
    head = vault.head()
    with pytest.raises(Conflict, match="no active version"):
        provenance.rollback(vault, "mem_v1")
    assert vault.head() == head
    active = [row["id"] for row in vault.list(subject="proj", fact="ui.theme", status="active")]
    assert active == ["mem_v1"]
    proc = cli(vault.root, "rollback", "mem_v1")
    assert proc.returncode == 4 and "memrepo add" in proc.stderr


# ---- audit gaps: forged markers and trailers are checked against what memrepo's commits do

def hand_constraint(vault, memory_id: str = "mem_c", **meta) -> str:
    path = f"memories/L2/{memory_id}.md"
    write_hand(vault.root / path, memory_id, kind="constraint", status="active", source="user",
               created="2026-11-01T00:00:00+00:00", **meta)
    git(vault.root, "add", path)
    return path


def test_a_hand_made_applied_marker_vouches_for_nothing(vault):
    path = hand_constraint(vault)
    git(vault.root, "commit", "-q", "--no-verify", "-m", "a rule")
    git(vault.root, "update-ref", "refs/memrepo/applied/prop_fake", "HEAD")
    head = git(vault.root, "rev-parse", "HEAD").strip()
    [problem] = validate.validate_tree(vault)
    assert problem.path == path and head[:12] in problem.message


@pytest.mark.parametrize("action", ["import", "arbitrate", "sync"])
def test_a_forged_trusted_trailer_on_a_hand_commit_is_reported(vault, action):
    memories.add(vault, {"id": "mem_c", "layer": "L2", "subject": "proj", "summary": "plain"}, "")
    path = "memories/L2/mem_c.md"
    text = (vault.root / path).read_text().replace("kind: pattern", "kind: constraint")
    if action == "import":
        text = text.replace("source: user", "source: import")
    (vault.root / path).write_text(text)
    git(vault.root, "add", path)
    git(vault.root, "commit", "-q", "--no-verify", "-m", f"looks like memrepo\n\nMemrepo-Action: {action}\n")
    head = git(vault.root, "rev-parse", "HEAD").strip()
    [problem] = validate.validate_tree(vault)
    assert problem.path == path and head[:12] in problem.message


def test_a_squash_merge_of_a_pushed_proposal_passes_the_audit(vault, tmp_path):
    pending, other = pushed_rule(vault, tmp_path)
    git(other, "merge", "-q", "--squash", f"origin/proposal/{pending.proposal}")
    git(other, "commit", "-q", "-m", "Never auto-publish (#1)")
    git(other, "push", "-q", "origin", "main")
    git(vault.root, "pull", "-q", "--ff-only", "origin", "main")
    assert vault.get("mem_rule").meta["status"] == "active"
    assert validate.validate_tree(vault) == []
    # the same file squashed in by hand, without the reviewed activation, is still reported
    path = hand_constraint(vault, "mem_d", proposal=pending.proposal)
    git(vault.root, "commit", "-q", "--no-verify", "-m", "copy the trick")
    [problem] = validate.validate_tree(vault)
    assert problem.path == path


def test_a_squash_merged_proposal_is_listed_as_applied_not_open(vault, tmp_path):
    """A forge's "squash and merge" leaves the proposal branch outside main's history; the
    proposal is applied all the same (its memories are on main as its tip has them)."""
    pending, other = pushed_rule(vault, tmp_path)
    git(other, "merge", "-q", "--squash", f"origin/proposal/{pending.proposal}")
    git(other, "commit", "-q", "-m", "Never auto-publish (#1)")
    git(other, "push", "-q", "origin", "main")
    git(vault.root, "pull", "-q", "--ff-only", "origin", "main")
    squash = git(vault.root, "rev-parse", "HEAD").strip()
    proc = cli(vault.root, "proposals", "--json")
    assert proc.returncode == 0 and json.loads(proc.stdout) == []
    [listed] = json.loads(cli(vault.root, "proposals", "--all", "--json").stdout)
    assert listed["id"] == pending.proposal and listed["status"] == "applied"
    assert listed["outcome"]["commit"] == squash and "squash" in listed["outcome"]["via"]
    proc = cli(vault.root, "apply", pending.proposal)
    assert proc.returncode == 4 and "already applied" in proc.stderr


def test_an_open_proposal_whose_memory_main_holds_otherwise_stays_open(vault, tmp_path):
    """Only the tip's exact content counts as merged: the same id on main with other content
    (here: still pending review, as the proposal commit had it) leaves the proposal open."""
    pending, other = pushed_rule(vault, tmp_path)
    git(other, "checkout", "-q", f"origin/proposal/{pending.proposal}~1", "--", "memories")
    git(other, "commit", "-q", "--no-verify", "-m", "copy the pending file")
    git(other, "push", "-q", "origin", "main")
    git(vault.root, "pull", "-q", "--ff-only", "origin", "main")
    [listed] = json.loads(cli(vault.root, "proposals", "--json").stdout)
    assert listed["id"] == pending.proposal and listed["status"] == "open"


@pytest.mark.parametrize("attributes", ["memories/** binary\n", "* -diff\n", "memories/** diff=hidden\n"])
def test_a_gitattributes_on_main_never_hides_a_proposal_from_the_raw_diff(vault, attributes):
    """.gitattributes is a file of the vault: whoever commits it could mark memories as binary,
    and the raw branch diff a reviewer reads would say only 'Binary files differ'."""
    (vault.root / ".gitattributes").write_text(attributes, encoding="utf-8")
    git(vault.root, "add", ".gitattributes")
    git(vault.root, "commit", "-q", "--no-verify", "-m", "attributes")
    git(vault.root, "config", "diff.hidden.textconv", "true")  # a driver that prints nothing
    r = memories.add(vault, {"subject": "release", "kind": "constraint", "summary": "publish only on fridays"}, "")
    assert r.proposal
    raw = api.branch_diff(vault, r.proposal)
    assert "publish only on fridays" in raw and "Binary files" not in raw, raw
