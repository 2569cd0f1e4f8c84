"""Changing a running process's configuration: every change dispatches config_change first.

Operator changes always apply; an agent's own change (open mode) is refused by a block.

Each applied change is kept, newest last, with what undoes it (the last ``CONFIG_HISTORY_KEPT``
only): ``rollback()`` undoes the newest by restoring the part of the configuration that change
replaced, read just before it applied. A rollback is not kept itself, so rolling back again
goes one change further back. Rewinds of the conversation (``rewind()``) are not configuration
changes and are not kept.

One change at a time: a change (rollback and rewind included) holds a lock from its
config_change dispatch until it has applied, so a second change waits and sees the first one's
outcome (two rollbacks undo two changes, never one twice); its checks (a trigger id or an MCP
server name free or known) are made under that lock too, so two concurrent changes never both
pass them.

A change is atomic for its caller: cancelled before it commits (while its config_change
hooks run, or while it waits for the lock), it applies nothing; once its hooks have let it
through it applies and is recorded in full (in ``config_history``, its secrets declared), and
a caller cancelled meanwhile gets its CancelledError only then.

A config_change hook that awaits a change of its own process would wait for the change that
dispatches it: it gets ProcessStateError and must schedule the change instead
(``asyncio.create_task(process.set_mission(...))``), which then applies once the first one has.
"""

from __future__ import annotations

import asyncio
import copy
import logging
from collections.abc import AsyncIterator, Awaitable, Callable, Coroutine, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from ..agent import BudgetConfig, BudgetTracker, Tool, UsageMeter, as_tool
from ._config import ProcessConfig, RestartPolicy, TriggerConfig, check_mission
from ._config_secrets import config_secrets, server_secrets
from ._errors import NothingToRollBackError, ProcessBusyError, ProcessStateError
from ._mcp import McpServerConfig, is_stdio, server_name
from ._state import ProcessState

if TYPE_CHECKING:
    from ..agent import AgentLoop
    from ._lifecycle import ProcessHooks
    from ._mcp_link import McpConnections
    from ._state import LiveState
    from ._triggers import TriggerRunners

__all__ = ["CONFIG_HISTORY_KEPT", "SOURCES", "AppliedChange", "ConfigChanges", "check_source"]

logger = logging.getLogger("tether.process")

#: Applied changes kept for rollback(); older ones are forgotten.
CONFIG_HISTORY_KEPT: Final = 20
#: Who may make a change: the agent's is refused by a block, the operator's always applies.
SOURCES: Final = ("agent", "operator")

#: Undoes one change (may be a coroutine function).
Undo = Callable[[], Awaitable[None] | None]
#: What a change's snapshot returns: its undo, and the state that undo restores (as hooks see
#: it); a trigger change adds the triggers themselves.
Saved = tuple[Undo, dict[str, Any]] | tuple[Undo, dict[str, Any], tuple[tuple[str, Any], ...]]


def check_source(source: str) -> None:
    if source not in SOURCES:
        raise ValueError(f"source must be one of {', '.join(SOURCES)}, got {source!r}")


@dataclass(frozen=True, slots=True)
class AppliedChange:
    """One applied configuration change, and how to undo it."""

    change: str
    source: str
    details: dict[str, Any]
    restored: dict[str, Any]
    undo: Undo
    at: datetime
    #: For a trigger change: the triggers its undo brings back (the API checks their webhooks).
    triggers: tuple[tuple[str, TriggerConfig], ...] | None = None


async def _to_the_end(
    step: Coroutine[Any, Any, None], what: str, redact: Callable[[str], str]
) -> None:
    """Run ``step`` in a task of its own and wait for its end, even if this caller is cancelled
    meanwhile: the caller's CancelledError is raised then, once ``step`` is over (an error of
    ``step`` is logged, redacted, not lost). Without a cancellation, ``step``'s error is
    raised."""
    task = asyncio.get_running_loop().create_task(step)
    cancelled: asyncio.CancelledError | None = None
    while not task.done():
        try:
            await asyncio.wait([task])
        except asyncio.CancelledError as exc:
            cancelled = exc  # (the task goes on: asyncio.wait does not cancel it)
    if cancelled is None:
        task.result()
        return
    if not task.cancelled() and task.exception() is not None:
        error = redact(repr(task.exception()))
        logger.error("%s failed after its caller was cancelled: %s", what, error)
    raise cancelled


class ConfigChanges:
    """A process's configuration while it lives, and every change of it (see the module
    docstring): it owns the parts a change replaces (``config``, ``tools``, ``triggers``,
    ``budget``) and the MCP connections.

    It is handed the process's state (``live``: the configuration itself, its agent loop and
    whether it runs), and what a change reaches beyond it: its hook points (config_change),
    its trigger runners and the meter of its model calls.
    """

    def __init__(
        self,
        live: LiveState,
        hooks: ProcessHooks,
        *,
        tools: list[Tool],
        triggers: TriggerRunners,
        meter: UsageMeter,
    ) -> None:
        self.name = hooks.name
        self._live = live
        self.redactor = hooks.redactor
        self.tools = tools
        config = live.config
        #: Called after each change of ``triggers`` (see AgentProcess.on_triggers_change).
        self.triggers_changed: Callable[[], None] | None = None
        self._triggers: tuple[tuple[str, TriggerConfig], ...] = tuple(
            (t.id or f"{t.type}-{i}", t) for i, t in enumerate(config.triggers)
        )
        self.budget = BudgetTracker(config.budget) if config.budget else None
        #: The price table and the running totals of the process's model calls.
        self.meter = meter
        self._hooks = hooks
        self._runners = triggers
        # The last CONFIG_HISTORY_KEPT applied changes, oldest first (replaced as a whole: a
        # process never changed holds none of its own).
        self._config_history: tuple[AppliedChange, ...] = ()
        # The connections to the MCP servers, made once a running process has one (sync_mcp).
        self._mcp: McpConnections | None = None
        # Held from a change's config_change dispatch until it has applied (and by rollback()
        # from reading the history on): changes apply one at a time, in the order they came.
        # (An asyncio.Lock made at the first change: a process never changed holds none.)
        self._one_change: asyncio.Lock | None = None
        # The task holding _one_change: one that asks for it again would wait on itself.
        self._changing: asyncio.Task[Any] | None = None

    @property
    def config(self) -> ProcessConfig:
        """The configuration now (kept in the process's state; a change replaces it)."""
        return self._live.config

    @config.setter
    def config(self, config: ProcessConfig) -> None:
        self._live.config = config

    @property
    def agent_loop(self) -> AgentLoop | None:
        """The agent loop of the process (None before its first start)."""
        return self._live.agent_loop

    def _running(self) -> bool:
        return self._live.state == ProcessState.RUNNING

    @property
    def triggers(self) -> tuple[tuple[str, TriggerConfig], ...]:
        """The triggers by id, in order; replaced as a whole (never changed in place), so
        ``triggers_changed`` hears of every change."""
        return self._triggers

    @triggers.setter
    def triggers(self, triggers: tuple[tuple[str, TriggerConfig], ...]) -> None:
        self._triggers = triggers
        if self.triggers_changed is not None:
            self.triggers_changed()

    @asynccontextmanager
    async def serialised(self, change: str, deadline: float | None = None) -> AsyncIterator[None]:
        """Hold the change lock; ProcessStateError if this task already holds it (a hook).

        With ``deadline`` (a loop time), ProcessBusyError if the lock is not free by then.
        """
        task = asyncio.current_task()
        if task is not None and task is self._changing:
            raise ProcessStateError(
                f"a {change!r} change of process {self.name!r} was awaited from inside a hook of "
                f"another change of it, which would wait on itself; schedule it instead "
                f"(asyncio.create_task(...)): it applies once that change has"
            )
        try:
            async with asyncio.timeout_at(deadline):
                if self._one_change is None:
                    self._one_change = asyncio.Lock()
                await self._one_change.acquire()
        except TimeoutError:
            raise ProcessBusyError(
                f"another configuration change of process {self.name!r} was still applying at "
                f"the {change!r} change's deadline; it changed nothing"
            ) from None
        self._changing = task
        try:
            yield
        finally:
            self._changing = None
            self._one_change.release()  # (held: made above)

    # -- configuration changes -------------------------------------------------------------

    async def change_config(
        self,
        change: str,
        *,
        source: str = "operator",
        apply: Callable[[], Any],
        snapshot: Callable[[], Saved] | None = None,
        **details: Any,
    ) -> bool:
        """Dispatch config_change, then apply: always for operators, unless blocked for the agent.

        ``snapshot`` (called just before ``apply``) returns what undoes the change; a change
        with one is kept for rollback(). Changes apply one at a time (see the module
        docstring): ProcessStateError when awaited from a config_change hook of this process.
        """
        check_source(source)
        async with self.serialised(change):
            return await self.apply_change(change, source, apply, snapshot, details)

    async def apply_change(
        self,
        change: str,
        source: str,
        apply: Callable[[], Any],
        snapshot: Callable[[], Saved] | None,
        details: dict[str, Any],
    ) -> bool:
        """change_config() once the change lock is held (by ``serialised``)."""
        gate = await self._hooks.config_change(source, change, details)
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
        # The change commits here: what follows applies and records it in full even when the
        # caller is cancelled meanwhile (an apply that suspends goes on in a task of its own).
        saved = snapshot() if snapshot is not None else None
        outcome = apply()
        if not asyncio.iscoroutine(outcome):
            self._record(change, source, details, saved)
            return True

        async def commit() -> None:
            await outcome
            self._record(change, source, details, saved)

        await _to_the_end(
            commit(), f"the {change!r} change of process {self.name!r}", self.redactor.text
        )
        return True

    def _record(
        self, change: str, source: str, details: dict[str, Any], saved: Saved | None
    ) -> None:
        """Record an applied change: its secrets declared, and kept for rollback()."""
        # A trigger's HMAC key or an MCP server's header it brought is a secret from now on.
        self.redactor.declare(config_secrets((t for _, t in self.triggers), self.config))
        if saved is not None:
            undo, restored, *triggers = saved
            applied = AppliedChange(
                change,
                source,
                details,
                restored,
                undo,
                datetime.now(UTC),
                triggers[0] if triggers else None,
            )
            self._config_history = (*self._config_history, applied)[-CONFIG_HISTORY_KEPT:]

    @property
    def config_history(self) -> list[dict[str, Any]]:
        """The applied changes rollback() can undo, oldest first (secret values redacted)."""
        history: list[dict[str, Any]] = self.redactor.value(
            [
                {
                    "change": c.change,
                    "source": c.source,
                    "at": c.at.isoformat(),
                    "details": copy.deepcopy(c.details),
                }
                for c in self._config_history
            ]
        )
        return history

    @property
    def next_rollback(self) -> AppliedChange | None:
        """The applied change rollback() would undo now, if any."""
        return self._config_history[-1] if self._config_history else None

    async def rollback(
        self,
        *,
        source: str = "operator",
        check: Callable[[AppliedChange], None] | None = None,
    ) -> bool:
        """Undo the newest applied change, restoring what it replaced (config_change "rollback").

        Raises NothingToRollBackError when no applied change is left to undo. The newest
        change is read under the change lock, so concurrent rollbacks undo one change each.
        ``check``, when given, is called with that change before anything is done (under the
        lock, so it sees the very change undone); an exception from it refuses the rollback.
        """
        check_source(source)
        async with self.serialised("rollback"):
            if not self._config_history:
                raise NothingToRollBackError(
                    f"process {self.name!r} has no applied configuration change to roll back "
                    f"(the last {CONFIG_HISTORY_KEPT} are kept; rewinds and rollbacks are not)"
                )
            entry = self._config_history[-1]
            if check is not None:
                check(entry)

            async def apply() -> None:
                history = self._config_history  # (entry is still the newest: the lock is held)
                self._config_history = tuple(c for c in history if c is not entry)
                outcome = entry.undo()
                if outcome is not None:
                    await outcome

            details = {
                "undone": entry.change,
                "undone_source": entry.source,
                "undone_details": entry.details,
                "restored": entry.restored,
            }
            return await self.apply_change("rollback", source, apply, None, details)

    # -- instructions and mission ----------------------------------------------------------

    def _put_instructions(self, instructions: str) -> None:
        self.config = self.config.model_copy(update={"instructions": instructions})
        if self.agent_loop is not None:
            self.agent_loop.instructions = instructions

    async def update_instructions(self, instructions: str, *, source: str = "operator") -> bool:
        def snapshot() -> Saved:
            before = self.config.instructions
            return (lambda: self._put_instructions(before)), {"instructions": before}

        return await self.change_config(
            "instructions",
            source=source,
            apply=lambda: self._put_instructions(instructions),
            snapshot=snapshot,
            instructions=instructions,
        )

    def _put_mission(self, mission: str | None) -> None:
        self.config = self.config.model_copy(update={"mission": mission})
        if self.agent_loop is not None:
            self.agent_loop.mission = mission

    async def set_mission(self, mission: str | None, *, source: str = "operator") -> bool:
        """Set the standing goal given to the model after the instructions (None clears it).

        ValueError for a blank or too long mission.
        """
        text = check_mission(mission)

        def snapshot() -> Saved:
            before = self.config.mission
            return (lambda: self._put_mission(before)), {"mission": before}

        return await self.change_config(
            "mission",
            source=source,
            apply=lambda: self._put_mission(text),
            snapshot=snapshot,
            mission=text,
        )

    # -- tools -----------------------------------------------------------------------------

    def _tools_snapshot(self, name: str) -> Saved:
        before = list(self.tools)
        # The tool of that name as runs saw it: a built-in tool lives in the loop only.
        kept = next((t for t in before if t.name == name), None)
        if kept is None and self.agent_loop is not None:
            kept = self.agent_loop.tools.get(name)

        def undo() -> None:
            self.tools = list(before)
            if self.agent_loop is not None:
                if kept is not None:
                    self.agent_loop.add_tool(kept)
                else:
                    self.agent_loop.remove_tool(name)

        return undo, {"tools": [t.name for t in before]}

    async def add_tool(self, fn: Callable[..., Awaitable[Any]] | Tool) -> bool:
        t = as_tool(fn)

        def apply() -> None:
            self.tools = [x for x in self.tools if x.name != t.name] + [t]
            if self.agent_loop is not None:
                self.agent_loop.add_tool(t)

        return await self.change_config(
            "tool",
            apply=apply,
            snapshot=lambda: self._tools_snapshot(t.name),
            action="added",
            tool_name=t.name,
        )

    async def remove_tool(self, name: str) -> bool:
        def apply() -> None:
            self.tools = [x for x in self.tools if x.name != name]
            if self.agent_loop is not None:
                self.agent_loop.remove_tool(name)

        return await self.change_config(
            "tool",
            apply=apply,
            snapshot=lambda: self._tools_snapshot(name),
            action="removed",
            tool_name=name,
        )

    # -- triggers --------------------------------------------------------------------------

    def _triggers_snapshot(self) -> Saved:
        before = self.triggers

        async def undo() -> None:
            self.triggers = before
            kept = {i for i, _ in before}
            for trigger_id in [i for i in self._runners.runners if i not in kept]:
                await self._runners.stop(trigger_id)
            if self._running():
                for trigger_id, trigger in before:
                    if trigger_id not in self._runners.runners:
                        self._runners.start(trigger_id, trigger)  # no runner: fed from outside

        return undo, {"triggers": [i for i, _ in before]}, before

    def _new_trigger_id(self, trigger: TriggerConfig) -> str:
        """The id ``trigger`` gets (its own, or the first free ``type-N``); ValueError if taken.

        Read under the change lock: two concurrent add_trigger() calls never get the same id.
        """
        taken = {i for i, _ in self.triggers}
        n = len(self.triggers)
        while trigger.id is None and f"{trigger.type}-{n}" in taken:
            n += 1  # the default id type-N of an earlier trigger may still be in use
        trigger_id = trigger.id or f"{trigger.type}-{n}"
        if trigger_id in taken:
            raise ValueError(f"process {self.name!r} already has a trigger {trigger_id!r}")
        return trigger_id

    async def add_trigger(self, trigger: TriggerConfig, *, source: str = "operator") -> bool:
        """Add a trigger (and start its runner when running); ValueError if its id is taken."""
        check_source(source)
        async with self.serialised("trigger_added"):
            trigger_id = self._new_trigger_id(trigger)

            def apply() -> None:
                if self._running():
                    self._runners.start(trigger_id, trigger)
                self.triggers = (*self.triggers, (trigger_id, trigger))

            details = {"trigger_id": trigger_id, "trigger": trigger.model_dump(mode="json")}
            return await self.apply_change(
                "trigger_added", source, apply, self._triggers_snapshot, details
            )

    async def remove_trigger(self, trigger_id: str, *, source: str = "operator") -> bool:
        """Remove a trigger (stopping its runner); KeyError when there is none."""
        check_source(source)
        async with self.serialised("trigger_removed"):
            if not any(i == trigger_id for i, _ in self.triggers):
                raise KeyError(f"process {self.name!r} has no trigger {trigger_id!r}")

            async def apply() -> None:
                self.triggers = tuple((i, t) for i, t in self.triggers if i != trigger_id)
                await self._runners.stop(trigger_id)

            details = {"trigger_id": trigger_id}
            return await self.apply_change(
                "trigger_removed", source, apply, self._triggers_snapshot, details
            )

    # -- budget and health -----------------------------------------------------------------

    def _put_budget(self, config: BudgetConfig | None) -> None:
        self.config = self.config.model_copy(update={"budget": config})
        if self.budget is None:
            self.budget = BudgetTracker(config)
        else:
            self.budget.config = config or BudgetConfig()  # the counts of the day are kept
        if self.agent_loop is not None:
            self.agent_loop.budget = self.budget

    async def set_budget(self, budget: Any) -> bool:
        config = budget if isinstance(budget, BudgetConfig) else BudgetConfig.model_validate(budget)

        def snapshot() -> Saved:
            before = self.config.budget
            view = before.model_dump(mode="json") if before is not None else None
            return (lambda: self._put_budget(before)), {"budget": view}

        return await self.change_config(
            "budget",
            apply=lambda: self._put_budget(config),
            snapshot=snapshot,
            budget=config.model_dump(mode="json"),
        )

    def _put_health(self, policy: RestartPolicy) -> None:
        self.config = self.config.model_copy(update={"restart": policy})

    async def set_health(
        self, health: RestartPolicy | Mapping[str, Any], *, source: str = "operator"
    ) -> bool:
        """Change the supervision settings (``config.restart``): when failed runs count as a
        crash (``max_consecutive_failures``) and whether and how soon the process restarts.

        A RestartPolicy replaces the settings; a mapping changes the fields it names and keeps
        the others (pydantic.ValidationError names a bad field). The supervisor reads them at
        the next failed run or crash.
        """
        if isinstance(health, RestartPolicy):
            policy = health
        elif isinstance(health, Mapping):
            policy = RestartPolicy.model_validate({**self.config.restart.model_dump(), **health})
        else:
            raise TypeError(
                f"set_health() takes a RestartPolicy or a mapping of its fields, "
                f"got {type(health).__name__}"
            )

        def snapshot() -> Saved:
            before = self.config.restart
            return (lambda: self._put_health(before)), {"health": before.model_dump(mode="json")}

        return await self.change_config(
            "health",
            source=source,
            apply=lambda: self._put_health(policy),
            snapshot=snapshot,
            health=policy.model_dump(mode="json"),
        )

    # -- MCP servers -----------------------------------------------------------------------

    def _put_mcp_servers(self, servers: list[dict[str, Any]]) -> None:
        self.config = self.config.model_copy(update={"mcp_servers": servers})

    async def sync_mcp(self) -> None:
        """While running, connect to the declared MCP servers a connection is missing for and
        close the connections to servers no longer declared (see _mcp_link). The SDK is only
        imported once a running process has a server to connect to."""
        if not self._running() or self.agent_loop is None:
            return
        if self._mcp is None:
            if not self.config.mcp_servers:
                return
            from ._mcp_link import McpConnections

            self._mcp = McpConnections(self.name, self.redactor)
        if self._mcp.is_open:
            await self._mcp.sync(self.config.mcp_servers)
        else:
            await self._mcp.open(self.agent_loop, self.config.mcp_servers, self.config.tool_timeout)

    async def close_mcp(self) -> None:
        """Close every MCP connection (a stdio server's whole process group goes with it)."""
        if self._mcp is not None:
            await self._mcp.aclose()

    def mcp_status(self) -> dict[str, dict[str, Any]]:
        """Each declared MCP server's connection: its state, tools count and last error."""
        live = self._mcp.status() if self._mcp is not None else {}
        shown: dict[str, dict[str, Any]] = {}
        for entry in self.config.mcp_servers:
            name = server_name(entry)
            if name is not None:
                shown[name] = live.get(name) or {
                    "transport": "stdio" if is_stdio(entry) else entry.get("transport", "http"),
                    "state": "disconnected",
                    "tools": 0,
                    "tool_names": [],
                    "last_error": None,
                    "connects": 0,
                    "attempts": 0,
                }
        return shown

    def _mcp_snapshot(self) -> Saved:
        before = list(self.config.mcp_servers)
        names = [server_name(s) for s in before]

        async def undo() -> None:
            self._put_mcp_servers(before)
            await self.sync_mcp()

        return undo, {"mcp_servers": names}

    async def add_mcp_server(
        self, server: McpServerConfig | Mapping[str, Any], *, source: str = "operator"
    ) -> bool:
        """Declare an MCP server (validated as a McpServerConfig; its name must be new).

        A running process connects to it before this returns: connected, or its first attempt
        failed and it is retried in the background (see ``status()["mcp_servers"]``)."""
        parsed = (
            server
            if isinstance(server, McpServerConfig)
            else McpServerConfig.model_validate(dict(server))
        )
        entry = parsed.entry()
        check_source(source)
        async with self.serialised("mcp_server"):  # the name is checked under the lock
            if any(server_name(s) == parsed.name for s in self.config.mcp_servers):
                raise ValueError(f"process {self.name!r} already has an MCP server {parsed.name!r}")

            async def apply() -> None:
                self._put_mcp_servers([*self.config.mcp_servers, entry])
                await self.sync_mcp()

            # Secret before the config_change hooks see it (the url's password is in details).
            self.redactor.declare(server_secrets(entry))
            url = {"url": parsed.url} if parsed.url is not None else {}
            details = {
                "action": "added",
                "server_name": parsed.name,
                # The url as given (a dump shows its password as ***): redacted as declared.
                "server": {**parsed.model_dump(mode="json", exclude_defaults=True), **url},
            }
            return await self.apply_change("mcp_server", source, apply, self._mcp_snapshot, details)

    async def remove_mcp_server(self, name: str, *, source: str = "operator") -> bool:
        """Remove the declared MCP server ``name``; KeyError when there is none.

        A running process closes its connection (and stops its program) before this returns;
        its tools are no longer offered."""
        check_source(source)
        async with self.serialised("mcp_server"):  # the name is checked under the lock
            if not any(server_name(s) == name for s in self.config.mcp_servers):
                raise KeyError(f"process {self.name!r} has no MCP server {name!r}")

            async def apply() -> None:
                kept = [s for s in self.config.mcp_servers if server_name(s) != name]
                self._put_mcp_servers(kept)
                await self.sync_mcp()

            details = {"action": "removed", "server_name": name}
            return await self.apply_change("mcp_server", source, apply, self._mcp_snapshot, details)
