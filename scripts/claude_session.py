"""A Claude-style session against a vault, for `make demo` (step 11): offline, no API key.

1. Claude's memory tool through the Anthropic SDK's own tool runner
   (``client.beta.messages.tool_runner`` with ``MemrepoMemoryTool``): the Messages API is a
   scripted stand-in that replays the tool calls Claude sends, in English and Chinese.
2. Claude Code's hooks as Claude Code runs them: ``memrepo install claude-code`` into a
   throw-away project, then each installed command run by a shell with the payload the hooks
   reference (v2.1.239) documents on stdin: SessionStart, UserPromptSubmit, PostCompact.

Usage: python scripts/claude_session.py VAULT WORKDIR
"""
from __future__ import annotations

import json
import shlex
import subprocess
import sys
from pathlib import Path

SESSION = "0f6a2c1e-demo-4b7d-9a1e-5c3b2d1e0f00"


def show(label: str, text: str) -> None:
    print(f"  {label}")
    for line in text.splitlines() or [""]:
        print(f"    {line}")


# ---------------------------------------------------------------- 1. the memory tool

CALLS = [
    [{"command": "view", "path": "/memories"}],
    [{"command": "create", "path": "/memories/user/preferences.md",
      "file_text": "# Preferences\nShort answers, bullet lists\nReplies in English at work\n"}],
    [{"command": "create", "path": "/memories/项目/支付.md",
      "file_text": "支付接口超时：连接池已调到 50\n下一步：验收标准是 p95 小于 200 毫秒\n"}],
    [{"command": "str_replace", "path": "/memories/user/preferences.md",
      "old_str": "Replies in English at work", "new_str": "Replies in English at work, 中文 at home"}],
    [{"command": "insert", "path": "/memories/项目/支付.md", "insert_line": 0, "insert_text": "# 支付事故 2026-11-20"}],
    [{"command": "view", "path": "/memories/项目/支付.md"}],
    [{"command": "view", "path": "/memories/../../etc/passwd"}],
    [{"command": "create", "path": "/memories/deploy.md",
      "file_text": "Deploy key: AKIA" + "Q3EXAMPLE7ABCD2Z\n"}],
    [{"command": "create", "path": "/memories/L3/principles.md",
      "file_text": "Never restart the payment service while transactions are in flight\n"}],
    [{"command": "rename", "old_path": "/memories/user/preferences.md", "new_path": "/memories/user/profile.md"}],
    [{"command": "view", "path": "/memories"}],
]


def memory_tool_session(vault: str) -> None:
    try:
        import httpx2
        from anthropic import Anthropic

        from memrepo.agents.claude_memory import MemrepoMemoryTool
    except ImportError as e:
        print(f"  (skipped: the Anthropic SDK is not installed: pip install 'memrepo[claude]'; {e})")
        return
    requests: list[dict] = []

    def claude(request):  # the Messages API: replay the next turn of tool calls, then stop
        requests.append(json.loads(request.content))
        turn = len(requests) - 1
        if turn < len(CALLS):
            content = [{"type": "tool_use", "id": f"toolu_{turn:02d}_{i}", "name": "memory", "input": call}
                       for i, call in enumerate(CALLS[turn])]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "Noted."}], "end_turn"
        return httpx2.Response(200, json={"id": f"msg_{turn:02d}", "type": "message", "role": "assistant",
                                          "model": "claude-demo", "content": content, "stop_reason": stop,
                                          "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})

    client = Anthropic(api_key="demo", base_url="http://claude.invalid",
                       http_client=httpx2.Client(transport=httpx2.MockTransport(claude)))
    tool = MemrepoMemoryTool(vault=vault, agent="claude", session=SESSION)
    client.beta.messages.tool_runner(model="claude-demo", max_tokens=512, tools=[tool],
                                     messages=[{"role": "user", "content": "Remember what matters."}]).until_done()
    for turn, body in enumerate(requests[1:]):
        for result in (b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"):
            call = CALLS[turn][0]
            label = f"{call['command']} {call.get('path') or call.get('old_path')}" + (" -> error" if result.get("is_error") else "")
            show(label, result["content"])


# ---------------------------------------------------------------- 2. the Claude Code hooks

def hooks_session(vault: str, work: Path) -> None:
    project = work / "project"
    project.mkdir(parents=True, exist_ok=True)
    memrepo = [sys.executable, "-m", "memrepo", "--vault", vault]
    out = subprocess.run([*memrepo, "install", "claude-code"], cwd=project, capture_output=True, text=True)
    show("$ memrepo install claude-code", out.stdout + out.stderr)
    settings = json.loads((project / ".claude" / "settings.json").read_text(encoding="utf-8"))
    commands = {(event, tuple(shlex.split(h["command"])[3:])): h["command"]
                for event, groups in settings["hooks"].items() for g in groups for h in g["hooks"]}
    common = {"session_id": SESSION, "transcript_path": str(work / f"{SESSION}.jsonl"), "cwd": str(project)}

    def hook(event: str, tail: tuple[str, ...], **fields) -> None:
        payload = {**common, "hook_event_name": event, **fields}
        proc = subprocess.run(["sh", "-c", commands[(event, tail)]], cwd=project, input=json.dumps(payload, ensure_ascii=False),
                              capture_output=True, text=True)
        text = proc.stdout if len(proc.stdout) < 900 else proc.stdout[:900] + "…"
        show(f"{event} -> memrepo {' '.join(tail)} (exit {proc.returncode})", text + proc.stderr or "(silent)")

    hook("SessionStart", ("context", "--hook"), source="startup", model="claude-sonnet-5")
    hook("SessionStart", ("flush", "--prompt", "--hook"), source="startup")
    hook("UserPromptSubmit", ("recall", "--hook"), permission_mode="default", prompt="Can I restart the payment service?")
    hook("UserPromptSubmit", ("recall", "--hook"), permission_mode="default", prompt="支付接口的验收标准是什么？")
    summary = ("1. Primary Request and Intent: investigate the slow payments API.\n\n# memrepo checkpoint\n"
               "## What\nThe payments API timed out; the pool was raised to 50.\n## Decision\n"
               "Do not restart the payment service during an incident.\n## Why\nA restart drops in-flight transactions.\n"
               "## Evidence\nlogs/api.log#L10-L40\n## Next\nWatch p95; accept under 200 ms.\n")
    hook("PostCompact", ("flush", "--hook"), trigger="auto", compact_summary=summary)
    hook("PostCompact", ("flush", "--hook"), trigger="auto", compact_summary=summary)  # the same compaction: filed once
    zh = "# memrepo checkpoint\n## What（事实）\n支付事故已复盘。\n## Next（下一步）\n明天复查 p95。\n"
    hook("PostCompact", ("flush", "--hook"), trigger="manual", compact_summary=zh)
    # after compaction the checkpoint answers the same question
    hook("UserPromptSubmit", ("recall", "--hook"), permission_mode="default", prompt="Can I restart the payment service?")


def main() -> None:
    vault, work = sys.argv[1], Path(sys.argv[2])
    print("-- Claude's memory tool through the Anthropic SDK's tool runner (MemrepoMemoryTool):")
    memory_tool_session(vault)
    print("-- Claude Code's hooks with the payloads its hooks reference documents:")
    hooks_session(vault, work)


if __name__ == "__main__":
    main()
