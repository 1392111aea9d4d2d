"""Claude's memory verbs as one MCP tool, ``memory``, with the memory tool's own input schema
(``command`` and the fields each command takes), so any MCP client can use view, create,
str_replace, insert, delete and rename over ``/memories`` against memrepo. The commands are
:mod:`memrepo.agents.memory_tool`'s: the same strings, commits, proposals and refusals as
``MemrepoMemoryTool`` in the Anthropic SDK. The server registers it with :func:`register`.
"""
from __future__ import annotations

from typing import Annotated, Any, Callable, Literal

from pydantic import Field

from memrepo import api

DESCRIPTION = """Your memory directory /memories, kept by memrepo (every change is a git commit a person can review).
Commands (the same as Claude's memory tool):
- view: a directory (2 levels, with sizes) or a file with line numbers; `path`, optional `view_range` [start, end] (end -1: to the end)
- create: write a file (replaces an existing file's text); `path`, `file_text`
- str_replace: replace text that occurs exactly once; `path`, `old_str`, `new_str` (omit to delete old_str)
- insert: insert `insert_text` after line `insert_line` (0: at the top); `path`
- delete: a file or a directory; `path`
- rename: `old_path` to `new_path` (the destination must not exist)
Paths start with /memories. Files under /memories/L2, /L3 or /L4, or in a folder named after a risky kind
(constraints/, policies/, permissions/), go to a person's review first: the answer names the proposal.
Never store secrets; keep files short and organised."""

Command = Literal["view", "create", "str_replace", "insert", "delete", "rename"]


def register(server: Any, state: Any, result: Callable[[Callable[[], Any]], Any]) -> None:
    """Add the ``memory`` tool to ``server`` (its vault: ``state.vault``, its agent: ``state.agent``);
    ``result`` turns a call into the server's tool result (a memrepo error: a tool error)."""

    @server.tool(name="memory", description=DESCRIPTION)
    def memory(
        command: Annotated[Command, Field(description="The memory command to run.")],
        path: Annotated[str | None, Field(description="Path under /memories (view, create, str_replace, insert, delete).")] = None,
        view_range: Annotated[list[int] | None, Field(description="view: [start_line, end_line], 1-based; end -1 reads "
                                                                   "to the end.")] = None,
        file_text: Annotated[str | None, Field(description="create: the whole text of the file.")] = None,
        old_str: Annotated[str | None, Field(description="str_replace: text that occurs exactly once in the file.")] = None,
        new_str: Annotated[str | None, Field(description="str_replace: the text to put in its place (default: nothing).")] = None,
        insert_line: Annotated[int | None, Field(description="insert: the line after which to insert (0: at the top).")] = None,
        insert_text: Annotated[str | None, Field(description="insert: the text to insert.")] = None,
        old_path: Annotated[str | None, Field(description="rename: the file or directory to move.")] = None,
        new_path: Annotated[str | None, Field(description="rename: where to move it (must not exist).")] = None,
    ) -> Any:
        given = {"command": command, "path": path, "view_range": view_range, "file_text": file_text,
                 "old_str": old_str, "new_str": new_str, "insert_line": insert_line, "insert_text": insert_text,
                 "old_path": old_path, "new_path": new_path}
        call = {k: v for k, v in given.items() if v is not None}
        return result(lambda: api.run_memory_command(state.vault, call, agent=state.agent or "mcp-client"))
