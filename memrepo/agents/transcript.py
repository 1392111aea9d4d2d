"""Reading agent transcripts: OpenAI-style and Anthropic-style message JSON, Claude Code's
transcript JSONL (one object per line, the message under ``message``), or plain text with
speaker labels (``User: ...`` / ``Assistant: ...``).

Only what recall, prune and the compaction hook need: which message is whose, the text in it,
and the summary a compaction left.
"""
from __future__ import annotations

import json
import re
from dataclasses import dataclass
from typing import Any

from memrepo.errors import UsageError

_LONE_SURROGATE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def well_formed(value: Any) -> Any:
    """JSON as loaded, with each lone surrogate (JSON's ``"\\ud83d"`` without its pair: Claude
    Code cuts long tool output by UTF-16 units, so half an emoji happens) as U+FFFD, so the
    text can be encoded, hashed, searched and written back."""
    if isinstance(value, str):
        return _LONE_SURROGATE.sub("\ufffd", value)
    if isinstance(value, list):
        return [well_formed(v) for v in value]
    if isinstance(value, dict):
        return {well_formed(k): well_formed(v) for k, v in value.items()}
    return value


def _loads(text: str | bytes, *, where: str) -> Any:
    """Outside JSON as :func:`memrepo.store.jsontext.loads` reads it, its strings well formed
    (only text with a surrogate escape is walked)."""
    from memrepo.store.jsontext import loads
    data = loads(text, where=where)
    escaped = _SURROGATE_ESCAPE.search(text if isinstance(text, str) else text.decode("utf-8", "replace"))
    return well_formed(data) if escaped else data


_SPEAKER_RE = re.compile(r"^\s*(user|human|assistant|ai|system|tool|用户|助手)\s*[:：]\s?", re.IGNORECASE | re.MULTILINE)
_USER_LABELS = {"user", "human", "用户"}


def load_json(data: str | bytes, *, where: str = "stdin") -> Any:
    """A transcript's JSON as loaded; a UsageError naming ``where`` for anything that is not a
    JSON document memrepo takes (not UTF-8, not JSON, nested too deep, numbers too long)."""
    from memrepo.store.jsontext import BadJson
    try:
        return _loads(data, where=where)
    except BadJson as e:
        raise UsageError(f"{e}; give a list of messages or an object with 'messages'") from None


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
    """The JSON an agent hook sends on stdin (Claude Code: ``session_id``, ``transcript_path``,
    ``cwd``, ``hook_event_name`` and the event's own fields, such as ``prompt``, ``source``,
    ``trigger``, ``compact_summary``): every field is kept, a missing ``prompt`` is empty and a
    missing or empty ``session_id`` is None."""
    from memrepo.store.jsontext import BadJson
    try:
        data = _loads(text, where="--hook: stdin") if text.strip() else {}
    except BadJson as e:
        raise UsageError(f"{e}; the hook must pipe its payload, e.g. {{\"prompt\": ..., \"session_id\": ...}}") from None
    if not isinstance(data, dict):
        raise UsageError("--hook: stdin must be a JSON object like {\"prompt\": ..., \"session_id\": ...}")
    prompt = data.get("prompt")
    session = data.get("session_id")
    return {**data, "prompt": prompt if isinstance(prompt, str) else "",
            "session_id": session if isinstance(session, str) and session else None,
            "transcript_path": data.get("transcript_path")}


@dataclass
class Transcript:
    """A transcript as read: ``data`` is the JSON value, or for JSONL the list of its lines
    (objects, or the text of a line that is not one, kept as it was)."""

    data: Any
    jsonl: bool = False

    def messages(self) -> list[dict[str, Any]]:
        """The conversation's messages, as the objects inside ``data`` (changing one changes it):
        for Claude Code lines, the ``message`` of user and assistant lines off the side chains."""
        if not self.jsonl:
            return messages_of(self.data, where="transcript")
        found = []
        for line in self.data:
            if not isinstance(line, dict):
                continue
            if isinstance(line.get("message"), dict) and line.get("type") in ("user", "assistant"):
                if not line.get("isSidechain") and line["message"].get("role") in ("user", "assistant"):
                    found.append(line["message"])
            elif "role" in line and "type" not in line:
                found.append(line)  # a JSONL of plain messages
        return found

    def render(self) -> str:
        if not self.jsonl:
            return json.dumps(self.data, ensure_ascii=False, indent=1)
        return "".join((line if isinstance(line, str) else json.dumps(line, ensure_ascii=False)) + "\n"
                       for line in self.data)

    def compact_summary(self) -> str:
        """The text of the last summary a compaction left (Claude Code's ``isCompactSummary``
        line), or ""."""
        for line in reversed(self.data if self.jsonl else []):
            if isinstance(line, dict) and line.get("isCompactSummary") and isinstance(line.get("message"), dict):
                return text_of(line["message"].get("content")).strip()
        return ""


def load_transcript(text: str, *, where: str = "stdin") -> Transcript:
    """Message JSON, or JSONL (Claude Code's transcript): a line that is not JSON is an error
    naming it, except the last one (Claude Code may be writing it), which is kept as text."""
    from memrepo.store.jsontext import BadJson
    stripped = text.strip()
    try:
        data = _loads(stripped, where=where)
    except BadJson as e:
        if e.reason != "Extra data" or not stripped.startswith("{"):
            raise UsageError(f"{e}; give message JSON or a transcript with one JSON object per line "
                             "(Claude Code's .jsonl)") from None
    else:
        if isinstance(data, dict) and not isinstance(data.get("messages"), list) and "role" not in data:
            return Transcript([data], jsonl=True)
        messages_of(data, where=where)  # the same error as before for JSON that is not messages
        return Transcript(data)
    rows: list[Any] = []
    raw = text.split("\n")
    while raw and not raw[-1].strip():
        raw.pop()
    for n, line in enumerate(raw, start=1):
        if not line.strip():
            continue
        try:
            rows.append(_loads(line, where=f"{where}:line {n}"))
        except BadJson as e:
            if n == len(raw):
                rows.append(line)
                continue
            raise UsageError(f"{e}; a transcript .jsonl holds one JSON object per line") from None
    return Transcript(rows, jsonl=True)


def read_transcript(path: str) -> Transcript:
    """The transcript file at ``path`` (a hook's ``transcript_path``), read as UTF-8."""
    from pathlib import Path
    try:
        data = Path(path).expanduser().read_bytes()
    except OSError as e:
        raise UsageError(f"{path}: cannot read the transcript ({e.strerror})") from None
    return load_transcript(data.decode("utf-8", "replace"), where=str(path))
