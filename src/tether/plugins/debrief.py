"""The debrief plugin: after a failed task, ask the agent what it saw, and keep the answer.

It reports; it never changes configuration or outcome. Set ``TETHER_DEBRIEF_ON=all`` (or
``DebriefPlugin(on="all")``) to debrief every task that ran, not only failed ones. A task that
never ran to an end of its own (blocked, refused, or dead-lettered by a stop) is never debriefed:
there is no run to ask about, and a stop must not wait on a model turn per queued event.
In a dry run it asks nothing and stores nothing: the artifact it would keep, with no reply and
``error`` saying the model was not asked, is in the dry run's answer (under ``withheld``).
"""

from __future__ import annotations

import os
import time
from typing import Any, Final, Literal

from ..hooks import Plugin, PluginContext

__all__ = ["DRY_RUN_ERROR", "SCHEMA_VERSION", "DebriefPlugin", "debrief_prompt"]

SCHEMA_VERSION: Final = 1
#: Outcomes of a run that failed (``retrying``: this attempt failed, another will follow).
FAILED_OUTCOMES: Final = frozenset({"failed", "retrying"})
#: Outcomes of a run that ended by itself; the only ones ``on="all"`` debriefs.
RUN_OUTCOMES: Final = FAILED_OUTCOMES | {"success"}
#: The hook runs up to 5 s longer than its converse deadline, within the engine's 3600 s bound.
MAX_CONVERSE_TIMEOUT: Final = 3595.0
#: The artifact's ``error`` in a dry run, where the model is never asked.
DRY_RUN_ERROR: Final = "dry run: the model was not asked"


def debrief_prompt(outcome: str, error: str | None) -> str:
    """Environment first, then blockers, only then what to do differently."""
    what = f"ended with outcome '{outcome}'" + (f" (error: {error})" if error else "")
    return (
        f"The task you just worked on {what}. Answer these in order, briefly:\n"
        "1. Did any tool call return an error, an unexpected shape, or show that a capability "
        "was missing? Quote the exact text you received.\n"
        "2. Was anything you needed absent from your environment (a tool, a permission, data)?\n"
        "3. Only then: what would you do differently?"
    )


class DebriefPlugin(Plugin):
    """Built-in: asks the agent for a self-report after failed tasks and stores it."""

    name = "debrief"

    def __init__(
        self, on: Literal["failed", "all"] | None = None, converse_timeout: float | None = None
    ) -> None:
        chosen = on if on is not None else os.environ.get("TETHER_DEBRIEF_ON", "failed")
        if chosen not in ("failed", "all"):
            source = "" if on is not None else " (from TETHER_DEBRIEF_ON)"
            raise ValueError(f"debrief 'on' must be 'failed' or 'all', got {chosen!r}{source}")
        self.on = chosen
        if converse_timeout is None:
            env = os.environ.get("TETHER_DEBRIEF_TIMEOUT_S")
            try:
                converse_timeout = float(env) if env else 30.0
            except ValueError:
                raise ValueError(
                    f"TETHER_DEBRIEF_TIMEOUT_S must be a number of seconds, got {env!r}"
                ) from None
        if not 0 < converse_timeout <= MAX_CONVERSE_TIMEOUT:
            raise ValueError(
                f"debrief converse_timeout must be > 0 and at most {MAX_CONVERSE_TIMEOUT:g} "
                f"seconds, got {converse_timeout!r}"
            )
        self.converse_timeout = converse_timeout
        # The hook itself may run a little longer than its converse deadline.
        self.timeout = converse_timeout + 5.0

    async def on_task_completed(self, ctx: PluginContext) -> None:
        outcome = str(ctx.data.get("outcome"))
        if outcome not in (FAILED_OUTCOMES if self.on == "failed" else RUN_OUTCOMES):
            return
        task_error = ctx.data.get("error")
        prompt = debrief_prompt(outcome, task_error)
        started = time.perf_counter()
        reply: str | None = None
        error: str | None = None
        timed_out = False
        if ctx.dry_run:
            error = DRY_RUN_ERROR
        else:
            try:
                reply = await ctx.converse(prompt, timeout=self.converse_timeout)
            except TimeoutError:
                timed_out = True
                error = f"converse timed out after {self.converse_timeout:g}s"
            except Exception as exc:
                error = f"{type(exc).__name__}: {exc}"
        artifact: dict[str, Any] = {
            "schema_version": SCHEMA_VERSION,
            "task_id": ctx.data.get("event_id"),
            "process": ctx.process_id,
            "model": ctx.model,
            "outcome": outcome,
            "task_error": task_error,
            "prompt": prompt,
            "reply": reply,
            "tools_disabled": True,
            "timed_out": timed_out,
            "duration_ms": round((time.perf_counter() - started) * 1e3, 3),
            "error": error,
        }
        ctx.emit_artifact(artifact)  # in a dry run: answered, not written
        if error is not None and not ctx.dry_run:
            ctx.warn(f"debrief incomplete: {error}")
