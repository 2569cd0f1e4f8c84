"""The parts a process is built of from its configuration: its hook manager, its declared
tools, its model and the agent loop its runs go through.

Each is built when the process needs it (the manager and tools when it is created, the model
and agent loop when it starts) and raises at once, naming the entry, when the configuration
asks for what cannot be built.
"""

from __future__ import annotations

import os
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..agent import AgentLoop, Tool, as_tool
from ..hooks import DEFAULT_MODELS, HookManager

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..agent import AgentContext, TranscriptFile
    from ..models import Model
    from ._changes import ConfigChanges
    from ._config import ProcessConfig
    from ._lifecycle import ProcessHooks
    from ._state import LiveState

__all__ = [
    "agent_loop_of",
    "forget_session",
    "hook_metadata",
    "hooks_of",
    "model_of",
    "tools_of",
    "transcript_file",
]


def tools_of(declared: list[Any]) -> list[Tool]:
    """The Tools a configuration declares; an import path is imported now, and one that
    cannot be is a ValueError naming the entry and what is wrong."""
    from ..agent import import_tool

    tools: list[Tool] = []
    for index, entry in enumerate(declared):
        if isinstance(entry, str):
            try:
                tools.append(import_tool(entry))
            except ValueError as exc:
                raise ValueError(f"tools[{index}]: {exc}") from None
        else:
            tools.append(as_tool(entry))
    return tools


def hooks_of(
    config: ProcessConfig,
    shared: HookManager | None,
    parent: HookManager | None,
    live: LiveState,
) -> HookManager:
    """A process's hook manager: its own hooks, then its parent's, then the shared.

    Prompt hooks that name no model ask the process's (``live.model``, made when it starts),
    read weakly: the table is keyed by the manager, which the process holds.
    """
    hooks = HookManager(default_timeout=config.hook_timeout)
    state = weakref.ref(live)

    def model() -> Model | None:
        now = state()
        return None if now is None else now.model

    DEFAULT_MODELS[hooks] = model
    if parent is not None:
        hooks.inherit(parent)
        shared = shared if shared is not None else parent.shared
    if shared is not None:
        hooks.share(shared)
    # Linked first: the declared hooks' before/after may name inherited and shared hooks,
    # and one another in any order (a DeclarationError names hooks[i].before/.after).
    hooks.register_configs(config.hooks)
    return hooks


def model_of(config: ProcessConfig) -> Model:
    """The model ``config`` names; an OpenAI one with its timeout, retries and base URL."""
    from ..models import resolve_model

    model = config.model
    if isinstance(model, str) and model.startswith("openai:"):
        return resolve_model(
            model,
            timeout=config.model_timeout,
            max_retries=config.model_max_retries,
            base_url=config.base_url,
        )
    return resolve_model(model)


def agent_loop_of(
    live: LiveState,
    hooks: ProcessHooks,
    changes: ConfigChanges,
    context: AgentContext,
    open_mode_tools: Callable[[], list[Tool]],
) -> AgentLoop:
    """The agent loop of a started process (its state's configuration, model and observer;
    its hook points; the tools, budget and meter of its configuration now), with the built-in
    tools its configuration asks for: ``update_state`` (context.state_tool) and, in open
    mode, ``open_mode_tools()``."""
    config, model = live.config, live.model
    assert model is not None  # (made first by the start)
    made = AgentLoop(
        model=model,
        instructions=config.instructions,
        mission=config.mission,
        context=context,
        emit=hooks.dispatch_in_worker,
        tools=changes.tools,
        approval=config.approval,
        budget=changes.budget,
        redactor=hooks.redactor,
        process_id=hooks.name,
        max_turns=config.max_turns,
        max_continuations=config.max_continuations,
        tool_timeout=config.tool_timeout,
        observer=live.observer,
        meter=changes.meter,
        listens=hooks.listens,
    )
    if config.context.state_tool:

        async def update_state(key: str, value: Any) -> str:
            """Save a note that persists between runs: state[key] = value."""
            context.update_state(key, value)
            return f"state[{key!r}] saved"

        made.add_tool(update_state)
    if config.execution_mode == "open":
        for tool in open_mode_tools():
            made.add_tool(tool)
    return made


def hook_metadata(
    name: str, process_id: str, config: ProcessConfig, parent: dict[str, str] | None
) -> dict[str, str]:
    """What every hook's context says of a process: its name, id and model, a spawned
    child's parent (``parent`` is the parent's metadata), and, when its hooks speak Claude
    Code's protocol, the transcript of the session they read (``transcript_path``) and its
    ``permission_mode``: "default" when an approval handler decides what needs approval,
    else "dontAsk" (nobody is asked: what would need approval is denied, as in Claude Code's
    mode of that name; see docs/tool-hooks.md)."""
    model = config.model if isinstance(config.model, str) else getattr(config.model, "name", "")
    metadata = {"process_name": name, "process_id": process_id, "model": str(model)}
    if parent is not None:
        metadata["parent"] = parent["process_name"]
    inherited = parent is not None and "transcript_path" in parent
    if inherited or any(getattr(h, "protocol", None) == "claude-code" for h in config.hooks):
        from ..hooks import session_folder

        metadata["transcript_path"] = os.path.join(session_folder(process_id), "transcript.jsonl")
        asks = config.approval is not None and config.approval.handler is not None
        metadata["permission_mode"] = "default" if asks else "dontAsk"
    return metadata


def transcript_file(
    metadata: dict[str, str], process_id: str, redactor: Redactor
) -> TranscriptFile | None:
    """The Claude Code transcript a process's agent loop writes, if its hooks read one."""
    path = metadata.get("transcript_path")
    if path is None:
        return None
    from ..agent import TranscriptFile
    from ..hooks import session_folder

    session_folder(process_id)  # again at each start: a stop removed it

    return TranscriptFile(path, process_id, os.getcwd(), redactor.declared.value)


def forget_session(process_id: str) -> None:
    """Remove the files of the process's Claude Code session (its ``CLAUDE_ENV_FILE``, its
    transcript) at its stop: a later start is a new session."""
    from ..hooks import remove_session

    remove_session(process_id)
