"""ProcessHooks: one typed method per hook point, each dispatching the payload the event
table declares, and each event dispatched from that one method only."""

from __future__ import annotations

import ast
import asyncio
import gc
import types
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from tether import AgentProcess, HookContext, HookEvent, HookManager, ProcessConfig, TriggerEvent
from tether._redact import Redactor
from tether.agent import Usage
from tether.hooks._events import EVENTS
from tether.models import ScriptedModel
from tether.process._lifecycle import ProcessHooks
from tether.process._state import LiveState

PROCESS = Path(__file__).resolve().parents[2] / "src" / "tether" / "process"
EVENT = TriggerEvent("helpdesk", "webhook", {"ticket": "Login page is down"})
USAGE = Usage().to_dict()

#: Each hook point of a process, called as its callers call it.
CALLS: dict[HookEvent, Any] = {
    HookEvent.SESSION_START: lambda h: h.session_start(False, None),
    HookEvent.SESSION_END: lambda h: h.session_end("stop", 3, USAGE),
    HookEvent.TASK_CREATED: lambda h: h.task_created(EVENT),
    HookEvent.USER_PROMPT_SUBMIT: lambda h: h.user_prompt_submit(EVENT, "ticket: Login"),
    HookEvent.TASK_COMPLETED: lambda h: h.task_completed(
        EVENT, "success", 412.5, None, USAGE, USAGE
    ),
    HookEvent.FILE_CHANGED: lambda h: h.file_changed(
        TriggerEvent("inbox", "file_watch", {"path": "/in/a.txt", "event_type": "created"})
    ),
    HookEvent.CONFIG_CHANGE: lambda h: h.config_change(
        "operator", "mission", {"mission": "Answer in one sentence."}
    ),
    HookEvent.SUBAGENT_START: lambda h: h.subagent_start("helper", "strict", 0),
    HookEvent.SUBAGENT_STOP: lambda h: h.subagent_stop("helper", "stopped"),
    HookEvent.PRE_COMPACT: lambda h: h.compaction(
        "pre", {"buffer_size": 12, "max_messages": 10, "dropping": []}
    ),
    HookEvent.POST_COMPACT: lambda h: h.compaction("post", {"buffer_size": 10, "dropped": 2}),
}


def process_hooks(manager: HookManager) -> ProcessHooks:
    live = LiveState(ProcessConfig(), asyncio.Queue())
    return ProcessHooks("triage", manager, Redactor([]), {}, busy={}, live=live)


@pytest.mark.parametrize("event", list(CALLS), ids=str)
async def test_each_hook_point_dispatches_the_payload_the_event_table_declares(
    event: HookEvent,
) -> None:
    seen: list[dict[str, Any]] = []

    async def record(ctx: HookContext) -> None:
        seen.append(dict(ctx.data))

    manager = HookManager()
    manager.register(event, record)
    await CALLS[event](process_hooks(manager))
    [data] = seen
    jsonschema.validate(data, EVENTS[event].payload)


def test_every_event_a_process_dispatches_itself_has_a_hook_point() -> None:
    """The agent loop's events (tool and model calls, permissions, agent_stop) are the run's."""
    of_the_run = {
        HookEvent.PRE_TOOL_USE,
        HookEvent.POST_TOOL_USE,
        HookEvent.PRE_MODEL_CALL,
        HookEvent.POST_MODEL_CALL,
        HookEvent.PERMISSION_REQUEST,
        HookEvent.PERMISSION_DENIED,
        HookEvent.AGENT_STOP,
    }
    assert set(CALLS) == set(HookEvent) - of_the_run


def test_no_module_of_the_process_names_a_hook_event_but_process_hooks() -> None:
    """Each event is dispatched from exactly one method: no other module of tether.process
    builds a hook event's payload."""
    naming = sorted(
        f"{path.name}: {ast.unparse(node)}"
        for path in PROCESS.glob("*.py")
        if path.name != "_lifecycle.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and isinstance(node.value, ast.Name)
        and node.value.id == "HookEvent"
    )
    assert naming == []


async def test_a_watcher_hears_the_dispatch_of_a_hook_point_and_its_result() -> None:
    heard: list[tuple[str, HookEvent, bool]] = []

    def watcher(name: str, event: HookEvent) -> Any:
        return lambda result: heard.append((name, event, result is not None))

    hooks = process_hooks(HookManager())
    hooks.watchers += (watcher,)
    await hooks.task_created(EVENT)
    assert heard == [("triage", HookEvent.TASK_CREATED, True)]


def _reachable(root: object) -> list[object]:
    """What ``root`` holds, through instances and containers (not modules, classes or the
    globals of a function)."""
    seen: dict[int, object] = {id(root): root}
    todo = [root]
    while todo:
        for ref in gc.get_referents(todo.pop()):
            if id(ref) in seen or isinstance(ref, type | types.ModuleType):
                continue
            seen[id(ref)] = ref
            if not isinstance(ref, types.FunctionType):
                todo.append(ref)
    return list(seen.values())


async def test_an_idle_process_is_wired_by_objects_not_closures_of_its_own() -> None:
    """Regression: the collaborators of a process were wired with ~26 lambdas (and bags of
    them), each a few more objects for the cyclic collector to walk in every idle process."""
    process = AgentProcess("idle", ProcessConfig(model=ScriptedModel()))
    async with process:
        closures = sorted(
            f"{ref.__module__}.{ref.__qualname__}"
            for ref in _reachable(process)
            if isinstance(ref, types.FunctionType)
            and ref.__module__.startswith("tether.process")
            and ref.__closure__
        )
    assert closures == []


async def test_loop_is_a_deprecated_name_of_agent_loop() -> None:
    process = AgentProcess("idle", ProcessConfig(model=ScriptedModel()))
    async with process:
        with pytest.warns(DeprecationWarning, match="agent_loop"):
            assert process.loop is process.agent_loop is not None
