"""With no Telemetry handed to the runtime, tether's spans go to OpenTelemetry's global
TracerProvider once the application has set one (as the ecosystem's libraries do), and to
nowhere when none is set. Each case runs in a program of its own: the global provider can be
set once per process."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

pytest.importorskip("opentelemetry.sdk")

PROGRAM = """\
import asyncio, sys
from opentelemetry import trace
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from tether import AgentRuntime, TriggerEvent
from tether.models import ScriptedModel

exporter = InMemorySpanExporter()
provider = TracerProvider()
provider.add_span_processor(SimpleSpanProcessor(exporter))
if sys.argv[1] == "set":
    trace.set_tracer_provider(provider)

async def main():
    runtime = AgentRuntime()
    async with runtime:
        process = await runtime.add_process("triage", {"model": ScriptedModel()})
        await process.inject(TriggerEvent("cli", "manual", {"ticket": "hi"}))
        for _ in range(500):
            if process.invocation_count and not process.status()["in_flight"]:
                break
            await asyncio.sleep(0.01)
    print(sorted({span.name.split(" ")[0] for span in exporter.get_finished_spans()}))
    span = provider.get_tracer("after").start_span("after")  # still exporting
    span.end()
    print("alive", exporter.get_finished_spans()[-1].name == "after")

asyncio.run(main())
"""


def run(mode: str) -> list[str]:
    done = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(PROGRAM), mode],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.splitlines()


def test_spans_go_to_the_global_tracer_provider_the_application_set() -> None:
    """Regression: spans appeared only when a Telemetry was handed to the runtime; an
    application that had set the global TracerProvider (or ran under opentelemetry-instrument)
    got none."""
    names, alive = run("set")
    assert names == "['accept', 'chat', 'invoke_agent', 'task']"
    assert alive == "alive True"  # the application's provider is not shut down by tether


@pytest.mark.slow
def test_no_global_provider_means_no_spans() -> None:
    names, _ = run("unset")
    assert names == "[]"
