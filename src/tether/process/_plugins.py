"""process.plugins: activating hook plugins on one process, and hosting their capabilities."""

from __future__ import annotations

import json
import logging
import sqlite3
import time
from collections.abc import Iterator, Mapping
from typing import TYPE_CHECKING, Any, Protocol

from ..hooks import (
    HookContext,
    Plugin,
    PluginContext,
    PluginError,
    build_plugin,
    register_plugin,
    resolve_plugin,
    run_time_hooks,
    unregister_plugin,
)
from ..store import ArtifactStore, check_artifact_path, open_artifacts
from ._observe import withhold

if TYPE_CHECKING:
    from .._redact import Redactor
    from ..agent import AgentLoop
    from ..hooks import HookManager
    from ..models import Model
    from ._config import ProcessConfig

__all__ = ["PluginManager", "PluginProcess"]


class PluginProcess(Protocol):
    """What the plugins of a process use of it (an AgentProcess)."""

    @property
    def name(self) -> str: ...

    @property
    def process_id(self) -> str: ...

    @property
    def config(self) -> ProcessConfig: ...

    @property
    def hooks(self) -> HookManager: ...

    @property
    def redactor(self) -> Redactor: ...

    @property
    def agent_loop(self) -> AgentLoop | None: ...

    @property
    def transcripts(self) -> Mapping[str, list[dict[str, Any]]]: ...

    @property
    def run_models(self) -> Mapping[str, Model | None]: ...


logger = logging.getLogger("tether.process")

WARNINGS_KEPT = 200
#: Warnings kept per task (more are logged and counted), and the longest one kept whole.
WARNINGS_PER_TASK = 100
WARNING_CHARS = 4000


def _task_id(ctx: HookContext, process: PluginProcess) -> str:
    event_id = ctx.data.get("event_id")
    return str(event_id) if event_id else f"session-{process.process_id}"


def _dry_run(ctx: HookContext) -> bool:
    return ctx.dry_run


def _hook_name(plugin: str, ctx: HookContext) -> str:
    """The name the plugin's handler of this event is registered under (as in the trace)."""
    handler = getattr(ctx, "handler", None) or f"on_{ctx.event.value}"
    return f"plugin:{plugin}.{handler}"


def _stamped(ctx: HookContext, payload: Any) -> Any:
    """An object artifact of a handler that conversed says so: ``tools_disabled`` (every
    converse turn had its tools disabled) and ``timed_out`` (any converse call timed out)."""
    calls = ctx.converse_calls if isinstance(ctx, PluginContext) else None
    if not calls or not isinstance(payload, dict):
        return payload
    return {
        **payload,
        "tools_disabled": all(call["tools_disabled"] for call in calls),
        "timed_out": any(call["timed_out"] for call in calls),
    }


class PluginManager:
    """The plugins active on one process, by name. Removing one drains all its handlers."""

    def __init__(self, process: PluginProcess) -> None:
        self._process = process
        self._plugins: dict[str, Plugin] = {}
        self.artifacts: ArtifactStore = open_artifacts(
            process.config.artifacts_dir, process.config.journal_path, process.name
        )
        self.warnings: dict[str, list[str]] = {}
        self._dropped: dict[str, int] = {}

    def __iter__(self) -> Iterator[Plugin]:
        return iter(list(self._plugins.values()))

    def __contains__(self, name: object) -> bool:
        return name in self._plugins

    def __len__(self) -> int:
        return len(self._plugins)

    @property
    def names(self) -> list[str]:
        return list(self._plugins)

    def get(self, name: str) -> Plugin | None:
        return self._plugins.get(name)

    def add(self, plugin: Plugin | type[Plugin] | str) -> Plugin:
        """Activate a plugin (an instance, a Plugin subclass, or a name to resolve)."""
        instance = resolve_plugin(plugin) if isinstance(plugin, str) else plugin
        if isinstance(instance, type) and issubclass(instance, Plugin):
            instance = build_plugin(instance)
        name = getattr(instance, "name", None)
        if isinstance(name, str) and name in self._plugins:
            raise PluginError(f"plugin {name!r} is already active on {self._process.name!r}")
        register_plugin(self._process.hooks, instance, self, source="plugin")
        self._plugins[instance.name] = instance
        return instance

    def remove(self, name: str) -> bool:
        """Deactivate a plugin: all of its handlers go at once."""
        plugin = self._plugins.pop(name, None)
        if plugin is None:
            return False
        unregister_plugin(self._process.hooks, plugin)
        return True

    def reload(self, name: str, fresh: Plugin | None = None) -> Plugin:
        """Swap the plugin for a fresh instance; the old one is drained before the new goes live.

        The fresh instance is ``fresh`` when given; otherwise the plugin's class is called
        with no arguments, so a plugin whose class needs arguments must be handed one.
        """
        old = self._plugins.get(name)
        if old is None:
            raise PluginError(f"plugin {name!r} is not active on {self._process.name!r}")
        if fresh is None:
            try:
                fresh = type(old)()
            except TypeError as exc:
                raise PluginError(
                    f"plugin {name!r}: {type(old).__name__}() cannot be built without "
                    f"arguments ({exc}); pass a fresh instance: plugins.reload({name!r}, "
                    f"{type(old).__name__}(...))"
                ) from None
        elif getattr(fresh, "name", None) != name:
            raise PluginError(
                f"plugin {name!r}: the fresh instance is named {getattr(fresh, 'name', None)!r}"
            )
        registered = list(run_time_hooks(old))  # what removing it drops with the rest
        self.remove(name)
        try:
            return self.add(fresh)
        except BaseException:
            # A fresh instance that cannot register leaves the old one active and whole: its
            # declared handlers and those it registered at run time, in their order.
            self.add(old)
            for key, fn, options in registered:
                old.register_hook(key, fn, **options)
            raise

    # -- the host side of PluginContext ----------------------------------------------------
    # In a dry run nothing is kept or written: each effect becomes a note of the dry run's answer.

    def plugin_warn(self, plugin: str, ctx: HookContext, message: str) -> None:
        task = _task_id(ctx, self._process)
        text = self._process.redactor.text(f"plugin:{plugin}: {message}")
        if _dry_run(ctx):
            withhold(
                {
                    "hook_name": _hook_name(plugin, ctx),
                    "action": "warn",
                    "task_id": task,
                    "message": text,
                }
            )
            return
        self._keep_warning(task, text)

    def task_warnings(self, task_id: str) -> list[str]:
        """The task's plugin warnings: those kept in memory, else those its store kept (a task
        of an earlier run of the process, or one whose warnings memory no longer holds)."""
        kept = self.warnings.get(task_id)
        return list(kept) if kept is not None else self.artifacts.warnings(task_id)

    def plugin_failed(self, plugin: str, task_id: str | None, message: str) -> None:
        task = task_id or f"session-{self._process.process_id}"
        self._keep_warning(task, self._process.redactor.text(f"plugin:{plugin}: {message}"))

    def _keep_warning(self, task: str, text: str) -> None:
        """Keep a warning with its task: at most WARNINGS_PER_TASK per task (then one line
        counting those not kept), each cut at WARNING_CHARS, for the last WARNINGS_KEPT tasks.
        A plugin warning in a loop must not hold the host's memory; every one is logged."""
        if len(text) > WARNING_CHARS:
            text = f"{text[:WARNING_CHARS]}... ({len(text)} characters in all)"
        bucket = self.warnings.setdefault(task, [])
        if len(bucket) < WARNINGS_PER_TASK:
            bucket.append(text)
            try:  # kept beside the task's artifacts too, where those outlive the process
                self.artifacts.warn(task, text)
            except (OSError, ValueError, sqlite3.Error) as exc:
                logger.warning(
                    "could not keep a plugin warning of task %s with its artifacts: %s", task, exc
                )
        else:
            dropped = self._dropped[task] = self._dropped.get(task, 0) + 1
            note = f"plugin warnings: {dropped} more for this task not kept (see the log)"
            if dropped == 1:
                bucket.append(note)
            else:
                bucket[-1] = note
        if len(self.warnings) > WARNINGS_KEPT:
            oldest = next(iter(self.warnings))
            del self.warnings[oldest]
            self._dropped.pop(oldest, None)
        logger.warning("%s (task %s of %s)", text, task, self._process.name)

    def plugin_artifact(
        self, plugin: str, ctx: HookContext, payload: Any, label: str | None
    ) -> str:
        task = _task_id(ctx, self._process)
        if label and self._process.redactor.text(label) != label:
            # A file name is not redacted: a secret there would be on disk and in listings.
            raise PluginError(
                f"plugin {plugin!r}: the artifact label holds a declared secret; "
                "choose a label that does not"
            )
        name = f"{task}.{plugin}{'.' + label if label else ''}.json"
        payload = _stamped(ctx, payload)
        if _dry_run(ctx):
            check_artifact_path(task, name)  # a name the store would refuse fails here too
            withhold(
                {
                    "hook_name": _hook_name(plugin, ctx),
                    "action": "emit_artifact",
                    "task_id": task,
                    "artifact": name,
                    # A copy: the plugin may change its payload after emitting it.
                    "payload": json.loads(json.dumps(self._process.redactor.value(payload))),
                }
            )
            return name
        return self.artifacts.put(task, name, self._process.redactor.value(payload))

    async def plugin_converse(
        self, plugin: str, ctx: HookContext, text: str, timeout: float
    ) -> str:
        if _dry_run(ctx):  # PluginContext refuses first; a host never asks the model either
            raise PluginError("converse() does not call the model in a dry run")
        process = self._process
        agent_loop = process.agent_loop
        if agent_loop is None:
            raise PluginError(f"process {process.name!r} is not running; nothing to converse with")
        event_id = str(ctx.data.get("event_id") or "")
        transcript = process.transcripts.get(event_id)
        if not transcript:
            raise PluginError(
                f"task {event_id or '(none)'} has no run to converse about: it never ran "
                "(refused, blocked or dead-lettered first) or its transcript is no longer kept"
            )
        # The model that ran the task (a model.for_run answer), else the process's model.
        model = process.run_models.get(event_id)
        started = time.perf_counter()
        record: dict[str, Any] = {"timed_out": False, "error": None, "tools_disabled": True}
        try:
            reply = await agent_loop.converse(transcript, text, timeout=timeout, model=model)
        except TimeoutError:
            record["timed_out"] = True
            raise
        except Exception as exc:
            record["error"] = process.redactor.text(f"{type(exc).__name__}: {exc}")
            raise
        finally:
            record["duration_ms"] = round((time.perf_counter() - started) * 1e3, 3)
            if isinstance(ctx, PluginContext):
                ctx.converse_calls.append(record)
        return reply

    def plugin_model_name(self, ctx: HookContext) -> str | None:
        model = self._process.run_models.get(str(ctx.data.get("event_id") or ""))
        if model is None:
            model = self._process.config.model
        return model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
