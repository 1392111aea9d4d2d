"""Write proposals to the shared pool and citations: dedup -> reinforce,
new -> write, conflict -> the [arbitration] policy; cite, cited-by, notices."""
from __future__ import annotations

import json

import pytest

from tests.test_team_scopes import cli

ARBITRATION = '''
[arbitration]
default = "review"
authority = ["reviewer", "executor", "analyst"]
rules = [ { match = "user/ui.*", policy = "latest" }, { match = "ops/*", policy = "authority" } ]
'''


@pytest.fixture
def team(vault):
    config = vault.root / ".memrepo/config.toml"
    config.write_text(config.read_text().split("\n[arbitration]")[0] + ARBITRATION)
    from memrepo.review import policy
    policy.accept(vault, why="arbitration policy")  # rules that skip review take a person's acceptance
    return vault.root


def propose(root, agent, *args, ok=True):
    proc = cli(root, "--agent", agent, "propose", *args, *(["--json"] if ok else []), ok=ok)
    return json.loads(proc.stdout) if ok else proc


def test_a_shared_fact_needs_an_entity_key_and_knowledge_a_confidence(team):
    proc = propose(team, "analyst", "--summary", "dark mode", ok=False)
    assert proc.returncode == 5  # invalid data
    assert "(proposal):fact: a shared fact needs an entity key" in proc.stderr
    proc = propose(team, "analyst", "--kind", "knowledge", "--summary", "retry with backoff", ok=False)
    assert "(proposal):confidence:" in proc.stderr
    ok = propose(team, "analyst", "--kind", "knowledge", "--summary", "retry with backoff", "--confidence", "0.8")
    assert ok["outcome"] == "written"


def test_duplicate_reinforces_instead_of_writing(team):
    first = propose(team, "analyst", "--subject", "user", "--fact", "pref.theme", "--summary", "用户偏好深色模式",
                    "--evidence", "chat/1#L3")
    assert first == {"outcome": "written", "id": first["id"], "proposal": None, "reinforced": None,
                     "superseded": None, "policy": None}
    again = propose(team, "executor", "--subject", "user", "--fact", "pref.theme", "--summary", "用户偏好深色模式。",
                    "--evidence", "ui/settings.json#L9")
    assert again["outcome"] == "reinforced" and again["reinforced"] == first["id"] and again["id"] == first["id"]
    shown = json.loads(cli(team, "show", first["id"], "--json").stdout)
    assert shown["weight"] == 0.6 and shown["evidence"] == ["chat/1#L3", "ui/settings.json#L9"]
    assert shown["reinforced_by"][0].startswith("executor ")
    assert len(json.loads(cli(team, "list", "--json").stdout)) == 1
    assert "ok" in cli(team, "validate").stdout


def test_conflict_latest_supersedes_at_once(team):
    old = propose(team, "analyst", "--subject", "user", "--fact", "ui.theme", "--summary", "dark")
    new = propose(team, "executor", "--subject", "user", "--fact", "ui.theme", "--summary", "light")
    assert new["outcome"] == "superseded" and new["superseded"] == old["id"] and new["policy"] == "latest"
    shown = json.loads(cli(team, "show", old["id"], "--json").stdout)
    assert shown["status"] == "superseded" and shown["superseded_by"] == new["id"]
    assert json.loads(cli(team, "show", new["id"], "--json").stdout)["rollback_point"]
    assert "ok" in cli(team, "validate").stdout


def test_conflict_review_opens_a_card_with_both_values_and_proposers(team):
    old = propose(team, "analyst", "--subject", "project", "--fact", "db.pool", "--summary", "pool size 10",
                  "--evidence", "ops/db.md#L4")
    cli(team, "cite", "--by", "reviewer", "--ref", "report-7", old["id"])
    new = propose(team, "executor", "--subject", "project", "--fact", "db.pool", "--summary", "pool size 50",
                  "--evidence", "bench/run-3")
    assert new["outcome"] == "proposed" and new["policy"] == "review" and new["superseded"] is None
    card = cli(team, "review", new["proposal"]).stdout
    assert "Current value: 'pool size 10' by analyst (evidence: ops/db.md#L4)" in card
    assert "Proposed value: 'pool size 50' by executor (evidence: bench/run-3)" in card
    assert "cited by output report-7 of reviewer" in card
    assert json.loads(cli(team, "show", old["id"], "--json").stdout)["status"] == "active"


def test_authority_ranks_agents_and_high_risk_kinds_always_go_to_review(team):
    held = propose(team, "analyst", "--subject", "ops", "--fact", "deploy.window", "--summary", "nights")
    higher = propose(team, "executor", "--subject", "ops", "--fact", "deploy.window", "--summary", "mornings")
    assert higher["outcome"] == "superseded" and higher["superseded"] == held["id"] and higher["policy"] == "authority"
    lower = propose(team, "analyst", "--subject", "ops", "--fact", "deploy.window", "--summary", "weekends")
    assert lower["outcome"] == "proposed" and lower["policy"] == "authority"
    propose(team, "analyst", "--subject", "user", "--fact", "ui.lock", "--summary", "no lock")
    risky = propose(team, "reviewer", "--subject", "user", "--fact", "ui.lock", "--summary", "locked", "--kind", "constraint")
    assert risky["outcome"] == "proposed"


def test_citations_and_notices(team):
    base = propose(team, "analyst", "--subject", "user", "--fact", "ui.font", "--summary", "serif")
    derived = propose(team, "analyst", "--kind", "knowledge", "--summary", "use serif in reports", "--confidence", "0.7",
                      "--cite", base["id"])
    cli(team, "cite", "--by", "executor", "--ref", "pr#12", base["id"])
    found = json.loads(cli(team, "cited-by", base["id"], "--json").stdout)
    assert {(c["kind"], c["ref"]) for c in found} == {("memory", derived["id"]), ("output", "pr#12")}
    assert cli(team, "notices").stdout.strip() == "no notices"
    propose(team, "executor", "--subject", "user", "--fact", "ui.font", "--summary", "sans")  # latest: supersedes
    listed = json.loads(cli(team, "notices", "--json").stdout)
    assert {n["ref"] for n in listed} == {derived["id"], "pr#12"} and all(n["status"] == "superseded" for n in listed)
    mine = json.loads(cli(team, "notices", "--agent", "executor", "--json").stdout)
    assert [n["ref"] for n in mine] == ["pr#12"]
    cli(team, "notices", "--ack", str(mine[0]["notice"]))
    assert [n["ref"] for n in json.loads(cli(team, "notices", "--json").stdout)] == [derived["id"]]
    # the records are committed files: they survive a lost .memrepo/state
    import shutil
    shutil.rmtree(team / ".memrepo/state")
    assert len(json.loads(cli(team, "notices", "--json").stdout)) == 1
    assert cli(team, "cite", "--by", "executor", "--ref", "x", "mem_nope", ok=False).returncode == 3  # not found
