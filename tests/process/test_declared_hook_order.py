"""A process's declared hooks (ProcessConfig.hooks) are registered after its inherited and
shared managers are linked, and at once: their before/after may name a runtime's shared hooks,
a parent's, and one another in any order."""

from __future__ import annotations

import pytest

from tether import AgentProcess, AgentRuntime, ProcessConfig
from tether.hooks import HookConfig, HookContext, HookEvent, HookManager

EV = HookEvent.TASK_CREATED


def declared(ran: list[str], name: str, **options: object) -> HookConfig:
    async def hook(ctx: HookContext) -> None:
        ran.append(name)

    return HookConfig(event=EV.value, callback=hook, name=name, **options)


def names_in_order(process: AgentProcess) -> list[tuple[str, int, str]]:
    return [(i.name, i.order, i.source) for i in process.hooks.describe(EV)]


async def test_a_config_hook_may_run_after_a_shared_runtime_hook() -> None:
    """Regression: the config hooks were registered before the runtime's manager was shared,
    so ``after: ["audit"]`` failed at add_process with "hooks there: none"."""
    shared, ran = HookManager(), []
    shared.register_config(declared(ran, "audit", priority=-10))
    runtime = AgentRuntime(hooks=shared)
    config = ProcessConfig(hooks=[declared(ran, "report", after=["audit"], priority=5)])
    process = await runtime.add_process("p", config)
    await process.hooks.dispatch(EV, {})
    assert ran == ["audit", "report"]
    assert names_in_order(process) == [("audit", 0, "shared"), ("report", 1, "config")]


async def test_config_hooks_may_name_hooks_declared_later_and_run_in_that_order() -> None:
    ran: list[str] = []
    config = ProcessConfig(
        hooks=[
            declared(ran, "x", after=["y"], priority=10),
            declared(ran, "y", after=["z"]),
            declared(ran, "z"),
        ]
    )
    process = await AgentRuntime().add_process("p", config)
    await process.hooks.dispatch(EV, {})
    assert ran == ["z", "y", "x"]
    assert [(n, o) for n, o, _ in names_in_order(process)] == [("z", 0), ("y", 1), ("x", 2)]


async def test_a_child_config_hook_may_run_before_a_hook_of_its_parent() -> None:
    ran: list[str] = []
    parent = AgentProcess("parent", ProcessConfig(hooks=[declared(ran, "policy")]))
    child = AgentProcess(
        "child", ProcessConfig(hooks=[declared(ran, "redact", before=["policy"])]), parent=parent
    )
    await child.hooks.dispatch(EV, {})
    assert ran == ["redact", "policy"]
    assert names_in_order(child) == [("redact", 0, "config"), ("policy", 1, "inherited")]


async def test_a_cycle_among_config_hooks_refuses_the_process_naming_hooks_i() -> None:
    runtime, ran = AgentRuntime(), []
    config = ProcessConfig(
        hooks=[declared(ran, "x", before=["y"]), declared(ran, "y", before=["x"])]
    )
    with pytest.raises(
        ValueError, match=r"^hooks\[1\]\.before: hook 'y': .*cycle: 'x' -> 'y' -> 'x'"
    ):
        await runtime.add_process("p", config)
    assert runtime.get("p") is None


async def test_a_shared_hook_registered_later_cannot_name_a_process_hook_and_says_why() -> None:
    shared, ran = HookManager(), []
    runtime = AgentRuntime(hooks=shared)
    await runtime.add_process("p", ProcessConfig(hooks=[declared(ran, "gate")]))
    with pytest.raises(ValueError, match=r"hook 'late': before names 'gate'.*shares it"):
        shared.register_config(declared(ran, "late", before=["gate"]))
    assert len(shared) == 0
