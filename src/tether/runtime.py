"""AgentRuntime: many agent processes, one shared HookManager."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

from .hooks import HookManager
from .process import AgentProcess, ProcessConfig, TriggerEvent

__all__ = ["AgentRuntime"]


class AgentRuntime:
    """Holds processes by name; ``hooks`` (a shared manager) fires for every one of them.

    A process added while the runtime runs starts at once. Usable as an async context manager:
    ``async with AgentRuntime() as rt: ...`` starts every process and stops them on exit.
    """

    def __init__(self, hooks: HookManager | None = None) -> None:
        self.hooks = hooks if hooks is not None else HookManager()
        self._processes: dict[str, AgentProcess] = {}
        self.running = False

    def __iter__(self) -> Iterator[AgentProcess]:
        return iter(list(self._processes.values()))

    def __len__(self) -> int:
        return len(self._processes)

    def __contains__(self, name: object) -> bool:
        return name in self._processes

    def get(self, name: str) -> AgentProcess | None:
        """The process called ``name``, or None."""
        return self._processes.get(name)

    @property
    def processes(self) -> dict[str, AgentProcess]:
        return dict(self._processes)

    async def add_process(
        self, name: str, config: ProcessConfig | dict[str, Any] | None = None
    ) -> AgentProcess:
        """Create a process sharing this runtime's hooks; raise ValueError on a duplicate name."""
        if name in self._processes:
            raise ValueError(f"a process named {name!r} already exists")
        if isinstance(config, dict):
            config = ProcessConfig.model_validate(config)
        process = AgentProcess(name, config, hooks=self.hooks)
        self._processes[name] = process
        if self.running:
            await process.start()
        return process

    async def remove_process(self, name: str) -> bool:
        """Stop and forget a process; False if there was none."""
        process = self._processes.pop(name, None)
        if process is None:
            return False
        await process.stop()
        await process.aclose()
        return True

    async def start_all(self) -> None:
        """Start every process (and those added later, as they are added)."""
        self.running = True
        for process in list(self._processes.values()):
            await process.start()

    async def stop_all(self) -> None:
        """Stop every process, concurrently."""
        self.running = False
        processes = list(self._processes.values())
        await asyncio.gather(*(p.stop() for p in processes))
        await asyncio.gather(*(p.aclose() for p in processes))

    async def publish(self, event_type: str, payload: dict[str, Any] | None = None) -> list[str]:
        """Deliver a runtime event to every process with an event trigger for ``event_type``."""
        ids: list[str] = []
        for process in list(self._processes.values()):
            for trigger_id, trigger in process.event_triggers:
                if trigger.event_type == event_type:
                    event = TriggerEvent(trigger_id, "event", dict(payload or {}))
                    ids.append(await process.inject(event))
        return ids

    def health(self) -> dict[str, Any]:
        states: dict[str, int] = {}
        for process in self._processes.values():
            states[process.state.value] = states.get(process.state.value, 0) + 1
        return {"running": self.running, "processes": len(self._processes), "states": states}

    async def __aenter__(self) -> AgentRuntime:
        await self.start_all()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop_all()


AgentRuntime.__module__ = "tether"
