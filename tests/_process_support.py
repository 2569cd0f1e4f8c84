"""Shared helpers of the process and agent tests: a hook recorder, bounded polling, test models.

The models here implement the public ``tether.models.Model`` protocol (``complete`` and
``aclose``); they are small real models, not mocks of tether internals.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
import sqlite3
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from pathlib import Path
from typing import Any

from tether import HookContext, HookEvent, TriggerEvent
from tether.models import ModelReply, ModelUnavailableError, ToolCall

__all__ = [
    "FailingModel",
    "GatedModel",
    "HeldRewind",
    "Messages",
    "RawToolCallModel",
    "Recorder",
    "Tools",
    "alive",
    "children",
    "eventually",
    "finished",
    "fire_until_completed",
    "hold_a_second_run",
    "killed_host",
    "locked",
    "noop",
    "pid_in",
    "proc_state",
    "read_pid",
    "run_one_task",
    "run_tasks",
    "scripted",
    "task_warnings",
    "ticket",
    "write_until",
]


#: The arguments of ``Model.complete``, for the fake models: OpenAI messages and tool specs.
Messages = list[dict[str, Any]]
Tools = list[dict[str, Any]] | None


@contextlib.asynccontextmanager
async def killed_host(
    folder: Path, source: str, *args: str
) -> AsyncIterator[tuple[asyncio.subprocess.Process, bytes]]:
    """Run the Python ``source`` as a child process (``args`` after its script), hand it back
    with the first line it prints (at most 30 s), and SIGKILL it on the way out."""
    script = folder / "child.py"
    script.write_text(source)
    child = await asyncio.create_subprocess_exec(
        sys.executable, str(script), *args, stdout=asyncio.subprocess.PIPE
    )
    try:
        assert child.stdout is not None
        line = await asyncio.wait_for(child.stdout.readline(), timeout=30)
        yield child, line
    finally:
        if child.returncode is None:
            child.send_signal(signal.SIGKILL)
        await child.wait()


def children() -> set[int]:
    """The pids of this test process's live children (of every thread), from /proc."""
    found: set[int] = set()
    for task in os.listdir("/proc/self/task"):
        with open(f"/proc/self/task/{task}/children") as f:
            found.update(int(pid) for pid in f.read().split())
    return found


def proc_state(pid: int) -> str | None:
    """The state letter of ``pid`` in /proc (``Z``: a zombie), None once it is gone and reaped."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except (FileNotFoundError, ProcessLookupError):  # reaped before, or while, it was read
        return None
    return stat.rsplit(")", 1)[1].split()[0]


def alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie waiting to be reaped does not count)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state not in ("Z", "X")


def pid_in(path: Path, *, whole_line: bool = False) -> int | None:
    """The pid a program wrote to ``path``, None while it has not (or, with ``whole_line``,
    not yet ended the line)."""
    try:
        text = path.read_text()
    except FileNotFoundError:
        return None
    if whole_line and not text.endswith("\n"):
        return None
    return int(text) if text.strip() else None


async def read_pid(path: Path, within: float = 10.0, *, whole_line: bool = False) -> int:
    """Wait until a program has written its pid to ``path``."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + within
    while (pid := pid_in(path, whole_line=whole_line)) is None:
        assert loop.time() < deadline, f"{path} was never written"
        await asyncio.sleep(0.01)
    return pid


@contextlib.contextmanager
def locked(path: Path) -> Iterator[None]:
    """Hold ``path`` locked from another connection (as another program would) until exit;
    opened through the unix-excl VFS, as tether opens its files, so it shares a file tether
    holds open in this process."""
    other = sqlite3.connect(f"{path.resolve().as_uri()}?vfs=unix-excl", uri=True)
    other.isolation_level = None
    try:
        other.execute("BEGIN EXCLUSIVE")
        yield
        other.execute("ROLLBACK")
    finally:
        other.close()


async def write_until(path: Path, condition: Callable[[], object], *, timeout: float = 10) -> None:
    """Rewrite ``path`` until ``condition`` holds: the watcher may start after the first write."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    n = 0
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"no file_changed for {path.name} within {timeout:g}s")
        n += 1
        await asyncio.to_thread(path.write_text, f"version {n}\n")
        with contextlib.suppress(AssertionError):
            await eventually(condition, timeout=0.5)


async def eventually(
    condition: Callable[[], object], *, timeout: float = 10.0, what: str = "the condition"
) -> None:
    """Poll ``condition`` until it is true; fail (not hang) after ``timeout`` seconds."""
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while not condition():
        if loop.time() > deadline:
            raise AssertionError(f"gave up after {timeout:g}s waiting for {what}")
        await asyncio.sleep(0.002)


def ticket(text: str = "Login page is down", trigger_id: str = "helpdesk") -> TriggerEvent:
    return TriggerEvent(trigger_id=trigger_id, trigger_type="webhook", payload={"ticket": text})


class Escapes(BaseException):
    """Not an Exception: the engine passes it on instead of isolating it."""


def escaping(text: str) -> Any:
    """A hook raising Escapes(text)."""

    async def escapes(ctx: Any) -> None:
        raise Escapes(text)

    return escapes


async def noop(ctx: Any) -> None:
    """A hook that does nothing (to have a hook registered)."""


class Recorder:
    """An async hook that records every event it sees: (event value, data copy, process_id)."""

    def __init__(self) -> None:
        self.seen: list[tuple[str, dict[str, Any], str]] = []

    async def __call__(self, ctx: HookContext) -> None:
        self.seen.append((ctx.event.value, dict(ctx.data), ctx.process_id))

    def attach(self, hooks: Any, *events: HookEvent, priority: int = 0) -> Recorder:
        """Register on ``events`` (all 13 when none are named)."""
        for event in events or tuple(HookEvent):
            hooks.register(event, self, priority=priority)
        return self

    @property
    def events(self) -> list[str]:
        return [event for event, _, _ in self.seen]

    def of(self, event: HookEvent) -> list[dict[str, Any]]:
        return [data for name, data, _ in self.seen if name == event.value]

    def outcomes(self) -> list[str]:
        return [d["outcome"] for d in self.of(HookEvent.TASK_COMPLETED)]


class FailingModel:
    """A model whose every call fails as an unreachable endpoint would."""

    name = "failing"

    def __init__(self, message: str = "the endpoint is down") -> None:
        self.message = message
        self.calls = 0

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.calls += 1
        raise ModelUnavailableError(f"{self.message} (call {self.calls})")

    async def aclose(self) -> None:
        pass


class FailsOnceModel:
    """A model whose first call fails as an unreachable endpoint would; later ones answer."""

    name = "fails-once"

    def __init__(self, reply: str = "done") -> None:
        self.reply = reply
        self.calls = 0

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.calls += 1
        if self.calls == 1:
            raise ModelUnavailableError("the endpoint is down")
        return ModelReply(content=self.reply)

    async def aclose(self) -> None:
        pass


class GatedModel:
    """A model that answers only once ``gate`` is set; ``active`` counts calls waiting on it."""

    name = "gated"

    def __init__(self, reply: str = "done") -> None:
        self.reply = reply
        self.gate = asyncio.Event()
        self.active = 0
        self.peak = 0
        self.calls = 0
        self.prompts: list[str] = []

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.calls += 1
        self.prompts.append(str(messages[-1].get("content")))
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            await self.gate.wait()
        finally:
            self.active -= 1
        return ModelReply(content=self.reply)

    async def aclose(self) -> None:
        pass


class RawToolCallModel:
    """Asks once for a tool call with ``arguments`` sent verbatim (may be broken JSON)."""

    name = "raw-tool-call"

    def __init__(self, tool_name: str, arguments: str, reply: str = "done") -> None:
        self.call = ToolCall(id="call_raw", name=tool_name, arguments=arguments)
        self.reply = reply
        self.requests: list[list[dict[str, Any]]] = []

    async def complete(self, messages: Messages, tools: Tools = None) -> ModelReply:
        self.requests.append(json.loads(json.dumps(messages)))
        if len(self.requests) == 1:
            return ModelReply(content=None, tool_calls=[self.call])
        return ModelReply(content=self.reply)

    async def aclose(self) -> None:
        pass


def plugin_process(*plugins: Any, **config: Any) -> Any:
    """An AgentProcess "triage" with ``plugins`` (a ScriptedModel unless ``model`` is given)."""
    from tether import AgentProcess, ProcessConfig
    from tether.models import ScriptedModel

    config.setdefault("model", ScriptedModel())
    return AgentProcess("triage", ProcessConfig(plugins=list(plugins), **config))


def scripted(name: str = "triage", **config: Any) -> Any:
    """An AgentProcess ``name`` on a ScriptedModel (unless ``model`` is given)."""
    from tether import AgentProcess, ProcessConfig
    from tether.models import ScriptedModel

    model = config.pop("model", None) or ScriptedModel()
    return AgentProcess(name, ProcessConfig(model=model, **config))


async def finished(rec: Recorder, count: int = 1) -> None:
    """Wait until ``rec`` has seen ``count`` task_completed events."""
    await eventually(lambda: len(rec.of(HookEvent.TASK_COMPLETED)) >= count, what="the runs")


def completions(process: Any) -> Recorder:
    """Records task_completed after every plugin handler has run (lowest priority)."""
    return Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, priority=-1000)


async def run_task(process: Any, rec: Recorder, text: str = "Login is down") -> str:
    """Inject a ticket and wait for its task_completed; its event id."""
    before = len(rec.outcomes())
    event_id: str = await process.inject(ticket(text))
    await eventually(lambda: len(rec.outcomes()) > before, what="task_completed")
    return event_id


async def run_one_task(process: Any, text: str = "Login is down") -> str:
    """Start ``process``, run one ticket until its task_completed has reached every handler
    (plugins' too), and stop the process; the ticket's event id."""
    rec = completions(process)
    async with process:
        return await run_task(process, rec, text)


async def run_tasks(process: Any, count: int = 1, text: str = "Login is down") -> Recorder:
    """Start ``process``, run ``count`` tickets (``text``) one after another to their
    task_completed, and stop the process; the recorder of task_completed."""
    rec = completions(process)
    async with process:
        for _ in range(count):
            await run_task(process, rec, text)
    return rec


async def task_warnings(process: Any) -> list[str]:
    """Run one ticket through ``process``, which must succeed (a plugin never fails a task),
    and return the plugin warnings of that task."""
    rec = completions(process)
    async with process:
        event_id = await run_task(process, rec)
    assert rec.outcomes() == ["success"]
    warnings: list[str] = process.plugins.warnings[event_id]
    return warnings


async def fire_until_completed(process: Any, runner: Any, rec: Recorder, what: str) -> None:
    """Let the trigger ``runner`` fire into the running ``process`` until ``rec`` has seen a
    task_completed (``what``: the run waited for), then stop the runner."""
    runner.start(process.inject_trigger)
    try:
        await eventually(lambda: rec.of(HookEvent.TASK_COMPLETED), what=what)
    finally:
        await runner.stop()


async def hold_a_second_run(process: Any, model: GatedModel, rec: Recorder) -> None:
    """Let a "first" ticket finish, then hold a "second" one inside ``model`` (its gate closed).

    ``rec`` records the task_completed events of the running ``process``."""
    model.gate.set()
    await run_task(process, rec, "first")
    model.gate.clear()
    await process.inject(ticket("second"))
    await eventually(lambda: model.active == 1, what="the second run")


class HeldRewind:
    """A config_change hook that holds each rewind until ``release`` is set; ``entered`` is set
    once a rewind has reached it."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()
        self.release = asyncio.Event()

    async def __call__(self, ctx: HookContext) -> None:
        if ctx.data["change"] == "rewind":
            self.entered.set()
            await self.release.wait()
