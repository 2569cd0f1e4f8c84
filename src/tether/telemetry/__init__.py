"""Telemetry: OpenTelemetry spans and Prometheus metrics of a runtime's processes.

The process and the agent loop never import this package: a runtime hands each process a
``Telemetry`` (an observer, see ``tether.agent._observer``). OpenTelemetry
(``tether[otel]``) and prometheus_client (``tether[metrics]``) are imported only when used.
"""

from __future__ import annotations

from .._public import published
from ._telemetry import Telemetry as Telemetry
from ._telemetry import tracing_configured as tracing_configured

__all__ = ["Telemetry", "tracing_configured"]

published(globals())
