"""Review (round 2) of plugins, extension points and artifacts: each test pins a fix, driven
through real processes and real stores."""

from __future__ import annotations

import asyncio
import contextlib
import math
import os
import threading
from pathlib import Path
from typing import Any

import pytest

from _process_support import completions, eventually, run_task
from _process_support import plugin_process as make_process
from tether import TriggerEvent
from tether.hooks import HookEvent, HookManager, Plugin, PluginContext, PluginError, implements
from tether.hooks._plugin import register_plugin
from tether.models import ModelReply, ScriptedModel
from tether.plugins.debrief import DebriefPlugin
from tether.store._artifacts import DirArtifacts, MemoryArtifacts, SqliteArtifacts


class SwallowingModel:
    """Answers the run at once; a later call (a converse turn) swallows the cancellation its
    deadline sends and answers late, as a model client that ignores cancellation would."""

    name = "swallowing"

    def __init__(self) -> None:
        self.calls = 0
        self.late_replies = 0

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            return ModelReply(content="done")
        try:
            await asyncio.sleep(5)
        except asyncio.CancelledError:
            await asyncio.sleep(0.5)  # carries on regardless
        self.late_replies += 1
        return ModelReply(content="late")

    async def aclose(self) -> None:
        pass


# -- converse: a deadline that really bounds, checked where it is given ---------------------


async def test_converse_deadline_bounds_a_model_that_swallows_cancellation() -> None:
    seen: dict[str, Any] = {}

    class Asker(Plugin):
        name = "asker"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            loop = asyncio.get_running_loop()
            started = loop.time()
            try:
                await ctx.converse("what happened?", timeout=0.2)
            except TimeoutError as exc:
                seen["error"] = exc
            seen["elapsed"] = loop.time() - started
            ctx.emit_artifact({"asked": True})

    model = SwallowingModel()
    process = make_process(Asker(), model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [artifact] = process.plugins.artifacts.list(event_id)

    assert isinstance(seen["error"], TimeoutError)
    assert seen["elapsed"] < 0.45  # the deadline, not the model's late answer
    assert artifact["payload"] == {"asked": True, "tools_disabled": True, "timed_out": True}
    assert rec.outcomes() == ["success"]
    assert process.plugins.warnings.get(event_id) is None


async def test_debrief_of_a_model_that_swallows_cancellation_records_the_time_out() -> None:
    model = SwallowingModel()
    process = make_process(DebriefPlugin(on="all", converse_timeout=0.2), model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [artifact] = process.plugins.artifacts.list(event_id)

    assert artifact["payload"]["timed_out"] is True
    assert artifact["payload"]["reply"] is None


@pytest.mark.parametrize("timeout", [-1, 0, math.nan, math.inf, "5", True, 3601])
async def test_a_bad_converse_timeout_is_refused_naming_it(timeout: Any) -> None:
    errors: list[BaseException] = []

    class Asker(Plugin):
        name = "asker"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            try:
                await ctx.converse("hi", timeout=timeout)
            except (TypeError, ValueError) as exc:
                errors.append(exc)

    model = ScriptedModel()
    process = make_process(Asker(), model=model)
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    [error] = errors
    assert "converse timeout" in str(error)
    assert repr(timeout) in str(error)
    assert "3600" in str(error)


@pytest.mark.parametrize("value", [-5, 0, math.nan, "30", None, False])
def test_a_bad_converse_timeout_attribute_is_refused_at_registration(value: Any) -> None:
    class Asker(Plugin):
        name = "asker"
        converse_timeout = value

        async def on_task_completed(self, ctx: PluginContext) -> None:
            pass

    with pytest.raises(PluginError, match="converse_timeout") as info:
        make_process(Asker())
    assert repr(value) in str(info.value)


# -- a context ends with its handler ----------------------------------------------------------


async def test_a_context_kept_past_its_handler_can_no_longer_be_used() -> None:
    kept: list[PluginContext] = []

    class Keeper(Plugin):
        name = "keeper"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            kept.append(ctx)

    model = ScriptedModel()
    process = make_process(Keeper(), model=model)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [ctx] = kept
        with pytest.raises(PluginError, match="has returned"):
            await ctx.converse("one more?")
        with pytest.raises(PluginError, match="has returned"):
            ctx.emit_artifact({"late": True})
        with pytest.raises(PluginError, match="has returned"):
            ctx.warn("late")

    assert process.plugins.artifacts.list(event_id) == []
    assert process.plugins.warnings.get(event_id) is None


# -- artifacts ----------------------------------------------------------------------------


def test_a_memory_artifact_listing_is_a_copy() -> None:
    store = MemoryArtifacts()
    store.put("t1", "t1.audit.json", {"seen": [1]})

    store.list("t1")[0]["payload"]["seen"].append(2)

    assert store.list("t1")[0]["payload"] == {"seen": [1]}


def test_concurrent_writers_of_one_artifact_never_lose_or_corrupt_it(tmp_path: Path) -> None:
    store = DirArtifacts(tmp_path)
    payloads = [{"writer": i, "text": "x" * (200_000 * (i % 2))} for i in range(6)]
    errors: list[BaseException] = []

    def write(payload: dict[str, Any]) -> None:
        for _ in range(25):
            try:
                store.put("t1", "t1.audit.json", payload)
            except BaseException as exc:  # pragma: no cover - the failure being pinned
                errors.append(exc)

    threads = [threading.Thread(target=write, args=(p,)) for p in payloads]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    assert errors == []
    [artifact] = store.list("t1")
    assert artifact["payload"] in payloads
    assert sorted(os.listdir(tmp_path)) == ["t1.audit.json"]  # no temporary file left


@pytest.mark.parametrize(
    ("task_id", "name", "what"),
    [
        (".", "x.json", "task id"),
        ("t" * 201, "x.json", "task id"),
        ("t", "x" * 196 + ".json", "artifact name"),
        ("a/b", "x.json", "task id"),
        ("t", "../x.json", "artifact name"),
    ],
)
@pytest.mark.parametrize("kind", ["dir", "memory", "sqlite"])
def test_every_store_refuses_the_same_unsafe_or_overlong_parts(
    tmp_path: Path, kind: str, task_id: str, name: str, what: str
) -> None:
    store: Any = {
        "dir": lambda: DirArtifacts(tmp_path / "a"),
        "memory": MemoryArtifacts,
        "sqlite": lambda: SqliteArtifacts(tmp_path / "j.db", "triage"),
    }[kind]()

    with pytest.raises(ValueError, match=what):
        store.put(task_id, name, {})
    assert not (tmp_path / "a" / "by-task").exists()


@pytest.mark.parametrize("name", ["a" * 65, "x" * 10_000])
def test_an_overlong_plugin_name_is_refused_at_registration(name: str) -> None:
    class Long(Plugin):
        async def on_task_completed(self, ctx: PluginContext) -> None:
            pass

    Long.name = name
    with pytest.raises(PluginError, match="at most 64 characters") as info:
        make_process(Long())
    assert len(str(info.value)) < 300  # names the value without a page of it


async def test_a_bad_artifact_label_is_refused_naming_the_rule(tmp_path: Path) -> None:
    errors: list[str] = []

    class Labeller(Plugin):
        name = "labeller"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            for label in ("l" * 65, "Bad", 7):
                try:
                    ctx.emit_artifact({}, label=label)  # type: ignore[arg-type]
                except PluginError as exc:
                    errors.append(str(exc))

    process = make_process(Labeller(), artifacts_dir=str(tmp_path))
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert len(errors) == 3
    assert all("[a-z0-9_-]+ (at most 64 characters)" in e for e in errors)
    assert process.plugins.artifacts.list(event_id) == []


async def test_an_artifact_label_holding_a_declared_secret_is_refused(tmp_path: Path) -> None:
    secret = "tok4f9q2zx81"
    errors: list[str] = []

    class Leaky(Plugin):
        name = "leaky"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            try:
                ctx.emit_artifact({"k": 1}, label=f"run-{secret}")
            except PluginError as exc:
                errors.append(str(exc))

    process = make_process(Leaky(), artifacts_dir=str(tmp_path), secrets={"token": secret})
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    [error] = errors
    assert "declared secret" in error
    assert secret not in error
    assert not any(secret in name for name in os.listdir(tmp_path))


# -- declaration: handlers that could never be called, and the order of ties ----------------


def test_a_lifecycle_method_that_cannot_take_the_context_is_refused_at_registration() -> None:
    class NoCtx(Plugin):
        name = "noctx"

        async def on_task_completed(self) -> None:  # type: ignore[override]
            pass

    class TwoArgs(Plugin):
        name = "twoargs"

        async def on_task_created(self, ctx: PluginContext, extra: int) -> None:
            pass

    for plugin in (NoCtx(), TwoArgs()):
        with pytest.raises(PluginError, match="must take the context as its one argument"):
            make_process(plugin)


async def test_register_hook_refuses_a_lifecycle_handler_that_cannot_take_the_context() -> None:
    class Runtime(Plugin):
        name = "runtime"

    plugin = Runtime()
    process = make_process(plugin)

    async def no_ctx() -> None:
        pass

    with pytest.raises(PluginError, match="must take the context"):
        plugin.register_hook("task_completed", no_ctx)
    assert process.hooks.describe() == []


async def test_a_plugins_handlers_of_one_point_at_one_priority_run_in_definition_order() -> None:
    class Ordered(Plugin):
        name = "ordered"

        @implements("ticket.classify")
        def zeta(self) -> str:
            return "zeta"

        @implements("ticket.classify")
        def alpha(self) -> str:
            return "alpha"

        @implements("ticket.classify")
        def mid(self) -> str:
            return "mid"

    class Later(Ordered):
        name = "later"

        @implements("ticket.classify")
        def aardvark(self) -> str:
            return "aardvark"

    hooks = HookManager()
    register_plugin(hooks, Later())

    assert await hooks.call("ticket.classify") == ["zeta", "alpha", "mid", "aardvark"]


# -- extension points: handlers are shown data, not the live event ---------------------------


async def test_a_point_handler_changing_the_event_never_changes_the_task() -> None:
    shown: list[dict[str, Any]] = []

    class Meddler(Plugin):
        name = "meddler"

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> None:
            event.payload["ticket"] = "rm -rf /"
            event.payload["extra"] = ["injected"]

        @implements("model.for_run")
        def model(self, event: TriggerEvent, process: str) -> None:
            shown.append(dict(event.payload))
            event.payload.clear()

        @implements("tools.for_run")
        def tools(self, event: TriggerEvent, process: str) -> None:
            shown.append(dict(event.payload))
            event.trigger_id = "forged"

    model = ScriptedModel()
    process = make_process(Meddler(), model=model)
    rec = completions(process)
    event = TriggerEvent("helpdesk", "webhook", {"ticket": "VPN is down", "tags": ["net"]})
    async with process:
        await process.inject(event)
        await eventually(lambda: rec.outcomes() == ["success"], what="task_completed")

    assert event.payload == {"ticket": "VPN is down", "tags": ["net"]}
    assert event.trigger_id == "helpdesk"
    assert shown == [event.payload, event.payload]  # each point saw the event as it was
    [completed] = rec.of(HookEvent.TASK_COMPLETED)
    assert completed["trigger_id"] == "helpdesk"


# -- a plugin raising in __init__, a plugin warning in a loop --------------------------------


class Unbuildable(Plugin):
    name = "unbuildable"

    def __init__(self) -> None:
        raise RuntimeError("no config file")

    async def on_task_completed(self, ctx: PluginContext) -> None:
        pass


def test_a_plugin_class_raising_in_init_is_a_plugin_error_naming_it() -> None:
    with pytest.raises(PluginError, match=r"Unbuildable could not be built.*no config file"):
        make_process(Unbuildable)

    process = make_process()
    with pytest.raises(PluginError, match="Unbuildable could not be built"):
        process.plugins.add(Unbuildable)
    assert process.plugins.names == []
    assert process.hooks.describe() == []


async def test_a_plugin_warning_in_a_loop_keeps_a_bounded_count_and_size() -> None:
    class Chatty(Plugin):
        name = "chatty"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            ctx.warn("y" * 1_000_000)
            for i in range(5_000):
                ctx.warn(f"warning {i}")

    process = make_process(Chatty())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    kept = process.plugins.warnings[event_id]
    assert len(kept) == 101
    assert kept[0].startswith("plugin:chatty: yyy")
    assert kept[0].endswith("(1000015 characters in all)")
    assert len(kept[0]) < 4100
    assert kept[1] == "plugin:chatty: warning 0"
    assert kept[-1] == "plugin warnings: 4901 more for this task not kept (see the log)"


async def test_a_converse_longer_than_its_handlers_timeout_ends_first_and_is_recorded() -> None:
    seen: list[BaseException] = []

    class Asker(Plugin):
        name = "asker"  # converse_timeout 30 s by default; the handler's timeout is 0.4 s

        async def on_task_completed(self, ctx: PluginContext) -> None:
            try:
                await ctx.converse("what happened?")
            except TimeoutError as exc:
                seen.append(exc)
            ctx.emit_artifact({"asked": True})

    process = make_process(Asker(), model=SwallowingModel(), hook_timeout=0.4)
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
        [artifact] = process.plugins.artifacts.list(event_id)

    assert len(seen) == 1
    assert artifact["payload"]["timed_out"] is True
    assert process.plugins.warnings.get(event_id) is None  # the handler was not cut off
    runs = process.history.runs(event="task_completed")
    assert [r.outcome for r in runs if r.hook_name == "plugin:asker.on_task_completed"] == [
        "passed"
    ]


async def test_a_plugin_method_calling_sys_exit_is_a_warning_of_the_task() -> None:
    class Exiter(Plugin):
        name = "exiter"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            raise SystemExit(3)

    process = make_process(Exiter())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert process.plugins.warnings[event_id] == [
        "plugin:exiter: on_task_completed failed: SystemExit(3)"
    ]


# -- deferred calls a stop ends are said, not silently forgotten ------------------------------


async def test_deferred_calls_a_stop_ends_are_logged_by_point(
    caplog: pytest.LogCaptureFixture,
) -> None:
    fired: list[int] = []
    started = asyncio.Event()

    class Later(Plugin):
        name = "later"

        @implements("report.send")
        def send(self, n: int) -> None:
            fired.append(n)

        @implements("report.slow")
        async def slow(self) -> None:
            started.set()
            await asyncio.sleep(30)

    process = make_process(Later())
    async with process:
        process.hooks.call_later(0, "report.send", n=1)
        process.hooks.call_later(60, "report.send", n=2)
        process.hooks.call_later(60, "audit.flush")
        process.hooks.call_later(0, "report.slow")
        await asyncio.wait_for(started.wait(), 5)
        caplog.clear()

    assert fired == [1]
    [line] = [r.getMessage() for r in caplog.records if "deferred" in r.getMessage()]
    dropped = "2 deferred extension-point call(s) not yet due dropped (audit.flush, report.send)"
    assert dropped in line
    assert "1 running cancelled (deferred call of report.slow)" in line


# -- a plugin's priority and timeout apply to its extension-point handlers too ---------------


async def test_a_plugins_priority_and_timeout_apply_to_its_extension_point_handlers() -> None:
    class Slow(Plugin):
        name = "slow"
        priority = 10
        timeout = 0.2

        @implements("ticket.classify")
        async def classify(self) -> str:
            await asyncio.sleep(5)
            return "late"

        @implements("ticket.classify", priority=-5, timeout=1)
        def own(self) -> str:
            return "own"

    class Quick(Plugin):
        name = "quick"

        @implements("ticket.classify")
        def classify(self) -> str:
            return "quick"

    hooks = HookManager()
    errors: list[Any] = []
    hooks.on_error(errors.append)
    register_plugin(hooks, Quick())
    register_plugin(hooks, Slow())
    loop = asyncio.get_running_loop()
    started = loop.time()

    assert await hooks.call("ticket.classify") == [None, "quick", "own"]
    assert loop.time() - started < 1.5
    [error] = errors
    assert isinstance(error.error, TimeoutError)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"timeout": -1}, "timeout must be > 0"),
        ({"timeout": "1"}, "timeout must be a number"),
        ({"priority": 1.5}, "priority must be an int"),
    ],
)
def test_implements_refuses_bad_options_where_declared(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises((TypeError, ValueError), match=message):
        implements("ticket.classify", **options)


def test_a_bad_plugin_timeout_is_refused_for_its_extension_point_handlers_too() -> None:
    class Bad(Plugin):
        name = "bad"
        timeout = -3

        @implements("ticket.classify")
        def classify(self) -> str:
            return "x"

    with pytest.raises(PluginError, match=r"bad.*classify.*timeout must be > 0.*-3"):
        register_plugin(HookManager(), Bad())


def test_one_plugin_registered_twice_on_one_manager_is_refused() -> None:
    class Once(Plugin):
        name = "once"

        @implements("ticket.classify")
        def classify(self) -> str:
            return "x"

    hooks = HookManager()
    plugin = Once()
    register_plugin(hooks, plugin)
    with pytest.raises(PluginError, match="already registered"):
        register_plugin(hooks, plugin)
    assert len(hooks) == 1
    register_plugin(HookManager(), plugin)  # another manager: fine


async def test_an_artifact_payload_nested_too_deeply_is_a_plugin_error() -> None:
    errors: list[str] = []

    class Deep(Plugin):
        name = "deep"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            payload: list[Any] = []
            for _ in range(100_000):
                payload = [payload]
            try:
                ctx.emit_artifact(payload)
            except PluginError as exc:
                errors.append(str(exc))

    process = make_process(Deep())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert errors == ["artifact payload is nested too deeply to store"]
    assert process.plugins.artifacts.list(event_id) == []


# -- first-result points of the process: a wrong answer does not silence the next handler ---


class EchoModel:
    """Answers with the last user message it was sent (to see the prompt a run used)."""

    name = "echo"

    def __init__(self) -> None:
        self.prompts: list[str] = []

    async def complete(
        self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None
    ) -> ModelReply:
        self.prompts.append(messages[-1]["content"])
        return ModelReply(content="ok")

    async def aclose(self) -> None:
        pass


async def test_a_wrong_first_answer_lets_the_next_handler_of_a_process_point_answer(
    caplog: pytest.LogCaptureFixture,
) -> None:
    chosen = EchoModel()

    class Wrong(Plugin):
        name = "wrong"
        priority = 10

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> int:
            return 42

        @implements("model.for_run")
        async def model(self, event: TriggerEvent, process: str) -> str:
            return "gpt-9"

    class Right(Plugin):
        name = "right"

        @implements("prompt.render")
        def render(self, event: TriggerEvent, process: str) -> str:
            return f"Ticket: {event.payload['ticket']}"

        @implements("model.for_run")
        def model(self, event: TriggerEvent, process: str) -> EchoModel:
            return chosen

    process = make_process(Wrong(), Right(), model=EchoModel())
    errors: list[Any] = []
    process.hooks.on_error(errors.append)
    rec = completions(process)
    async with process:
        await run_task(process, rec, "VPN is down")

    assert chosen.prompts == ["Ticket: VPN is down"]
    assert sorted(str(e.error) for e in errors) == [
        "model.for_run answered 'gpt-9', which is not a model",
        "prompt.render answered 42, which is not text (a str)",
    ]
    assert "which is not text" in caplog.text


# -- a handler that swallows its timeout's cancellation is closed, and that is a warning -----


async def test_a_plugin_handler_ignoring_its_timeout_is_closed_and_warned_about() -> None:
    class Stubborn(Plugin):
        name = "stubborn"
        timeout = 0.2

        async def on_task_completed(self, ctx: PluginContext) -> None:
            while True:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(10)

        @implements("prompt.render")
        async def render(self, event: TriggerEvent, process: str) -> str:
            while True:
                with contextlib.suppress(asyncio.CancelledError):
                    await asyncio.sleep(10)

    process = make_process(Stubborn())
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)

    assert rec.outcomes() == ["success"]
    assert process.plugins.warnings[event_id] == [
        "plugin:stubborn: prompt.render (render) timed out or was cancelled, ignored it, "
        "and was closed",
        "plugin:stubborn: on_task_completed timed out or was cancelled, ignored it, and was closed",
    ]


def test_memory_artifacts_keep_the_last_tasks_and_say_so_once(
    caplog: pytest.LogCaptureFixture,
) -> None:
    store = MemoryArtifacts(tasks_kept=3)
    for i in range(6):
        store.put(f"t{i}", f"t{i}.audit.json", {"i": i})
        store.put(f"t{i}", f"t{i}.audit.more.json", {"i": i})

    assert [store.list(f"t{i}") != [] for i in range(6)] == [False] * 3 + [True] * 3
    assert len(store.list("t5")) == 2
    assert caplog.text.count("only the last 3 tasks") == 1
    with pytest.raises(ValueError, match="tasks_kept must be an int >= 1, got 0"):
        MemoryArtifacts(tasks_kept=0)


# -- plugin warnings outlive the process where its artifacts do ------------------------------


async def test_plugin_warnings_are_kept_in_the_journal_across_processes(tmp_path: Path) -> None:
    where = "journal_path"

    class Noisy(Plugin):
        name = "noisy"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            ctx.warn("the ticket had no priority")
            ctx.emit_artifact({"seen": True})

    place = str(tmp_path / "journal.db")
    first = make_process(Noisy(), **{where: place})
    rec = completions(first)
    async with first:
        event_id = await run_task(first, rec)

    again = make_process(**{where: place})  # the host restarted: nothing in memory
    assert again.plugins.warnings == {}
    assert again.plugins.task_warnings(event_id) == ["plugin:noisy: the ticket had no priority"]
    assert [a["name"] for a in again.plugins.artifacts.list(event_id)] == [f"{event_id}.noisy.json"]
    assert first.plugins.task_warnings(event_id) == again.plugins.task_warnings(event_id)


async def test_converse_refuses_text_that_is_not_a_question() -> None:
    errors: list[str] = []

    class Asker(Plugin):
        name = "asker"

        async def on_task_completed(self, ctx: PluginContext) -> None:
            for text in (None, "", "   ", {"q": 1}):
                try:
                    await ctx.converse(text)  # type: ignore[arg-type]
                except PluginError as exc:
                    errors.append(str(exc))

    model = SwallowingModel()
    process = make_process(Asker(), model=model)
    rec = completions(process)
    async with process:
        await run_task(process, rec)

    assert errors == [
        "converse text must be a non-empty str, got None",
        "converse text must be a non-empty str, got ''",
        "converse text must be a non-empty str, got '   '",
        "converse text must be a non-empty str, got {'q': 1}",
    ]
    assert model.calls == 1  # the run only: the model was never asked
