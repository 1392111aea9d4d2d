"""Claude's memory tool under odd and hostile input, through the Anthropic SDK's own dispatch
(``tool.call(input)``: the SDK builds the command object and calls our method, as its tool
runner does): paths that collide with files waiting for review, text that is not valid
Unicode, paths that pass the checks but not the memory schema."""
from __future__ import annotations

import pytest
from conftest import cli

pytest.importorskip("anthropic", reason="the Anthropic SDK is the 'claude' extra: run 'make install-test'")

from anthropic.lib.tools import ToolError  # noqa: E402

from memrepo import api  # noqa: E402
from memrepo.agents import memory_tool  # noqa: E402
from memrepo.agents.claude_memory import MemrepoMemoryTool  # noqa: E402


def tool(vault, session="s-1"):
    return MemrepoMemoryTool(vault=vault.root, session=session)


def no_file_is_also_a_folder(vault) -> None:
    paths = set(memory_tool.files(vault))
    assert not [p for p in paths if any(q.startswith(p + "/") for q in paths)]


def test_nothing_goes_below_a_file_that_waits_for_review(vault):
    """/memories/L2/x.md waits for review as a file: creating /memories/L2/x.md/y.md (or
    renaming something there) would give the vault a file and a folder of one name once both
    are applied, and a later delete of x.md would take y.md with it."""
    t = tool(vault)
    assert "pending review in proposal" in t.call({"command": "create", "path": "/memories/L2/x.md", "file_text": "a\n"})
    with pytest.raises(ToolError, match="pending review"):
        t.call({"command": "create", "path": "/memories/L2/x.md/y.md", "file_text": "b\n"})
    t.call({"command": "create", "path": "/memories/notes.md", "file_text": "c\n"})
    with pytest.raises(ToolError, match="pending review"):
        t.call({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/L2/x.md/notes.md"})
    for p in api.list_proposals(vault):
        api.apply(vault, p.id)
    no_file_is_also_a_folder(vault)
    assert cli(vault.root, "validate").returncode == 0
