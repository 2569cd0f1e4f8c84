"""Telemetry: the observer a runtime hands its processes, feeding spans and metrics.

Either half is optional: ``Telemetry(tracing=None, metrics=None)`` observes nothing and costs
a call per task. Nothing of OpenTelemetry or prometheus_client is imported unless asked for.
"""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..agent import Note

if TYPE_CHECKING:
    from ..hooks import HookManager, HookRun
    from ._metrics import Metrics
    from ._tracing import Tracing

__all__ = ["Telemetry", "tracing_configured"]

#: How many hook ids' executor kinds are remembered per chain before the memo starts again.
_KINDS_KEPT = 4096


def tracing_configured(environ: dict[str, str] | None = None) -> bool:
    """Whether the standard variables ask for traces: an OTLP endpoint is set, or
    ``OTEL_TRACES_EXPORTER`` names ``otlp``; never with ``OTEL_SDK_DISABLED=true`` or
    ``OTEL_TRACES_EXPORTER=none``."""
    env = os.environ if environ is None else environ
    if env.get("OTEL_SDK_DISABLED", "").strip().lower() == "true":
        return False
    exporter = env.get("OTEL_TRACES_EXPORTER", "").strip().lower()
    if exporter == "none":
        return False
    return bool(
        exporter == "otlp"
        or env.get("OTEL_EXPORTER_OTLP_ENDPOINT")
        or env.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    )


class Telemetry:
    """Spans (``tracing``) and Prometheus metrics (``metrics``) of a runtime's processes.

    Give it to ``AgentRuntime(telemetry=...)``: every process added is observed. Build one
    from the environment with ``Telemetry.from_env()``, or hand it an SDK TracerProvider
    (tests use one with an in-memory exporter) with ``Telemetry.with_provider(...)``.
    """

    def __init__(self, *, tracing: Tracing | None = None, metrics: Metrics | None = None) -> None:
        self.tracing = tracing
        self.metrics = metrics
        self._kinds: dict[int, dict[str, str]] = {}
        #: The loop_blocks of each chain (HookManager) counted so far, by id.
        self._blocks: dict[int, dict[tuple[str, str], int]] = {}

    @classmethod
    def from_env(cls, *, metrics: bool | None = None) -> Telemetry:
        """Tracing when the OTEL_* variables ask for it (see tracing_configured), through an
        OTLP/HTTP exporter they configure; metrics when prometheus_client is installed
        (``metrics=True`` requires it: ImportError naming the extra, ``False`` never)."""
        tracing = None
        if tracing_configured():
            try:
                from ._tracing import Tracing, provider_from_env
            except ImportError as exc:
                raise ImportError(
                    "OTEL_* variables ask for traces, but OpenTelemetry is not installed: "
                    "pip install 'tether[otel]'"
                ) from exc
            tracing = Tracing(provider_from_env())
        return cls(tracing=tracing, metrics=_metrics(metrics))

    @classmethod
    def from_global(cls) -> Telemetry | None:
        """Tracing through OpenTelemetry's global TracerProvider when the application set one
        (``trace.set_tracer_provider``, or ``opentelemetry-instrument``); None otherwise.

        OpenTelemetry is not imported here: an application that set a provider has imported
        it. The provider stays the application's: ``shutdown`` leaves it running."""
        trace = sys.modules.get("opentelemetry.trace")
        if trace is None:
            return None
        provider = trace.get_tracer_provider()
        if isinstance(provider, (trace.ProxyTracerProvider, trace.NoOpTracerProvider)):
            return None  # nothing configured: spans would go nowhere
        from ._tracing import Tracing

        return cls(tracing=Tracing(provider, owned=False))

    @classmethod
    def with_provider(cls, provider: Any, *, metrics: bool | None = None) -> Telemetry:
        """Tracing through ``provider`` (an OpenTelemetry SDK TracerProvider)."""
        from ._tracing import Tracing

        return cls(tracing=Tracing(provider), metrics=_metrics(metrics))

    def watch(self, statuses: Callable[[], Iterable[dict[str, Any]]]) -> None:
        """Read the processes' gauges from ``statuses`` at each scrape (the runtime's)."""
        if self.metrics is not None:
            self.metrics.watch(statuses)

    def shutdown(self) -> None:
        """Flush and stop the span exporter (metrics need nothing)."""
        if self.tracing is not None:
            self.tracing.shutdown()

    # -- the Observer protocol (see tether.agent._observer) -----------------------------------

    @contextmanager
    def _span(
        self,
        name: str,
        attributes: dict[str, Any],
        traceparent: str | None = None,
        kind: str = "INTERNAL",
    ) -> Iterator[Note]:
        if self.tracing is None:
            yield Note()
            return
        with self.tracing.span(name, attributes, traceparent=traceparent, kind=kind) as note:
            yield note

    @contextmanager
    def accepted(
        self,
        process: str,
        event_id: str,
        trigger_id: str,
        trigger_type: str,
        traceparent: str | None,
    ) -> Iterator[Note]:
        attributes = {
            "tether.process": process,
            "tether.event_id": event_id,
            "tether.trigger_id": trigger_id,
            "tether.trigger_type": trigger_type,
        }
        with self._span(f"accept {process}", attributes, traceparent, "CONSUMER") as note:
            yield note
            if self.tracing is not None:
                note.traceparent = self.tracing.traceparent()

    @contextmanager
    def task(
        self,
        process: str,
        event_id: str,
        trigger_id: str,
        trigger_type: str,
        attempt: int,
        traceparent: str | None,
    ) -> Iterator[Note]:
        attributes = {
            "tether.process": process,
            "tether.event_id": event_id,
            "tether.trigger_id": trigger_id,
            "tether.trigger_type": trigger_type,
            "tether.attempt": attempt,
        }
        started = time.perf_counter()
        with self._span(f"task {process}", attributes, traceparent) as note:
            try:
                yield note
            finally:
                if self.metrics is not None:
                    m = self.metrics
                    name = m.label("process", process)
                    m.tasks.labels(name, note.outcome).inc()
                    m.task_duration.labels(name).observe(time.perf_counter() - started)
                    if note.outcome == "retrying":
                        m.retries.labels(name).inc()

    @contextmanager
    def run(self, process: str, event_id: str) -> Iterator[Note]:
        attributes = {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.agent.name": process,
            "tether.process": process,
            "tether.event_id": event_id,
        }
        with self._span(f"invoke_agent {process}", attributes) as note:
            yield note

    @contextmanager
    def model_call(self, process: str, model: str) -> Iterator[Note]:
        attributes = {
            "gen_ai.operation.name": "chat",
            "gen_ai.provider.name": "openai",
            "gen_ai.request.model": model,
            "tether.process": process,
        }
        started = time.perf_counter()
        with self._span(f"chat {model}", attributes, kind="CLIENT") as note:
            try:
                yield note
            finally:
                if self.metrics is not None:
                    m = self.metrics
                    name = m.label("model", model)
                    m.model_calls.labels(name, note.outcome).inc()
                    m.model_latency.labels(name).observe(time.perf_counter() - started)
                    for kind, count in note.usage.items():
                        m.model_tokens.labels(name, kind).inc(count)
                    if note.cost:
                        m.model_cost.labels(name).inc(note.cost)

    @contextmanager
    def tool_call(self, process: str, tool: str, call_id: str) -> Iterator[Note]:
        attributes = {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": tool,
            "gen_ai.tool.call.id": call_id,
            "tether.process": process,
        }
        started = time.perf_counter()
        with self._span(f"execute_tool {tool}", attributes) as note:
            try:
                yield note
            finally:
                if self.metrics is not None:
                    m = self.metrics
                    name = m.label("tool", tool)
                    m.tool_calls.labels(name, note.outcome).inc()
                    m.tool_duration.labels(name).observe(time.perf_counter() - started)

    def hook_runs(self, process: str, hooks: HookManager, runs: list[HookRun]) -> None:
        if not runs:
            return
        kinds = self._kinds_of(hooks, runs)
        if self.tracing is not None:
            self.tracing.hook_runs(runs, kinds)
        if self.metrics is not None:
            m = self.metrics
            name = m.label("process", process)
            for run in runs:
                kind = kinds.get(run.hook_id, "callback")
                m.child(m.hook_runs, name, run.event, run.outcome, kind).inc()
                if run.outcome not in ("skipped", "dropped"):
                    m.child(m.hook_duration, run.event, kind).observe(run.duration_ms / 1e3)
            self._count_loop_blocks(name, hooks)

    def _count_loop_blocks(self, process: str, hooks: HookManager) -> None:
        """What the chain's ``loop_blocks`` counted since the last of its dispatches (the
        engine counts a hook holding the event loop as it runs; its record says so only when
        the hold timed it out, in its error)."""
        now = hooks.loop_blocks
        if not now:
            return
        m = self.metrics
        assert m is not None
        seen = self._blocks.setdefault(id(hooks), {})
        for (event, kind), count in list(now.items()):
            new = count - seen.get((event, kind), 0)
            if new > 0:
                m.child(m.hook_loop_blocks, process, event, kind).inc(new)
                seen[(event, kind)] = count

    def dead_lettered(self, process: str, reason: str) -> None:
        if self.metrics is not None:
            m = self.metrics
            m.dead_letters.labels(m.label("process", process), m.label("reason", reason)).inc()

    def _kinds_of(self, hooks: HookManager, runs: list[HookRun]) -> dict[str, str]:
        """Each hook's executor kind (callback, command, plugin), from the chain's catalog."""
        kinds = self._kinds.setdefault(id(hooks), {})
        if any(run.hook_id not in kinds for run in runs):
            if len(kinds) > _KINDS_KEPT:
                kinds.clear()
            for info in hooks.describe():
                kinds[info.hook_id] = info.executor_kind
            for run in runs:  # a hook gone since (a once hook): say so, look no more
                kinds.setdefault(run.hook_id, "plugin" if run.source == "plugin" else "callback")
        return kinds


def _metrics(wanted: bool | None) -> Metrics | None:
    if wanted is False:
        return None
    try:
        from ._metrics import Metrics

        return Metrics()
    except ImportError as exc:
        if wanted:
            raise ImportError(
                "metrics need prometheus_client: pip install 'tether[metrics]'"
            ) from exc
        return None
