"""What an agent keeps between runs: the conversation buffer and its state notes."""

from __future__ import annotations

import asyncio
import copy
from collections.abc import Awaitable, Callable
from typing import Any

__all__ = ["AgentContext", "ConversationBuffer"]

CompactHook = Callable[[str, dict[str, Any]], Awaitable[None]]


class ConversationBuffer:
    """Recent messages of the process's conversation, bounded by ``max_messages``.

    Compaction drops the oldest messages; ``on_compact`` is awaited before ("pre") and after
    ("post") with the documented data.
    """

    def __init__(self, max_messages: int, on_compact: CompactHook | None = None) -> None:
        self.max_messages = max_messages
        self.messages: list[dict[str, Any]] = []
        self.on_compact = on_compact
        # One compaction at a time (a Lock made at the first: a buffer never compacted holds
        # none).
        self._compacting: asyncio.Lock | None = None

    def __len__(self) -> int:
        return len(self.messages)

    def recent(self) -> list[dict[str, Any]]:
        return list(self.messages)

    def drop_last(self, count: int) -> list[dict[str, Any]]:
        """Remove and return the newest ``count`` messages (no compaction hooks run)."""
        if count <= 0:
            return []
        dropped = self.messages[-count:]
        del self.messages[-count:]
        return dropped

    async def extend(self, messages: list[dict[str, Any]]) -> None:
        self.messages.extend(messages)
        if len(self.messages) <= self.max_messages:
            return
        # One compaction at a time, its size read once the one before it is over: runs that
        # end together (concurrency > 1) while pre_compact hooks wait would each drop what was
        # over when they looked, emptying the buffer, and drop what their hooks were not shown.
        if self._compacting is None:
            self._compacting = asyncio.Lock()
        async with self._compacting:
            over = len(self.messages) - self.max_messages
            if over <= 0:
                return
            if self.on_compact is not None:
                # The messages themselves, in a new list: they leave the buffer next, and
                # whoever hands them to hooks copies them (HookManager.dispatch deep-copies).
                await self.on_compact(
                    "pre",
                    {
                        "buffer_size": len(self.messages),
                        "max_messages": self.max_messages,
                        "dropping": self.messages[:over],
                    },
                )
            del self.messages[:over]  # the oldest: what came meanwhile was added at the end
            if self.on_compact is not None:
                await self.on_compact("post", {"buffer_size": len(self.messages), "dropped": over})


class AgentContext:
    """``process.context``: the conversation buffer and the state the agent wrote."""

    def __init__(
        self,
        max_messages: int,
        initial_state: dict[str, Any] | None = None,
        on_compact: CompactHook | None = None,
    ) -> None:
        self.conversation = ConversationBuffer(max_messages, on_compact)
        self.state: dict[str, Any] = dict(initial_state or {})

    def state_snapshot(self) -> dict[str, Any]:
        """A copy of the state (changes to it do not reach the agent)."""
        return copy.deepcopy(self.state)

    def update_state(self, key: str, value: Any) -> None:
        self.state[key] = value
