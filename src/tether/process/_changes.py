"""Changing a running process's configuration: every change fires config_change first.

Operator changes always apply; an agent's own change (open mode) is refused by a block.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any

from ..agent import BudgetTracker, Tool, as_tool
from ..hooks import DispatchResult, HookEvent
from ._config import ProcessConfig, TriggerConfig
from ._state import ProcessState

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..agent import AgentLoop
    from ._triggers import TriggerRunner

__all__ = ["ConfigChanges"]

logger = logging.getLogger("tether.process")


class ConfigChanges:
    """The configuration-change half of AgentProcess."""

    if TYPE_CHECKING:
        name: str
        redactor: Redactor
        config: ProcessConfig
        state: ProcessState
        _loop: AgentLoop | None
        _tools: list[Tool]
        _triggers: list[tuple[str, TriggerConfig]]
        _runners: dict[str, TriggerRunner]
        _budget: BudgetTracker | None

        async def _emit(self, event: HookEvent, data: dict[str, Any]) -> DispatchResult: ...

        def _start_trigger(self, trigger_id: str, trigger: TriggerConfig) -> None: ...

    # -- configuration changes -------------------------------------------------------------

    async def change_config(
        self, change: str, *, source: str = "operator", apply: Callable[[], Any], **details: Any
    ) -> bool:
        """Fire config_change, then apply: always for operators, unless blocked for the agent."""
        gate = await self._emit(
            HookEvent.CONFIG_CHANGE, {"source": source, "change": change, **details}
        )
        if gate.blocked and source == "agent":
            why = self.redactor.text(gate.reason or "")
            logger.info("agent change %s of %s refused: %s", change, self.name, why)
            return False
        if gate.blocked:
            logger.warning(
                "a hook tried to block an operator change (%s) of %s; operator changes apply",
                change,
                self.name,
            )
        outcome = apply()
        if asyncio.iscoroutine(outcome):
            await outcome
        return True

    async def update_instructions(self, instructions: str, *, source: str = "operator") -> bool:
        def apply() -> None:
            self.config = self.config.model_copy(update={"instructions": instructions})
            if self._loop is not None:
                self._loop.instructions = instructions

        return await self.change_config(
            "instructions", source=source, apply=apply, instructions=instructions
        )

    async def add_tool(self, fn: Callable[..., Awaitable[Any]] | Tool) -> bool:
        t = as_tool(fn)

        def apply() -> None:
            self._tools = [x for x in self._tools if x.name != t.name] + [t]
            if self._loop is not None:
                self._loop.add_tool(t)

        return await self.change_config("tool", apply=apply, action="added", tool_name=t.name)

    async def remove_tool(self, name: str) -> bool:
        def apply() -> None:
            self._tools = [x for x in self._tools if x.name != name]
            if self._loop is not None:
                self._loop.remove_tool(name)

        return await self.change_config("tool", apply=apply, action="removed", tool_name=name)

    async def add_trigger(self, trigger: TriggerConfig, *, source: str = "operator") -> bool:
        taken = {i for i, _ in self._triggers}
        n = len(self._triggers)
        while trigger.id is None and f"{trigger.type}-{n}" in taken:
            n += 1  # the default id type-N of an earlier trigger may still be in use
        trigger_id = trigger.id or f"{trigger.type}-{n}"
        if trigger_id in taken:
            raise ValueError(f"process {self.name!r} already has a trigger {trigger_id!r}")

        def apply() -> None:
            self._triggers.append((trigger_id, trigger))
            if self.state == ProcessState.RUNNING:
                self._start_trigger(trigger_id, trigger)

        return await self.change_config(
            "trigger_added",
            source=source,
            apply=apply,
            trigger_id=trigger_id,
            trigger=trigger.model_dump(mode="json"),
        )

    async def remove_trigger(self, trigger_id: str, *, source: str = "operator") -> bool:
        if not any(i == trigger_id for i, _ in self._triggers):
            raise KeyError(f"process {self.name!r} has no trigger {trigger_id!r}")

        async def apply() -> None:
            self._triggers = [(i, t) for i, t in self._triggers if i != trigger_id]
            runner = self._runners.pop(trigger_id, None)
            if runner is not None:
                await runner.stop()

        return await self.change_config(
            "trigger_removed", source=source, apply=apply, trigger_id=trigger_id
        )

    async def set_budget(self, budget: Any) -> bool:
        from ..agent import BudgetConfig

        config = budget if isinstance(budget, BudgetConfig) else BudgetConfig.model_validate(budget)

        def apply() -> None:
            self.config = self.config.model_copy(update={"budget": config})
            if self._budget is None:
                self._budget = BudgetTracker(config)
            else:
                self._budget.config = config
            if self._loop is not None:
                self._loop.budget = self._budget

        return await self.change_config(
            "budget", apply=apply, budget=config.model_dump(mode="json")
        )
