"""``tether eval``: run scenario packs with run-level hooks, and report on runs folders.

``tether eval run PACK [--hook NAME ...] [--runs N] [--out runs/] [--fake-llm]`` runs a pack
with a progress bar and prints its table; ``tether eval report runs/`` reads a folder back
(``--json``, ``--junit FILE``). Both exit 1 when a scenario missed its pass rate, 0 otherwise;
hooks never change that.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any

import click
import typer

if TYPE_CHECKING:
    from rich.console import Console

    from ..hooks import Plugin

__all__ = ["eval_app"]

eval_app = typer.Typer(
    help="Evaluate an agent: run scenario packs (with run-level hooks) and report on runs.",
    no_args_is_help=True,
)

JunitOption = Annotated[
    Path | None, typer.Option("--junit", help="Write JUnit XML of the runs to this file.")
]


def _console(stderr: bool = False) -> Console:
    """A terminal's width, or unbounded when piped: no value is cut in a file."""
    from ._console import console

    return console(stderr=stderr)


def _hooks(names: list[str]) -> list[Plugin]:
    from ..eval import resolve_hooks
    from ..hooks import PluginError

    try:
        return resolve_hooks(names)
    except (PluginError, ValueError) as exc:
        raise click.BadParameter(str(exc), param_hint="'--hook'") from None


@eval_app.command("run")
def eval_run(
    pack: Annotated[Path, typer.Argument(help="The scenario pack (YAML).")],
    hook: Annotated[
        list[str] | None,
        typer.Option(
            "--hook",
            help="Activate this run-level hook (a built-in or a 'tether.plugins' entry "
            "point); repeatable, fired in this order. None is active otherwise.",
        ),
    ] = None,
    runs: Annotated[
        int | None, typer.Option("--runs", min=1, help="Runs per scenario (overrides the pack).")
    ] = None,
    out: Annotated[Path, typer.Option("--out", help="The runs folder to write.")] = Path("runs"),
    fake_llm: Annotated[
        bool,
        typer.Option(
            "--fake-llm",
            help="Serve the agent's model from tether.testing.FakeLLM on 127.0.0.1 (offline).",
        ),
    ] = False,
    junit: JunitOption = None,
    as_json: Annotated[bool, typer.Option("--json", help="Print the result as JSON.")] = False,
) -> None:
    """Run every scenario of PACK; write traces, scores and hook artifacts to --out."""
    from ..eval import junit_xml, load_pack, report_folder

    loaded = load_pack(pack)
    active = _hooks(hook or [])
    result = asyncio.run(_run(loaded, active, runs, out, fake_llm, quiet=as_json))
    if junit is not None:
        junit.write_text(junit_xml(report_folder(out)), encoding="utf-8")
    if as_json:
        payload = {
            "pack": result.pack,
            "sweep": result.sweep,
            "out": str(out),
            "hooks": result.hooks,
            "passed": result.passed,
            "scenarios": result.aggregates,
            "warnings": result.warnings,
        }
        sys.stdout.write(json.dumps(payload, indent=2) + "\n")
    else:
        console = _console()
        ran = sum(a["runs"] for a in result.aggregates)
        _table(console, result.aggregates, f"{result.pack}: {ran} run(s)")
        for where, warnings in result.warnings.items():
            for warning in warnings:
                console.print(f"[yellow]warning[/] ({where}): {_escape(warning)}")
        console.print(f"runs written to {_escape(str(out))}/ (sweep {result.sweep})")
    raise typer.Exit(result.exit_code)


async def _run(
    loaded: Any, active: list[Plugin], runs: int | None, out: Path, fake_llm: bool, *, quiet: bool
) -> Any:
    from rich.progress import BarColumn, MofNCompleteColumn, Progress, TextColumn

    from ..eval import Progress as Step
    from ..eval import run_pack

    total = sum(runs or s.runs or loaded.spec.runs for s in loaded.spec.scenarios)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[failed]} failed"),
        console=_console(stderr=True),
        transient=True,
        disable=quiet,
    ) as bar:
        task = bar.add_task(loaded.name, total=total, failed=0)
        failed = 0

        def step(event: Step) -> None:
            nonlocal failed
            if event.kind == "scenario":
                bar.update(task, description=f"{loaded.name}: {event.scenario_id}")
            elif event.kind == "run":
                failed += event.verdict != "PASS"
                bar.update(task, advance=1, failed=failed)

        if not (fake_llm or loaded.spec.fake_llm is not None):
            return await run_pack(loaded, hooks=active, runs=runs, out=out, progress=step)
        from ..testing import FakeLLM

        async with FakeLLM(port=0) as fake:
            return await run_pack(
                loaded, hooks=active, runs=runs, out=out, fake_llm=fake, progress=step
            )


@eval_app.command("report")
def eval_report(
    folder: Annotated[Path, typer.Argument(help="A runs folder written by 'tether eval run'.")],
    as_json: Annotated[bool, typer.Option("--json", help="Print the report as JSON.")] = False,
    junit: JunitOption = None,
) -> None:
    """Pass rate per scenario, failing layers and latency of the runs in FOLDER."""
    from ..eval import junit_xml, report_folder

    report = report_folder(folder)
    if junit is not None:
        junit.write_text(junit_xml(report), encoding="utf-8")
    if as_json:
        sys.stdout.write(json.dumps(report.as_dict(), indent=2) + "\n")
    else:
        _table(_console(), report.scenarios, f"{folder}: {len(report.records)} run(s)")
    raise typer.Exit(report.exit_code)


@eval_app.command("hooks")
def eval_hooks() -> None:
    """List the names --hook takes: the built-ins, then the entry points."""
    from ..eval import available_hooks

    for name in available_hooks():
        sys.stdout.write(f"{name}\n")


@eval_app.command("schema")
def eval_schema() -> None:
    """Print the JSON Schema of scenario packs."""
    from ..eval import render_pack_schema

    sys.stdout.write(render_pack_schema())


def _escape(text: str) -> str:
    from rich.markup import escape

    return escape(text)


def _ms(value: Any) -> str:
    return "-" if value is None else f"{value:.0f}"


def _table(console: Console, aggregates: list[dict[str, Any]], title: str) -> None:
    from rich.table import Table

    table = Table(title=title, title_justify="left")
    for column, justify in (
        ("scenario", "left"),
        ("pass rate", "right"),
        ("required", "right"),
        ("failing layers", "left"),
        ("latency p50 / p95 ms", "right"),
        ("", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for agg in aggregates:
        layers = ", ".join(f"{name} ({n})" for name, n in agg["failing_layers"].items())
        if agg.get("error"):
            layers = agg["error"]
        latency = agg["latency_ms"]
        table.add_row(
            _escape(agg["scenario_id"]),
            f"{agg['passed_runs']}/{agg['runs']} ({agg['pass_rate']:.0%})",
            f"{agg['required_pass_rate']:.0%}",
            _escape(layers or "-"),
            f"{_ms(latency['p50'])} / {_ms(latency['p95'])}",
            "[green]pass[/]" if agg["passed"] else "[red]FAIL[/]",
        )
    console.print(table)
    if not aggregates:
        console.print("[yellow]no runs found[/]")
