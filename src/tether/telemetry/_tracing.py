"""OpenTelemetry spans of a runtime (the ``tether[otel]`` extra).

One trace per event: ``accept <process>`` (its task_created hooks) begins it, or continues
the trace of the ``traceparent`` the event came with; each attempt is a ``task <process>``
span, its agent run an ``invoke_agent <process>`` span, each model call a ``chat <model>``
span and each tool call an ``execute_tool <tool>`` span (GenAI semantic conventions); every
hook run is a ``hook <event>`` span, a child of whatever was open when its dispatch ran.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Final

from ..agent import Note

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.trace import Span, Tracer

    from ..hooks import HookRun

__all__ = ["Tracing", "provider_from_env"]

#: The instrumentation scope of every span.
SCOPE: Final = "tether"
#: Outcomes that mark a span as an error.
ERRORS: Final = frozenset({"error", "failed", "timed_out", "dead_lettered"})


def provider_from_env() -> TracerProvider:
    """A TracerProvider exporting over OTLP/HTTP in batches, configured by the standard
    variables: ``OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT``, ``..._HEADERS``, ``..._TIMEOUT``,
    ``OTEL_SERVICE_NAME`` (default ``tether``), ``OTEL_RESOURCE_ATTRIBUTES``,
    ``OTEL_TRACES_SAMPLER(_ARG)``, ``OTEL_BSP_*``."""
    import os

    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.resources import SERVICE_NAME, Resource
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import BatchSpanProcessor

    defaults = {} if os.environ.get("OTEL_SERVICE_NAME") else {SERVICE_NAME: "tether"}
    provider = TracerProvider(resource=Resource.create(defaults))
    provider.add_span_processor(BatchSpanProcessor(OTLPSpanExporter()))
    return provider


class Tracing:
    """Spans through ``provider`` (an SDK TracerProvider; see provider_from_env)."""

    def __init__(self, provider: Any, *, owned: bool = True) -> None:
        from opentelemetry.trace.propagation.tracecontext import TraceContextTextMapPropagator

        self.provider = provider
        #: Whether ``shutdown`` stops the provider (not the application's global one).
        self.owned = owned
        self.tracer: Tracer = provider.get_tracer(SCOPE)
        self._propagator = TraceContextTextMapPropagator()

    def _parent(self, traceparent: str | None) -> Any:
        if traceparent is None:
            return None
        return self._propagator.extract({"traceparent": traceparent})

    @contextmanager
    def span(
        self,
        name: str,
        attributes: dict[str, Any],
        *,
        traceparent: str | None = None,
        kind: str = "INTERNAL",
    ) -> Iterator[Note]:
        """A current span around the block; the note's outcome, error, usage and attributes
        are set on it at the end (an outcome in ERRORS, or an exception, is an error)."""
        from opentelemetry.trace import SpanKind, Status, StatusCode

        note = Note()
        with self.tracer.start_as_current_span(
            name,
            context=self._parent(traceparent),
            kind=getattr(SpanKind, kind),
            attributes=attributes,
        ) as span:
            try:
                yield note
            finally:
                _finish(span, note)
                if note.outcome in ERRORS:
                    span.set_status(Status(StatusCode.ERROR, note.error or note.outcome))

    def traceparent(self) -> str | None:
        """The W3C context of the current span."""
        carrier: dict[str, str] = {}
        self._propagator.inject(carrier)
        return carrier.get("traceparent")

    def hook_runs(self, runs: list[HookRun], kinds: dict[str, str]) -> None:
        """A span for each run (skipped ones too: a matcher said no), timed as it was."""
        from opentelemetry.trace import Status, StatusCode

        for run in runs:
            end = int(run.recorded_at * 1e9)
            start = end - int(run.duration_ms * 1e6)
            blocked = run.outcome == "blocked" or (
                run.outcome in ("failed", "timed_out") and bool(run.required)
            )
            span = self.tracer.start_span(
                f"hook {run.event}",
                start_time=start,
                attributes={
                    "tether.process": run.process_id,
                    "tether.hook.id": run.hook_id,
                    "tether.hook.name": run.hook_name,
                    "tether.hook.event": run.event,
                    "tether.hook.source": run.source,
                    "tether.hook.mode": run.mode,
                    "tether.hook.executor_kind": kinds.get(run.hook_id, "callback"),
                    "tether.hook.outcome": run.outcome,
                    "tether.hook.blocked": blocked,
                    "tether.hook.duration_ms": run.duration_ms,
                    "tether.hook.dispatch_id": run.dispatch_id,
                },
            )
            if run.outcome in ("failed", "timed_out"):
                span.set_status(Status(StatusCode.ERROR, run.error or run.outcome))
            span.end(end_time=end)

    def shutdown(self) -> None:
        """Export what is pending and stop (the provider's own shutdown); a provider not
        owned (the application's global one) is flushed and left running."""
        if not self.owned:
            flush = getattr(self.provider, "force_flush", None)
            if callable(flush):
                flush()
            return
        shutdown = getattr(self.provider, "shutdown", None)
        if callable(shutdown):
            shutdown()


def _finish(span: Span, note: Note) -> None:
    span.set_attribute("tether.outcome", note.outcome)
    if note.error:
        span.set_attribute("error.type", note.outcome)
    if "input" in note.usage:
        span.set_attribute("gen_ai.usage.input_tokens", note.usage["input"])
    if "output" in note.usage:
        span.set_attribute("gen_ai.usage.output_tokens", note.usage["output"])
    if "cached" in note.usage:
        span.set_attribute("gen_ai.usage.cache_read.input_tokens", note.usage["cached"])
    if note.cost is not None:
        span.set_attribute("tether.cost", note.cost)
    for key, value in note.attributes.items():
        span.set_attribute(f"tether.{key}", value)
