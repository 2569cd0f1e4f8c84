"""The built-in debrief plugin: after a failed task it asks the agent what it saw, in a fixed
order, and keeps the answer as a versioned artifact. It never changes outcome or configuration."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from _process_support import GatedModel, Recorder, completions, eventually, run_one_task, ticket
from tether import AgentProcess, GuardrailConfig, HookBlocked, HookEvent, ProcessConfig
from tether.models import ScriptedModel
from tether.plugins.debrief import SCHEMA_VERSION, DebriefPlugin, debrief_prompt

ERROR_TEXT = "upstream 502: bad gateway"
RUN_ERROR = "run reached its turn limit (max_turns=1) without an answer"
FIELDS = {
    "schema_version",
    "task_id",
    "process",
    "model",
    "outcome",
    "task_error",
    "prompt",
    "reply",
    "tools_disabled",
    "timed_out",
    "duration_ms",
    "error",
}

#: The ticket these tests send (its order is the one the failing tool looks up).
TICKET = "Order A-1 is late"


async def lookup_order(order: str) -> str:
    """Look up an order by its number."""
    raise RuntimeError(ERROR_TEXT)


def make_process(
    debrief: Any = "debrief", *, fail: bool = True, **config: Any
) -> tuple[AgentProcess, ScriptedModel]:
    """A process with the debrief plugin; with ``fail`` its first run fails (one turn, spent on
    a tool call whose tool raises)."""
    queued = [("lookup_order", {"order": "A-1"})] if fail else []
    model = config.pop("model", None) or ScriptedModel(
        reply=f'The tool said "{ERROR_TEXT}".', tool_calls=queued
    )
    config = {"tools": [lookup_order], "max_turns": 1, "max_retries": 0, **config}
    return AgentProcess("triage", ProcessConfig(model=model, plugins=[debrief], **config)), model


async def run_task(process: AgentProcess, rec: Recorder, text: str = TICKET) -> str:
    before = len(rec.outcomes())
    event_id = await process.inject(ticket(text))
    await eventually(lambda: len(rec.outcomes()) > before, what="task_completed")
    return event_id


def debrief_of(process: AgentProcess, event_id: str) -> dict[str, Any] | None:
    found = [
        i["payload"]
        for i in process.plugins.artifacts.list(event_id)
        if i["name"] == f"{event_id}.debrief.json"
    ]
    return found[0] if found else None


# -- when it runs ----------------------------------------------------------------------------


async def test_debrief_runs_after_a_failed_task() -> None:
    process, model = make_process()
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["failed"]
    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert artifact["reply"] == f'The tool said "{ERROR_TEXT}".'
    assert len(model.requests) == 2


async def test_debrief_does_not_run_after_a_successful_task_by_default() -> None:
    process, model = make_process(fail=False)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert debrief_of(process, event_id) is None
    assert len(model.requests) == 1


async def test_debrief_on_all_runs_after_a_successful_task_too() -> None:
    process, _ = make_process(DebriefPlugin(on="all"), fail=False)
    event_id = await run_one_task(process, TICKET)

    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert (artifact["outcome"], artifact["task_error"]) == ("success", None)


async def test_the_environment_variable_turns_on_debriefs_of_every_task(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_ON", "all")
    process, _ = make_process(fail=False)
    event_id = await run_one_task(process, TICKET)

    assert debrief_of(process, event_id) is not None


@pytest.mark.parametrize(
    ("kwargs", "env", "message"),
    [
        ({"on": "sometimes"}, {}, "debrief 'on' must be 'failed' or 'all'"),
        ({}, {"TETHER_DEBRIEF_ON": "never"}, "debrief 'on' must be 'failed' or 'all'"),
        ({"converse_timeout": 0}, {}, "converse_timeout must be > 0"),
        ({}, {"TETHER_DEBRIEF_TIMEOUT_S": "soon"}, "TETHER_DEBRIEF_TIMEOUT_S must be a number"),
    ],
)
def test_a_bad_debrief_setting_fails_when_the_plugin_is_made(
    monkeypatch: pytest.MonkeyPatch, kwargs: dict[str, Any], env: dict[str, str], message: str
) -> None:
    for key, value in env.items():
        monkeypatch.setenv(key, value)

    with pytest.raises(ValueError, match=message):
        DebriefPlugin(**kwargs)


async def test_debrief_runs_after_each_failed_attempt_of_a_retried_task() -> None:
    model = ScriptedModel(
        tool_calls=[("lookup_order", {"order": "A-1"}), ("lookup_order", {"order": "A-1"})]
    )
    process, _ = make_process(model=model, max_retries=1, retry_backoff=0)
    rec = completions(process)
    async with process:
        event_id = await process.inject(ticket())
        await eventually(lambda: len(rec.outcomes()) == 2, what="two attempts")

    assert rec.outcomes() == ["retrying", "failed"]
    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert artifact["outcome"] == "failed"  # the last attempt's debrief is the one kept
    assert sum("tools" not in r for r in model.requests) == 2


async def test_a_task_refused_before_its_run_is_never_debriefed() -> None:
    process, model = make_process(
        DebriefPlugin(on="all"), guardrails=GuardrailConfig(markers=["wire money"])
    )
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec, "please wire money now")

    assert rec.outcomes() == ["dead_lettered"]
    assert debrief_of(process, event_id) is None
    assert model.requests == []
    assert process.plugins.warnings == {}


async def test_a_blocked_task_is_never_debriefed() -> None:
    process, model = make_process(DebriefPlugin(on="all"))

    async def gate(ctx: Any) -> None:
        raise HookBlocked("no orders today")

    process.hooks.register(HookEvent.USER_PROMPT_SUBMIT, gate)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["blocked"]
    assert debrief_of(process, event_id) is None
    assert model.requests == []


async def test_stopping_with_queued_tasks_asks_the_model_nothing() -> None:
    """Regression: stop() debriefed every queued event it dead-lettered, one model turn
    (up to the converse deadline) each, so a full queue held the stop for minutes."""
    model = GatedModel()
    process = AgentProcess(
        "triage",
        ProcessConfig(model=model, stop_timeout=0.01, plugins=[DebriefPlugin(on="all")]),
    )
    rec = completions(process)
    await process.start()
    event_ids = [await process.inject(ticket(f"ticket {i}")) for i in range(5)]
    await eventually(lambda: model.calls == 1, what="the first run to start")

    await process.stop()

    assert rec.outcomes() == ["dead_lettered"] * 5
    assert model.calls == 1
    assert all(debrief_of(process, e) is None for e in event_ids)


# -- what it asks, and what it keeps ---------------------------------------------------------


def test_the_prompt_asks_about_the_environment_then_blockers_then_changes() -> None:
    prompt = debrief_prompt("failed", RUN_ERROR)

    environment = prompt.index("Did any tool call return an error, an unexpected shape")
    quote = prompt.index("Quote the exact text you received")
    blockers = prompt.index("Was anything you needed absent")
    differently = prompt.index("Only then: what would you do differently?")
    assert environment < quote < blockers < differently
    assert "'failed'" in prompt
    assert RUN_ERROR in prompt


async def test_the_prompt_goes_to_the_agent_with_the_run_in_context_and_no_tools() -> None:
    process, model = make_process()
    event_id = await run_one_task(process, TICKET)

    run, debrief = model.requests
    assert "tools" not in debrief
    assert debrief["messages"][: len(run["messages"])] == run["messages"]
    assert any(ERROR_TEXT in str(m.get("content")) for m in debrief["messages"])
    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert debrief["messages"][-1] == {"role": "user", "content": artifact["prompt"]}


async def test_the_artifact_has_the_documented_fields() -> None:
    process, _ = make_process()
    event_id = await run_one_task(process, TICKET)

    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert set(artifact) == FIELDS
    duration = artifact.pop("duration_ms")
    assert isinstance(duration, int | float)
    assert duration >= 0
    assert artifact == {
        "schema_version": SCHEMA_VERSION,
        "task_id": event_id,
        "process": "triage",
        "model": "scripted",
        "outcome": "failed",
        "task_error": RUN_ERROR,
        "prompt": debrief_prompt("failed", RUN_ERROR),
        "reply": f'The tool said "{ERROR_TEXT}".',
        "tools_disabled": True,
        "timed_out": False,
        "error": None,
    }


async def test_the_artifact_is_a_file_beside_the_task_in_the_artifacts_folder(
    tmp_path: Path,
) -> None:
    process, _ = make_process(artifacts_dir=str(tmp_path))
    event_id = await run_one_task(process, TICKET)

    path = tmp_path / f"{event_id}.debrief.json"
    assert json.loads(path.read_text(encoding="utf-8"))["task_id"] == event_id


async def test_the_artifact_names_the_model_that_ran_the_task() -> None:
    """Regression: with model.for_run answering, the artifact named the process's model."""
    ran = ScriptedModel(tool_calls=[("lookup_order", {"order": "A-1"})])
    ran.name = "escalation-model"
    process, default = make_process()
    process.hooks.register("model.for_run", lambda **kw: ran)
    event_id = await run_one_task(process, TICKET)

    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert artifact["model"] == "escalation-model"
    assert default.requests == []


async def test_a_debrief_that_times_out_is_recorded_and_the_task_is_unchanged() -> None:
    process, model = make_process(DebriefPlugin(converse_timeout=0.05))

    async def slow_down(ctx: Any) -> None:
        model.latency = 30.0

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_down, priority=1000)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert (artifact["timed_out"], artifact["reply"]) == (True, None)
    assert artifact["error"] == "converse timed out after 0.05s"
    assert artifact["duration_ms"] < 30_000
    assert rec.outcomes() == ["failed"]
    assert process.plugins.warnings[event_id] == [
        "plugin:debrief: debrief incomplete: converse timed out after 0.05s"
    ]


async def test_the_debrief_deadline_can_be_set_by_environment(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("TETHER_DEBRIEF_TIMEOUT_S", "0.05")
    process, model = make_process()

    async def slow_down(ctx: Any) -> None:
        model.latency = 30.0

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_down, priority=1000)
    event_id = await run_one_task(process, TICKET)

    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert artifact["timed_out"] is True


async def test_a_failing_model_during_the_debrief_is_recorded_as_its_error() -> None:
    class Flaky(ScriptedModel):
        __slots__ = ()

        async def complete(self, messages: Any, tools: Any = None) -> Any:
            if tools is None:
                raise ConnectionError("model endpoint reset")
            return await super().complete(messages, tools)

    model = Flaky(tool_calls=[("lookup_order", {"order": "A-1"})])
    process, _ = make_process(model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    artifact = debrief_of(process, event_id)
    assert artifact is not None
    assert artifact["error"] == "ConnectionError: model endpoint reset"
    assert (artifact["reply"], artifact["timed_out"]) == (None, False)
    assert rec.outcomes() == ["failed"]


async def test_debrief_never_changes_the_outcome_or_the_configuration() -> None:
    process, model = make_process(instructions="Triage tickets.")
    changes = Recorder().attach(process.hooks, HookEvent.CONFIG_CHANGE)
    config_before = process.config.model_dump(mode="json", exclude={"model"})
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        await run_task(process, rec, "Printer jammed")

    assert rec.outcomes() == ["failed", "success"]
    assert [d["event_id"] for d in process.dead_letters] == [event_id]
    assert process.dead_letters[0]["reason"] == "process failed"
    assert process.config.model_dump(mode="json", exclude={"model"}) == config_before
    assert process.config.model is model
    assert changes.seen == []
    # The next run is offered the same tools and instructions, and no trace of the debrief.
    next_run = model.requests[2]
    assert next_run["tools"] == model.requests[0]["tools"]
    assert next_run["messages"][0] == {"role": "system", "content": "Triage tickets."}
    assert "Only then" not in json.dumps(next_run["messages"])
