"""recall and context: what an agent reads per turn and at session start."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from memrepo import api
from memrepo.agents.transcript import latest_user_text

RESTART = ("## What\nThe payments API timed out under load.\n## Decision\nDo not restart the payment service.\n"
           "## Why\nA restart drops in-flight transactions.\n## Evidence\nevidence:3fa9c1d2e4b5\n")


def memrepo(vault, *args, stdin: str | None = None):
    env = {**os.environ, "MEMREPO_VAULT": str(vault.root)}
    return subprocess.run([sys.executable, "-m", "memrepo", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=60)


@pytest.fixture
def filled(vault):
    api.add(vault, {"subject": "ops", "kind": "decision", "summary": "Do not restart the payment service"}, RESTART)
    api.add(vault, {"subject": "user", "kind": "preference", "summary": "Answers as short bullet lists", "weight": 0.9})
    api.add(vault, {"subject": "project-alpha", "kind": "knowledge", "summary": "数据库连接池上限是 50"}, "配置在 db.yaml 里。")
    api.add(vault, {"subject": "general", "kind": "event", "summary": "Lunch was pizza"}, "Nothing else happened.")
    return vault


def test_recall_puts_the_relevant_memory_first_with_its_body_and_path(filled):
    r = api.recall(filled, "why did we decide not to restart the service?")
    assert not r.nothing_relevant
    first = r.packed.memories[0]
    assert first["summary"] == "Do not restart the payment service"
    assert "drops in-flight transactions" in first["body"]
    assert f"[{first['id']}] Do not restart the payment service" in r.text
    assert f"(source: {first['path']})" in r.text
    assert set(first) >= {"id", "path", "layer", "kind", "subject", "fact", "summary", "body", "score"}


def test_recall_never_exceeds_the_budget_and_trims_bodies(filled):
    for budget in (1, 60, 150, 200, 400, 4000):
        r = api.recall(filled, "restart the payment service", budget=budget)
        assert len(r.text) <= budget
        assert r.packed.chars == len(r.text)
    r = api.recall(filled, "restart the payment service", budget=200)
    assert r.packed.memories and r.packed.memories[0]["body"].endswith("…")


def test_recall_with_nothing_relevant_is_empty(filled):
    r = api.recall(filled, "quantum chromodynamics lecture notes")
    assert r.nothing_relevant and r.text == "" and r.packed.memories == ()


def test_recall_reads_transcripts_in_every_shape():
    assert latest_user_text("User: hello\nAssistant: hi\nUser: restart it?\n") == "restart it?"
    assert latest_user_text("用户：下一步是什么？\n助手：验收。") == "下一步是什么？"
    openai = [{"role": "user", "content": "first"}, {"role": "assistant", "content": "ok"},
              {"role": "tool", "content": "log"}, {"role": "user", "content": "second question"}]
    assert latest_user_text(json.dumps(openai)) == "second question"
    anthropic = {"messages": [{"role": "user", "content": [{"type": "text", "text": "why no restart?"}]},
                              {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "x", "input": {}}]},
                              {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "LOG"}]}]}
    assert latest_user_text(json.dumps(anthropic)) == "why no restart?"
    assert latest_user_text("just a question") == "just a question"


def test_recall_cli_json_transcript_on_stdin_and_session_log(filled):
    transcript = json.dumps([{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"},
                             {"role": "user", "content": "why did we decide not to restart the service?"}])
    p = memrepo(filled, "recall", "--json", "--session", "s-1", stdin=transcript)
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert set(data) >= {"query", "memories", "nothing_relevant", "chars"}
    assert data["query"] == "why did we decide not to restart the service?"
    assert data["memories"][0]["summary"] == "Do not restart the payment service"
    from memrepo.retrieval.warm import stats
    assert data["memories"][0]["id"] in stats(filled).recall_summary()  # logged as search --log does


def test_recall_cli_prints_nothing_when_nothing_is_relevant(filled):
    p = memrepo(filled, "recall", "quantum chromodynamics lecture notes")
    assert p.returncode == 0 and p.stdout == ""
    p = memrepo(filled, "recall", "--json", "quantum chromodynamics lecture notes")
    assert json.loads(p.stdout)["nothing_relevant"] is True and json.loads(p.stdout)["memories"] == []


def test_recall_hook_reads_claude_code_user_prompt_submit_payload(filled):
    payload = {"session_id": "abc-123", "transcript_path": "/tmp/none.jsonl", "cwd": "/tmp",
               "hook_event_name": "UserPromptSubmit", "prompt": "数据库连接池上限是多少？"}
    p = memrepo(filled, "recall", "--hook", stdin=json.dumps(payload))
    assert p.returncode == 0, p.stderr
    assert "数据库连接池上限是 50" in p.stdout


def test_hook_errors_never_block_the_prompt(filled):
    p = memrepo(filled, "recall", "--hook", stdin="not json")
    assert p.returncode == 1 and "stdin is not JSON" in p.stderr and "Traceback" not in p.stderr


def test_context_lists_standing_memories_most_important_first(filled):
    api.add(filled, {"subject": "user", "kind": "preference", "summary": "Prefers tea", "weight": 0.2})
    packed = api.context(filled)
    summaries = [m["summary"] for m in packed.memories]
    assert summaries[0] == "Answers as short bullet lists"  # weight 0.9 before 0.2
    assert "Prefers tea" in summaries and "Lunch was pizza" not in summaries
    assert "Do not restart the payment service" not in summaries  # a one-off decision is not standing
    assert len(packed.text) <= 4000
    assert api.context(filled, subject="ops").memories == ()


def test_context_reads_only_the_files_it_shows(filled, monkeypatch):
    """The order comes from the catalog (weight, layer, kind, id): at 10k memories reading
    every standing memory's file cost seconds per session start."""
    for i in range(30):
        api.add(filled, {"subject": "user", "kind": "preference", "summary": f"Prefers option {i:02d}",
                         "weight": round(0.1 + i / 100, 2)}, "x" * 300)
    from memrepo.store import document
    reads = []
    real = document.load_bytes
    monkeypatch.setattr(document, "load_bytes", lambda data, path: reads.append(path) or real(data, path))
    packed = api.context(filled, budget=1500)
    shown = [m["summary"] for m in packed.memories]
    assert shown[:3] == ["Answers as short bullet lists", "Prefers option 29", "Prefers option 28"]
    assert len(reads) <= len(shown) + 1 < 10


def test_context_hook_reads_session_start_payload(filled):
    payload = {"session_id": "abc", "hook_event_name": "SessionStart", "source": "startup"}
    p = memrepo(filled, "context", "--hook", "--json", stdin=json.dumps(payload))
    assert p.returncode == 0, p.stderr
    data = json.loads(p.stdout)
    assert data["chars"] <= 4000 and data["memories"][0]["summary"] == "Answers as short bullet lists"
    p = memrepo(filled, "context", "--budget", "100")
    assert p.returncode == 0 and len(p.stdout.rstrip("\n")) <= 100
