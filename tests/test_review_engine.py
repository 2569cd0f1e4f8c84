"""Review of the hook engine: contract deviations found by reading the reference, each pinned."""

from __future__ import annotations

from tether import HookConfig, HookEvent, HookManager


async def test_a_command_hook_config_with_the_largest_allowed_timeout_can_be_registered() -> None:
    manager = HookManager()
    hook_id = manager.register_config(
        HookConfig(event="task_completed", command=["/bin/true"], timeout=3600)
    )
    assert manager.registered(HookEvent.TASK_COMPLETED) == [hook_id]
