"""flush: the pre-compaction flush in the What / Decision / Why / Evidence / Next
template."""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys

import pytest
from conftest import git

from memrepo import api
from memrepo.errors import InvalidMemory

TEMPLATE = """subject: ops
## What
Payments API timed out under load.
## Decision
Do not restart the payment service while transactions are in flight.
## Why
A restart drops in-flight transactions.
## Evidence
evidence:3fa9c1d2e4b5 and logs/api.log#L10-L40
## Next
Raise the pool size; accept when p95 < 200 ms.
---
## What（事实）
支付接口超时。
## Next（下一步）
验收标准：p95 小于 200 毫秒。
"""


def memrepo(vault, *args, stdin: str | None = None):
    env = {**os.environ, "MEMREPO_VAULT": str(vault.root)}
    return subprocess.run([sys.executable, "-m", "memrepo", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=60)


def test_markdown_template_entries_become_l1_flush_memories_in_one_commit(vault):
    before = vault.head()
    r = api.flush(vault, TEMPLATE, cycle="7", session="s-1")
    assert r.written == 2 and len(r.active) == 2 and r.proposal is None
    assert git(vault.root, "rev-list", "--count", f"{before}..main").strip() == "1"
    first, second = (vault.get(i) for i in r.active)
    assert first.meta["source"] == "flush" and first.meta["layer"] == "L1" and first.meta["session"] == "s-1"
    assert first.meta["subject"] == "ops" and first.meta["kind"] == "decision"
    assert first.meta["summary"] == "Do not restart the payment service while transactions are in flight."
    assert first.body.index("## What") < first.body.index("## Decision") < first.body.index("## Why") \
        < first.body.index("## Evidence") < first.body.index("## Next")
    assert first.meta["evidence"] == ["evidence:3fa9c1d2e4b5", "logs/api.log#L10-L40"]
    assert second.meta["summary"] == "支付接口超时。" and "验收标准" in second.body  # no Decision: summary is What
    assert first.path.startswith(f"memories/L1/{first.meta['created'][:10]}/")


def test_json_entries_one_or_a_list(vault):
    one = api.flush(vault, json.dumps({"what": "Cache warmed", "decision": "Keep the cache", "tags": ["#cache"]}), cycle="a")
    assert vault.get(one.active[0]).meta["tags"] == ["#cache"]
    many = api.flush(vault, json.dumps([{"what": "A"}, {"decision": "B", "evidence": ["ops/runbook.md#L1-L9"]}]), cycle="b")
    assert many.written == 2
    assert vault.get(many.active[1]).meta["evidence"] == ["ops/runbook.md#L1-L9"]


def test_high_risk_entries_go_to_one_proposal(vault):
    text = json.dumps([{"decision": "Do not restart", "subject": "ops"},
                       {"decision": "No deploys until review", "kind": "constraint", "subject": "ops", "fact": "deploy.freeze"},
                       {"decision": "Never page at night", "kind": "policy", "subject": "ops"}])
    r = api.flush(vault, text, cycle="1")
    assert len(r.active) == 1 and len(r.pending_review) == 2 and r.proposal
    [p] = api.list_proposals(vault)
    assert set(p.ids) == set(r.pending_review)
    assert {row["id"] for row in vault.list(status="active")} == set(r.active)


def test_a_cycle_is_flushed_once_and_the_record_survives_lost_state(vault):
    r = api.flush(vault, TEMPLATE, cycle="3", session="s")
    shutil.rmtree(vault.root / ".memrepo" / "state")
    vault.close()
    again = api.flush(api.Vault(vault.root), TEMPLATE, cycle="3", session="s")
    assert again.written == 0 and again.reason == "cycle already flushed" and again.commit == r.commit
    assert api.flush(vault, TEMPLATE, cycle="3", session="other").written == 2  # another session's cycle 3
    assert api.flush(vault, TEMPLATE, cycle="30", session="s").written == 2     # not a prefix match


def test_cli_once_per_cycle_json(vault):
    p = memrepo(vault, "flush", "--cycle", "9", "--session", "s", "--json", stdin=TEMPLATE)
    assert p.returncode == 0 and json.loads(p.stdout)["written"] == 2
    p = memrepo(vault, "flush", "--cycle", "9", "--session", "s", "--json", stdin=TEMPLATE)
    data = json.loads(p.stdout)
    assert p.returncode == 0 and data["written"] == 0 and data["reason"] == "cycle already flushed"


@pytest.mark.parametrize("text", ["", "   \n", "NO_REPLY", "NO_REPLY\n", "## What\n\n## Decision\n", json.dumps({"what": ""})])
def test_silence_prints_nothing_and_writes_nothing(vault, text):
    before = vault.head()
    p = memrepo(vault, "flush", "--cycle", "1", stdin=text)
    assert (p.returncode, p.stdout, p.stderr) == (0, "", "")
    assert vault.head() == before


def test_over_the_caps_is_refused_with_a_pointer_to_evidence(vault):
    before = vault.head()
    long = json.dumps([{"what": "fine"}, {"what": "x" * 1300}])
    with pytest.raises(InvalidMemory) as e:
        api.flush(vault, long, cycle="1")
    assert "flush entry 2:what: 1,300 characters (cap 1,200)" in str(e.value) and "evidence" in str(e.value)
    dump = json.dumps([{"evidence": json.dumps({"rows": [1, 2, 3]})}])
    with pytest.raises(InvalidMemory, match="JSON document"):
        api.flush(vault, dump, cycle="1")
    with pytest.raises(InvalidMemory, match="25 lines"):
        api.flush(vault, json.dumps({"why": "\n".join(f"line {i}" for i in range(25))}), cycle="1")
    with pytest.raises(InvalidMemory, match=r"\(entry\)"):
        api.flush(vault, json.dumps({s: "y" * 1000 for s in ("what", "decision", "why", "next")}), cycle="1")
    assert vault.head() == before
    r = api.flush(vault, long, cycle="1", skip_invalid=True)
    assert r.written == 1 and len(r.skipped) == 1


def test_caps_come_from_config(vault):
    (vault.root / ".memrepo" / "config.toml").write_text("[flush]\nsection_chars = 10\n", encoding="utf-8")
    vault._config = None
    with pytest.raises(InvalidMemory, match="cap 10"):
        api.flush(vault, json.dumps({"what": "eleven chars"}), cycle="1")


def test_cli_refusal_is_one_line_per_problem_and_exit_5(vault):
    p = memrepo(vault, "flush", "--cycle", "1", stdin=json.dumps({"what": "x" * 1300}))
    assert p.returncode == 5 and "Traceback" not in p.stderr and "cap 1,200" in p.stderr  # invalid data
    p = memrepo(vault, "flush", stdin="## What\nx\n")
    assert p.returncode != 0 and "--cycle" in p.stderr


def test_prompt_in_english_and_chinese(vault):
    en = memrepo(vault, "flush", "--prompt")
    zh = memrepo(vault, "flush", "--prompt", "--lang", "zh")
    assert en.returncode == zh.returncode == 0
    for section in ("## What", "## Decision", "## Why", "## Evidence", "## Next", "NO_REPLY"):
        assert section in en.stdout and section in zh.stdout
    assert "短、硬、可复用" in zh.stdout and "short, hard and reusable" in en.stdout
    assert (vault.root / "prompts" / "flush.zh.md").is_file()  # the vault carries its own, editable copy


def test_cycles_without_a_session_never_drop_another_sessions_entries(vault):
    """Without --session, cycle 1 of one session and cycle 1 of the next are told apart by what
    they say: the same text again is the same flush (written once), other text is written."""
    first = memrepo(vault, "flush", "--cycle", "1", "--json", stdin=TEMPLATE)
    assert first.returncode == 0 and json.loads(first.stdout)["written"] == 2
    other = json.dumps({"what": "Second session: the deploy window moved to Friday", "decision": "Deploy on Friday"})
    second = memrepo(vault, "flush", "--cycle", "1", stdin=other)
    assert second.returncode == 0, second.stderr
    assert "Deploy on Friday" in {r["summary"] for r in vault.list()}
    assert "--session" in second.stderr  # says how to tell sessions apart
    again = memrepo(vault, "flush", "--cycle", "1", "--json", stdin=other)
    data = json.loads(again.stdout)
    assert data["written"] == 0 and data["reason"] == "cycle already flushed"
    assert sum(r["summary"] == "Deploy on Friday" for r in vault.list()) == 1
