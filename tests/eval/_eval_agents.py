"""Agent factories that test packs name as ``_eval_agents:<factory>`` (this folder is on
sys.path while tests run). Each answers a fresh ProcessConfig; the runner serves its model from
the test's FakeLLM when one is given."""

from __future__ import annotations

import os
from pathlib import Path

from tether import ProcessConfig
from tether.agent import ContextConfig


def plain() -> ProcessConfig:
    return ProcessConfig(model="scripted", instructions="You triage tickets.", max_retries=0)


def stateful() -> ProcessConfig:
    return ProcessConfig(
        model="scripted",
        instructions="You triage tickets and keep notes.",
        context=ContextConfig(state_tool=True, initial_state={"shift": "night"}),
        max_retries=0,
    )


def file_writer() -> ProcessConfig:
    """An agent with a tool that writes files under $EVAL_TEST_DIR (and never cleans up)."""

    async def write_note(name: str, text: str) -> str:
        """Write a note file."""
        path = Path(os.environ["EVAL_TEST_DIR"]) / name
        path.write_text(text, encoding="utf-8")
        return f"wrote {name}"

    return ProcessConfig(model="scripted", tools=[write_note], max_retries=0)


async def async_plain() -> ProcessConfig:
    return plain()


def not_a_config() -> str:
    return "nope"


def priority_scorer(trace: dict[str, object], options: dict[str, object]) -> tuple[bool, str]:
    """A Python scorer (``module:callable``): the last reply names the wanted priority."""
    turns = trace["turns"]
    assert isinstance(turns, list)
    reply = str(turns[-1]["reply"])
    want = str(options.get("priority", "P1"))
    return want in reply, f"wanted {want} in {reply!r}"


async def broken_scorer(trace: dict[str, object], options: dict[str, object]) -> bool:
    raise RuntimeError("scorer bug")
