"""The memory tool's six commands as the MCP tool ``memory``, through the mcp SDK's client:
the memory tool's input schema, its strings, and memrepo's commits and proposals."""
from __future__ import annotations

import asyncio

import pytest
from conftest import git

pytest.importorskip("mcp", reason="the mcp SDK is a pinned dependency: run 'make install-test'")

from mcp.shared.memory import create_connected_server_and_client_session  # noqa: E402

from memrepo import api  # noqa: E402
from memrepo.mcp.server import build_server  # noqa: E402

FIELDS = {"command", "path", "view_range", "file_text", "old_str", "new_str", "insert_line", "insert_text",
          "old_path", "new_path"}


def over_mcp(vault, calls, agent="cursor-agent"):
    server = build_server(str(vault.root), agent)

    async def main():
        async with create_connected_server_and_client_session(server) as client:
            tools = {t.name: t for t in (await client.list_tools()).tools}
            return tools["memory"], [await client.call_tool("memory", c) for c in calls]
    try:
        return asyncio.run(main())
    finally:
        server._memrepo_state.close()


def test_the_memory_tool_over_mcp(vault):
    start = vault.head()
    tool, results = over_mcp(vault, [
        {"command": "view", "path": "/memories"},
        {"command": "create", "path": "/memories/user/偏好.md", "file_text": "喜欢简短的回答\nPrefers tea\n"},
        {"command": "str_replace", "path": "/memories/user/偏好.md", "old_str": "tea", "new_str": "green tea"},
        {"command": "insert", "path": "/memories/user/偏好.md", "insert_line": 0, "insert_text": "# 用户"},
        {"command": "view", "path": "/memories/user/偏好.md"},
        {"command": "view", "path": "/memories/../.git/config"},
        {"command": "create", "path": "/memories/policies/deploy.md", "file_text": "Deploy only on Tuesdays\n"},
        {"command": "rename", "old_path": "/memories/user/偏好.md", "new_path": "/memories/user/prefs.md"},
        {"command": "delete", "path": "/memories/user"},
    ])
    props = tool.inputSchema["properties"]
    assert set(props) == FIELDS and tool.inputSchema["required"] == ["command"]
    assert props["command"]["enum"] == ["view", "create", "str_replace", "insert", "delete", "rename"]
    assert all(p.get("description") for p in props.values())
    text = [r.content[0].text for r in results]
    assert text[1] == "File created successfully at: /memories/user/偏好.md"
    assert text[4] == ("Here's the content of /memories/user/偏好.md with line numbers:\n"
                       "     1\t# 用户\n     2\t喜欢简短的回答\n     3\tPrefers green tea\n     4\t")
    assert results[5].isError and text[5] == "Path /memories/../.git/config would escape /memories directory"
    assert "pending review in proposal" in text[6]
    assert text[7] == "Successfully renamed /memories/user/偏好.md to /memories/user/prefs.md"
    assert text[8] == "Successfully deleted /memories/user"
    assert [r.isError for r in results] == [False] * 5 + [True] + [False] * 3
    history = git(vault.root, "log", "--format=%B", f"{start}..main")
    assert history.count("Memrepo-Agent: cursor-agent") == 5
    assert len(api.list_proposals(vault)) == 1
    assert api.validate_tree(vault) == []
