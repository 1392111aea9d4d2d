"""``MemrepoMemoryTool``: a vault as the backend of Claude's memory tool in the Anthropic SDK
(owner of the ``anthropic`` package, an optional dependency: ``pip install 'memrepo[claude]'``).

Pass it where a program would pass the SDK's ``BetaLocalFilesystemMemoryTool``; the SDK's
tool runner then dispatches Claude's ``memory`` calls to it::

    from anthropic import Anthropic
    from memrepo.agents.claude_memory import MemrepoMemoryTool

    runner = Anthropic().beta.messages.tool_runner(
        model=..., max_tokens=1024, messages=[...],
        tools=[MemrepoMemoryTool(vault="~/agent-memory", session="ticket-4211")])
    runner.until_done()

The commands themselves are :class:`memrepo.agents.memory_tool.MemoryTool`'s; this class only
opens the vault for each call (a runner may call from another thread) and turns memrepo's
errors into the SDK's ``ToolError``, whose text the model reads as an ``is_error`` result.
"""
from __future__ import annotations

import os
from typing import Any, Callable

try:
    from anthropic.lib.tools import BetaAbstractMemoryTool, BetaAsyncAbstractMemoryTool, ToolError
except ImportError as e:  # an optional dependency: say how to get it
    raise ImportError("MemrepoMemoryTool needs the Anthropic SDK: pip install 'memrepo[claude]' "
                      "(anthropic==2.16.0)") from e

from memrepo.agents.memory_tool import MemoryTool
from memrepo.errors import MemrepoError
from memrepo.store.vault import Vault


def _root(vault: Vault | str | os.PathLike | None) -> str:
    return str(vault.root) if isinstance(vault, Vault) else str(Vault.find(explicit=vault, recover=False).root)


class _Calls:
    """What both the sync and the async class do per command: open, run, translate errors."""

    def __init__(self, vault: Vault | str | os.PathLike | None, agent: str | None, session: str | None):
        self.root = _root(vault)
        self.agent = agent or "claude"  # the acting agent is an argument, never read from the environment
        self.session = session

    def __call__(self, fn: Callable[[MemoryTool], str]) -> str:
        vault = Vault.find(explicit=self.root)
        try:
            return fn(MemoryTool(vault, agent=self.agent, session=self.session))
        except MemrepoError as e:
            raise ToolError(str(e)) from None
        finally:
            vault.close()


def _new_str(command: Any) -> str:
    """``new_str`` may be left out (the docs: then ``old_str`` is deleted)."""
    value = getattr(command, "new_str", None)
    return value if isinstance(value, str) else ""


class MemrepoMemoryTool(BetaAbstractMemoryTool):
    """Claude's memory tool kept by a memrepo vault (``vault``: a Vault, a path, or None to find
    it as the CLI does); ``agent`` and ``session`` are recorded in every commit it makes."""

    def __init__(self, vault: Vault | str | os.PathLike | None = None, *, agent: str | None = "claude",
                 session: str | None = None, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self._calls = _Calls(vault, agent, session)

    @property
    def root(self) -> str:
        return self._calls.root

    def view(self, command: Any) -> str:
        return self._calls(lambda t: t.view(command.path, getattr(command, "view_range", None)))

    def create(self, command: Any) -> str:
        return self._calls(lambda t: t.create(command.path, command.file_text))

    def str_replace(self, command: Any) -> str:
        return self._calls(lambda t: t.str_replace(command.path, command.old_str, _new_str(command)))

    def insert(self, command: Any) -> str:
        return self._calls(lambda t: t.insert(command.path, command.insert_line, command.insert_text))

    def delete(self, command: Any) -> str:
        return self._calls(lambda t: t.delete(command.path))

    def rename(self, command: Any) -> str:
        return self._calls(lambda t: t.rename(command.old_path, command.new_path))


class AsyncMemrepoMemoryTool(BetaAsyncAbstractMemoryTool):
    """The same for the SDK's async tool runner: each command runs on a worker thread."""

    def __init__(self, vault: Vault | str | os.PathLike | None = None, *, agent: str | None = "claude",
                 session: str | None = None, cache_control: Any = None) -> None:
        super().__init__(cache_control=cache_control)
        self._sync = MemrepoMemoryTool(vault, agent=agent, session=session)

    async def _run(self, name: str, command: Any) -> str:
        from anyio.to_thread import run_sync
        return await run_sync(getattr(self._sync, name), command)

    async def view(self, command: Any) -> str:
        return await self._run("view", command)

    async def create(self, command: Any) -> str:
        return await self._run("create", command)

    async def str_replace(self, command: Any) -> str:
        return await self._run("str_replace", command)

    async def insert(self, command: Any) -> str:
        return await self._run("insert", command)

    async def delete(self, command: Any) -> str:
        return await self._run("delete", command)

    async def rename(self, command: Any) -> str:
        return await self._run("rename", command)
