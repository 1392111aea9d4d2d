"""A vault a person would supervise, made through the library for the UI's tests: facts in
English and Chinese, open proposals of several sources (one high-risk with a Chinese body and a
stored tool result as evidence), an applied and rolled-back history, citations and a notice,
a distill run, an agent's private memory, and a memory whose body tries to run script."""
from __future__ import annotations

import json
from pathlib import Path

from memrepo import api
from memrepo.agents import evidence
from memrepo.review import writes
from memrepo.team import citations, scopes

XSS_BODY = ("Watch out: <script>alert(1)</script> and <img src=x onerror=\"alert(2)\"> "
            "and <img src=\"http://127.0.0.1:9/probe.png\"> and ![probe](http://127.0.0.1:9/probe2.png) "
            "and [a link](javascript:alert(7)) and [[mem_theme|<svg onload=alert(8)>]].")
# A field that tries to break out of an attribute, a text node or the SVG it is drawn in.
XSS_FIELD = "\"'><script>alert({n})</script><svg onload=alert({n})> a field that tries to run script"


def build(root: Path) -> dict[str, str]:
    """Create the vault at ``root``; returns the ids the tests use."""
    vault = api.init(root)
    ids: dict[str, str] = {}
    with vault:
        writes.add(vault, {"id": "mem_theme", "subject": "user", "fact": "ui.theme", "kind": "preference",
                           "summary": "User prefers dark mode", "tags": ["#界面"]}, "Asked twice for a dark editor theme.")
        writes.add(vault, {"id": "mem_pool", "subject": "project-alpha", "kind": "knowledge", "summary": "配置数据库连接池：最大线程数 32",
                           "tags": ["#数据库"], "links": ["mem_theme"]}, "连接池 max_threads=32，超时 5s（Redis 超时 3s）。")
        writes.add(vault, {"id": "mem_release", "subject": "project-alpha", "fact": "release.auto_publish", "layer": "L2",
                           "kind": "state", "summary": "允许自动发布", "evidence": ["docs/release.md#L1-L9"]},
                   "当前阶段允许自动发布，发布流水线无需人工确认。")
        citations.cite(vault, ["mem_release"], by="analyst", ref="weekly-report-48")
        [saved], _ = evidence.save_evidence(vault, ["$ pytest -q\n3 failed, 120 passed\nFAILED tests/test_release.py::test_publish"])
        high = writes.add(vault, {"id": "mem_release2", "subject": "project-alpha", "fact": "release.auto_publish", "layer": "L2",
                                  "kind": "constraint", "summary": "当前阶段禁止自动发布", "author": "release-agent",
                                  "evidence": [saved.pointer, "docs/release.md#L10-L20"],
                                  "affects": ["release pipeline must wait for a human"]},
                          "当前阶段禁止自动发布，发布流水线必须等待人工确认。")
        ids["high"] = str(high.proposal)
        for n, (fact, summary) in enumerate((("deploy.window", "Deploy only on weekdays"), ("deploy.freeze", "Freeze deploys in December"),
                                             ("deploy.owner", "Ops owns deploys"), ("deploy.region", "Deploy to eu-west first"))):
            r = writes.add(vault, {"id": f"mem_rule{n}", "subject": "ops", "fact": fact, "kind": "constraint", "summary": summary,
                                   "author": "ops-agent"}, f"{summary}.")
            ids[f"rule{n}"] = str(r.proposal)
        writes.add(vault, {"id": "mem_limit", "subject": "ops", "fact": "rate.limit", "kind": "knowledge", "summary": "rate limit 100/s"},
                   "The API allows 100 requests per second.")
        applied = writes.add(vault, {"id": "mem_limit2", "subject": "ops", "fact": "rate.limit", "kind": "knowledge",
                                     "summary": "rate limit 200/s"}, "The API allows 200 requests per second.")
        api.apply(vault, str(applied.proposal))
        writes.add(vault, {"id": "mem_xss", "subject": "security", "kind": "knowledge", "summary": XSS_FIELD.format(n=3),
                           "tags": [XSS_FIELD.format(n=4)], "evidence": ["javascript:alert(5)", XSS_FIELD.format(n=6)],
                           "links": ["mem_theme"]}, XSS_BODY)
        writes.add(vault, {"id": "mem_cache", "subject": "project-alpha", "kind": "knowledge",
                           "summary": "Cache invalidation uses versioned keys", "links": ["mem_pool"]},
                   "Bump the key version to invalidate; see [[mem_pool]].")
        scopes.add(vault, {"summary": "我猜用户偏好深色：两次提到夜间工作", "scope": "private"}, "", agent="analyst")
        lines = [json.dumps({"subject": "user", "summary": "User asked for the dark editor theme again",
                             "body": "Switched the editor to dark mode; the user prefers dark themes.",
                             "created": f"2026-11-{d}T09:00:00+00:00", "session": f"s-{d}"}) for d in (20, 22, 25)]
        days = root.parent / f"{root.name}-days.jsonl"
        days.write_text("\n".join(lines) + "\n", encoding="utf-8")
        api.import_jsonl(vault, days)
        ids["distill"] = str(api.distill(vault, now="2026-11-29").proposal)
    return ids
