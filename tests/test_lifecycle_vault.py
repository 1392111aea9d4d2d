"""The lifecycle end to end on real vaults: nightly distill to one proposal branch per run (idempotent,
reinforcing, respecting review decisions, deterministic, robust to a damaged entry), promotion,
influence decay with keystones, archive and its revert, deletion proposals, expiry clean-up,
the nightly job with its lock and log, scheduling, and the memory graph."""
from __future__ import annotations

import datetime as dt
import json
import os
import subprocess
import sys
import textwrap
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
from conftest import git
from typer.testing import CliRunner

from memrepo import api
from memrepo.cli.app import app, main
from memrepo.errors import Busy
from memrepo.retrieval import search
from memrepo.review import proposals
from memrepo.review import writes as memories
from memrepo.store.vault import Vault

runner = CliRunner()
NOW = "2026-11-20"


def entry(memory_id, day, summary, body="", *, session=None, hour=10, month=11, **extra):
    return {"id": memory_id, "subject": "user", "kind": "event",
            "created": f"2026-{month:02d}-{day:02d}T{hour:02d}:00:00+08:00",
            "session": session or f"sess-{month}-{day}-{hour}", "summary": summary, "body": body, **extra}


DARK_EN = [
    entry("l1_dark_1", 3, "User prefers dark mode in the editor", "The user asked to switch VS Code to a dark colour scheme."),
    entry("l1_dark_2", 9, "Switched the editor to dark theme again, user likes dark",
          "User said the light theme hurts their eyes at night."),
    entry("l1_dark_3", 15, "User asked for dark mode in the editor again", "Changed editor theme to dark on request."),
]
DARK_EN_4TH = entry("l1_dark_4", 22, "User wants the editor in dark mode, as usual", "Set the dark theme for the new laptop.")
DARK_ZH = [
    entry("l1_zh_1", 4, "用户又要求深色模式", "用户说晚上看浅色界面太刺眼，要求把编辑器切换成深色模式。"),
    entry("l1_zh_2", 11, "用户偏好编辑器使用深色主题", "把编辑器主题改成深色，用户说这样眼睛舒服。"),
    entry("l1_zh_3", 18, "用户再次把界面切换为深色模式", "用户不喜欢浅色主题。"),
]
NOISE = [
    entry("l1_n01", 5, "Deployed release 2.3 to staging", "Pipeline green, migration ran in 40s."),
    entry("l1_n02", 6, "Fixed flaky test in payment module", "Retry logic in the refund test was racing with the queue worker."),
    entry("l1_n03", 7, "Discussed Q3 roadmap with Alice", "Priorities: search latency, Chinese support, onboarding."),
    entry("l1_n04", 8, "Database connection pool exhausted during load test", "Raised max pool size from 10 to 50."),
    entry("l1_n05", 12, "配置数据库连接池最大线程数", "把连接池上限从10调到50，压测通过。"),
    entry("l1_n06", 13, "发布流水线超时，重试后成功", "构建镜像耗时过长。"),
    entry("l1_n07", 14, "User wants answers in Chinese", "User wrote in Chinese and asked for replies in Chinese."),
    entry("l1_n08", 16, "Reviewed pull request for the cache layer", "Suggested TTL of 5 minutes for user sessions."),
    entry("l1_n09", 17, "周会讨论了下个迭代的优先级", "先做中文检索，再做权限审核。"),
]


def load(vault: Vault, rows, name="log.jsonl"):
    """Import JSONL lines as one commit (the way an agent's daily log arrives)."""
    path = vault.root.parent / name
    path.write_text("\n".join(json.dumps(r, ensure_ascii=False) for r in rows) + "\n", encoding="utf-8")
    return memories.import_jsonl(vault, path)


def proposal_branches(vault) -> list[str]:
    out = git(vault.root, "for-each-ref", "--format=%(refname:short)", "refs/heads/proposal/")
    return out.split()


def clean(vault) -> None:
    assert git(vault.root, "status", "--porcelain") == ""


def main_tip(vault) -> str:
    return git(vault.root, "rev-parse", "main").strip()


# ------------------------------------------------------------------ distill

@pytest.mark.parametrize("log", [DARK_EN, DARK_ZH], ids=["english", "chinese"])
def test_three_paraphrases_make_one_candidate_on_one_branch(vault, log):
    load(vault, log + NOISE)
    before, branches = main_tip(vault), proposal_branches(vault)
    report = api.distill(vault, now=NOW)

    assert main_tip(vault) == before  # main untouched, checkout clean
    clean(vault)
    assert len(report.candidates) == 1 and report.proposal == "distill_20261120"
    assert proposal_branches(vault) == branches + ["proposal/distill_20261120"]
    members = sorted(e["id"] for e in log)
    assert report.candidates[0]["members"] == members
    assert [m["id"] for m in report.candidates[0]["explain"]["members"]] == members

    [memory] = proposals.memories_of(vault, proposals.get(vault, report.proposal))
    meta = memory.meta
    assert (meta["layer"], meta["status"], meta["source"]) == ("L2", "pending_review", "distill")
    assert sorted(meta["links"]) == members and sorted(meta["evidence"]) == members
    assert all(f"[[{m}]]" in memory.body for m in members)
    card = proposals.card(vault, report.proposal)
    assert all(m in card for m in members)
    assert report.log and Path(report.log).is_file() and Path(report.log).is_relative_to(vault.state_dir)
    assert vault.list(layer="L2") == []


def test_two_occurrences_are_not_enough(vault):
    load(vault, DARK_EN[:2] + NOISE)
    before = main_tip(vault)
    report = api.distill(vault, now=NOW)
    assert report.candidates == () and report.proposal is None
    assert proposal_branches(vault) == [] and main_tip(vault) == before


def test_three_on_the_same_day_and_session_are_not_enough(vault):
    same = [{**e, "created": f"2026-11-09T{9 + i:02d}:00:00+08:00", "session": "sess-one"}
            for i, e in enumerate(DARK_EN)]
    load(vault, same + NOISE)
    report = api.distill(vault, now=NOW)
    assert report.candidates == () and proposal_branches(vault) == []


def test_rerun_the_same_night_proposes_nothing_new(vault):
    load(vault, DARK_EN + DARK_ZH + NOISE)
    first = api.distill(vault, now=NOW)
    assert len(first.candidates) == 2
    refs = git(vault.root, "for-each-ref")
    second = api.distill(vault, now=NOW)
    assert second.candidates == () and second.proposal is None
    assert {s["status"] for s in second.suppressed} == {"proposed"}
    assert git(vault.root, "for-each-ref") == refs


def test_applied_pattern_is_reinforced_not_duplicated(vault):
    load(vault, DARK_EN + NOISE)
    report = api.distill(vault, now=NOW)
    pattern = report.candidates[0]["id"]
    proposals.apply(vault, report.proposal)
    assert vault.get(pattern).meta["status"] == "active"
    clean(vault)

    load(vault, [DARK_EN_4TH], name="day22.jsonl")
    later = api.distill(vault, now="2026-11-23")
    assert later.candidates == () and later.proposal is None
    assert later.reinforcements == ({"pattern": pattern, "new_members": ["l1_dark_4"]},)
    assert proposal_branches(vault) == []
    recorded = (vault.state_dir / "reinforcements.jsonl").read_text(encoding="utf-8").splitlines()
    assert json.loads(recorded[-1])["pattern"] == pattern
    assert len([r for r in vault.list(layer="L2")]) == 1
    for _ in range(2):  # later nights see the same reinforcement again: it is recorded once
        assert api.distill(vault, now="2026-11-24").reinforcements
    again = (vault.state_dir / "reinforcements.jsonl").read_text(encoding="utf-8").splitlines()
    assert again == recorded


def test_rejected_pattern_is_not_proposed_again(vault):
    load(vault, DARK_EN + NOISE)
    report = api.distill(vault, now=NOW)
    proposals.reject(vault, report.proposal, why="not a lasting preference")
    assert api.distill(vault, now=NOW).candidates == ()
    load(vault, [DARK_EN_4TH], name="day22.jsonl")
    later = api.distill(vault, now="2026-11-23")
    assert later.candidates == () and later.proposal is None
    assert [s["status"] for s in later.suppressed] == ["rejected"]
    assert proposal_branches(vault) == []


def test_apply_only_one_candidate_declines_the_other_for_good(vault):
    load(vault, DARK_EN + DARK_ZH + NOISE)
    report = api.distill(vault, now=NOW)
    by_lang = {("zh" if c["members"][0].startswith("l1_zh") else "en"): c["id"] for c in report.candidates}
    out = runner.invoke(app, ["--vault", str(vault.root), "apply", report.proposal, "--only", by_lang["en"]])
    assert out.exit_code == 0, out.output
    assert vault.get(by_lang["en"]).meta["status"] == "active"
    assert {r["id"] for r in vault.list(layer="L2")} == {by_lang["en"]}
    assert proposal_branches(vault) == []

    again = api.distill(vault, now=NOW)
    assert again.candidates == () and again.proposal is None
    assert {s["pattern"]: s["status"] for s in again.suppressed} == {by_lang["zh"]: "rejected"}


def test_pattern_taken_back_with_git_revert_is_not_proposed_again(vault):
    load(vault, DARK_EN + NOISE)
    report = api.distill(vault, now=NOW)
    merge = proposals.apply(vault, report.proposal)
    git(vault.root, "revert", "--no-edit", "-m", "1", merge)  # the undo 'memrepo apply' prints
    assert vault.list(layer="L2") == []
    again = api.distill(vault, now=NOW)
    assert again.candidates == () and again.proposal is None
    assert [s["status"] for s in again.suppressed] == ["rejected"]
    assert proposal_branches(vault) == []


def test_distill_with_another_branch_checked_out_leaves_the_checkout_alone(vault):
    load(vault, DARK_EN + NOISE)
    git(vault.root, "switch", "-qc", "notes")
    head = git(vault.root, "rev-parse", "HEAD")
    report = api.distill(vault, now=NOW)
    assert report.proposal == "distill_20261120"
    assert git(vault.root, "rev-parse", "HEAD") == head
    assert git(vault.root, "symbolic-ref", "HEAD").strip() == "refs/heads/notes"
    clean(vault)


BAD_ENTRY = "---\nid: l1_broken\nlayer: L1\nsummary: [unclosed\ncreated: 2026-11-10\n---\nUser prefers dark mode.\n"


def test_malformed_entry_is_skipped_and_reported(vault):
    load(vault, DARK_EN + NOISE)
    rel = "memories/L1/2026-11-10/l1_broken.md"
    (vault.root / rel).parent.mkdir(parents=True, exist_ok=True)
    (vault.root / rel).write_text(BAD_ENTRY, encoding="utf-8")
    git(vault.root, "add", rel)
    git(vault.root, "commit", "-qm", "hand-written, broken", "--no-verify")
    report = api.distill(vault, now=NOW)
    assert len(report.candidates) == 1 and report.proposal
    assert any("l1_broken" in s["id"] for s in report.skipped)
    out = runner.invoke(app, ["--vault", str(vault.root), "distill", "--now", NOW, "--dry-run"])
    assert out.exit_code == 0 and "l1_broken" in out.output


def test_same_input_gives_the_same_candidates(tmp_path):
    results = []
    for name in ("a", "b"):
        v = api.init(tmp_path / name)
        load(v, list(reversed(DARK_EN + DARK_ZH + NOISE)) if name == "b" else DARK_EN + DARK_ZH + NOISE)
        report = api.distill(v, now=NOW)
        mems = proposals.memories_of(v, proposals.get(v, report.proposal))
        results.append(sorted((m.id, m.meta["summary"], m.body, tuple(m.meta["links"])) for m in mems))
        v.close()
    assert len(results[0]) == 2 and results[0] == results[1]


def test_promote_l2_to_l3_needs_its_higher_threshold(vault):
    def l2(i, day):
        return {"id": f"l2_review_{i}", "subject": "user", "layer": "L2", "kind": "pattern",
                "created": f"2026-{10 + day // 30:02d}-{day % 30 + 1:02d}T09:00:00+00:00",
                "summary": f"User insists every code review checks error handling (week {i})",
                "body": "Reviews must check error handling and logging before approval."}
    load(vault, [l2(i, d) for i, d in enumerate((1, 8, 15, 22))])
    assert api.distill(vault, now=NOW, promote=True).candidates == ()  # 4 < 5
    assert api.distill(vault, now=NOW).candidates == ()  # L2 entries are not L1 input
    load(vault, [l2(4, 36)], name="more.jsonl")
    report = api.distill(vault, now=NOW, promote=True)
    assert len(report.candidates) == 1 and report.layer == "L3"
    assert report.proposal == "promote_20261120"
    [memory] = proposals.memories_of(vault, proposals.get(vault, report.proposal))
    assert memory.meta["layer"] == "L3" and len(memory.meta["links"]) == 5


# ------------------------------------------------------------------ decay

OLD = "2026-01-05T09:00:00+00:00"
LATER = "2026-12-30"


def old_memory(memory_id, summary, **extra):
    return {"id": memory_id, "subject": "proj", "kind": "knowledge", "layer": "L2", "created": extra.pop("created", OLD),
            "summary": summary, "body": extra.pop("body", summary + "."), **extra}


def test_keystones_are_never_archived(vault):
    load(vault, [old_memory("mem_key_weight", "billing runs on the 1st", weight=0.9),
                 old_memory("mem_key_linked", "all services use UTC timestamps"),
                 *[old_memory(f"mem_user_{i}", f"service {i} logs in UTC", links=["mem_key_linked"]) for i in range(3)],
                 old_memory("mem_cold", "the old wiki moved to confluence in 2019")])
    report = api.decay(vault, now=LATER)
    actions = {d["id"]: d for d in report.decisions}
    assert actions["mem_key_weight"]["action"] == "keep" and "keystone" in actions["mem_key_weight"]["reason"]
    assert actions["mem_key_linked"]["action"] == "keep" and "keystone" in actions["mem_key_linked"]["reason"]
    assert "mem_cold" in report.archived
    assert {"mem_key_weight", "mem_key_linked"}.isdisjoint(report.archived)
    assert {r["id"] for r in vault.list(status="active")} >= {"mem_key_weight", "mem_key_linked"}


def test_recent_recalls_keep_an_old_memory(vault):
    now = dt.datetime.now(dt.UTC).replace(microsecond=0)  # recalls are logged at the real time
    year_ago = (now - dt.timedelta(days=365)).isoformat()
    load(vault, [old_memory("mem_used", "kafka retention is 7 days", created=year_ago),
                 old_memory("mem_unused", "fax machine on floor 2", created=year_ago)])
    for session in ("s1", "s2"):
        result, _ = search.search(vault, "kafka retention", session=session, log_recalls=True)
        assert [h.id for h in result.hits] == ["mem_used"]
        search.mark_useful(vault, "mem_used", session=session)
    report = api.decay(vault, now=now + dt.timedelta(days=40))
    assert report.archived == ("mem_unused",)
    assert vault.get("mem_used").meta["status"] == "active"


def test_cold_memory_archived_in_one_commit_and_revert_restores_it(vault):
    load(vault, [old_memory("mem_cold", "the legacy ftp server was retired", links=["mem_hot"]),
                 old_memory("mem_hot", "sftp replaces ftp for partner uploads", weight=0.9)])
    assert [h.id for h in search.search(vault, "legacy ftp retired")[0].hits][:1] == ["mem_cold"]
    before = main_tip(vault)
    report = api.decay(vault, now=LATER)
    assert report.archived == ("mem_cold",) and report.commit
    assert git(vault.root, "rev-list", "--count", f"{before}..main").strip() == "1"
    changed = git(vault.root, "diff", "--name-status", "--no-renames", before, "main").split("\n")
    assert sorted(filter(None, changed)) == ["A\tarchive/L2/mem_cold.md", "D\tmemories/L2/mem_cold.md"]
    assert vault.get("mem_cold").meta["status"] == "archived"
    clean(vault)
    assert "mem_cold" not in [h.id for h in search.search(vault, "legacy ftp retired")[0].hits]
    assert [h.id for h in search.search(vault, "legacy ftp retired", deep=True)[0].hits][:1] == ["mem_cold"]

    git(vault.root, "revert", "--no-edit", report.commit)
    assert vault.get("mem_cold").meta["status"] == "active"
    assert (vault.root / "memories/L2/mem_cold.md").is_file()
    assert [h.id for h in search.search(vault, "legacy ftp retired")[0].hits][:1] == ["mem_cold"]


def test_cold_isolated_unweighted_is_deleted_only_when_the_proposal_is_applied(vault):
    load(vault, [old_memory("mem_dead", "printer on floor 3 needs toner"),
                 old_memory("mem_linked_cold", "vpn uses wireguard", links=["mem_key"]),
                 old_memory("mem_key", "wireguard keys rotate yearly", weight=0.9)])
    report = api.decay(vault, now=LATER)
    assert set(report.archived) == {"mem_dead", "mem_linked_cold"}
    assert report.deletion_candidates == ("mem_dead",)
    assert report.proposal == "cleanup_20261230"
    assert proposal_branches(vault) == ["proposal/cleanup_20261230"]
    assert (vault.root / "archive/L2/mem_dead.md").is_file()  # archived, not deleted yet
    assert [h.id for h in search.search(vault, "printer toner", deep=True)[0].hits] == ["mem_dead"]

    proposals.apply(vault, report.proposal)
    assert not (vault.root / "archive/L2/mem_dead.md").exists()
    assert vault.catalog().path_of("mem_dead") is None
    assert (vault.root / "archive/L2/mem_linked_cold.md").is_file()
    assert "printer on floor 3" in git(vault.root, "show", f"{report.commit}:archive/L2/mem_dead.md")
    assert search.search(vault, "printer toner", deep=True)[0].hits == ()
    clean(vault)


def test_decay_dry_run_changes_nothing(vault):
    load(vault, [old_memory("mem_dead", "printer on floor 3 needs toner")])
    before = main_tip(vault)
    report = api.decay(vault, now=LATER, dry_run=True)
    assert report.archived == ("mem_dead",) and report.commit is None
    assert main_tip(vault) == before and proposal_branches(vault) == []


def expiring(memory_id, layer="L2"):
    return {"id": memory_id, "subject": "proj", "kind": "state", "layer": layer, "created": "2026-11-01T09:00:00+00:00",
            "expires": "2026-11-15T00:00:00+00:00", "summary": f"{memory_id}: freeze deploys during the audit"}


def test_cleanup_demotes_an_expired_l2_by_default(vault):
    load(vault, [expiring("mem_freeze")])
    report = api.cleanup(vault, now=NOW)
    assert [a["action"] for a in report.actions] == ["demote"] and report.commit
    memory = vault.get("mem_freeze")
    assert memory.meta["layer"] == "L1" and memory.path == "memories/L1/2026-11-01/mem_freeze.md"
    assert not (vault.root / "memories/L2/mem_freeze.md").exists()
    clean(vault)


def test_cleanup_archives_when_the_vault_config_says_so(vault):
    config = vault.root / ".memrepo/config.toml"
    config.write_text(config.read_text(encoding="utf-8") + '\n[cleanup]\npolicy = "archive"\n', encoding="utf-8")
    git(vault.root, "commit", "-qam", "expired memories go to the archive")
    load(vault, [expiring("mem_freeze")])
    report = api.cleanup(Vault(vault.root), now=NOW)
    assert [a["action"] for a in report.actions] == ["archive"]
    memory = vault.get("mem_freeze")
    assert memory.meta["status"] == "archived" and memory.path == "archive/L2/mem_freeze.md"
    assert api.cleanup(Vault(vault.root), now=NOW).actions == ()


# ------------------------------------------------------------------ nightly & schedule

def cli(vault, *args):
    return runner.invoke(app, ["--vault", str(vault.root), *args])


def test_nightly_with_nothing_to_do_is_quiet_and_logged(vault):
    before = main_tip(vault)
    result = api.nightly(vault, now=NOW)
    assert result["changed"] is False
    out = cli(vault, "nightly", "--quiet", "--now", NOW)
    assert out.exit_code == 0 and out.output == ""
    lines = (vault.state_dir / "nightly.log").read_text(encoding="utf-8").splitlines()
    assert len(lines) == 2 and json.loads(lines[-1])["changed"] is False
    assert main_tip(vault) == before and proposal_branches(vault) == []
    clean(vault)


def test_nightly_that_finds_work_reports_it(vault):
    load(vault, DARK_EN + NOISE)
    out = cli(vault, "nightly", "--quiet", "--now", NOW, "--json")
    assert out.exit_code == 0, out.output
    result = json.loads(out.stdout)
    assert result["changed"] is True and result["distill"]["proposal"] == "distill_20261120"
    assert proposal_branches(vault) == ["proposal/distill_20261120"]


HOLDER = textwrap.dedent("""
    import sys, time
    from pathlib import Path
    from memrepo.store import git
    from memrepo.store.lock import locked
    with locked(git.git_path(Path(sys.argv[1]), "memrepo-nightly.lock"), timeout=5):
        print("held", flush=True)
        sys.stdin.readline()
""")


def test_second_nightly_run_at_once_says_another_is_in_progress(vault, capsys):
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(vault.root)], stdin=subprocess.PIPE,
                              stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert holder.stdout.readline().strip() == "held"
        with pytest.raises(Busy, match="another nightly run"):
            api.nightly(vault, now=NOW)
        assert main(["--vault", str(vault.root), "nightly", "--quiet"]) == 75  # busy: retry later
        assert "another nightly run is still in progress" in capsys.readouterr().err
    finally:
        holder.communicate("done\n", timeout=10)
    assert not (vault.state_dir / "nightly.log").exists()
    assert api.nightly(vault, now=NOW)["changed"] is False


def test_schedule_prints_a_cron_line(vault):
    out = cli(vault, "schedule")
    assert out.exit_code == 0
    [line] = out.stdout.strip().splitlines()
    fields = line.split()
    assert fields[:5] == ["17", "3", "*", "*", "*"] and "nightly" in line and str(vault.root) in line


def test_schedule_installs_systemd_user_units(vault):
    out = cli(vault, "schedule", "--kind", "systemd", "--install", "--at", "02:05")
    assert out.exit_code == 0, out.output
    units = Path(os.environ["XDG_CONFIG_HOME"]) / "systemd" / "user"
    names = sorted(p.name for p in units.iterdir())
    assert len(names) == 2 and names[0].endswith(".service") and names[1].endswith(".timer")
    service = (units / names[0]).read_text(encoding="utf-8")
    timer = (units / names[1]).read_text(encoding="utf-8")
    assert "ExecStart=" in service and "nightly" in service and str(vault.root) in service
    assert "OnCalendar=*-*-* 02:05:00" in timer


# ------------------------------------------------------------------ graph

def test_graph_neighbours_and_exports(vault, tmp_path):
    load(vault, [old_memory("mem_a", "api gateway routes", links=["mem_b"]),
                 old_memory("mem_b", "auth service issues tokens", body="See [[mem_c]] for rotation."),
                 old_memory("mem_c", "token rotation every hour")])
    out = cli(vault, "graph", "mem_b", "--json")
    assert out.exit_code == 0, out.output
    rows = {(r["id"], r["direction"], r["kind"]) for r in json.loads(out.stdout)}
    assert rows == {("mem_a", "in", "link"), ("mem_c", "out", "wikilink")}

    graphml, dot = tmp_path / "g.graphml", tmp_path / "g.dot"
    assert cli(vault, "graph", "--export", str(graphml)).exit_code == 0
    assert cli(vault, "graph", "--export", str(dot)).exit_code == 0
    root = ET.parse(graphml).getroot()
    ns = {"g": "http://graphml.graphdrawing.org/xmlns"}
    nodes = {n.get("id") for n in root.iterfind(".//g:node", ns)}
    edges = {(e.get("source"), e.get("target")) for e in root.iterfind(".//g:edge", ns)}
    assert nodes == {"mem_a", "mem_b", "mem_c"}
    assert edges == {("mem_a", "mem_b"), ("mem_b", "mem_c")}
    text = dot.read_text(encoding="utf-8")
    assert text.lstrip().startswith(("digraph", "strict digraph")) and '"mem_a" -> "mem_b"' in text


def test_capped_candidates_wait_for_the_next_run(vault):
    config = vault.root / ".memrepo" / "config.toml"
    config.write_text(config.read_text(encoding="utf-8") + "\n[distill]\nmax_per_subject = 1\n", encoding="utf-8")
    git(vault.root, "commit", "-qam", "distill: one candidate per subject a night", "--no-verify")
    vault = Vault.find(explicit=vault.root)
    load(vault, DARK_EN + DARK_ZH + NOISE)
    first = api.distill(vault, now=NOW)
    assert len(first.candidates) == 1 and len(first.capped) == 1
    second = api.distill(vault, now=NOW)
    assert [c["id"] for c in second.candidates] == [first.capped[0]["id"]] and second.capped == ()
    assert second.proposal and second.proposal != first.proposal
    assert api.distill(vault, now=NOW).candidates == ()


def test_distill_json_says_why_each_candidate_was_kept_and_explain_lists_near_misses(vault):
    load(vault, DARK_EN + NOISE)
    result = runner.invoke(app, ["--vault", str(vault.root), "distill", "--now", NOW, "--dry-run", "--explain", "--json"])
    assert result.exit_code == 0, result.output
    data = json.loads(result.output)
    [cand] = data["candidates"]
    assert cand["members"] == sorted(e["id"] for e in DARK_EN) and cand["days"] and cand["score"] > 3
    assert "3 distinct days" in cand["why"] and "near_misses" in data
    text = runner.invoke(app, ["--vault", str(vault.root), "distill", "--now", NOW, "--dry-run", "--explain"]).output
    assert f"kept {cand['id']}" in text
