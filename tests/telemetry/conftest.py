"""Fixtures of the telemetry tests: a Telemetry whose spans land in the SDK's in-memory
exporter, a runtime observed by it, and a process whose model is a FakeLLM."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    from tether import AgentRuntime
    from tether.telemetry import Telemetry


@pytest.fixture
def exporter() -> InMemorySpanExporter:
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    return InMemorySpanExporter()


@pytest.fixture
def telemetry(exporter: InMemorySpanExporter) -> Telemetry:
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor

    from tether.telemetry import Telemetry

    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    return Telemetry.with_provider(provider, metrics=True)


@pytest.fixture
async def observed(telemetry: Telemetry) -> AsyncIterator[AgentRuntime]:
    """A started runtime whose processes report to ``telemetry``."""
    from tether import AgentRuntime, HookManager

    runtime = AgentRuntime(hooks=HookManager(), telemetry=telemetry)
    await runtime.start_all()
    yield runtime
    await runtime.stop_all()
