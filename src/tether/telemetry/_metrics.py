"""Prometheus metrics of a runtime (``prometheus_client``, the ``tether[metrics]`` extra).

Counters and histograms are fed as things happen (hook runs, tasks, model and tool calls,
dead letters); gauges of the processes (state, queue depth, in flight) and their restart
counts are read from the processes at each scrape. Label values are bounded: a label keeps
at most ``MAX_LABEL_VALUES`` distinct values, later ones are counted under ``other``; no
event id, prompt or argument is ever a label.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from typing import Any, Final

__all__ = ["MAX_LABEL_VALUES", "METRIC_NAMES", "Metrics"]

#: The most distinct values one label takes (process names, tool names, models ...).
MAX_LABEL_VALUES: Final = 100
OTHER: Final = "other"

#: Hook durations: from a callback's microseconds to a slow program's seconds.
HOOK_BUCKETS: Final = (0.0001, 0.0005, 0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1.0, 5.0, 30.0)
MODEL_BUCKETS: Final = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

#: Every metric served, with its type and labels (docs/observability.md lists them too).
METRIC_NAMES: Final = {
    "tether_hook_runs_total": ("counter", ("process", "event", "outcome", "executor")),
    "tether_hook_duration_seconds": ("histogram", ("event", "executor")),
    "tether_hook_loop_blocks_total": ("counter", ("process", "event", "kind")),
    "tether_tasks_total": ("counter", ("process", "outcome")),
    "tether_task_duration_seconds": ("histogram", ("process",)),
    "tether_retries_total": ("counter", ("process",)),
    "tether_dead_letters_total": ("counter", ("process", "reason")),
    "tether_model_calls_total": ("counter", ("model", "outcome")),
    "tether_model_call_duration_seconds": ("histogram", ("model",)),
    "tether_model_tokens_total": ("counter", ("model", "type")),
    "tether_model_cost_total": ("counter", ("model",)),
    "tether_tool_calls_total": ("counter", ("tool", "outcome")),
    "tether_tool_call_duration_seconds": ("histogram", ("tool",)),
    "tether_process_up": ("gauge", ("process", "state")),
    "tether_queue_depth": ("gauge", ("process",)),
    "tether_in_flight": ("gauge", ("process",)),
    "tether_dead_letters": ("gauge", ("process",)),
    "tether_restarts_total": ("counter", ("process",)),
    "tether_runs_total": ("counter", ("process",)),
}

Status = dict[str, Any]


class _Bounded:
    """Label values capped per label: the first MAX_LABEL_VALUES distinct ones, then OTHER."""

    def __init__(self, limit: int = MAX_LABEL_VALUES) -> None:
        self.limit = limit
        self._seen: dict[str, set[str]] = {}

    def __call__(self, label: str, value: object) -> str:
        text = str(value)
        seen = self._seen.setdefault(label, set())
        if text in seen:
            return text
        if len(seen) >= self.limit:
            return OTHER
        seen.add(text)
        return text


class Metrics:
    """The metrics of one runtime, in a registry of their own (``registry``).

    ``render()`` answers a scrape: the text format, and its content type.
    """

    def __init__(self, *, max_label_values: int = MAX_LABEL_VALUES) -> None:
        from prometheus_client import CollectorRegistry, Counter, Histogram

        self.registry = CollectorRegistry(auto_describe=True)
        self._label = _Bounded(max_label_values)
        self._sources: list[Callable[[], Iterable[Status]]] = []
        self._children: dict[tuple[int, tuple[str, ...]], Any] = {}
        r = self.registry
        self.hook_runs = Counter(
            "tether_hook_runs",
            "Hook runs by process, event, outcome and executor kind",
            ["process", "event", "outcome", "executor"],
            registry=r,
        )
        self.hook_duration = Histogram(
            "tether_hook_duration_seconds",
            "Duration of hook runs (skipped ones not counted)",
            ["event", "executor"],
            buckets=HOOK_BUCKETS,
            registry=r,
        )
        self.hook_loop_blocks = Counter(
            "tether_hook_loop_blocks",
            "Hook steps that held the event loop, by kind: timed_out (past the hook's "
            "timeout: the run timed out) or warned (past the manager's loop_block_warn)",
            ["process", "event", "kind"],
            registry=r,
        )
        self.tasks = Counter(
            "tether_tasks", "Task attempts by outcome", ["process", "outcome"], registry=r
        )
        self.task_duration = Histogram(
            "tether_task_duration_seconds",
            "Duration of task attempts",
            ["process"],
            buckets=MODEL_BUCKETS,
            registry=r,
        )
        self.retries = Counter(
            "tether_retries", "Failed runs to be retried", ["process"], registry=r
        )
        self.dead_letters = Counter(
            "tether_dead_letters",
            "Events dead-lettered, by reason",
            ["process", "reason"],
            registry=r,
        )
        self.model_calls = Counter(
            "tether_model_calls", "Model calls by outcome", ["model", "outcome"], registry=r
        )
        self.model_latency = Histogram(
            "tether_model_call_duration_seconds",
            "Latency of model calls",
            ["model"],
            buckets=MODEL_BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "tether_model_tokens",
            "Tokens of model calls (type: input, output or cached)",
            ["model", "type"],
            registry=r,
        )
        self.model_cost = Counter(
            "tether_model_cost",
            "Cost of model calls by the process's pricing (unpriced calls add nothing)",
            ["model"],
            registry=r,
        )
        self.tool_calls = Counter(
            "tether_tool_calls", "Tool calls by outcome", ["tool", "outcome"], registry=r
        )
        self.tool_duration = Histogram(
            "tether_tool_call_duration_seconds",
            "Duration of tool calls",
            ["tool"],
            buckets=MODEL_BUCKETS,
            registry=r,
        )
        self.registry.register(_ProcessCollector(self))

    def child(self, metric: Any, *labels: str) -> Any:
        """``metric.labels(*labels)``, kept: a hook run's counter is found in a dict, not
        rebuilt under the client's lock each time (the label values are bounded)."""
        key = (id(metric), labels)
        found = self._children.get(key)
        if found is None:
            found = self._children[key] = metric.labels(*labels)
        return found

    def label(self, name: str, value: object) -> str:
        """``value`` as a label value of ``name`` (bounded: see MAX_LABEL_VALUES)."""
        return self._label(name, value)

    def watch(self, statuses: Callable[[], Iterable[Status]]) -> None:
        """Read the processes' gauges at each scrape from ``statuses`` (process.status()s)."""
        self._sources.append(statuses)

    def statuses(self) -> list[Status]:
        return [status for source in self._sources for status in source()]

    def render(self) -> tuple[bytes, str]:
        """The scrape answer: the exposition text and its content type."""
        from prometheus_client import CONTENT_TYPE_LATEST, generate_latest

        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class _ProcessCollector:
    """Gauges read from the processes at scrape time."""

    def __init__(self, metrics: Metrics) -> None:
        self.metrics = metrics

    def describe(self) -> list[Any]:
        return []  # collected at each scrape: nothing to check at registration

    def collect(self) -> Iterator[Any]:
        from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily

        label = self.metrics.label
        up = GaugeMetricFamily(
            "tether_process_up",
            "1 for each process, labelled by its state",
            labels=["process", "state"],
        )
        depth = GaugeMetricFamily(
            "tether_queue_depth", "Events waiting in a process's queue", labels=["process"]
        )
        in_flight = GaugeMetricFamily(
            "tether_in_flight", "Events a process is running now", labels=["process"]
        )
        dead = GaugeMetricFamily(
            "tether_dead_letters", "Dead letters a process holds now", labels=["process"]
        )
        restarts = CounterMetricFamily(
            "tether_restarts", "Restarts of a process", labels=["process"]
        )
        runs = CounterMetricFamily(
            "tether_runs", "Agent runs a process started", labels=["process"]
        )
        for status in self.metrics.statuses():
            name = label("process", status["name"])
            up.add_metric([name, str(status["state"])], 1)
            depth.add_metric([name], status["queue_size"])
            in_flight.add_metric([name], status["in_flight"])
            dead.add_metric([name], status["dead_letter_count"])
            restarts.add_metric([name], status["restart_count"])
            runs.add_metric([name], status["invocation_count"])
        yield from (up, depth, in_flight, dead, restarts, runs)
