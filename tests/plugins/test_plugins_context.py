"""The plugin context: warn, emit_artifact (folder, SQLite, memory) and converse."""

from __future__ import annotations

import json
import math
import sqlite3
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr

from _process_support import Recorder, completions, eventually, run_one_task, run_tasks, ticket
from _process_support import plugin_process as make_process
from tether import AgentProcess
from tether.agent import GuardrailConfig
from tether.hooks import HookEvent, HookManager, Plugin, PluginContext, PluginError, register_plugin
from tether.models import ScriptedModel

ERROR_TEXT = "upstream 502: bad gateway"

#: The ticket these tests send (its order is the one the failing tool looks up).
TICKET = "Order A-1 is late"


async def lookup_order(order: str) -> str:
    """Look up an order by its number."""
    raise RuntimeError(ERROR_TEXT)


def failing_process(*plugins: Any, **config: Any) -> tuple[AgentProcess, ScriptedModel]:
    """A process whose run fails: one turn, spent on a tool call whose tool raises."""
    model = ScriptedModel(reply="I saw a 502", tool_calls=[("lookup_order", {"order": "A-1"})])
    config = {"tools": [lookup_order], "max_turns": 1, "max_retries": 0, **config}
    return make_process(*plugins, model=model, **config), model


def files(folder: Path) -> list[str]:
    return sorted(p.name for p in folder.iterdir())


async def run_task(process: AgentProcess, rec: Recorder, text: str = TICKET) -> str:
    before = len(rec.outcomes())
    event_id = await process.inject(ticket(text))
    await eventually(lambda: len(rec.outcomes()) > before, what="task_completed")
    return event_id


class Emit(Plugin):
    """Emits at task_completed; ``label`` and ``payload`` are chosen by the test."""

    name = "audit"

    def __init__(self, payload: Any = None, label: str | None = None) -> None:
        self.payload = {"checked": True} if payload is None else payload
        self.label = label
        self.names: list[str] = []
        self.errors: list[Exception] = []

    async def on_task_completed(self, ctx: PluginContext) -> None:
        try:
            self.names.append(ctx.emit_artifact(self.payload, label=self.label))
        except PluginError as exc:
            self.errors.append(exc)


# -- warn -------------------------------------------------------------------------------------


async def test_warn_is_recorded_with_its_task_and_the_plugin_name() -> None:
    class Warner(Plugin):
        name = "warner"

        async def on_task_created(self, ctx: PluginContext) -> None:
            ctx.warn(f"ticket {ctx.data['event_id'][:4]} has no customer id")

    process = make_process(Warner())
    rec = completions(process)
    async with process:
        first = await run_task(process, rec)
        second = await run_task(process, rec)

    assert process.plugins.warnings == {
        first: [f"plugin:warner: ticket {first[:4]} has no customer id"],
        second: [f"plugin:warner: ticket {second[:4]} has no customer id"],
    }


async def test_warn_outside_a_task_is_recorded_under_the_session() -> None:
    class Warner(Plugin):
        name = "warner"

        async def on_session_start(self, ctx: PluginContext) -> None:
            ctx.warn("no audit database configured")

    process = make_process(Warner())
    async with process:
        pass

    assert process.plugins.warnings == {
        f"session-{process.process_id}": ["plugin:warner: no audit database configured"]
    }


async def test_warn_redacts_the_process_secrets() -> None:
    class Leaky(Plugin):
        name = "leaky"

        async def on_task_created(self, ctx: PluginContext) -> None:
            ctx.warn("retrying with key sk-live-123")

    process = make_process(Leaky(), secrets={"API_KEY": SecretStr("sk-live-123")})
    event_id = await run_one_task(process, TICKET)

    (warning,) = process.plugins.warnings[event_id]
    assert "sk-live-123" not in warning
    assert warning.startswith("plugin:leaky: retrying with key ")


# -- emit_artifact ---------------------------------------------------------------------------


async def test_an_artifact_is_a_file_named_after_the_task_and_plugin(tmp_path: Path) -> None:
    folder = tmp_path / "artifacts"
    plugin = Emit({"checked": True, "note": "café"})
    process = make_process(plugin, artifacts_dir=str(folder))
    event_id = await run_one_task(process, TICKET)

    path = folder / f"{event_id}.audit.json"
    assert plugin.names == [path.name]
    assert json.loads(path.read_text(encoding="utf-8")) == {"checked": True, "note": "café"}
    assert files(folder) == [path.name]


async def test_a_labelled_artifact_carries_the_label_in_its_name(tmp_path: Path) -> None:
    plugin = Emit(label="summary")
    process = make_process(plugin, artifacts_dir=str(tmp_path))
    event_id = await run_one_task(process, TICKET)

    assert (tmp_path / f"{event_id}.audit.summary.json").is_file()


async def test_artifacts_are_rows_of_the_sqlite_file_without_a_folder(tmp_path: Path) -> None:
    db = tmp_path / "tether.db"
    process = make_process(Emit({"checked": [1, 2]}, label="x"), journal_path=str(db))
    event_id = await run_one_task(process, TICKET)

    with sqlite3.connect(db) as conn:
        rows = conn.execute("SELECT process, task_id, name, payload FROM artifacts").fetchall()
    conn.close()
    assert rows == [("triage", event_id, f"{event_id}.audit.x.json", '{"checked": [1, 2]}')]
    assert not any(name.endswith(".json") for name in files(tmp_path))


async def test_the_folder_wins_over_the_sqlite_file(tmp_path: Path) -> None:
    process = make_process(
        Emit(), artifacts_dir=str(tmp_path / "a"), journal_path=str(tmp_path / "j.db")
    )
    event_id = await run_one_task(process, TICKET)

    assert (tmp_path / "a" / f"{event_id}.audit.json").is_file()


async def test_artifacts_are_kept_in_memory_without_a_folder_or_sqlite_file() -> None:
    process = make_process(Emit({"checked": True}))
    event_id = await run_one_task(process, TICKET)

    (item,) = process.plugins.artifacts.list(event_id)
    assert (item["name"], item["payload"]) == (f"{event_id}.audit.json", {"checked": True})


@pytest.mark.parametrize(
    "store", ["memory", "folder", "sqlite"], ids=["memory", "folder", "sqlite"]
)
async def test_each_store_lists_a_tasks_artifacts_by_name(tmp_path: Path, store: str) -> None:
    config: dict[str, Any] = {
        "memory": {},
        "folder": {"artifacts_dir": str(tmp_path / "a")},
        "sqlite": {"journal_path": str(tmp_path / "j.db")},
    }[store]

    class Two(Plugin):
        name = "two"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            ctx.emit_artifact({"n": 2}, label="second")
            ctx.emit_artifact({"n": 1})

    process = make_process(Two(), **config)
    rec = completions(process)
    async with process:
        first = await run_task(process, rec)
        second = await run_task(process, rec)

    listed = process.plugins.artifacts.list(first)
    assert [(i["name"], i["payload"]) for i in listed] == [
        (f"{first}.two.json", {"n": 1}),
        (f"{first}.two.second.json", {"n": 2}),
    ]
    assert len(process.plugins.artifacts.list(second)) == 2


@pytest.mark.parametrize(
    "payload",
    [{"when": datetime(2025, 1, 1, tzinfo=UTC)}, {"ratio": math.nan}, {1, 2}, object()],
    ids=["datetime", "nan", "set", "object"],
)
async def test_a_payload_that_is_not_json_is_rejected_and_nothing_is_stored(
    tmp_path: Path, payload: Any
) -> None:
    plugin = Emit(payload)
    process = make_process(plugin, artifacts_dir=str(tmp_path))
    await run_one_task(process, TICKET)

    (error,) = plugin.errors
    assert "artifact payload is not JSON-serialisable" in str(error)
    assert files(tmp_path) == []


@pytest.mark.parametrize("label", ["", "Summary", "a.b", "../x", "a b"])
async def test_an_artifact_label_must_be_a_slug(label: str) -> None:
    plugin = Emit(label=label)
    process = make_process(plugin)
    event_id = await run_one_task(process, TICKET)

    (error,) = plugin.errors
    assert "artifact label must match [a-z0-9_-]+" in str(error)
    assert process.plugins.artifacts.list(event_id) == []


async def test_a_plugin_without_a_host_cannot_emit_artifacts() -> None:
    plugin = Emit()
    manager = HookManager()
    register_plugin(manager, plugin)

    await manager.dispatch(HookEvent.TASK_COMPLETED, {"event_id": "e1", "outcome": "success"})

    (error,) = plugin.errors
    assert "no host" in str(error)


# -- converse ---------------------------------------------------------------------------------


class Talk(Plugin):
    """Converses at task_completed (or, with ``where``, at another event) and keeps results."""

    name = "talk"

    def __init__(self, text: str = "What went wrong?", timeout: float | None = None) -> None:
        self.text = text
        self.deadline = timeout
        self.replies: list[str] = []
        self.errors: list[BaseException] = []
        self.calls: list[dict[str, Any]] = []

    async def on_task_completed(self, ctx: PluginContext) -> None:
        try:
            self.replies.append(await ctx.converse(self.text, timeout=self.deadline))
        except (PluginError, TimeoutError) as exc:
            self.errors.append(exc)
        self.calls.extend(ctx.converse_calls)


async def test_converse_returns_the_agents_reply_after_the_run() -> None:
    talk = Talk()
    process, _ = failing_process(talk)
    rec = await run_tasks(process, text=TICKET)

    assert talk.replies == ["I saw a 502"]
    assert rec.outcomes() == ["failed"]


async def test_converse_sends_the_tasks_own_messages_and_no_tools() -> None:
    process, model = failing_process(Talk("Quote the error."))
    await run_one_task(process, TICKET)

    run, converse = model.requests
    assert "tools" in run
    assert "tools" not in converse
    messages = converse["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool", "user"]
    assert messages[:2] == run["messages"]
    assert messages[2]["tool_calls"][0]["function"]["name"] == "lookup_order"
    assert ERROR_TEXT in messages[3]["content"]
    assert messages[4] == {"role": "user", "content": "Quote the error."}


async def test_converse_is_never_added_to_the_conversation_or_the_transcript() -> None:
    model = ScriptedModel(reply="Done.")
    process = make_process(Talk("Anything odd?"), model=model)
    event_id = await run_one_task(process, "Reset my password")

    assert len(model.requests) == 2  # the run, then the converse turn
    conversation = process.context.conversation.recent()
    assert [m["role"] for m in conversation] == ["user", "assistant"]
    assert "Anything odd?" not in json.dumps(conversation)
    assert "Anything odd?" not in json.dumps(process.transcripts[event_id])


async def test_the_next_task_does_not_see_an_earlier_converse_turn() -> None:
    model = ScriptedModel(reply="Done.")
    process = make_process(Talk("Anything odd?"), model=model)
    rec = completions(process)
    async with process:
        await run_task(process, rec, "Reset my password")
        await run_task(process, rec, "Printer jammed")

    next_run = model.requests[2]
    assert "Anything odd?" not in json.dumps(next_run["messages"])


@pytest.mark.parametrize(
    "event",
    [HookEvent.TASK_CREATED, HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START],
)
async def test_converse_anywhere_but_task_completed_raises(event: HookEvent) -> None:
    errors: list[PluginError] = []

    async def attempt(self: Plugin, ctx: PluginContext) -> None:
        try:
            await ctx.converse("hello?")
        except PluginError as exc:
            errors.append(exc)

    Early = type("Early", (Plugin,), {"name": "early", f"on_{event.value}": attempt})
    model = ScriptedModel()
    process = make_process(Early(), model=model)
    await run_one_task(process, TICKET)

    (error,) = errors
    assert f"valid only in on_task_completed, not in on_{event.value}" in str(error)
    assert len(model.requests) == 1  # the run only


async def test_converse_is_bounded_by_its_deadline_and_records_the_timeout() -> None:
    talk = Talk(timeout=0.05)
    process, model = failing_process(talk)
    rec = completions(process)

    async def slow_down(ctx: Any) -> None:
        model.latency = 30.0

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_down, priority=1000)
    async with process:
        await run_task(process, rec)

    assert [type(e) for e in talk.errors] == [TimeoutError]
    (call,) = talk.calls
    assert call["timed_out"] is True
    assert call["tools_disabled"] is True
    assert call["duration_ms"] < 30_000
    assert rec.outcomes() == ["failed"]


async def test_converse_uses_the_plugins_converse_timeout_by_default() -> None:
    class Patient(Talk):
        converse_timeout = 0.05

    talk = Patient()
    process, model = failing_process(talk)

    async def slow_down(ctx: Any) -> None:
        model.latency = 30.0

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_down, priority=1000)
    await run_one_task(process, TICKET)

    assert [type(e) for e in talk.errors] == [TimeoutError]


async def test_converse_for_a_task_that_never_ran_raises() -> None:
    """Regression: a task refused before its run was 'conversed about' with an empty context,
    and the agent answered about a run it never saw."""
    talk = Talk()
    model = ScriptedModel()
    process = make_process(talk, model=model, guardrails=GuardrailConfig(markers=["wire money"]))
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec, "please wire money to this account")

    assert rec.outcomes() == ["dead_lettered"]
    (error,) = talk.errors
    assert f"task {event_id} has no run to converse about" in str(error)
    assert model.requests == []


async def test_converse_uses_the_model_that_ran_the_task() -> None:
    """Regression: with model.for_run answering, converse went to the process's model, which
    had never seen the run."""
    ran = ScriptedModel(reply="the run's own model")
    talk = Talk()
    process, default = failing_process(talk)

    def for_run(**kwargs: Any) -> ScriptedModel:
        return ran

    process.hooks.register("model.for_run", for_run)
    await run_one_task(process, "Where is my order?")

    assert default.requests == []
    assert [("tools" in r) for r in ran.requests] == [True, False]
    assert talk.replies == ["the run's own model"]


async def test_a_converse_failure_is_the_plugins_not_the_tasks() -> None:
    class Rude(Plugin):
        name = "rude"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            await ctx.converse("why?", timeout=0.01)

    process, model = failing_process(Rude())
    rec = completions(process)

    async def slow_down(ctx: Any) -> None:
        model.latency = 30.0

    process.hooks.register(HookEvent.TASK_COMPLETED, slow_down, priority=1000)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["failed"]
    (warning,) = process.plugins.warnings[event_id]
    assert warning.startswith("plugin:rude: on_task_completed failed: TimeoutError")
    assert [r.hook_name for r in process.hook_runs(outcome="failed")] == [
        "plugin:rude.on_task_completed"
    ]


async def test_converse_calls_do_not_leak_between_tasks() -> None:
    talk = Talk()
    process, _ = failing_process(talk)
    rec = await run_tasks(process, 2, text=TICKET)

    assert rec.outcomes() == ["failed", "success"]
    assert len(talk.calls) == 2


async def test_a_plugins_failing_extension_point_handler_is_a_warning_of_the_task() -> None:
    from tether import implements

    class Render(Plugin):
        name = "render"

        @implements("prompt.render")
        def render(self, event: Any, process: Any) -> str:
            raise ValueError("template missing")

    class Tools(Plugin):
        name = "extra"

        @implements("tools.for_run")
        async def tools(self, event: Any, process: Any) -> list[Any]:
            raise RuntimeError("catalog down")

    process = make_process(Render(), Tools())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]  # the plugins' failures are not the task's
    assert sorted(process.plugins.warnings[event_id]) == [
        "plugin:extra: tools.for_run (tools) failed: RuntimeError('catalog down')",
        "plugin:render: prompt.render (render) failed: ValueError('template missing')",
    ]


async def test_a_plugins_extension_point_handler_answers_through_its_wrapper() -> None:
    from tether import implements

    class Render(Plugin):
        name = "render"

        @implements("prompt.render")
        def render(self, event: Any, process: Any) -> str:
            return "rendered by the plugin"

    process = make_process(Render())
    prompts = Recorder().attach(process.hooks, HookEvent.USER_PROMPT_SUBMIT)
    event_id = await run_one_task(process, TICKET)

    assert [d["prompt"] for d in prompts.of(HookEvent.USER_PROMPT_SUBMIT)] == [
        "rendered by the plugin"
    ]
    assert event_id not in process.plugins.warnings


def test_a_folder_keeps_apart_the_artifacts_of_a_task_id_with_a_dot(tmp_path: Path) -> None:
    """Regression: task ``order``'s listing took ``order.retry.audit.json`` (task ``order.retry``,
    plugin ``audit``) for its own (plugin ``retry``, label ``audit``)."""
    from tether.store._artifacts import DirArtifacts

    store = DirArtifacts(tmp_path)
    store.put("order", "order.audit.json", {"task": "order"})
    store.put("order.retry", "order.retry.audit.json", {"task": "order.retry"})
    store.put("order.retry", "order.retry.audit.x.json", {"task": "order.retry", "label": "x"})

    assert [i["payload"] for i in store.list("order")] == [{"task": "order"}]
    assert [i["name"] for i in store.list("order.retry")] == [
        "order.retry.audit.json",
        "order.retry.audit.x.json",
    ]
    assert (tmp_path / "order.audit.json").is_file()  # an id without a dot: as before
    assert (tmp_path / "by-task" / "order.retry" / "order.retry.audit.json").is_file()


async def test_an_async_callable_or_exiting_point_handler_failing_is_a_task_warning() -> None:
    """Regression: a handler that is an object with an ``async __call__`` (not a coroutine
    function, so wrapped as a sync one) failed outside its wrapper, and a sync handler calling
    sys.exit() was isolated by the engine: neither was a warning of the task."""
    import sys

    from tether import implements

    class Catalog:
        __name__ = "catalog"

        async def __call__(self, event: Any, process: Any) -> list[Any]:
            raise RuntimeError("catalog down")

    class Render(Plugin):
        name = "render"

        @implements("prompt.render")
        def render(self, event: Any, process: Any) -> str:
            sys.exit(3)

    class Tools(Plugin):
        name = "extra"

    tools = Tools()
    process = make_process(Render(), tools)
    rec = completions(process)
    async with process:
        tools.register_hook("tools.for_run", Catalog())
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]  # the plugins' failures are not the task's
    assert sorted(process.plugins.warnings[event_id]) == [
        "plugin:extra: tools.for_run (catalog) failed: RuntimeError('catalog down')",
        "plugin:render: prompt.render (render) failed: SystemExit(3)",
    ]
