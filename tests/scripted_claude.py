"""A Claude stand-in for the Anthropic SDK's own tool runner: the Messages API answered by an
httpx2 mock transport (the only thing not real), replaying the tool calls Claude sends, one
assistant turn per request. The requests the SDK makes are kept, so a test reads the exact
``tool_result`` blocks (content and ``is_error``) the SDK built from our tool's answers."""
from __future__ import annotations

import json
from typing import Any

import httpx2
from anthropic import Anthropic


class ScriptedClaude:
    def __init__(self, turns: list[list[dict[str, Any]]]):
        self.turns = turns
        self.requests: list[dict[str, Any]] = []

    def _answer(self, request: httpx2.Request) -> httpx2.Response:
        self.requests.append(json.loads(request.content))
        i = len(self.requests) - 1
        if i < len(self.turns):
            content = [{"type": "tool_use", "id": f"toolu_{i:02d}_{j}", "name": "memory", "input": call}
                       for j, call in enumerate(self.turns[i])]
            stop = "tool_use"
        else:
            content, stop = [{"type": "text", "text": "Done."}], "end_turn"
        return httpx2.Response(200, json={"id": f"msg_{i:02d}", "type": "message", "role": "assistant",
                                          "model": "claude-test", "content": content, "stop_reason": stop,
                                          "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})

    def run(self, tool) -> list[dict[str, Any]]:
        """Run the whole session through ``client.beta.messages.tool_runner``; the tool results
        the SDK sent back, in order (one per tool call)."""
        client = Anthropic(api_key="test-key", base_url="http://claude.test",
                           http_client=httpx2.Client(transport=httpx2.MockTransport(self._answer)))
        runner = client.beta.messages.tool_runner(model="claude-test", max_tokens=256, tools=[tool],
                                                  messages=[{"role": "user", "content": "Remember what matters."}])
        runner.until_done()
        results = []
        for body in self.requests[1:]:
            results += [b for b in body["messages"][-1]["content"] if b.get("type") == "tool_result"]
        return results
