"""One real OTLP/HTTP export: the OTEL_* variables point tether at a receiver on 127.0.0.1
(a small starlette app on a free port that records what is POSTed to it)."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from typing import TYPE_CHECKING

import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import Response
from starlette.routing import Route

from _imports_support import SRC, imported_modules, module_name
from _process_support import eventually
from tether import AgentRuntime, HookManager, ProcessConfig, TriggerEvent
from tether.api._server import AppServer
from tether.models import ScriptedModel
from tether.telemetry import Telemetry, tracing_configured

if TYPE_CHECKING:
    from collections.abc import AsyncIterator


class Receiver:
    """Records every export request: its path, headers and body."""

    def __init__(self) -> None:
        self.posts: list[tuple[str, dict[str, str], bytes]] = []
        self.server = AppServer(
            Starlette(routes=[Route("/v1/traces", self.traces, methods=["POST"])]),
            "127.0.0.1",
            0,
            name="otlp-receiver",
        )

    async def traces(self, request: Request) -> Response:
        self.posts.append((request.url.path, dict(request.headers), await request.body()))
        return Response(b"", media_type="application/x-protobuf")

    def span_names(self) -> list[str]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        names = []
        for _, _, body in self.posts:
            export = ExportTraceServiceRequest()
            export.ParseFromString(body)
            for resource in export.resource_spans:
                for scope in resource.scope_spans:
                    names += [span.name for span in scope.spans]
        return names

    def services(self) -> set[str]:
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        found = set()
        for _, _, body in self.posts:
            export = ExportTraceServiceRequest()
            export.ParseFromString(body)
            for resource in export.resource_spans:
                for attribute in resource.resource.attributes:
                    if attribute.key == "service.name":
                        found.add(attribute.value.string_value)
        return found


@pytest.fixture
async def receiver() -> AsyncIterator[Receiver]:
    receiver = Receiver()
    await receiver.server.start()
    yield receiver
    await receiver.server.stop()


async def test_spans_are_exported_over_otlp_http_where_the_otel_variables_say(
    receiver: Receiver, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{receiver.server.port}")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-tenant=acme")
    monkeypatch.setenv("OTEL_SERVICE_NAME", "billing-agents")
    monkeypatch.setenv("OTEL_BSP_SCHEDULE_DELAY", "50")
    telemetry = Telemetry.from_env()
    assert telemetry.tracing is not None
    runtime = AgentRuntime(hooks=HookManager(), telemetry=telemetry)
    async with runtime:
        process = await runtime.add_process("billing", ProcessConfig(model=ScriptedModel()))
        await process.inject(TriggerEvent("cli", "manual", {"invoice": 7}))
        await eventually(
            lambda: process.invocation_count == 1 and not process.status()["in_flight"]
        )
    # Flushes the batch: in a thread, as the receiver answers in this loop.
    await asyncio.to_thread(telemetry.shutdown)
    await eventually(lambda: "task billing" in receiver.span_names(), what="the exported task")
    assert {"accept billing", "task billing", "invoke_agent billing"} <= set(receiver.span_names())
    path, headers, _ = receiver.posts[0]
    assert path == "/v1/traces"
    assert headers["content-type"] == "application/x-protobuf"
    assert headers["x-tenant"] == "acme"
    assert receiver.services() == {"billing-agents"}


def test_the_standard_variables_decide_whether_traces_are_exported() -> None:
    assert not tracing_configured({})
    assert tracing_configured({"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"})
    assert tracing_configured({"OTEL_EXPORTER_OTLP_TRACES_ENDPOINT": "http://c:4318/v1/traces"})
    assert tracing_configured({"OTEL_TRACES_EXPORTER": "otlp"})
    on = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:4318"}
    assert not tracing_configured({**on, "OTEL_SDK_DISABLED": "true"})
    assert not tracing_configured({**on, "OTEL_TRACES_EXPORTER": "none"})


def test_without_the_variables_from_env_builds_no_tracing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    for name in ("OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("OTEL_TRACES_EXPORTER", raising=False)
    telemetry = Telemetry.from_env(metrics=False)
    assert telemetry.tracing is None
    assert telemetry.metrics is None


@pytest.mark.slow
def test_a_runtime_without_telemetry_imports_neither_opentelemetry_nor_prometheus() -> None:
    code = (
        "import sys, asyncio, tether\n"
        "from tether.models import ScriptedModel\n"
        "async def main():\n"
        "    async with tether.AgentRuntime() as rt:\n"
        "        p = await rt.add_process('a', tether.ProcessConfig(model=ScriptedModel()))\n"
        "        await p.inject(tether.TriggerEvent('cli', 'manual', {}))\n"
        "        await asyncio.sleep(0.2)\n"
        "asyncio.run(main())\n"
        "loaded = [m for m in sys.modules if m.split('.')[0] in "
        "('opentelemetry', 'prometheus_client') or m == 'tether.telemetry']\n"
        "print(loaded)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]", out.stdout + out.stderr


def test_no_layer_below_the_api_imports_the_telemetry_package() -> None:
    below = ("hooks", "store", "models", "agent", "process", "_redact", "approval", "plugins")
    offenders = []
    for path in SRC.rglob("*.py"):
        top = module_name(path).split(".")[1] if "." in module_name(path) else ""
        if top in below:
            offenders += [
                f"{module_name(path)} imports {goal}"
                for goal in imported_modules(path)
                if goal == "tether.telemetry" or goal.startswith("tether.telemetry.")
            ]
    assert offenders == []
