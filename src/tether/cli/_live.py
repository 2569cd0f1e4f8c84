"""Showing a runtime's lifecycle events, hook outcomes and dead letters as they happen.

Events are seen by one observer hook in the runtime's shared manager (it runs last, so it sees
the data as the process's own hooks left it). Hook outcomes come from each process's run
recorder, which is teed: after every dispatch the hooks that ran are printed. A dispatch the
observer never saw was blocked before reaching it; its header is printed from the records.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from rich.console import Console
from rich.markup import escape

from ..hooks import HookContext, HookEvent, HookRun
from ..hooks._events import EVENTS

if TYPE_CHECKING:
    from ..process import AgentProcess
    from ..runtime import AgentRuntime

__all__ = ["LivePrinter"]

OBSERVER: Final = "tether-cli"
#: The keys printed for each event (the event table's ``shown``).
_SHOWN: Final[dict[str, tuple[str, ...]]] = {
    event.value: spec.shown for event, spec in EVENTS.items()
}
_STYLE: Final = {
    "blocked": "bold red",
    "failed": "red",
    "timed_out": "red",
    "applied": "yellow",
    "passed": "green",
    "skipped": "dim",
    "dropped": "red",
}


def _short(value: Any, width: int = 70) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict | list):
        text = json.dumps(value, default=str)
    else:
        text = str(value)
    text = text.replace("\n", " / ")
    return text if len(text) <= width else text[: width - 3] + "..."


def _now() -> str:
    return datetime.now().strftime("%H:%M:%S.%f")[:-3]


class LivePrinter:
    """Prints what happens in a runtime; ``attach_runtime`` once, before processes start."""

    def __init__(self, console: Console, *, answers: bool = True) -> None:
        self.console = console
        self.answers = answers
        self._runtime: AgentRuntime | None = None
        self._dead_seen: dict[str, int] = {}
        self._processes: dict[str, AgentProcess] = {}

    def attach_runtime(self, runtime: AgentRuntime) -> None:
        self._runtime = runtime
        for event in HookEvent:
            runtime.hooks.register(event, self._observe, priority=-(10**9), name=OBSERVER)
        for process in runtime:
            self.attach(process)
        runtime.on_change(self._changed)

    def _changed(self, change: str, process: AgentProcess) -> None:
        if change == "added":
            self.attach(process)
        else:
            self._processes.pop(process.name, None)

    def attach(self, process: AgentProcess) -> None:
        """Tee ``process``'s hook-run recorder into this printer."""
        if process.name in self._processes:
            return
        self._processes[process.name] = process
        self._dead_seen[process.name] = len(process.dead_letters)
        inner = process.hooks.recorder
        if inner is not None and not isinstance(inner, _Tee):
            redact = process.redactor.text if process.redactor else None
            tee = _Tee(inner, process.name, redact, self._ran)
            process.hooks.recorder = tee

    # -- output ----------------------------------------------------------------------------

    def line(self, text: str, style: str | None = None) -> None:
        self.console.print(text, style=style, highlight=False, soft_wrap=True)

    def _header(self, process: str, event: str, details: str, style: str = "cyan") -> None:
        many = self._runtime is not None and len(self._runtime) > 1
        who = f"[magenta]{escape(process)}[/] " if many else ""
        self.console.print(
            f"[dim]{_now()}[/] {who}[{style}]{event:<19}[/] {details}",
            highlight=False,
            soft_wrap=True,
        )

    async def _observe(self, ctx: HookContext) -> None:
        event = ctx.event.value
        parts = []
        for key in _SHOWN.get(event, ()):
            if ctx.data.get(key) is not None:  # an unset field says nothing: not shown
                value = ctx.data[key]
                if key == "event_id" and isinstance(value, str):
                    value = value[:8]
                shown = value if isinstance(value, str) and key != "prompt" else _short(value)
                parts.append(f"{key}={shown}" if key != "prompt" else f"prompt={_short(value)!r}")
        style = "cyan"
        if event == "task_completed":
            style = "green" if ctx.data.get("outcome") == "success" else "red"
        elif event == "permission_denied":
            style = "red"
        details = " ".join(parts)
        process = self._processes.get(ctx.process_id)
        if process is not None:
            # The data hooks see keeps what a command hook was handed (a block reason quoting
            # it, in a task_completed error): the output is a log, so it is redacted as one.
            details = process.redactor.text(details)
        self._header(ctx.process_id, event, escape(details), style)
        if event == "task_completed" and self.answers and ctx.data.get("outcome") == "success":
            answer = self._answer(ctx.process_id, ctx.data.get("event_id"))
            if answer:
                self.line(f"{'':13}{'answer':<19} {escape(_short(answer, 110))}", "dim")
        self._check_dead_letters_soon()

    def _answer(self, process_name: str, event_id: Any) -> str | None:
        process = self._processes.get(process_name)
        if process is None or not isinstance(event_id, str):
            return None
        messages = process.transcripts.get(event_id) or []
        for message in reversed(messages):
            if message.get("role") == "assistant" and message.get("content"):
                return process.redactor.text(str(message["content"]))
        return None

    def _ran(self, process: str, runs: list[HookRun]) -> None:
        mine = [r for r in runs if r.hook_name == OBSERVER and r.source == "shared"]
        others = [r for r in runs if not (r.hook_name == OBSERVER and r.source == "shared")]
        if not others:
            return
        if not mine and others[0].mode != "async":
            blocked = any(r.outcome == "blocked" for r in others) or any(
                r.outcome in ("failed", "timed_out") for r in others
            )
            self._header(process, others[0].event, "[bold red]refused[/]" if blocked else "", "red")
        for run in others:
            style = _STYLE.get(run.outcome, "")
            what = run.outcome
            if run.patch_applied:
                what += " (prompt rewritten)"
            if run.error:
                what += f": {run.error}"
            where = f" [{run.source}]" if run.source not in ("config", "code", "manifest") else ""
            if run.mode == "async":
                where += " (background)"
            shown = f"[{style}]{escape(what)}[/]" if style else escape(what)
            self.console.print(
                f"{'':13}[dim]hook[/] {escape(run.hook_name + where)}: {shown}",
                highlight=False,
                soft_wrap=True,
            )
        self._check_dead_letters_soon()

    def _check_dead_letters_soon(self) -> None:
        try:
            asyncio.get_running_loop().call_soon(self.check_dead_letters)
        except RuntimeError:
            self.check_dead_letters()

    def check_dead_letters(self) -> None:
        """Print dead letters that appeared since the last check."""
        for name, process in list(self._processes.items()):
            seen = self._dead_seen.get(name, 0)
            letters = process.dead_letters
            if len(letters) < seen:
                seen = 0
            for entry in letters[seen:]:
                error = f": {entry['error']}" if entry.get("error") else ""
                self._header(
                    name,
                    "dead letter",
                    escape(f"event_id={entry['event_id'][:8]} {entry['reason']}{error}"),
                    "bold red",
                )
            self._dead_seen[name] = len(letters)


class _Tee:
    """A run recorder that forwards to the process's own and reports each record set."""

    def __init__(
        self,
        inner: Any,
        process: str,
        redact: Callable[[str], str] | None,
        report: Callable[[str, list[HookRun]], None],
    ) -> None:
        self._inner = inner
        self._process = process
        self._redact = redact
        self._report = report

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in ("add", "ran", "skipped", "dropped"):
            return attr

        def record(*args: Any, **kwargs: Any) -> None:
            attr(*args, **kwargs)
            from ..hooks._history import HistoryRecorder

            scratch = HistoryRecorder(self._process, size=1, redact=self._redact)
            getattr(scratch, name)(*args, **kwargs)
            with contextlib.suppress(Exception):  # printing must never break a dispatch
                self._report(self._process, scratch.runs())

        return record
