"""The meta-tools an open-mode agent gets: spawn a process, change its own configuration."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Protocol

from pydantic import TypeAdapter, ValidationError

from ..agent import Tool, as_tool
from ._config import CronTrigger, EventTrigger, ProcessConfig, TriggerConfig

if TYPE_CHECKING:
    from ._lifecycle import ProcessHooks
    from ._state import LiveState
    from ._teardown import Child

__all__ = ["ChildSpawner", "OpenModeProcess", "open_mode_tools"]


class OpenModeProcess(Protocol):
    """What the meta-tools use of the process they belong to (an AgentProcess)."""

    @property
    def name(self) -> str: ...

    @property
    def config(self) -> ProcessConfig: ...

    @property
    def children(self) -> Mapping[str, object]: ...

    async def adopt_child(self, name: str, config: ProcessConfig) -> Child: ...

    async def update_instructions(self, instructions: str, *, source: str = ...) -> bool: ...

    async def add_trigger(self, trigger: TriggerConfig, *, source: str = ...) -> bool: ...


def _host_trigger_refusal(process: OpenModeProcess, triggers: list[Any]) -> str | None:
    """An agent's own trigger may not reach the host (paths, ports) unless the mode allows it."""
    if process.config.open_mode.allow_host_triggers:
        return None
    for trigger in triggers:
        if not isinstance(trigger, CronTrigger | EventTrigger):
            return (
                f"refused: an agent may add cron and event triggers only, not {trigger.type!r} "
                "(open_mode.allow_host_triggers is off)"
            )
    return None


class ChildSpawner:
    """Spawns the children of one process (open mode's ``spawn_process``).

    ``hooks`` are the parent's hook points (each spawn's subagent_start, from a worker);
    ``live`` the parent's state (a stop under way refuses a spawn)."""

    def __init__(self, parent: OpenModeProcess, hooks: ProcessHooks, live: LiveState) -> None:
        self._parent = parent
        self._hooks = hooks
        self._live = live
        #: The children whose subagent_start hooks run now: their names are taken.
        self.spawning: set[str] = set()

    async def spawn(
        self,
        name: str,
        instructions: str,
        triggers: list[dict[str, Any]] | None = None,
    ) -> Child | str:
        """Spawn a child process; return it, or the refusal text."""
        from ._names import validate_name

        parent = self._parent
        if self._live.ending:
            # Its children are being (or have been) stopped: a new one would outlive it.
            return f"refused: process {parent.name!r} is stopping"
        limit = parent.config.open_mode.max_children
        if len(parent.children) + len(self.spawning) >= limit:  # spawns under way count too
            return f"refused: this process may run at most {limit} spawned processes"
        try:
            validate_name(name)
            parsed = [TypeAdapter(TriggerConfig).validate_python(t) for t in triggers or []]
        except (ValueError, ValidationError) as exc:
            return f"error: {exc}"
        refusal = _host_trigger_refusal(parent, parsed)
        if refusal is not None:
            return refusal
        if name in parent.children or name in self.spawning or name == parent.name:
            return f"error: a process named {name!r} already exists"
        # The name is taken from here on: a spawn of the same name by a run alongside (while
        # this one's subagent_start hooks run) is refused, never a second child left
        # unsupervised.
        self.spawning.add(name)
        try:
            gate = await self._hooks.subagent_start(name, "strict", len(parsed))
        finally:
            self.spawning.discard(name)
        if gate.blocked:
            return f"refused: {gate.reason or 'a subagent_start hook refused the spawn'}"
        if self._live.ending:  # a stop began while the hooks ran: a child would outlive it
            return f"refused: process {parent.name!r} is stopping"
        config = parent.config.model_copy(
            update={
                "instructions": instructions,
                "hooks": [],
                "plugins": [],
                "triggers": parsed,
                "execution_mode": "strict",
                "journal_path": None,
            }
        )
        return await parent.adopt_child(name, config)


def open_mode_tools(process: OpenModeProcess, spawner: ChildSpawner) -> list[Tool]:
    """spawn_process, update_instructions and add_trigger, as the open mode allows
    (``spawner`` spawns the process's children)."""
    tools: list[Tool] = []
    options = process.config.open_mode
    if options.allow_spawn:

        async def spawn_process(
            name: str, instructions: str, triggers: list[dict[str, Any]] | None = None
        ) -> str:
            """Start a new agent process with its own instructions (and optional triggers)."""
            child = await spawner.spawn(name, instructions, triggers)
            if isinstance(child, str):
                return child
            return f"process {child.name!r} started"

        tools.append(as_tool(spawn_process))
    if options.allow_self_modify:

        async def update_instructions(instructions: str) -> str:
            """Replace your own instructions (may be refused by policy)."""
            ok = await process.update_instructions(instructions, source="agent")
            return "instructions updated" if ok else "refused: the change was not allowed"

        async def add_trigger(trigger: dict[str, Any]) -> str:
            """Add a trigger to yourself, e.g. {"type": "cron", "cron_expression": "0 * * * *"}."""
            try:
                parsed = TypeAdapter(TriggerConfig).validate_python(trigger)
                refusal = _host_trigger_refusal(process, [parsed])
                if refusal is not None:
                    return refusal
                ok = await process.add_trigger(parsed, source="agent")
            except (ValueError, ValidationError) as exc:
                return f"error: {exc}"
            return "trigger added" if ok else "refused: the change was not allowed"

        tools += [as_tool(update_instructions), as_tool(add_trigger)]
    return tools
