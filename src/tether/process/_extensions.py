"""The extension points a process offers each run: ``prompt.render``, ``model.for_run`` and
``tools.for_run``. The process asks only when a handler is registered (HookManager.implemented)."""

from __future__ import annotations

import copy
import logging
from typing import TYPE_CHECKING

from ..agent import Tool, as_tool
from ..hooks import HookManager
from ._event import TriggerEvent, render_prompt

if TYPE_CHECKING:
    from ..models import Model

__all__ = ["extensions_for_run", "render_for_run"]

logger = logging.getLogger("tether.process")


def _detached(event: TriggerEvent) -> TriggerEvent:
    """A copy of the event for a point's handlers: arguments carry data, not live objects, so
    a handler changing the payload it was shown never changes the event the process runs,
    retries, journals or dead-letters."""
    clone = copy.copy(event)
    clone.payload = copy.deepcopy(event.payload)
    return clone


def _shown(hooks: HookManager, answer: object) -> str:
    """A handler's answer for a log line: it may hold a secret (the process's redactor, which
    it sets on its manager, takes it out)."""
    text = repr(answer)
    return hooks.redact(text) if hooks.redact is not None else text


async def extensions_for_run(
    hooks: HookManager, event: TriggerEvent, process: str
) -> tuple[Model | None, list[Tool]]:
    """What the ``model.for_run`` and ``tools.for_run`` extension points answer for one run.

    A point with no handler costs no call (the usual case); a bad answer is logged and ignored
    (a model.for_run handler answering something else than a model: the next one is asked).
    """
    model = None
    if hooks.implemented("model.for_run"):
        model = await hooks.call_first(
            "model.for_run", _a_model, event=_detached(event), process=process
        )
    tools: list[Tool] = []
    if not hooks.implemented("tools.for_run"):
        return model, tools
    for group in await hooks.call("tools.for_run", event=_detached(event), process=process):
        for t in group if isinstance(group, list | tuple) else [group] if group else []:
            try:
                tools.append(as_tool(t))
            except TypeError:
                shown = _shown(hooks, t)
                logger.warning("tools.for_run answered %s, which is not a tool; ignored", shown)
    return model, tools


async def render_for_run(hooks: HookManager, event: TriggerEvent, process: str) -> str:
    """The prompt ``prompt.render`` answers, or the usual rendering when none answers text."""
    custom = await hooks.call_first("prompt.render", _text, event=_detached(event), process=process)
    return custom if isinstance(custom, str) else render_prompt(event)


# What a first-result point of the process takes; anything else is the answering handler's
# error (logged through the redactor, told to the error listeners) and the next one is asked.


def _a_model(answer: object) -> str | None:
    return None if hasattr(answer, "complete") else f"{_cut(answer)}, which is not a model"


def _text(answer: object) -> str | None:
    return None if isinstance(answer, str) else f"{_cut(answer)}, which is not text (a str)"


def _cut(answer: object) -> str:
    text = repr(answer)
    return text if len(text) <= 200 else f"{text[:200]}..."
