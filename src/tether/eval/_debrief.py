"""The debrief hook of the eval harness: after a scored run, ask the agent what it saw.

It is tether's ``debrief`` plugin with the run-level point ``on_run_scored``: when a layer of
the score failed (``TETHER_DEBRIEF_ON=all``: every run), it sends the agent one turn in the
run's own conversation with the verdict and each failed layer's detail, and keeps the reply as
``<stem>.debrief.json``. It reports; it never gates: the score is already written when it runs.
``TETHER_DEBRIEF_TIMEOUT_S`` sets how long it waits for the reply, within the framework's
converse deadline (``TETHER_HOOK_CONVERSE_TIMEOUT_S``).
"""

from __future__ import annotations

import time
from typing import Any, Final

from ..plugins.debrief import DebriefPlugin
from ._context import RunContext

__all__ = ["DEBRIEF_SCHEMA_VERSION", "DebriefHook", "run_debrief_prompt"]

DEBRIEF_SCHEMA_VERSION: Final = 2


def run_debrief_prompt(scenario_id: str, verdict: str, reasons: dict[str, str]) -> str:
    """The verdict and the layers' reasons; then environment first, blockers, steering last
    (what the agent quotes from its environment is the reliable part of a self-report)."""
    lines = [f"Your run of scenario '{scenario_id}' was scored {verdict}."]
    if reasons:
        lines.append("What the scorers found:")
        lines += [f"- {layer}: {detail}" for layer, detail in reasons.items()]
    lines += [
        "Answer these in order, briefly:",
        "1. Environment: did any tool call return an error, an unexpected shape, or show that a "
        "capability was missing? Quote the exact text you received.",
        "2. Blockers: was anything you needed absent from your environment (a tool, a "
        "permission, data)?",
        "3. Only then: what would you do differently?",
    ]
    return "\n".join(lines)


class DebriefHook(DebriefPlugin):
    """Built-in ``debrief``: the process-level plugin plus the eval's ``on_run_scored``."""

    async def on_run_scored(self, ctx: RunContext) -> None:
        score = ctx.score or {}
        failed: list[str] = list(score.get("failed_layers") or [])
        if not failed and self.on != "all":
            return
        layers: dict[str, Any] = score.get("layers") or {}
        reasons = {name: str(layers[name].get("detail", "")) for name in layers}
        shown = {name: reasons[name] for name in failed} if failed else reasons
        verdict = str(score.get("verdict"))
        prompt = run_debrief_prompt(str((ctx.scenario or {}).get("id")), verdict, shown)
        started = time.perf_counter()
        reply: str | None = None
        error: str | None = None
        timed_out = False
        try:
            reply = await ctx.converse(prompt, timeout=self.converse_timeout)
        except TimeoutError:
            timed_out = True
            error = "converse timed out"
        except Exception as exc:
            error = f"{type(exc).__name__}: {exc}"
        agent = ctx.agent or {}
        ctx.emit_artifact(
            {
                "schema_version": DEBRIEF_SCHEMA_VERSION,
                "run_id": ctx.run_id,
                "scenario_id": (ctx.scenario or {}).get("id"),
                "agent": agent.get("name"),
                "model": agent.get("model"),
                "verdict": verdict,
                "failed_layers": failed,
                "reasons": reasons,
                "prompt": prompt,
                "reply": reply,
                "tools_disabled": True,
                "timed_out": timed_out,
                "duration_ms": round((time.perf_counter() - started) * 1e3),  # an integer
                "error": error,
            }
        )
        if error is not None:
            ctx.warn(f"debrief incomplete: {error}")
