"""prune and evidence: tool-result pruning that keeps the evidence."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from conftest import git

from memrepo import api
from memrepo.agents.prune import Options, size
from memrepo.errors import NotFound, UsageError


def big(tag: str, n: int = 9000) -> str:
    return f"BEGIN-{tag} " + "".join(f"{tag} line {i}: status=ok latency={i % 97}ms\n" for i in range(n // 40)) + f" END-{tag}"


def openai_session() -> list[dict]:
    msgs = [{"role": "system", "content": "You are an ops agent. " + big("SYS", 6000)},
            {"role": "user", "content": "The payments API is slow. Investigate."}]
    for k in range(6):
        msgs += [{"role": "assistant", "content": f"step {k}", "tool_calls": [{"id": f"c{k}", "type": "function",
                  "function": {"name": "read_log", "arguments": "{}"}}]},
                 {"role": "tool", "tool_call_id": f"c{k}", "content": big(f"T{k}")}]
    msgs.append({"role": "assistant", "content": "Done: do not restart."})
    return msgs


def anthropic_session() -> dict:
    msgs = [{"role": "user", "content": [{"type": "text", "text": "支付接口很慢，请排查。"}]}]
    for k in range(5):
        msgs += [{"role": "assistant", "content": [{"type": "tool_use", "id": f"t{k}", "name": "read_log", "input": {}}]},
                 {"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"t{k}",
                                               "content": [{"type": "text", "text": big(f"A{k}")},
                                                           {"type": "image", "source": {"type": "base64", "data": "AAAA"}}]}]}]
    msgs.append({"role": "assistant", "content": [{"type": "text", "text": "结论：不要重启。"}]})
    return {"model": "x", "messages": msgs}


def memrepo(vault, *args, stdin: str | None = None):
    env = {**os.environ, "MEMREPO_VAULT": str(vault.root)}
    return subprocess.run([sys.executable, "-m", "memrepo", *args], input=stdin, capture_output=True,
                          text=True, env=env, timeout=60)


def test_soft_trim_keeps_head_and_tail_and_saves_the_full_result(vault):
    msgs = openai_session()
    r = api.prune(vault, msgs, Options(hard_ratio=1.0))
    out = r.transcript
    assert msgs == openai_session()  # the input is not changed
    assert out[0] == msgs[0]  # before the first user message: untouched
    # the last 3 assistant turns and their tool results are untouched
    assert out[-5:] == msgs[-5:]
    t0 = out[3]["content"]
    assert t0.startswith("BEGIN-T0") and "\n…\n" in t0 and "END-T0" in t0 and len(t0) < 3300
    pointer = r.trimmed[0]["evidence"]
    assert pointer in t0 and pointer.startswith("evidence:")
    assert api.get_evidence(vault, pointer).text == msgs[3]["content"]
    assert r.chars_after < r.chars_before == size(msgs)
    assert "evidence/" in git(vault.root, "show", "--name-only", "--format=%s", "HEAD")


def test_hard_clear_brings_the_transcript_under_the_ratio_oldest_first(vault):
    msgs = openai_session()
    r = api.prune(vault, msgs, Options(hard_ratio=0.3, keep_last_assistants=1))
    assert r.chars_after <= 0.3 * r.chars_before
    assert r.cleared and r.cleared[0]["message"] == 3
    assert r.transcript[3]["content"].startswith("[Old tool result content cleared; full result: evidence:")
    for row in r.cleared:
        assert api.get_evidence(vault, row["evidence"]).text == msgs[row["message"]]["content"]


def test_anthropic_blocks_text_trimmed_images_kept(vault):
    data = anthropic_session()
    r = api.prune(vault, data, Options(hard_ratio=1.0, keep_last_assistants=2))
    first = r.transcript["messages"][2]["content"][0]["content"]
    assert first[1] == {"type": "image", "source": {"type": "base64", "data": "AAAA"}}
    assert "\n…\n" in first[0]["text"] and r.transcript["model"] == "x"
    assert r.transcript["messages"][-3:] == data["messages"][-3:]


def test_evidence_is_content_addressed_and_deduplicated(vault):
    msgs = openai_session()
    api.prune(vault, msgs, Options(hard_ratio=1.0))
    head = vault.head()
    files = set(os.listdir(vault.root / "evidence"))
    r = api.prune(vault, msgs, Options(hard_ratio=1.0))  # the same results again
    assert r.commit is None and vault.head() == head and set(os.listdir(vault.root / "evidence")) == files
    import hashlib
    for name in files:
        assert hashlib.sha256((vault.root / "evidence" / name).read_bytes()).hexdigest() == name[:-4]


def test_results_over_the_cap_stay_out_of_git(vault):
    (vault.root / ".memrepo" / "config.toml").write_text("[evidence]\nmax_file_bytes = 5000\n", encoding="utf-8")
    vault._config = None
    r = api.prune(vault, openai_session(), Options(hard_ratio=1.0))
    assert r.outside_git and r.commit is None
    found = api.get_evidence(vault, r.outside_git[0])
    assert found.path.startswith(".memrepo/evidence/") and "BEGIN-T" in found.text
    assert ".memrepo/evidence" not in git(vault.root, "status", "--porcelain", "--untracked-files=all")  # git-ignored


def test_evidence_pointer_forms_and_errors(vault):
    r = api.prune(vault, openai_session(), Options(hard_ratio=1.0))
    pointer = r.trimmed[0]["evidence"]
    bare = pointer.removeprefix("evidence:")
    assert api.get_evidence(vault, bare[:8]).text == api.get_evidence(vault, pointer).text
    with pytest.raises(UsageError):
        api.get_evidence(vault, "evidence:xyz")
    with pytest.raises(NotFound):
        api.get_evidence(vault, "evidence:000000000000")


def test_cli_prune_stdout_is_the_transcript_and_stderr_the_report(vault, tmp_path):
    path = tmp_path / "t.json"
    path.write_text(json.dumps(openai_session()), encoding="utf-8")
    p = memrepo(vault, "prune", str(path))
    assert p.returncode == 0, p.stderr
    out = json.loads(p.stdout)
    assert len(out) == len(openai_session()) and "pruned" in p.stderr and "evidence:" in p.stderr
    p = memrepo(vault, "prune", str(path), "--json", "--hard-ratio", "0.4", "--keep-last-assistants", "1")
    data = json.loads(p.stdout)
    assert data["chars_after"] <= 0.4 * data["chars_before"] and data["cleared"]
    e = memrepo(vault, "evidence", data["cleared"][0]["evidence"])
    assert e.returncode == 0 and e.stdout.startswith("BEGIN-T0")
    bad = memrepo(vault, "prune", str(path), "--hard-ratio", "2")
    assert bad.returncode != 0 and "--hard-ratio" in bad.stderr and "Traceback" not in bad.stderr
    path.write_text("{not json", encoding="utf-8")
    bad = memrepo(vault, "prune", str(path))
    assert bad.returncode != 0 and "not JSON" in bad.stderr and "Traceback" not in bad.stderr
