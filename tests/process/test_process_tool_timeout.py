"""ProcessConfig.tool_timeout: how long one tool call of a run may take, from code, a manifest
or the API; a tool past it is cut off (even one swallowing its cancellation)."""

from __future__ import annotations

from pathlib import Path

import pytest
from pydantic import ValidationError

from _loop_support import stubborn_crm
from _process_support import Recorder, eventually
from tether import AgentProcess, ManifestError, ProcessConfig, TriggerEvent, load_manifest
from tether.hooks import HookEvent
from tether.manifest import manifest_to_process_config
from tether.models import ScriptedModel


async def test_a_tool_past_the_process_tool_timeout_is_cut_off_and_the_run_goes_on() -> None:
    went_on: list[str] = []
    crm = stubborn_crm(went_on)
    model = ScriptedModel(tool_calls=[("crm", {})], reply="done")
    process = AgentProcess(
        "tools", ProcessConfig(model=model, tools=[crm], tool_timeout=0.1, stop_timeout=0.5)
    )
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED)
    async with process:
        await process.inject(TriggerEvent("desk", "webhook", {"ticket": "t"}))
        await eventually(lambda: rec.outcomes() == ["success"], what="the run")
    assert went_on == ["cancelled"]
    assert model.requests[1]["messages"][-1]["content"] == "error: tool crm timed out after 0.1s"


def test_the_default_is_120_seconds_and_bad_values_are_refused_naming_the_field() -> None:
    assert ProcessConfig().tool_timeout == 120.0
    for bad in (0, -1, 3601):
        with pytest.raises(ValidationError, match="tool_timeout"):
            ProcessConfig(tool_timeout=bad)


def test_a_manifest_sets_it_and_refuses_a_flag(tmp_path: Path) -> None:
    path = tmp_path / "a.agent"
    path.write_text("name: a\nmodel: scripted\ntool_timeout: 7.5\n")
    assert manifest_to_process_config(load_manifest(path, environ={})).tool_timeout == 7.5
    path.write_text("name: a\nmodel: scripted\ntool_timeout: yes\n")
    with pytest.raises(ManifestError, match="tool_timeout: expected a number, got a flag"):
        load_manifest(path, environ={})
