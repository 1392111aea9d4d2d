"""A scripted long agent session (English or Chinese) for the end-to-end test and `make demo`.

    python3 scripts/agent_session.py --lang en|zh OUTDIR

Writes into OUTDIR:
  transcript.json   Anthropic-style messages with large tool results (logs, metrics, config)
  flush.md          what the model answers to the flush prompt before compaction; the string
                    {LOG_EVIDENCE} stands where it cites the evidence pointer of the first log
  noise.jsonl       unrelated memories already in the vault (the recall must pick the right one)
"""
from __future__ import annotations

import argparse
import json
from pathlib import Path

EN = {
    "task": "The payments API is timing out during the incident. Investigate, but be careful: we are live.",
    "detail": "WARN drain check: 312 in-flight transactions would be dropped by a restart of payments-svc",
    "turns": [
        ("Reading the payments service log.", "read_log", "log"),
        ("Checking database pool metrics.", "query_metrics", "metrics"),
        ("Reading the deployed configuration.", "read_config", "config"),
        ("Checking the load balancer.", "read_lb", "lb"),
        ("Reading the payments service log again after the pool change.", "read_log", "log2"),
    ],
    "questions": [
        ("Should we restart the payments service to clear it?",
         "No. Do not restart payments-svc: the drain check shows a restart would drop in-flight transactions. "
         "Raise the DB pool from 20 to 50 instead."),
        ("What is the acceptance criterion for the fix?",
         "p95 latency of /charge under 200 ms for 30 minutes after the pool change, checked on the dashboard."),
        ("Thanks, keep going.", "Pool raised; watching the dashboard."),
    ],
    "flush": """subject: payments
kind: decision
## What
Payments API timed out during the incident; the DB pool (20) was exhausted.
## Decision
Do not restart the payments service during the incident.
## Why
A restart drops in-flight transactions (the drain check counted 312); raising the pool fixes the cause.
## Evidence
{LOG_EVIDENCE} (payments-svc log, drain check line)
## Next
Raise the DB pool to 50 and watch p95.
---
subject: payments
kind: state
## What
DB pool raised from 20 to 50 on payments-db.
## Next
Acceptance: p95 latency of /charge under 200 ms for 30 minutes after the change, on the dashboard.
---
subject: payments
kind: constraint
fact: incident.config_freeze
## Decision
No configuration changes to payments-svc other than the DB pool until the incident review.
## Why
The user asked for the smallest possible change while live.
""",
    "question": "why did we decide not to restart the service?",
    "expect": "Do not restart the payments service during the incident.",
    "question2": "what is the acceptance criterion for the pool change?",
    "expect2": "DB pool raised from 20 to 50 on payments-db.",
}

ZH = {
    "task": "支付接口在事故中频繁超时。请排查，但注意：系统正在线上运行。",
    "detail": "WARN 排空检查：重启 payments-svc 会丢弃 312 笔进行中的交易",
    "turns": [
        ("读取支付服务日志。", "read_log", "log"),
        ("查看数据库连接池指标。", "query_metrics", "metrics"),
        ("读取线上配置。", "read_config", "config"),
        ("检查负载均衡。", "read_lb", "lb"),
        ("调整连接池后再次读取日志。", "read_log", "log2"),
    ],
    "questions": [
        ("要不要重启支付服务来恢复？", "不要重启 payments-svc：排空检查显示重启会丢弃进行中的交易。改为把连接池从 20 调到 50。"),
        ("这次修复的验收标准是什么？", "连接池调整后 30 分钟内 /charge 的 p95 延迟低于 200 毫秒，以监控面板为准。"),
        ("好的，继续。", "连接池已调整，正在观察监控。"),
    ],
    "flush": """subject: payments
kind: decision
## What（事实）
事故期间支付接口超时；数据库连接池（20）耗尽。
## Decision（决策）
事故期间不重启支付服务。
## Why（原因）
重启会丢弃进行中的交易（排空检查统计到 312 笔）；调大连接池才能解决根因。
## Evidence（证据）
{LOG_EVIDENCE}（payments-svc 日志，排空检查那一行）
## Next（下一步）
把连接池调到 50，观察 p95。
---
subject: payments
kind: state
## What（事实）
payments-db 的连接池已从 20 调到 50。
## Next（下一步）
验收标准：调整后 30 分钟内 /charge 的 p95 延迟低于 200 毫秒，以监控面板为准。
---
subject: payments
kind: constraint
fact: incident.config_freeze
## Decision（决策）
事故复盘之前，除连接池外不修改 payments-svc 的任何配置。
## Why（原因）
用户要求线上只做最小改动。
""",
    "question": "之前为什么决定不重启服务？",
    "expect": "事故期间不重启支付服务。",
    "question2": "下一步验收标准是什么?",
    "expect2": "payments-db 的连接池已从 20 调到 50。",
}

NOISE = [
    ("build", "Restart the build agents every night at 02:00", "The CI build agents leak memory; a nightly restart keeps them healthy."),
    ("build", "Cache pip downloads in CI", "Saves four minutes per pipeline."),
    ("frontend", "The settings page uses the dark theme by default", "Chosen in the design review."),
    ("payments", "Payments reports are sent on Mondays", "Finance reads them on Monday morning."),
    ("search", "Reindex the product catalogue after a bulk price update", "Otherwise stale prices show."),
    ("user", "The user prefers short answers with bullet lists", "Stated twice in October."),
    ("ops", "Rotate the on-call schedule weekly", "Agreed in the team meeting."),
    ("ops", "服务重启前先通知值班同学", "避免告警风暴。"),
    ("build", "构建机每周清理一次磁盘", "否则镜像缓存会占满磁盘。"),
    ("frontend", "登录页的验收标准是首屏加载小于 1 秒", "产品评审确定。"),
    ("data", "数据库备份每天凌晨三点执行", "保留 14 天。"),
    ("user", "用户希望代码注释用英文", "多次提到。"),
]


def tool_output(kind: str, detail: str, n: int = 240) -> str:
    lines = []
    for i in range(n):
        lines.append(f"2026-12-01T14:{i % 60:02d}:{(i * 7) % 60:02d}Z {kind} worker-{i % 8} "
                     f"status=ok latency_ms={(i * 37) % 900} pool_in_use={min(20, i % 23)}/20 trace={i:06x}")
        if kind == "log" and i == n // 2:
            lines.append(detail)
    return "\n".join(lines)


def build(lang: str) -> tuple[dict, str, list[dict]]:
    s = EN if lang == "en" else ZH
    msgs: list[dict] = [{"role": "user", "content": [{"type": "text", "text": s["task"]}]}]
    for k, (say, tool, kind) in enumerate(s["turns"]):
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": say},
                                                      {"type": "tool_use", "id": f"tu{k}", "name": tool, "input": {}}]})
        msgs.append({"role": "user", "content": [{"type": "tool_result", "tool_use_id": f"tu{k}",
                                                  "content": tool_output(kind, s["detail"])}]})
    for question, answer in s["questions"]:
        msgs.append({"role": "user", "content": [{"type": "text", "text": question}]})
        msgs.append({"role": "assistant", "content": [{"type": "text", "text": answer}]})
    noise = [{"subject": subj, "kind": "knowledge", "summary": summ, "body": body} for subj, summ, body in NOISE]
    return {"messages": msgs}, s["flush"], noise


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write the scripted agent session fixtures.")
    ap.add_argument("--lang", choices=("en", "zh"), default="en")
    ap.add_argument("outdir")
    args = ap.parse_args(argv)
    out = Path(args.outdir)
    out.mkdir(parents=True, exist_ok=True)
    transcript, flush, noise = build(args.lang)
    (out / "transcript.json").write_text(json.dumps(transcript, ensure_ascii=False, indent=1), encoding="utf-8")
    (out / "flush.md").write_text(flush, encoding="utf-8")
    (out / "noise.jsonl").write_text("".join(json.dumps(n, ensure_ascii=False) + "\n" for n in noise), encoding="utf-8")
    s = EN if args.lang == "en" else ZH
    (out / "questions.json").write_text(json.dumps({k: s[k] for k in ("question", "expect", "question2", "expect2")},
                                                   ensure_ascii=False), encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
