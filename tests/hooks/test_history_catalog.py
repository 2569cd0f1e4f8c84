"""The hook catalog (HookManager.describe) and enabling/disabling hooks without removing them."""

from __future__ import annotations

from typing import Any

from pydantic import SecretStr

from _process_support import Recorder, eventually, ticket
from tether import AgentProcess, ProcessConfig
from tether.hooks import HookConfig, HookContext, HookEvent, HookManager
from tether.hooks._history import HistoryRecorder
from tether.models import ScriptedModel

UPS = HookEvent.USER_PROMPT_SUBMIT
PROMPT_DATA = {"prompt": "hello", "event_id": "e1", "trigger_id": "desk", "trigger_type": "manual"}


class Counter:
    def __init__(self) -> None:
        self.calls = 0

    async def __call__(self, ctx: HookContext) -> None:
        self.calls += 1


def scripted(**config: Any) -> AgentProcess:
    return AgentProcess("triage", ProcessConfig(model=ScriptedModel(), **config))


# -- enable / disable -------------------------------------------------------------------------


async def test_a_hook_disabled_by_id_does_not_run_but_stays_registered() -> None:
    counter = Counter()
    manager = HookManager()
    hook_id = manager.register(UPS, counter)
    assert manager.set_enabled(hook_id, False) == 1
    result = await manager.dispatch(UPS, PROMPT_DATA)
    assert (counter.calls, result.fired) == (0, 0)
    assert hook_id in manager
    assert manager.registered(UPS) == [hook_id]


async def test_a_re_enabled_hook_runs_again() -> None:
    counter = Counter()
    manager = HookManager()
    hook_id = manager.register(UPS, counter)
    manager.set_enabled(hook_id, False)
    await manager.dispatch(UPS, PROMPT_DATA)
    assert manager.set_enabled(hook_id, True) == 1
    await manager.dispatch(UPS, PROMPT_DATA)
    assert counter.calls == 1


async def test_disabling_by_tag_disables_every_hook_of_that_tag_only() -> None:
    ops, other = Counter(), Counter()
    manager = HookManager()
    manager.register(UPS, ops, tag="ops")
    manager.register(HookEvent.TASK_CREATED, ops, tag="ops")
    manager.register(UPS, other, tag="audit")
    assert manager.set_enabled("ops", False) == 2
    await manager.dispatch(UPS, PROMPT_DATA)
    await manager.dispatch(HookEvent.TASK_CREATED, {"event_id": "e"})
    assert (ops.calls, other.calls) == (0, 1)
    assert manager.set_enabled("ops", True) == 2
    await manager.dispatch(UPS, PROMPT_DATA)
    assert ops.calls == 1


def test_disabling_an_unknown_id_or_tag_changes_nothing() -> None:
    manager = HookManager()
    manager.register(UPS, Counter(), tag="ops")
    assert manager.set_enabled("hook-does-not-exist", False) == 0
    assert all(info.enabled for info in manager.describe())


async def test_a_disabled_hook_leaves_no_run_record() -> None:
    manager = HookManager()
    off = manager.register(UPS, Counter(), name="off")
    manager.register(UPS, Counter(), name="on")
    manager.set_enabled(off, False)
    manager.recorder = history = HistoryRecorder("p")
    await manager.dispatch(UPS, PROMPT_DATA)
    assert [r.hook_name for r in history.runs()] == ["on"]


async def test_a_disabled_once_hook_is_not_used_up_while_disabled() -> None:
    counter = Counter()
    manager = HookManager()
    hook_id = manager.register(UPS, counter, once=True)
    manager.set_enabled(hook_id, False)
    await manager.dispatch(UPS, PROMPT_DATA)
    assert hook_id in manager
    manager.set_enabled(hook_id, True)
    await manager.dispatch(UPS, PROMPT_DATA)
    await manager.dispatch(UPS, PROMPT_DATA)
    assert counter.calls == 1
    assert hook_id not in manager


async def test_a_config_hook_of_a_running_process_can_be_disabled_and_re_enabled() -> None:
    counter = Counter()
    process = scripted(hooks=[HookConfig(event="user_prompt_submit", callback=counter, tag="gate")])
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        process.hooks.set_enabled("gate", False)
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 1, what="run 1")
        process.hooks.set_enabled("gate", True)
        await process.inject(ticket())
        await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) == 2, what="run 2")
    assert counter.calls == 1
    assert process.status()["hook_count"] == 2


# -- the catalog ------------------------------------------------------------------------------


def test_the_catalog_marks_a_disabled_hook() -> None:
    manager = HookManager()
    off = manager.register(UPS, Counter(), name="off")
    manager.register(UPS, Counter(), name="on")
    manager.set_enabled(off, False)
    assert {info.name: info.enabled for info in manager.describe()} == {"off": False, "on": True}


def test_the_catalog_describes_each_hook_of_the_resolved_chain_in_run_order() -> None:
    shared = HookManager()
    shared_id = shared.register(UPS, Counter(), name="fleet", priority=100)
    parent = HookManager()
    parent.register(UPS, Counter(), name="org")
    process = scripted(
        hooks=[
            HookConfig(
                event="user_prompt_submit",
                command=["audit", "--strict"],
                timeout=3,
                fail_closed=True,
                tag="policy",
                name="audit",
                priority=5,
                matcher={"trigger_type": "webhook"},
                env={"TOKEN": SecretStr("s3cr3t-value")},
            )
        ]
    )
    process.hooks.share(shared)
    process.hooks.inherit(parent)
    own_id = process.hooks.register(UPS, Counter(), name="notes", mode="async", once=True)
    catalog = process.hooks.describe(UPS)
    assert [(i.name, i.source, i.order) for i in catalog] == [
        ("audit", "config", 0),
        ("notes", "code", 1),
        ("org", "inherited", 2),
        ("fleet", "shared", 3),
    ]
    audit, notes, _, fleet = catalog
    assert (audit.event, audit.priority, audit.fail_closed, audit.tag, audit.mode) == (
        "user_prompt_submit",
        5,
        True,
        "policy",
        "sync",
    )
    assert audit.matcher == {"trigger_type": ["webhook"]}
    assert audit.command == ["audit", "--strict"]
    assert "s3cr3t-value" not in repr(catalog)
    assert (notes.hook_id, notes.mode, notes.once, notes.command) == (own_id, "async", True, None)
    assert notes.timeout == 30.0  # the process's default hook timeout
    assert fleet.hook_id == shared_id


def test_the_catalog_of_every_event_lists_each_event_that_has_hooks() -> None:
    manager = HookManager()
    manager.register(UPS, Counter())
    manager.register(HookEvent.TASK_CREATED, Counter())
    assert {info.event for info in manager.describe()} == {"user_prompt_submit", "task_created"}
