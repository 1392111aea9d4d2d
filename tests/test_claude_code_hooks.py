"""Claude Code's hooks with the payloads its hooks reference documents (v2.1.239): compaction
without an extra model call (the template handed to the compactor at session start, the summary
filed after compaction through flush), and prune reading Claude Code's transcript JSONL."""
from __future__ import annotations

import json

from conftest import cli, git

from memrepo import api

SESSION = "00893aaf-19fa-41d2-8238-13269b9b3ca0"
CHECKPOINT = """## What
Payments API timed out under load; the pool was raised to 50.
## Decision
Do not restart the payment service while transactions are in flight.
## Why
A restart drops in-flight transactions.
## Evidence
logs/api.log#L10-L40
## Next
Watch p95; accept when it is under 200 ms.
"""
SUMMARY = ("This session is being continued from a previous conversation that ran out of context.\n\n"
           "1. Primary Request and Intent:\n   The user asked to investigate the slow payments API.\n"
           "2. Key Technical Concepts:\n   - connection pools\n\n# memrepo checkpoint\n\n" + CHECKPOINT)
SUMMARY_ZH = "1. 主要请求：排查支付接口变慢。\n\n# memrepo checkpoint\n## What（事实）\n支付接口超时，连接池调到 50。\n## Next（下一步）\n验收标准：p95 小于 200 毫秒。\n"


def payload(event: str, transcript: str = "/tmp/none.jsonl", **fields) -> str:
    return json.dumps({"session_id": SESSION, "transcript_path": transcript, "cwd": "/home/user/project",
                       "hook_event_name": event, **fields})


def lines(*objects) -> str:
    return "".join(json.dumps(o, ensure_ascii=False) + "\n" for o in objects)


def transcript(tmp_path, summary: str | None = None) -> str:
    """A Claude Code transcript as it lies on disk: one JSON object per line."""
    big = "".join(f"row {i}: latency={i % 97}ms status=ok\n" for i in range(400))
    rows = [{"type": "summary", "summary": "Payments API investigation", "leafUuid": "u0"},
            {"parentUuid": None, "isSidechain": False, "type": "user", "sessionId": SESSION, "uuid": "u1",
             "message": {"role": "user", "content": "The payments API is slow. Investigate."}}]
    for k in range(5):
        rows += [{"type": "assistant", "uuid": f"a{k}", "sessionId": SESSION,
                  "message": {"id": f"msg_{k}", "role": "assistant", "model": "claude-x",
                              "content": [{"type": "tool_use", "id": f"toolu_{k}", "name": "Bash",
                                           "input": {"command": "cat logs/api.log"}}]}},
                 {"type": "user", "uuid": f"r{k}", "sessionId": SESSION, "toolUseResult": {"stdout": "…"},
                  "message": {"role": "user", "content": [{"tool_use_id": f"toolu_{k}", "type": "tool_result",
                                                           "content": f"RESULT-{k}\n" + big}]}}]
    rows.append({"type": "system", "subtype": "compact_boundary", "content": "Conversation compacted",
                 "compactMetadata": {"trigger": "auto", "preTokens": 181725}})
    if summary is not None:
        rows.append({"type": "user", "isCompactSummary": True, "isVisibleInTranscriptOnly": True,
                     "message": {"role": "user", "content": summary}})
    rows.append({"type": "assistant", "uuid": "a9", "message": {"role": "assistant", "content": [
        {"type": "text", "text": "Done: do not restart the service."}]}})
    path = tmp_path / f"{SESSION}.jsonl"
    path.write_text(lines(*rows), encoding="utf-8")
    return str(path)


# ---------------------------------------------------------------- prune reads the JSONL

def test_prune_reads_claude_codes_transcript_jsonl(vault, tmp_path):
    path = transcript(tmp_path)
    p = cli(vault.root, "prune", path, "--keep-last-assistants", "1")
    assert p.returncode == 0, p.stderr
    before = [json.loads(line) for line in open(path, encoding="utf-8")]
    after = [json.loads(line) for line in p.stdout.splitlines()]
    assert len(after) == len(before)
    assert after[0] == before[0] and after[-2] == before[-2]  # summary and boundary lines untouched
    results = [a["message"]["content"][0]["content"] for a in after if a.get("toolUseResult")]
    assert all("evidence:" in r for r in results) and all(len(r) < 4000 for r in results)
    assert "pruned" in p.stderr
    pointer = results[0].rsplit("evidence:", 1)[1].split("]")[0].strip()
    e = cli(vault.root, "evidence", f"evidence:{pointer}")
    assert e.returncode == 0 and e.stdout.startswith("RESULT-0")


def test_prune_still_refuses_text_that_is_neither(vault, tmp_path):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"type": "user"}\n{not json\n{"type": "assistant"}\n', encoding="utf-8")
    p = cli(vault.root, "prune", str(bad))
    assert p.returncode != 0 and "line 2" in p.stderr and "Traceback" not in p.stderr


# ---------------------------------------------------------------- compaction

def test_session_start_hands_the_compactor_the_template(vault):
    p = cli(vault.root, "flush", "--prompt", "--hook", stdin=payload("SessionStart", source="compact"))
    assert p.returncode == 0, p.stderr
    for section in ("## What", "## Decision", "## Why", "## Evidence", "## Next", "memrepo checkpoint"):
        assert section in p.stdout
    zh = cli(vault.root, "flush", "--prompt", "--hook", "--lang", "zh", stdin=payload("SessionStart", source="startup"))
    assert zh.returncode == 0 and "下一步" in zh.stdout


def test_post_compact_files_the_summary_once_as_the_sessions_checkpoint(vault):
    before = vault.head()
    p = cli(vault.root, "flush", "--hook", stdin=payload("PostCompact", trigger="auto", compact_summary=SUMMARY))
    assert p.returncode == 0, p.stderr
    assert p.stdout == ""  # PostCompact has no output to give; Claude Code logs stdout only
    rows = [r for r in vault.list() if r["summary"].startswith("Do not restart")]
    assert len(rows) == 1
    m = vault.get(rows[0]["id"])
    assert m.meta["layer"] == "L1" and m.meta["kind"] == "checkpoint" and m.meta["session"] == SESSION
    assert m.meta["source"] == "flush" and "## Next" in m.body and "Primary Request" not in m.body
    again = cli(vault.root, "flush", "--hook", stdin=payload("PostCompact", trigger="auto", compact_summary=SUMMARY))
    assert again.returncode == 0 and again.stdout == ""
    assert len(git(vault.root, "rev-list", f"{before}..main").split()) == 1


def test_a_chinese_summary_and_a_summary_without_the_template(vault):
    p = cli(vault.root, "flush", "--hook", stdin=payload("PostCompact", trigger="manual", compact_summary=SUMMARY_ZH))
    assert p.returncode == 0, p.stderr
    assert any(r["summary"].startswith("支付接口超时") for r in vault.list())
    plain = "The user asked to investigate the payments API. " * 200  # a long summary, no template
    p = cli(vault.root, "flush", "--hook", stdin=payload("PostCompact", trigger="auto", compact_summary=plain))
    assert p.returncode == 0, p.stderr
    m = next(vault.get(r["id"]) for r in vault.list() if r["kind"] == "checkpoint" and "payments API" in r["summary"])
    assert len(m.body) < 1200 and m.meta["evidence"] and m.meta["evidence"][0].startswith("evidence:")
    full = cli(vault.root, "evidence", m.meta["evidence"][0])
    assert full.stdout.strip() == plain.strip()


def test_silent_when_there_is_nothing_to_file(vault, tmp_path):
    head = vault.head()
    for event in (payload("PostCompact", trigger="auto", compact_summary=""),
                  payload("PreCompact", trigger="manual", custom_instructions="focus on the API"),
                  payload("SessionStart", transcript=transcript(tmp_path), source="startup")):
        p = cli(vault.root, "flush", "--hook", stdin=event)
        assert p.returncode == 0 and p.stdout == "" and p.stderr == "", p.stderr
    assert vault.head() == head


def test_after_compaction_the_summary_is_read_from_the_transcript(vault, tmp_path):
    path = transcript(tmp_path, summary=SUMMARY)
    p = cli(vault.root, "flush", "--hook", stdin=payload("SessionStart", transcript=path, source="compact"))
    assert p.returncode == 0, p.stderr
    assert [r["session"] if "session" in r else vault.get(r["id"]).meta["session"]
            for r in vault.list() if r["summary"].startswith("Do not restart")] == [SESSION]


def test_a_hook_failure_is_one_line_and_exit_1(tmp_path):
    p = cli(tmp_path / "no-vault", "flush", "--hook", stdin=payload("PostCompact", trigger="auto", compact_summary=SUMMARY))
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1 and "Traceback" not in p.stderr
    p = cli(tmp_path / "no-vault", "flush", "--hook", stdin="not json")
    assert p.returncode == 1 and len(p.stderr.strip().splitlines()) == 1


def test_recall_and_context_hooks_take_the_documented_payloads(vault):
    api.add(vault, {"subject": "ops", "kind": "decision", "summary": "Never restart the payment service in an incident"})
    api.add(vault, {"subject": "user", "kind": "preference", "summary": "Answers in short bullet lists"})
    p = cli(vault.root, "recall", "--hook", stdin=payload("UserPromptSubmit", permission_mode="default",
                                                          prompt="Can I restart the payment service?"))
    assert p.returncode == 0 and "Never restart the payment service" in p.stdout
    p = cli(vault.root, "context", "--hook", stdin=payload("SessionStart", source="startup", model="claude-sonnet-5"))
    assert p.returncode == 0 and "short bullet lists" in p.stdout
