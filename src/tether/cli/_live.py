"""Showing a runtime's lifecycle events, hook outcomes and dead letters as they happen.

The printer watches each process's dispatches (``AgentProcess.watch``), registering no hook:
when a dispatch ends, its event is printed with the data as the process's hooks left it (or
``refused``), then the runs of its hooks (each followed by what it told the operator, its
notice), which the process's run recorder (teed) reported during the dispatch and the printer
held until then. Runs recorded outside a dispatch (async hooks, in the background) are printed
as they come.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import json
from collections.abc import Callable
from datetime import datetime
from typing import TYPE_CHECKING, Any, Final

from rich.console import Console
from rich.markup import escape

from ..hooks import EVENTS, HookEvent, HookRun

if TYPE_CHECKING:
    from ..process import AgentProcess
    from ..runtime import AgentRuntime

__all__ = ["LivePrinter"]

#: The runs recorded while the current task's dispatch is under way (printed after its event).
_HELD: contextvars.ContextVar[_Held | None] = contextvars.ContextVar(
    "tether_cli_held", default=None
)


class _Held:
    """The hook runs of one dispatch, held until its event line is printed."""

    __slots__ = ("open", "runs")

    def __init__(self) -> None:
        self.open = True
        self.runs: list[HookRun] = []


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


def _short(value: Any, width: int | None = 70) -> str:
    if isinstance(value, str):
        text = value
    elif isinstance(value, dict | list):
        text = json.dumps(value, default=str)
    else:
        text = str(value)
    text = text.replace("\n", " / ")
    return text if width is None or len(text) <= width else text[: width - 3] + "..."


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
        for process in runtime:
            self.attach(process)
        runtime.on_change(self._changed)

    def _changed(self, change: str, process: AgentProcess) -> None:
        if change == "added":
            self.attach(process)
        else:
            gone = self._processes.pop(process.name, None)
            if gone is not None:
                gone.unwatch(self._watch)

    def attach(self, process: AgentProcess) -> None:
        """Watch ``process``'s dispatches and tee its hook-run recorder into this printer."""
        if process.name in self._processes:
            return
        self._processes[process.name] = process
        self._dead_seen[process.name] = len(process.dead_letters)
        process.watch(self._watch)
        inner = process.hooks.recorder
        if inner is not None and not isinstance(inner, _Tee):
            redact = process.redactor.text if process.redactor else None
            tee = _Tee(inner, process.name, redact, self._ran)
            process.hooks.recorder = tee

    # -- output ----------------------------------------------------------------------------

    def _cut(self, width: int) -> int | None:
        """Values are cut to ``width`` on a terminal; piped, they are whole (docs/cli.md)."""
        return width if self.console.is_terminal else None

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

    def _watch(self, process: str, event: HookEvent) -> Callable[[Any], None]:
        """Before a dispatch (in its task): hold its runs; after it, print it and them."""
        held = _Held()
        token = _HELD.set(held)

        def ended(result: Any) -> None:
            held.open = False
            with contextlib.suppress(ValueError):  # (another context: nothing to reset)
                _HELD.reset(token)
            if result is not None:
                self._dispatched(process, event, result.data, result.blocked)
            if held.runs:
                self._print_runs(process, held.runs)

        return ended

    def _dispatched(
        self, process_name: str, hook_event: HookEvent, data: dict[str, Any], blocked: bool
    ) -> None:
        event = hook_event.value
        if blocked:
            self._header(process_name, event, "[bold red]refused[/]", "red")
            return
        parts = []
        for key in _SHOWN.get(event, ()):
            if data.get(key) is not None:  # an unset field says nothing: not shown
                value = data[key]
                if key == "event_id" and isinstance(value, str):
                    value = value[:8]
                cut = self._cut(70)
                shown = value if isinstance(value, str) and key != "prompt" else _short(value, cut)
                parts.append(
                    f"{key}={shown}" if key != "prompt" else f"prompt={_short(value, cut)!r}"
                )
        style = "cyan"
        if event == "task_completed":
            style = "green" if data.get("outcome") == "success" else "red"
        elif event == "permission_denied":
            style = "red"
        details = " ".join(parts)
        process = self._processes.get(process_name)
        if process is not None:
            # The data hooks see keeps what a command hook was handed (a block reason quoting
            # it, in a task_completed error): the output is a log, so it is redacted as one.
            details = process.redactor.text(details)
        self._header(process_name, event, escape(details), style)
        if event == "task_completed" and self.answers and data.get("outcome") == "success":
            answer = self._answer(process_name, data.get("event_id"))
            if answer:
                self.line(f"{'':13}{'answer':<19} {escape(_short(answer, self._cut(110)))}", "dim")
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
        held = _HELD.get()
        if held is not None and held.open:  # printed after its event's line
            held.runs += runs
            return
        self._print_runs(process, runs)

    def _print_runs(self, process: str, runs: list[HookRun]) -> None:
        for run in runs:
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
            if run.notice:  # what the hook asked to show the operator (redacted as the run)
                for text in run.notice.splitlines():
                    self.line(f"{'':13}{'notice':<19} {text}", "bold yellow")
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
            from ..hooks import HistoryRecorder

            scratch = HistoryRecorder(self._process, size=1, redact=self._redact)
            getattr(scratch, name)(*args, **kwargs)
            with contextlib.suppress(Exception):  # printing must never break a dispatch
                self._report(self._process, scratch.runs())

        return record
