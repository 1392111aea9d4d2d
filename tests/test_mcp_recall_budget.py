"""memory_recall's whole tool result fits its budget: the block is not repeated in the
memories list, and the query is echoed at most cut short (through the mcp SDK's client)."""
from __future__ import annotations

import asyncio
import json

import pytest

pytest.importorskip("mcp", reason="the mcp SDK is a pinned dependency: run 'make install-test'")

from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

from memrepo import api  # noqa: E402
from memrepo.mcp.server import build_server  # noqa: E402


def recall(vault, arguments: dict):
    server = build_server(str(vault.root), "agent-7")

    async def main():
        async with create_connected_server_and_client_session(server) as client:
            return await client.call_tool("memory_recall", arguments)
    try:
        return asyncio.run(main())
    finally:
        server._memrepo_state.close()


@pytest.fixture
def full_vault(vault, tmp_path):
    rows = [json.dumps({"subject": "ops", "kind": "decision", "summary": f"Payment service restart rule {i}",
                        "body": f"Do not restart the payment service \"{i}\" during incidents.\n" * 12})
            for i in range(30)]
    (tmp_path / "m.jsonl").write_text("\n".join(rows) + "\n", encoding="utf-8")
    api.import_jsonl(vault, tmp_path / "m.jsonl")
    return vault


@pytest.mark.parametrize("budget", [800, 2000, 4000])
def test_the_tool_result_fits_the_budget(full_vault, budget):
    r = recall(full_vault, {"text": "why not restart the payment service?", "budget": budget})
    assert not r.isError, r.content[0].text
    text = r.content[0].text
    assert len(text) <= budget, len(text)
    data = json.loads(text)
    assert data["block"] and data["memories"] and not data["nothing_relevant"]
    assert all(f"[{m['id']}]" in data["block"] for m in data["memories"])
    assert all("body" not in m for m in data["memories"])  # the bodies are in the block, once
    assert len(json.dumps(r.structuredContent, ensure_ascii=False)) <= budget


def test_a_budget_too_small_for_one_memory_still_gives_a_result_that_fits(full_vault):
    r = recall(full_vault, {"text": "why not restart the payment service?", "budget": 300})
    assert not r.isError and len(r.content[0].text) <= 300
    assert json.loads(r.content[0].text)["block"] == ""


def test_a_huge_unlabelled_input_is_not_echoed_back(full_vault):
    huge = "restart the payment service " * 95_000  # 2.6 M characters, no speaker labels
    r = recall(full_vault, {"text": huge, "budget": 2000})
    assert not r.isError, r.content[0].text
    assert len(r.content[0].text) <= 2000
    assert len(json.loads(r.content[0].text)["query"]) <= 200
