"""Reading agent transcripts: OpenAI-style and Anthropic-style message JSON, or plain text
with speaker labels (``User: ...`` / ``Assistant: ...``).

Only what recall and prune need: which message is whose, and the text in it.
"""
from __future__ import annotations

import re
from typing import Any

from memrepo.errors import UsageError

_SPEAKER_RE = re.compile(r"^\s*(user|human|assistant|ai|system|tool|用户|助手)\s*[:：]\s?", re.IGNORECASE | re.MULTILINE)
_USER_LABELS = {"user", "human", "用户"}


def load_json(data: str | bytes, *, where: str = "stdin") -> Any:
    """A transcript's JSON as loaded; a UsageError naming ``where`` for anything that is not a
    JSON document memrepo takes (not UTF-8, not JSON, nested too deep, numbers too long)."""
    from memrepo.store.jsontext import BadJson, loads
    try:
        return loads(data, where=where)
    except BadJson as e:
        raise UsageError(f"{e}; give a list of messages or an object with 'messages'") from None


def load_messages(text: str | bytes, *, where: str = "stdin") -> list[dict[str, Any]]:
    """Message JSON (a list, or an object with ``messages``) as a list of message objects."""
    return messages_of(load_json(text, where=where), where=where)


def messages_of(data: Any, *, where: str = "stdin") -> list[dict[str, Any]]:
    if isinstance(data, dict) and isinstance(data.get("messages"), list):
        data = data["messages"]
    if not isinstance(data, list) or not all(isinstance(m, dict) and "role" in m for m in data):
        raise UsageError(f"{where}: expected a list of messages, each an object with 'role' "
                         "(OpenAI or Anthropic message JSON)")
    return data


def text_of(content: Any) -> str:
    """The text of a message's ``content``: a string, or the text of its text blocks
    (tool results included, images and other blocks left out)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        parts = []
        for block in content:
            if isinstance(block, str):
                parts.append(block)
            elif isinstance(block, dict):
                if block.get("type") == "text" and isinstance(block.get("text"), str):
                    parts.append(block["text"])
                elif block.get("type") == "tool_result":
                    parts.append(text_of(block.get("content")))
        return "\n".join(p for p in parts if p)
    return ""


def is_tool_result_only(message: dict[str, Any]) -> bool:
    """An Anthropic user message that only carries tool results (not something the user said)."""
    content = message.get("content")
    return isinstance(content, list) and bool(content) and all(
        isinstance(b, dict) and b.get("type") == "tool_result" for b in content)


def latest_user_text(text: str) -> str:
    """The latest user message of a transcript, or the text itself when it is just a message.

    JSON message lists (OpenAI or Anthropic) give their last user message that is not only
    tool results; plain text with speaker labels gives the text after the last user label.
    """
    stripped = text.strip()
    if stripped[:1] in "[{":
        try:
            messages = messages_of(load_json(stripped))
        except UsageError:  # not a message list: the text is the message
            messages = None
        if messages is not None:
            for message in reversed(messages):
                if message.get("role") == "user" and not is_tool_result_only(message):
                    found = text_of(message.get("content")).strip()
                    if found:
                        return found
            return ""
    labels = list(_SPEAKER_RE.finditer(stripped))
    if not labels:
        return stripped
    for i in range(len(labels) - 1, -1, -1):
        if labels[i].group(1).lower() in _USER_LABELS:
            end = labels[i + 1].start() if i + 1 < len(labels) else len(stripped)
            return stripped[labels[i].end():end].strip()
    return stripped


def hook_payload(text: str) -> dict[str, Any]:
    """The JSON an agent hook sends on stdin (Claude Code: ``prompt``, ``session_id``,
    ``transcript_path``, ...); extra keys are ignored, a missing ``prompt`` is empty."""
    from memrepo.store.jsontext import BadJson, loads
    try:
        data = loads(text, where="--hook: stdin") if text.strip() else {}
    except BadJson as e:
        raise UsageError(f"{e}; the hook must pipe its payload, e.g. {{\"prompt\": ..., \"session_id\": ...}}") from None
    if not isinstance(data, dict):
        raise UsageError("--hook: stdin must be a JSON object like {\"prompt\": ..., \"session_id\": ...}")
    prompt = data.get("prompt")
    session = data.get("session_id")
    return {"prompt": prompt if isinstance(prompt, str) else "",
            "session_id": session if isinstance(session, str) and session else None,
            "transcript_path": data.get("transcript_path")}
