"""The ``tether`` command: typer commands that stay thin and import their work lazily.

Library code raises; only ``main`` turns an error into one line on stderr and exit status 1
(2 for usage errors, 130 for an interrupt). ``--debug`` shows the traceback instead.
"""

from __future__ import annotations

import os
import sys
import warnings
from enum import StrEnum
from pathlib import Path
from typing import Annotated, Any

import click
import typer

from ._approvals import approvals_app
from ._eval import eval_app

__all__ = ["app", "main"]

app = typer.Typer(
    name="tether",
    help="Run AI agents as supervised processes with lifecycle hooks.",
    no_args_is_help=True,
    add_completion=True,  # --install-completion / --show-completion for bash, zsh, fish
    pretty_exceptions_enable=False,
    rich_markup_mode=None,
)
hooks_app = typer.Typer(
    help="Work with hooks: test a command hook, or observe and control those of a running API.",
    no_args_is_help=True,
)
app.add_typer(hooks_app, name="hooks")
runtime_app = typer.Typer(
    help="The runtime: 'tether runtime start' is 'tether serve' under the reference's name.",
    no_args_is_help=True,
)
app.add_typer(runtime_app, name="runtime")
app.add_typer(eval_app, name="eval")
app.add_typer(approvals_app, name="approvals")


class _State:
    debug = False


STATE = _State()

DEFAULT_URL = "http://127.0.0.1:9781"

UrlOption = Annotated[
    str,
    typer.Option("--url", envvar="TETHER_URL", help="Base URL of a running control API."),
]
TokenOption = Annotated[
    str | None,
    typer.Option("--token", envvar="TETHER_API_TOKEN", help="Bearer token of the API."),
]
PluginOption = Annotated[
    list[str] | None,
    typer.Option(
        "--plugin",
        help="Activate this hook plugin (a built-in or a 'tether.plugins' entry point) on the "
        "processes of the manifests given here (repeatable).",
    ),
]
JsonFlag = Annotated[bool, typer.Option("--json", help="Print the API's JSON answer.")]


class LogLevel(StrEnum):
    debug = "debug"
    info = "info"
    warning = "warning"
    error = "error"


class LogFormat(StrEnum):
    text = "text"
    json = "json"


LogLevelOption = Annotated[
    LogLevel | None,
    typer.Option(
        "--log-level",
        help="Print tether's logs at this level and above on stderr (default: none, hook "
        "errors show as outcomes; 'info' with --log-format json).",
    ),
]
LogFormatOption = Annotated[
    LogFormat,
    typer.Option(
        "--log-format",
        help="Log lines as text, or one JSON object per line (process, event_id, hook, "
        "trace_id); secrets redacted.",
    ),
]


def _version(value: bool) -> None:
    if value:
        from .._version import __version__

        sys.stdout.write(f"tether {__version__}\n")
        raise typer.Exit(0)


@app.callback()
def _root(
    debug: Annotated[
        bool, typer.Option("--debug", help="Show tracebacks and debug logs on errors.")
    ] = False,
    version: Annotated[
        bool,
        typer.Option(
            "--version", callback=_version, is_eager=True, help="Print the version and exit."
        ),
    ] = False,
) -> None:
    STATE.debug = debug or os.environ.get("TETHER_DEBUG", "") not in ("", "0")


@app.command()
def run(
    file: Annotated[Path, typer.Argument(help="The .agent manifest to run.")],
    inject: Annotated[
        list[str] | None,
        typer.Option("--inject", help="Inject an event with this JSON payload (repeatable)."),
    ] = None,
    until_idle: Annotated[
        bool,
        typer.Option(
            "--until-idle",
            help="Stop once every injected event is done; exit 1 if any event was "
            "dead-lettered (blocked, refused, failed for good), else 0.",
        ),
    ] = False,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Hide model answers.")] = False,
    plugin: PluginOption = None,
    model: Annotated[
        str | None,
        typer.Option(
            "--model",
            help="Use this model instead of the manifest's ('openai:<name>', 'scripted').",
        ),
    ] = None,
    base_url: Annotated[
        str | None,
        typer.Option(
            "--base-url",
            help="Endpoint of an 'openai:' model, e.g. the one 'tether fake-llm' prints "
            "(default: the manifest's base_url, then OPENAI_BASE_URL).",
        ),
    ] = None,
    log_level: LogLevelOption = None,
    log_format: LogFormatOption = LogFormat.text,
) -> None:
    """Run one agent in the foreground with its triggers; Ctrl-C stops it cleanly."""
    from ._run import check_plugins, run_file

    payloads = [_json_option("--inject", text) for text in inject or []]
    plugins = check_plugins(plugin or [])
    raise typer.Exit(
        run_file(
            file,
            payloads,
            until_idle=until_idle,
            answers=not quiet,
            plugins=plugins,
            model=model,
            base_url=base_url,
            log_level=log_level.value if log_level is not None else None,
            log_format=log_format.value,
            debug=STATE.debug,
        )
    )


@runtime_app.command("start")
@app.command()
def serve(
    ctx: typer.Context,
    files: Annotated[
        list[Path] | None, typer.Argument(help=".agent manifests to load at start.")
    ] = None,
    host: Annotated[str, typer.Option(help="Interface of the control API.")] = "127.0.0.1",
    port: Annotated[int, typer.Option(help="Port of the control API.")] = 9781,
    token: Annotated[
        str | None,
        typer.Option(
            "--token",
            envvar="TETHER_API_TOKEN",
            help="Bearer token clients must send (better: TETHER_API_TOKEN or --token-file; "
            "a --token value shows in ps).",
        ),
    ] = None,
    token_file: Annotated[
        Path | None,
        typer.Option("--token-file", help="Read the bearer token from this file's first line."),
    ] = None,
    allow_command_deploys: Annotated[
        bool,
        typer.Option(
            "--allow-command-deploys",
            help="Let API clients deploy command hooks, stdio MCP servers and tool creation.",
        ),
    ] = False,
    allow_hook_host: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-hook-host",
            help="A host API clients may deploy URL hooks and HTTP MCP servers to (repeatable; "
            "'*' patterns and :port allowed).",
        ),
    ] = None,
    allow_env: Annotated[
        list[str] | None,
        typer.Option(
            "--allow-env",
            metavar="NAME",
            help="A host environment variable configuration sent over the API may name as "
            "${NAME} (repeatable; others are refused).",
        ),
    ] = None,
    quiet: Annotated[bool, typer.Option("--quiet", "-q", help="Do not print events.")] = False,
    plugin: PluginOption = None,
    cluster: Annotated[
        str | None,
        typer.Option(
            "--cluster",
            envvar="TETHER_CLUSTER",
            help="Join a cluster on this Redis (redis://host:port): every host serves the same "
            "manifests and each process runs on one host at a time (docs/scale-out.md).",
        ),
    ] = None,
    cluster_host: Annotated[
        str | None,
        typer.Option("--cluster-host", help="This host's name in the cluster (default: name-pid)."),
    ] = None,
    cluster_prefix: Annotated[
        str, typer.Option("--cluster-prefix", help="Prefix of the cluster's Redis keys.")
    ] = "tether",
    lease_ttl: Annotated[
        float,
        typer.Option(
            "--lease-ttl",
            min=0.3,
            max=3600,
            help="Seconds a process's lease outlives its host's last renewal (the takeover time).",
        ),
    ] = 10.0,
    open_metrics: Annotated[
        bool,
        typer.Option(
            "--open-metrics",
            help="Serve GET /metrics without the token to scrapers on this machine.",
        ),
    ] = False,
    log_level: LogLevelOption = None,
    log_format: LogFormatOption = LogFormat.text,
) -> None:
    """Start a runtime with the control API, its dashboard at / and its metrics at /metrics
    (and the webhooks of its processes). OTEL_* variables turn on trace export."""
    from .._urls import masked_url
    from ._run import ClusterOptions, check_plugins, serve_files
    from ._token import serve_token

    token = serve_token(token, ctx.get_parameter_source("token"), token_file)
    plugins = check_plugins(plugin or [])
    options = None
    if cluster is not None:
        if not cluster.startswith(("redis://", "rediss://", "unix://")):
            raise typer.BadParameter(
                "expected redis://host:port[/db] (or rediss://, unix://), got "
                f"{masked_url(cluster)!r}",
                param_hint="--cluster",
            )
        options = ClusterOptions(cluster, cluster_host, cluster_prefix, lease_ttl)
    raise typer.Exit(
        serve_files(
            files or [],
            host=host,
            port=port,
            token=token,
            allow_command_deploys=allow_command_deploys,
            quiet=quiet,
            plugins=plugins,
            cluster=options,
            allowed_hook_hosts=allow_hook_host or [],
            allowed_env=allow_env or [],
            open_metrics=open_metrics,
            log_level=log_level.value if log_level is not None else None,
            log_format=log_format.value,
            debug=STATE.debug,
        )
    )


@app.command()
def validate(
    files: Annotated[list[Path], typer.Argument(help=".agent manifests to check.")],
    as_json: Annotated[
        bool, typer.Option("--json", help="Print one JSON report: each file, ok, problems.")
    ] = False,
    runtime_hooks: Annotated[
        list[str] | None,
        typer.Option(
            "--runtime-hook",
            metavar="NAME",
            help="A hook the runtime shares with the process: before/after may name it.",
        ),
    ] = None,
    require_env: Annotated[
        bool,
        typer.Option(
            "--require-env",
            help="An unset ${VAR} is an error (default: a warning; the host that runs the "
            "manifest sets its secrets).",
        ),
    ] = False,
) -> None:
    """Check manifests; print every problem with its path and line."""
    from ._validate import validate_files

    hooks = runtime_hooks or ()
    raise typer.Exit(
        validate_files(files, as_json=as_json, runtime_hooks=hooks, require_env=require_env)
    )


@app.command()
def schema() -> None:
    """Print the JSON Schema of .agent manifests."""
    from ..manifest import render_json_schema

    sys.stdout.write(render_json_schema())


@app.command()
def inject(
    name: Annotated[str, typer.Argument(help="The process to send the event to.")],
    payload: Annotated[str, typer.Option(help="The event's JSON payload.")] = "{}",
    trigger_id: Annotated[
        str | None,
        typer.Option(
            help="Send the event as one of this trigger of the process (which must exist); "
            "default: a manual event with trigger_id 'cli'."
        ),
    ] = None,
    traceparent: Annotated[
        str | None, typer.Option(help="W3C trace context: the event's spans are its children.")
    ] = None,
    wait: Annotated[
        float,
        typer.Option(
            min=0,
            max=300,
            help="Seconds to wait for the event's outcome (0: answer once it is queued).",
        ),
    ] = 10.0,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Inject an event into a process of a running runtime; exit 1 if it was dead-lettered
    (at once, or within --wait seconds: refused by a hook, failed for good)."""
    from ._client import inject_event

    data = _json_option("--payload", payload)
    raise typer.Exit(
        inject_event(
            url,
            token,
            name,
            data,
            trigger_id,
            traceparent=traceparent,
            as_json=as_json,
            wait=wait,
        )
    )


@app.command()
def publish(
    event_type: Annotated[str, typer.Argument(help="The event triggers' event_type.")],
    payload: Annotated[str, typer.Option(help="The events' JSON payload (an object).")] = "{}",
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Publish a runtime event: every process with an event trigger of this type gets one."""
    from ._client import publish_event

    data = _json_option("--payload", payload)
    if not isinstance(data, dict):
        raise click.UsageError("--payload must be a JSON object")
    raise typer.Exit(publish_event(url, token, event_type, data, as_json=as_json))


@app.command("fake-llm")
def fake_llm(
    port: Annotated[int, typer.Option(help="Port to listen on (0: any free port).")] = 8781,
    host: Annotated[str, typer.Option(help="Interface to listen on.")] = "127.0.0.1",
    reply: Annotated[
        list[str] | None,
        typer.Option(
            help="What the model answers (default: FakeLLM's); repeated: the answers in "
            "order, the last one kept."
        ),
    ] = None,
    tool_call: Annotated[
        list[str] | None,
        typer.Option(
            "--tool-call",
            metavar="NAME=JSON",
            help="A tool call answered to a request offering tools, e.g. "
            "'lookup_order={\"order_id\": 1}' (repeat: in order).",
        ),
    ] = None,
    script: Annotated[
        Path | None,
        typer.Option(help="A JSON or YAML file: reply, replies, tool_calls (name, arguments)."),
    ] = None,
) -> None:
    """Serve FakeLLM, a scripted OpenAI-compatible model, until Ctrl-C (for trying tether
    without a model account: 'tether run agent.agent --base-url <printed URL>')."""
    # The CLI never imports the test helpers: this process becomes ``python -m
    # tether.testing`` (no shell; its signals and exit status are the command's own).
    argv = [sys.executable, "-m", "tether.testing", "--host", host, "--port", str(port)]
    for text in reply or ():
        argv += ["--reply", text]
    for text in tool_call or ():
        argv += ["--tool-call", text]
    if script is not None:
        argv += ["--script", str(script)]
    sys.stdout.flush()
    os.execv(sys.executable, argv)


@app.command()
def ps(
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the raw JSON.")] = False,
) -> None:
    """List the processes of a running runtime."""
    from ._client import list_processes

    raise typer.Exit(list_processes(url, token, as_json=as_json))


@hooks_app.command("test")
def hooks_test(
    event: Annotated[str, typer.Argument(help="The event, e.g. user_prompt_submit.")],
    command: Annotated[str, typer.Option(help="The hook's command (split like a shell).")],
    data: Annotated[
        str | None, typer.Option(help="JSON object merged into the sample event data.")
    ] = None,
    timeout: Annotated[float, typer.Option(help="Seconds before the program is killed.")] = 5.0,
    env: Annotated[
        list[str] | None, typer.Option("--env", help="NAME=VALUE for the program (repeatable).")
    ] = None,
    env_passthrough: Annotated[
        list[str] | None,
        typer.Option("--env-passthrough", help="Host variable to pass through (repeatable)."),
    ] = None,
    cwd: Annotated[str | None, typer.Option(help="Working directory of the program.")] = None,
    process: Annotated[str, typer.Option(help="The process name the hook sees.")] = "test",
    protocol: Annotated[
        str, typer.Option(help="'tether' (the default) or 'claude-code' (a Claude Code hook).")
    ] = "tether",
    persistent: Annotated[
        bool,
        typer.Option(
            "--persistent",
            help="The program is a persistent hook's (persistent: true): one JSON line with "
            "an id in, one answer line out.",
        ),
    ] = False,
) -> None:
    """Run one command hook against a sample event and explain its answer."""
    from ._hooktest import test_hook

    if protocol not in ("tether", "claude-code"):
        raise click.UsageError(f"--protocol must be 'tether' or 'claude-code', got {protocol!r}")
    if persistent and protocol != "tether":
        raise click.UsageError("--persistent speaks tether's JSON lines: drop --protocol")
    merged = _json_option("--data", data) if data is not None else None
    if merged is not None and not isinstance(merged, dict):
        raise click.UsageError("--data must be a JSON object")
    raise typer.Exit(
        test_hook(
            event,
            command,
            data=merged,
            timeout=timeout,
            env=_pairs(env or []),
            env_passthrough=env_passthrough or [],
            cwd=cwd,
            process=process,
            protocol=protocol,
            persistent=persistent,
        )
    )


@hooks_app.command("events")
def hooks_events(
    blockable: Annotated[
        bool | None,
        typer.Option(
            "--blockable/--not-blockable", help="Only events a hook can (or cannot) block."
        ),
    ] = None,
    family: Annotated[
        str | None, typer.Option(help="Only the events of this family (for example: task).")
    ] = None,
    url: Annotated[str, typer.Option("--url", hidden=True, help="Ignored.")] = DEFAULT_URL,
    token: Annotated[str | None, typer.Option("--token", hidden=True, help="Ignored.")] = None,
    as_json: JsonFlag = False,
) -> None:
    """The lifecycle events: family, blocking, matcher fields (schemas with --json). Works
    offline: the event table ships with tether."""
    from ._hooks import show_events

    raise typer.Exit(show_events(blockable=blockable, family=family, as_json=as_json))


@hooks_app.command("list")
def hooks_list(
    process: Annotated[str | None, typer.Option(help="Only the hooks of this process.")] = None,
    event: Annotated[str | None, typer.Option(help="Only hooks of this event.")] = None,
    source: Annotated[
        str | None,
        typer.Option(help="Only hooks from: code, config, manifest, plugin, inherited, shared."),
    ] = None,
    mode: Annotated[str | None, typer.Option(help="Only sync or async hooks.")] = None,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The hook catalog: every resolved hook of every process, in run order."""
    from ._hooks import list_hooks

    raise typer.Exit(
        list_hooks(
            url, token, process=process, event=event, source=source, mode=mode, as_json=as_json
        )
    )


@hooks_app.command("runs")
def hooks_runs(
    name: Annotated[str, typer.Argument(help="The process.")],
    event: Annotated[str | None, typer.Option(help="Only runs for this event.")] = None,
    outcome: Annotated[
        str | None,
        typer.Option(
            help="Only runs with this outcome: applied, passed, blocked, failed, timed_out, "
            "skipped, dropped (also denied = blocked, rejected = failed)."
        ),
    ] = None,
    hook: Annotated[str | None, typer.Option(help="Only runs of this hook (id or name).")] = None,
    since: Annotated[
        str | None,
        typer.Option(help="Only runs since an ISO time (UTC without offset) or 30s, 10m, 2h, 1d."),
    ] = None,
    last: Annotated[int | None, typer.Option(help="Only the last N runs.", min=0)] = None,
    follow: Annotated[
        bool, typer.Option("--follow", "-f", help="Keep printing new runs until Ctrl-C.")
    ] = False,
    interval: Annotated[
        float, typer.Option(help="Seconds between polls with --follow.", min=0.05)
    ] = 1.0,
    show_changes: Annotated[
        bool,
        typer.Option(
            "--show-changes", help="Show what each run changed: key, value before and after."
        ),
    ] = False,
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """The hook-run history of a process (oldest first)."""
    from ._hooks import show_runs

    raise typer.Exit(
        show_runs(
            url,
            token,
            name,
            event=event,
            outcome=outcome,
            hook=hook,
            since=since,
            last=last,
            follow=follow,
            interval=interval,
            as_json=as_json,
            show_changes=show_changes,
        )
    )


@hooks_app.command("enable")
def hooks_enable(
    name: Annotated[str, typer.Argument(help="The process.")],
    selector: Annotated[str, typer.Argument(help="A hook id or a tag.")],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Enable hooks again, by id or tag."""
    from ._hooks import set_enabled

    raise typer.Exit(set_enabled(url, token, name, selector, enabled=True))


@hooks_app.command("disable")
def hooks_disable(
    name: Annotated[str, typer.Argument(help="The process.")],
    selector: Annotated[str, typer.Argument(help="A hook id or a tag.")],
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
) -> None:
    """Disable hooks by id or tag without removing them (a shared hook: everywhere)."""
    from ._hooks import set_enabled

    raise typer.Exit(set_enabled(url, token, name, selector, enabled=False))


@hooks_app.command("dry-run")
def hooks_dry_run(
    name: Annotated[str, typer.Argument(help="The process.")],
    event: Annotated[str, typer.Argument(help="The event, e.g. user_prompt_submit.")],
    data: Annotated[str, typer.Option(help="The sample event data (a JSON object).")] = "{}",
    url: UrlOption = DEFAULT_URL,
    token: TokenOption = None,
    as_json: JsonFlag = False,
) -> None:
    """Push a sample event through a process's hook chain (command hooks really run);
    show each hook's outcome and the decision. Nothing is queued."""
    from ._hooks import dry_run

    payload = _json_option("--data", data)
    if not isinstance(payload, dict):
        raise click.UsageError("--data must be a JSON object")
    raise typer.Exit(dry_run(url, token, name, event, payload, as_json=as_json))


def _json_option(option: str, text: str) -> Any:
    """The option's JSON; a usage error for anything JSON cannot carry to the API or a hook
    program: NaN, Infinity and numbers beyond a float's range (1e400) included."""
    from .._json import loads_strict

    try:
        return loads_strict(text)
    except (ValueError, RecursionError) as exc:
        reason = str(exc) or "nested too deeply"
        raise click.UsageError(f"{option} is not valid JSON: {reason}") from None


def _pairs(items: list[str]) -> dict[str, str]:
    out: dict[str, str] = {}
    for item in items:
        name, sep, value = item.partition("=")
        if not sep or not name:
            raise click.UsageError(f"--env takes NAME=VALUE, got {item!r}")
        out[name] = value
    return out


def main(argv: list[str] | None = None) -> None:
    """Entry point of the ``tether`` script."""
    args = list(sys.argv[1:] if argv is None else argv)
    previous = warnings.showwarning
    warnings.showwarning = _show_warning
    try:
        code = app(args=args, prog_name="tether", standalone_mode=False)
    except click.exceptions.Exit as exc:
        code = exc.exit_code
    except _USAGE_ERRORS as exc:
        code = _usage_error(exc)
    except (click.exceptions.Abort, KeyboardInterrupt):
        sys.stderr.write("interrupted\n")
        code = 130
    except Exception as exc:
        if STATE.debug:
            raise
        _print_error(exc)
        code = 1
    finally:
        warnings.showwarning = previous
    sys.exit(code if isinstance(code, int) else 0)


#: Errors of the command line itself. typer 0.2x ships its own copy of click, whose
#: exceptions are no click.ClickException: both trees are caught.
_USAGE_ERRORS: tuple[type[Exception], ...] = (
    click.ClickException,
    *((typer.TyperException,) if hasattr(typer, "TyperException") else ()),
)


def _usage_error(exc: Exception) -> int:
    """Show a command-line error as one line (a group given no command: its help)."""
    code = getattr(exc, "exit_code", 2)
    show = getattr(exc, "show", None)
    if type(exc).__name__ == "NoArgsIsHelpError" and callable(show):  # click >= 8.2, typer's
        show()  # the help of the group
        return code if isinstance(code, int) else 2
    format_message = getattr(exc, "format_message", None)
    message = format_message() if callable(format_message) else str(exc)
    ctx = getattr(exc, "ctx", None)
    path = getattr(ctx, "command_path", None)
    hint = f" (see '{path} --help')" if path else ""
    first = str(message).strip().splitlines()[0] if str(message).strip() else type(exc).__name__
    sys.stderr.write(f"error: {first}{hint}\n")
    return code if isinstance(code, int) else 2


def _show_warning(
    message: Warning | str,
    category: type[Warning],
    filename: str,
    lineno: int,
    file: Any = None,
    line: str | None = None,
) -> None:
    """Warnings as one line each (the source location only with --debug)."""
    where = f" ({filename}:{lineno})" if STATE.debug else ""
    sys.stderr.write(f"warning: {message}{where}\n")


def _print_error(exc: BaseException) -> None:
    from ..manifest import ManifestError

    if isinstance(exc, BaseExceptionGroup):
        for inner in exc.exceptions:
            _print_error(inner)
        return
    if isinstance(exc, ManifestError):
        for issue in exc.errors:
            sys.stderr.write(f"error: {issue.format(exc.source)}\n")
        return
    message = str(exc).strip() or type(exc).__name__
    first = message.splitlines()[0]
    sys.stderr.write(f"error: {first}\n")
