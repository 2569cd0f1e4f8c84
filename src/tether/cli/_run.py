"""``tether run`` and ``tether serve``: a runtime in the foreground until Ctrl-C or SIGTERM.

The first Ctrl-C (or SIGTERM) stops cleanly: every process dispatches ``session_end`` and lets its
runs finish; a second Ctrl-C interrupts the shutdown.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import signal
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rich.console import Console
from rich.markup import escape

from .._urls import masked_url
from ._mcp_view import describe_mcp, mcp_warnings

if TYPE_CHECKING:
    from ..api import WebhookServer
    from ..process import AgentProcess
    from ..runtime import AgentRuntime
    from ..telemetry import Telemetry
    from ._logs import LogSetup

__all__ = ["ClusterOptions", "check_plugins", "run_file", "serve_files"]


@dataclass(frozen=True, slots=True)
class ClusterOptions:
    """``tether serve --cluster``: the Redis URL, this host's name, the key prefix, the TTL."""

    url: str
    host: str | None = None
    prefix: str = "tether"
    lease_ttl: float = 10.0


def _console() -> Console:
    return Console(soft_wrap=True, highlight=False)


@contextlib.contextmanager
def _logs(level: str | None, log_format: str, debug: bool) -> Iterator[LogSetup | None]:
    """``--log-level``/``--log-format``: tether's logs on stderr (redacted once the runtime
    exists: see LogSetup); without them none, or all of them with ``debug`` (see _quiet_logs)."""
    from ._logs import logging_to_stderr

    if level is None and log_format == "json":
        level = "info"
    if level is None:
        with _quiet_logs(debug):
            yield None
        return
    with logging_to_stderr(level, log_format) as setup:
        yield setup


def _telemetry(*, metrics: bool) -> Telemetry | None:
    """Spans when the OTEL_* variables ask for them; metrics (``metrics``) when
    prometheus_client is installed; None when neither."""
    from ..telemetry import Telemetry

    telemetry = Telemetry.from_env(metrics=None if metrics else False)
    return telemetry if telemetry.tracing is not None or telemetry.metrics is not None else None


async def _shutdown(telemetry: Telemetry | None) -> None:
    if telemetry is not None:  # the last spans go out (in a thread: it waits for the export)
        await asyncio.to_thread(telemetry.shutdown)


@contextlib.contextmanager
def _quiet_logs(debug: bool) -> Iterator[None]:
    """Hook errors are shown as outcomes: keep their log tracebacks off the terminal.

    Python prints records of unconfigured loggers to stderr ("last resort"); a NullHandler
    stops that without touching levels. The handlers go again when the command ends.
    With ``debug`` (``tether --debug``) every record is shown instead.
    """
    if debug:
        logging.basicConfig(level=logging.DEBUG)
        yield
        return
    added: list[logging.Logger] = []
    quiet = logging.NullHandler()
    for name in ("tether", "uvicorn", "watchfiles"):
        logger = logging.getLogger(name)
        logger.addHandler(quiet)
        added.append(logger)
    try:
        yield
    finally:
        for logger in added:
            logger.removeHandler(quiet)


@contextlib.contextmanager
def _stop_on_signals(stop: asyncio.Event) -> Iterator[None]:
    """Set ``stop`` on SIGINT/SIGTERM; after the first, Ctrl-C interrupts as usual."""
    loop = asyncio.get_running_loop()
    installed: list[signal.Signals] = []

    def handler() -> None:
        stop.set()
        for sig in installed:
            loop.remove_signal_handler(sig)
        installed.clear()

    for sig in (signal.SIGINT, signal.SIGTERM):
        try:
            loop.add_signal_handler(sig, handler)
        except (NotImplementedError, RuntimeError, ValueError):  # not the main thread / Windows
            continue
        installed.append(sig)
    try:
        yield
    finally:
        for sig in installed:
            loop.remove_signal_handler(sig)


def _mcp_lines(
    console: Console, runtime: AgentRuntime, logs: LogSetup | None
) -> contextlib.AbstractContextManager[None]:
    """A lost or failing MCP server as a live line, unless --log-level shows the logs."""
    return mcp_warnings(console, runtime.redact) if logs is None else contextlib.nullcontext()


def _describe_triggers(console: Console, process: AgentProcess) -> None:
    for trigger_id, trigger in process.triggers:
        kind = trigger.type
        if kind == "cron":
            where = getattr(trigger, "cron_expression", "")
        elif kind == "file_watch":
            where = getattr(trigger, "watch_path", "")
        elif kind == "event":
            where = getattr(trigger, "event_type", "")
        else:
            where = ""
        if kind != "webhook":
            console.print(f"  trigger  {escape(trigger_id)} ({kind}) {escape(str(where))}")


def _describe_webhooks(console: Console, webhooks: WebhookServer | None) -> None:
    if webhooks is None:
        return
    for endpoint in webhooks.endpoints():
        signed = ", signed" if endpoint["signed"] else ""
        console.print(
            f"  webhook  {escape(endpoint['url'])} -> {escape(endpoint['process'])}/"
            f"{escape(endpoint['trigger_id'])} (POST JSON{signed})"
        )


def _summary(console: Console, runtime: AgentRuntime) -> None:
    for process in runtime:
        status = process.status()
        console.print(
            f"[bold]{escape(process.name)}[/] stopped: {status['invocation_count']} run(s), "
            f"{status['dead_letter_count']} dead letter(s)"
        )


def check_plugins(names: list[str]) -> list[str]:
    """The ``--plugin`` names, once each, each one loadable (else a PluginError naming the
    available plugins): checked before anything starts."""
    from ..hooks import resolve_plugin

    unique = list(dict.fromkeys(names))
    for name in unique:
        resolve_plugin(name)
    return unique


def _with_plugins(named: list[str], extra: list[str]) -> list[str]:
    """A manifest's plugins, then those of --plugin it does not already name."""
    return [*named, *(name for name in extra if name not in named)]


def run_file(
    file: Path,
    payloads: list[Any],
    *,
    until_idle: bool,
    answers: bool,
    plugins: list[str] | None = None,
    model: str | None = None,
    base_url: str | None = None,
    log_level: str | None = None,
    log_format: str = "text",
    debug: bool = False,
) -> int:
    """Run the agent of ``file``; return the exit status: with ``until_idle``, 1 when an
    event was dead-lettered."""
    with _logs(log_level, log_format, debug) as logs:
        return asyncio.run(
            _run(
                file,
                payloads,
                until_idle=until_idle,
                answers=answers,
                plugins=plugins or [],
                model=model,
                base_url=base_url,
                logs=logs,
            )
        )


async def _run(
    file: Path,
    payloads: list[Any],
    *,
    until_idle: bool,
    answers: bool,
    plugins: list[str] | None = None,
    stop: asyncio.Event | None = None,
    model: str | None = None,
    base_url: str | None = None,
    logs: LogSetup | None = None,
) -> int:
    from ..hooks import HookManager
    from ..manifest import load_manifest, manifest_to_process_config
    from ..process import TriggerEvent
    from ..runtime import AgentRuntime
    from ._live import LivePrinter

    manifest = load_manifest(file)
    if plugins:
        manifest = manifest.model_copy(update={"plugins": _with_plugins(manifest.plugins, plugins)})
    overrides = {k: v for k, v in (("model", model), ("base_url", base_url)) if v is not None}
    if overrides:
        manifest = manifest.model_copy(update=_checked_overrides(overrides))
    config = manifest_to_process_config(manifest)
    console = _console()
    telemetry = _telemetry(metrics=False)  # no API here to serve metrics from
    runtime = AgentRuntime(hooks=HookManager(), telemetry=telemetry)
    if logs is not None:
        logs.redact = runtime.redact
    printer = LivePrinter(console, answers=answers)
    printer.attach_runtime(runtime)
    process = await runtime.add_process(manifest.name, config)
    webhooks: WebhookServer | None = None
    if process.webhook_triggers:
        from ..api import WebhookServer

        webhooks = WebhookServer(runtime)
    stop = stop if stop is not None else asyncio.Event()
    with _stop_on_signals(stop), _mcp_lines(console, runtime, logs):
        try:
            active = process.plugins.names
            console.print(
                f"[bold]tether run[/] {escape(str(file))}: [bold]{escape(process.name)}[/] "
                f"({escape(str(config.model))}), {len(config.hooks)} hook(s), "
                f"{len(config.triggers)} trigger(s), {len(config.mcp_servers)} MCP server(s)"
                + (f", plugins: {escape(', '.join(active))}" if active else "")
            )
            if webhooks is not None:
                await webhooks.start()
            _describe_webhooks(console, webhooks)
            _describe_triggers(console, process)
            await runtime.start_all()
            describe_mcp(console, process)
            console.print("[dim]Ctrl-C stops the process[/]")
            for payload in payloads:
                await process.inject(TriggerEvent("cli", "manual", payload))
            if until_idle:
                await _idle_or(process, stop)
            else:
                await stop.wait()
        finally:
            if webhooks is not None:
                await webhooks.stop()
            await runtime.stop_all()
            await _shutdown(telemetry)
            printer.check_dead_letters()
            _summary(console, runtime)
    if until_idle and process.dead_letters:
        return 1  # what was asked for did not all happen (see --help)
    return 0


def _checked_overrides(overrides: dict[str, str]) -> dict[str, str]:
    """``--model``/``--base-url``, checked as the manifest's own fields are (a usage error
    naming the option)."""
    import click
    from pydantic import ValidationError

    from ..manifest import ProcessSpec

    try:
        checked = ProcessSpec.model_validate(overrides)
    except ValidationError as exc:
        error = exc.errors()[0]
        option = "--" + str(error["loc"][0]).replace("_", "-")
        message = str(error["msg"]).removeprefix("Value error, ")
        raise click.UsageError(f"{option}: {message}") from None
    return {key: getattr(checked, key) for key in overrides}


async def _idle_or(process: AgentProcess, stop: asyncio.Event) -> None:
    """Return when ``stop`` is set or nothing is queued, running or waiting for a retry."""
    while not stop.is_set():
        status = process.status()
        if not (status["queue_size"] or status["in_flight"] or status["retrying"]):
            await asyncio.sleep(0.05)  # let the last task_completed hooks finish printing
            status = process.status()
            if not (status["queue_size"] or status["in_flight"] or status["retrying"]):
                return
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(stop.wait(), 0.05)


def serve_files(
    files: list[Path],
    *,
    host: str,
    port: int,
    token: str | None,
    allow_command_deploys: bool,
    quiet: bool,
    plugins: list[str] | None = None,
    cluster: ClusterOptions | None = None,
    allowed_hook_hosts: list[str] | None = None,
    allowed_env: list[str] | None = None,
    open_metrics: bool = False,
    log_level: str | None = None,
    log_format: str = "text",
    debug: bool = False,
) -> int:
    """Serve a runtime with the processes of ``files``; return the exit status.

    ``plugins`` are activated on the processes of ``files`` (processes deployed later over
    the API name their own). With ``cluster``, this host joins a cluster on Redis: it runs the
    processes whose lease it takes (see ``tether.cluster``).
    """
    with _logs(log_level, log_format, debug) as logs:
        return asyncio.run(
            _serve(
                files,
                host=host,
                port=port,
                token=token,
                allow_command_deploys=allow_command_deploys,
                quiet=quiet,
                plugins=plugins or [],
                cluster=cluster,
                allowed_hook_hosts=allowed_hook_hosts or [],
                allowed_env=allowed_env or [],
                open_metrics=open_metrics,
                logs=logs,
            )
        )


async def _serve(
    files: list[Path],
    *,
    host: str,
    port: int,
    token: str | None,
    allow_command_deploys: bool,
    quiet: bool,
    plugins: list[str] | None = None,
    allowed_hook_hosts: list[str] | None = None,
    allowed_env: list[str] | None = None,
    stop: asyncio.Event | None = None,
    ready: Callable[[str], object] | None = None,
    cluster: ClusterOptions | None = None,
    open_metrics: bool = False,
    logs: LogSetup | None = None,
) -> int:
    from ..api import OrchestrationAPI
    from ..hooks import HookManager
    from ..manifest import ManifestError, load_manifest
    from ..runtime import AgentRuntime
    from ._live import LivePrinter

    manifests = []
    problems: list[ManifestError] = []
    for file in files:
        try:
            manifests.append(load_manifest(file))
        except ManifestError as exc:
            problems.append(exc)
    if problems:
        raise ExceptionGroup("manifests with problems", problems)
    console = _console()
    telemetry = _telemetry(metrics=True)
    runtime = AgentRuntime(hooks=HookManager(), telemetry=telemetry)
    if logs is not None:
        logs.redact = runtime.redact
    if not quiet:
        LivePrinter(console).attach_runtime(runtime)
    for manifest in manifests:
        if plugins:
            manifest = manifest.model_copy(
                update={"plugins": _with_plugins(manifest.plugins, plugins)}
            )
        if cluster is None:
            await runtime.add_spec(manifest)
        else:
            from ..cluster import cluster_config
            from ..manifest import manifest_to_process_config

            config = cluster_config(manifest_to_process_config(manifest), cluster.lease_ttl)
            await runtime.add_process(manifest.name, config)
    api = OrchestrationAPI(
        runtime,
        host=host,
        port=port,
        token=token,
        allow_command_deploys=allow_command_deploys,
        allowed_hook_hosts=allowed_hook_hosts or [],
        allowed_env=allowed_env or [],
        open_metrics=open_metrics,
    )
    node = None
    if cluster is not None:
        from ..cluster import ClusterNode

        if logs is None:  # (--log-level shows them its own way)
            # What the cluster does (takeovers, leases lost) is for the operator to see.
            handler = logging.StreamHandler()
            handler.setFormatter(
                logging.Formatter("%(asctime)s %(name)s %(levelname)s %(message)s")
            )
            cluster_log = logging.getLogger("tether.cluster")
            cluster_log.addHandler(handler)
            cluster_log.setLevel(logging.INFO)
            cluster_log.propagate = False

        node = ClusterNode(
            runtime,
            cluster.url,
            host=cluster.host,
            prefix=cluster.prefix,
            lease_ttl=cluster.lease_ttl,
        )
        node.local_app, node.api_token = api.app, token
    stop = stop if stop is not None else asyncio.Event()
    with _stop_on_signals(stop), _mcp_lines(console, runtime, logs):
        try:
            if node is not None:  # before the API answers: its processes' events go to Redis
                await node.start()
            await api.start()
            console.print(f"[bold]tether serve[/]: control API on {api.url}/api/v1")
            console.print(f"  dashboard  {api.url}/")
            if telemetry is not None and telemetry.metrics is not None:
                shown = " (open to this machine)" if open_metrics else ""
                console.print(f"  metrics    {api.url}/metrics{shown}")
            if telemetry is not None and telemetry.tracing is not None:
                console.print("  traces     exported over OTLP/HTTP (OTEL_* variables)")
            if token is None:
                console.print("  no token: only requests from this machine are served")
            if allow_command_deploys:
                console.print(
                    "  [yellow]command deploys are allowed[/]: API clients can run programs here"
                )
            if api.allowed_hook_hosts:
                console.print(
                    f"  URL hooks may be deployed to: {escape(', '.join(api.allowed_hook_hosts))}"
                )
            if api.allowed_env:
                names = ", ".join(sorted(api.allowed_env))
                console.print(f"  API configuration may name these host variables: {escape(names)}")
            _describe_webhooks(console, api.webhooks)
            for process in runtime:
                _describe_triggers(console, process)
                if process.plugins.names:
                    console.print(
                        f"  plugins  {escape(process.name)}: "
                        f"{escape(', '.join(process.plugins.names))}"
                    )
            if node is None:
                await runtime.start_all()
                for process in runtime:
                    describe_mcp(console, process)
            else:
                console.print(
                    f"  cluster: host {escape(node.host)} on {escape(masked_url(node.url))}"
                    f" (lease TTL {node.ttl:g}s)"
                )
            console.print("[dim]Ctrl-C stops the runtime[/]")
            if ready is not None:
                ready(api.url)
            await stop.wait()
        finally:
            await api.stop()
            if node is not None and runtime.cluster is node:
                await node.stop()  # hands its processes over: their events stay in Redis
            await runtime.stop_all()
            await _shutdown(telemetry)
            _summary(console, runtime)
    return 0
