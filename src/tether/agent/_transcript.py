"""A run's messages written as Claude Code writes its transcripts: one JSON object a line.

Claude Code hook programs read ``transcript_path`` (a Stop hook looking for the last thing
the assistant said, an audit pack copying the session). A process with Claude Code hooks keeps
one such file per session; each message of each run is appended as it happens, declared
secrets redacted, the system message left out (Claude Code's transcripts hold none).
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

__all__ = ["TranscriptFile"]

logger = logging.getLogger("tether.agent")


class TranscriptFile:
    """Appends messages to ``path`` in Claude Code's transcript format."""

    def __init__(self, path: str, session_id: str, cwd: str, redact: Callable[[Any], Any]) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self.redact = redact
        try:  # there from the session's start, as Claude Code's (a PreCompact backup copies it)
            open(path, "a", encoding="utf-8").close()
        except OSError as exc:
            logger.warning("transcript %s: cannot create: %s", path, exc)

    def write(self, message: dict[str, Any]) -> None:
        """Append ``message`` (an OpenAI-style chat message); a write that fails is logged
        once per message and the run goes on."""
        line = self.entry(message)
        if line is None:
            return
        try:
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(json.dumps(line, default=str, ensure_ascii=False) + "\n")
        except OSError as exc:
            logger.warning("transcript %s: cannot write: %s", self.path, exc)

    def entry(self, message: dict[str, Any]) -> dict[str, Any] | None:
        """The transcript line of ``message``, or None for a system message."""
        message = self.redact(message)
        role = message.get("role")
        if role == "user":
            kind, body = "user", {"role": "user", "content": message.get("content") or ""}
        elif role == "tool":
            result = {
                "type": "tool_result",
                "tool_use_id": message.get("tool_call_id"),
                "content": message.get("content") or "",
            }
            kind, body = "user", {"role": "user", "content": [result]}
        elif role == "assistant":
            kind, body = "assistant", {"role": "assistant", "content": _assistant(message)}
        else:
            return None
        return {
            "type": kind,
            "sessionId": self.session_id,
            "uuid": uuid.uuid4().hex,
            "timestamp": datetime.now(UTC).isoformat().replace("+00:00", "Z"),
            "cwd": self.cwd,
            "message": body,
        }


def _assistant(message: dict[str, Any]) -> list[dict[str, Any]]:
    content: list[dict[str, Any]] = []
    if message.get("content"):
        content.append({"type": "text", "text": message["content"]})
    for call in message.get("tool_calls") or ():
        function = call.get("function", {})
        try:
            arguments = json.loads(function.get("arguments") or "{}")
        except (TypeError, ValueError):
            arguments = function.get("arguments")
        content.append(
            {
                "type": "tool_use",
                "id": call.get("id"),
                "name": function.get("name"),
                "input": arguments,
            }
        )
    return content
