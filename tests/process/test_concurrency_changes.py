"""Review: configuration changes behind a config_change command hook that hangs.

Each change holds the change lock through its config_change dispatch, so changes behind a hook
that hangs wait for its timeout (the program is killed) and then apply, in the order they came,
whether or not the process was stopped meanwhile.
"""

from __future__ import annotations

import asyncio

import pytest

from _process_support import Recorder
from conftest import ScriptFactory
from tether import AgentProcess, HookConfig, HookEvent, ProcessConfig, ProcessState
from tether.models import ScriptedModel

HANGS = """
import sys, time
sys.stdin.read()
time.sleep(60)
"""


@pytest.mark.slow
async def test_changes_behind_a_hung_command_hook_apply_in_order_across_a_stop(
    make_script: ScriptFactory,
) -> None:
    hook = HookConfig(event="config_change", command=[make_script(HANGS)], timeout=0.2)
    process = AgentProcess("triage", ProcessConfig(model=ScriptedModel(), hooks=[hook]))
    rec = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE, priority=10)
    await process.start()
    changes = [asyncio.create_task(process.set_mission(f"mission {i}")) for i in range(3)]
    await process.stop()  # the changes do not hold up the stop, nor the stop the changes
    assert process.state == ProcessState.STOPPED
    assert await asyncio.gather(*changes) == [True, True, True]
    assert [d["mission"] for d in rec.of(HookEvent.CONFIG_CHANGE)] == [
        "mission 0",
        "mission 1",
        "mission 2",
    ]
    assert process.config.mission == "mission 2"
    assert await process.rollback() is True
    assert await process.rollback() is True
    assert process.config.mission == "mission 0"
    assert [c["details"] for c in process.config_history] == [{"mission": "mission 0"}]
