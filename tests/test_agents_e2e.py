"""The agents' acceptance checklist as an end-to-end test, in English and
Chinese: a long session with tool calls is pruned under budget while the full results stay on
disk as evidence; before "compaction" the flush writes short entries with decisions,
constraints and evidence pointers to the daily log; the transcript is dropped; a question that
needs an early detail recalls the right memory in the top 3; long-term layers change only
through review."""
from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from memrepo import api

REPO = Path(__file__).resolve().parent.parent


def memrepo(vault, *args, stdin: str | None = None) -> subprocess.CompletedProcess:
    env = {**os.environ, "MEMREPO_VAULT": str(vault.root)}
    p = subprocess.run([sys.executable, "-m", "memrepo", *args], input=stdin, capture_output=True,
                       text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    return p


@pytest.mark.parametrize("lang", ["en", "zh"])
def test_long_session_survives_compaction(vault, tmp_path, lang):
    work = tmp_path / "session"
    subprocess.run([sys.executable, str(REPO / "scripts" / "agent_session.py"), "--lang", lang, str(work)], check=True)
    questions = json.loads((work / "questions.json").read_text(encoding="utf-8"))
    memrepo(vault, "import", str(work / "noise.jsonl"))
    original = json.loads((work / "transcript.json").read_text(encoding="utf-8"))

    # 1. prune keeps the context under budget; the full results are on disk as evidence
    report = json.loads(memrepo(vault, "prune", str(work / "transcript.json"), "--json").stdout)
    assert report["chars_after"] <= 0.5 * report["chars_before"]
    pruned = report["transcript"]["messages"]
    assert len(pruned) == len(original["messages"]) and pruned[-6:] == original["messages"][-6:]
    removed = report["trimmed"] + report["cleared"]
    assert removed
    for row in removed:
        full = original["messages"][row["message"]]["content"][0]["content"]
        assert memrepo(vault, "evidence", row["evidence"]).stdout.rstrip("\n") == full.rstrip("\n")
        assert row["evidence"] in json.dumps(pruned[row["message"]], ensure_ascii=False)
    log_pointer = next(r["evidence"] for r in removed if r["message"] == 2)  # the first log read
    assert "312" in memrepo(vault, "evidence", log_pointer).stdout
    assert "312" not in json.dumps(pruned[2], ensure_ascii=False)  # no longer in the context

    # 2. before compaction: the flush writes short entries to today's daily log
    answer = (work / "flush.md").read_text(encoding="utf-8").replace("{LOG_EVIDENCE}", log_pointer)
    flushed = json.loads(memrepo(vault, "flush", "--cycle", "1", "--session", f"s-{lang}", "--json", stdin=answer).stdout)
    assert flushed["written"] == 3 and len(flushed["active"]) == 2 and len(flushed["pending_review"]) == 1
    decision = vault.get(flushed["active"][0])
    assert decision.meta["source"] == "flush" and decision.meta["layer"] == "L1"
    assert log_pointer in decision.meta["evidence"] and len(decision.body) < 1200
    again = json.loads(memrepo(vault, "flush", "--cycle", "1", "--session", f"s-{lang}", "--json", stdin=answer).stdout)
    assert again["written"] == 0 and again["reason"] == "cycle already flushed"

    # 3. compaction: the transcript is gone
    (work / "transcript.json").unlink()

    # 4. questions that need early details recall the right memory in the top 3
    for q, expect in ((questions["question"], questions["expect"]), (questions["question2"], questions["expect2"])):
        got = json.loads(memrepo(vault, "recall", "--json", "--session", f"s-{lang}", q).stdout)
        top3 = [m["summary"] for m in got["memories"][:3]]
        assert expect in top3, (q, top3)
    block = memrepo(vault, "recall", questions["question"]).stdout
    assert log_pointer in block  # the answer can cite the evidence, which prints the full log line
    assert re.search(r"\[mem_\d{8}_\w+\]", block)

    # 5. long-term layers changed only through review: the constraint waits on a proposal
    for layer in ("L2", "L3", "L4"):
        assert vault.list(layer=layer) == []
    [proposal] = api.list_proposals(vault)
    assert proposal.ids == tuple(flushed["pending_review"]) or list(proposal.ids) == flushed["pending_review"]
    assert api.validate_tree(vault) == []
