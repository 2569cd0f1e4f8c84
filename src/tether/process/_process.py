"""AgentProcess: a long-lived, supervised agent with a queue, workers, triggers and hooks.

Lifecycle: created -> starting -> running -> stopping -> stopped (or failed, then maybe a
restart). Every lifecycle event is dispatched in exactly one place in this package; the data a
hook sees is a plain dict with secret values already redacted.

Invariants:
* Nothing is dropped: an event that cannot run is dead-lettered with a reason.
* ``task_completed`` fires once per attempt of every event that reached a worker, and once
  (outcome ``dead_lettered``) for every queued event that ``stop()`` dead-letters, up to the
  stop's deadline (see ``_stopping``): the dead letter of one it cut off says so.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import time
import uuid
import weakref
from collections.abc import Awaitable, Callable, Mapping
from typing import TYPE_CHECKING, Any

from .._redact import Redactor
from ..agent import AgentContext, AgentLoop, Tool
from ..hooks import DispatchResult, HookEvent, HookManager
from ..hooks._secrets import CommandSecrets
from ._attempts import EventRunner, Live
from ._changes import AppliedChange, ConfigChanges, Saved
from ._config import (
    CronTrigger,
    EventTrigger,
    FileWatchTrigger,
    ProcessConfig,
    RestartPolicy,
    TriggerConfig,
    WebhookTrigger,
)
from ._config_secrets import config_secrets, resolve_secrets
from ._dead_letters import DeadLetterBox
from ._durable import durable_runs
from ._emitter import Emitter, Watcher
from ._errors import ProcessStateError
from ._event import TriggerEvent
from ._intake import Intake
from ._journaling import JournalWrites
from ._mcp import McpServerConfig, check_entries
from ._observe import HookInspector
from ._parts import agent_loop, hook_metadata, hooks_of, model_of, tools_of, transcript_file
from ._queue import MemoryQueue
from ._rewind import REWIND_WAIT, Rewinder
from ._state import ProcessState, validate_name
from ._stopping import Ends, Teardown, WorkerPool, stop_deadline
from ._supervise import Lifecycle, Supervisor, describe
from ._triggers import CronRunner, FileWatchRunner, TriggerRunner

if TYPE_CHECKING:
    from ..agent._observer import Observer
    from ..hooks import HookRun
    from ..models import Model
    from ..store import HistoryStore, Journal
    from ..store._steps import StepJournal
    from ._stream_queue import StreamQueue

__all__ = ["AgentProcess", "ProcessState"]

logger = logging.getLogger("tether.process")


class AgentProcess:
    """One supervised agent. ``hooks`` (optional) is a shared manager fired after own hooks.

    Built of collaborators, each handed only what it needs: its hook dispatches (Emitter),
    its configuration and the changes of it (ConfigChanges), the events coming in (Intake)
    and their attempts (EventRunner), its dead letters (DeadLetterBox), its journal writes
    (JournalWrites), its workers (WorkerPool), rewinds (Rewinder), crash supervision
    (Supervisor), its stop (Teardown) and the view of its hooks (HookInspector). The public
    methods are here.
    """

    def __init__(
        self,
        name: str,
        config: ProcessConfig | None = None,
        *,
        hooks: HookManager | None = None,
        parent: AgentProcess | None = None,
    ) -> None:
        self.name = validate_name(name)
        config = config if config is not None else ProcessConfig()
        check_entries(config.mcp_servers, f"process {self.name!r}")
        self.process_id = str(uuid.uuid4())
        self.parent = parent
        # Prompt hooks that name no model ask this process's. Weakly: the table is keyed by
        # the manager, which the process holds.
        me = weakref.ref(self)
        self.hooks: HookManager = hooks_of(
            config,
            hooks,
            parent.hooks if parent is not None else None,
            lambda: p._model if (p := me()) is not None else None,
        )
        # Declared secrets, and what the command hooks of the chain hand their programs (looked
        # up at each use: hooks registered later, in code or by a plugin, count too).
        self.redactor = Redactor(
            resolve_secrets(config) + config_secrets(config.triggers, config),
            learned=CommandSecrets(self.hooks),
        )
        self._pool = WorkerPool(self.name)
        # The pool's own (never rebound), read on every event's path.
        self._busy = self._pool.busy
        self._abandoned = self._pool.abandoned
        #: The loop the process runs in, from start() to the end of its stop.
        self._running_loop: asyncio.AbstractEventLoop | None = None
        self._hook_metadata: dict[str, str] = hook_metadata(
            self.name, self.process_id, config, None if parent is None else parent._hook_metadata
        )
        self._emitter = Emitter(
            self.name,
            self.hooks,
            self.redactor,
            self._hook_metadata,
            busy=self._busy,
            loop=lambda: self._running_loop,
        )
        self._emit = self._emitter.emit
        self._emit_worker = self._emitter.emit_worker
        self._runners: dict[str, TriggerRunner] = {}
        self._loop: AgentLoop | None = None
        self._changes = ConfigChanges(
            self.name,
            config,
            self.redactor,
            tools=tools_of(config.tools),
            emit=self._emit,
            loop=lambda: self._loop,
            running=lambda: self.state == ProcessState.RUNNING,
            runners=self._runners,
            start_trigger=self._start_trigger,
        )
        self.context = AgentContext(
            config.context.conversation_max_messages,
            config.context.initial_state,
            on_compact=self._on_compact,
        )
        self.state = ProcessState.CREATED
        self.restart_count = 0
        self.children: dict[str, AgentProcess] = {}
        from ._open_mode import ChildSpawner

        self._spawner = ChildSpawner(self, self._emit_worker)
        self.on_spawn: Callable[[AgentProcess], Awaitable[None]] | None = None
        self._queue: asyncio.Queue[tuple[TriggerEvent, int]] = MemoryQueue(config.max_queue_size)
        #: The Redis stream queue when this process runs in a cluster (see use_queue).
        self._stream: StreamQueue | None = None
        self._stopping = False
        self._model: Model | None = None
        self._supervision = Supervisor(
            self.name,
            policy=lambda: self.config.restart,
            redact=self.redactor.text,
            lifecycle=Lifecycle(
                stopping=lambda: self._stopping or self.state == ProcessState.STOPPING,
                enter=self._enter,
                session_end=self._session_end,
                pause=lambda: self._teardown.pause(),
                restart=self._restart_after_crash,
                fail=lambda: self._teardown.run(ProcessState.FAILED),
            ),
        )
        self._stopper: asyncio.Task[None] | None = None
        self._stop_waiters: set[asyncio.Task[Any] | None] = set()
        self._started_at: float | None = None
        self._recovered_once = False
        self._rewinder = Rewinder(
            self.name,
            self.context,
            lambda: self._queue,
            self._busy,
            serialised=self._changes.serialised,
            apply_change=self._changes.apply_change,
        )
        #: Told of each task, run, model call, tool call and hook run (see observe()).
        self.observer: Observer | None = None
        self._init_stores(config)
        self._init_events()

    def _init_stores(self, config: ProcessConfig) -> None:
        """The journal, the hook-run history (in SQLite with a journal), dead letters and
        plugins."""
        from ..hooks._history import HistoryRecorder
        from ._plugins import PluginManager

        self._journal: Journal | None = None
        self._history_store: HistoryStore | None = None
        if config.journal_path:
            from ..store import HistoryStore, Journal

            self._journal = Journal(
                config.journal_path, self.name, redact=self.redactor.declared.text
            )
            self._history_store = HistoryStore(config.journal_path)
        self._journal_writes = JournalWrites(
            self.name,
            self.redactor,
            running=lambda: self._running_loop is not None,
            path=config.journal_path,
        )
        self._durable = durable_runs(self.name, config, self._journal_writes, self.context)
        self._letters = DeadLetterBox(
            self.name,
            self.redactor,
            self._journal,
            self._journal_writes,
            complete=lambda event, outcome, ms, error: self._runner.complete(
                event, outcome, ms, error
            ),
            inject=self.inject,
            stream=lambda: self._stream,
            observer=lambda: self.observer,
        )
        store = self._history_store
        self.history = HistoryRecorder(
            self.name,
            redact=self.redactor.text,
            sink=store.write if store is not None else None,
            offload=self._journal_writes.history_offload,
        )
        self.hooks.recorder = self.history
        self.hooks.redact = self.redactor.text
        self.hooks.redact_declared = self.redactor.declared.text
        self._inspector = HookInspector(
            self.name,
            self.process_id,
            self.hooks,
            self.history,
            self.redactor,
            store,
            stopped=lambda: self.state == ProcessState.STOPPED,
        )
        self.plugins = PluginManager(self)
        for plugin in config.plugins:
            self.plugins.add(plugin)

    def _init_events(self) -> None:
        """How events enter (Intake), are run (EventRunner), and what a stop does with them
        and the rest of the process (Teardown)."""
        live = Live(
            config=lambda: self.config,
            state=lambda: self.state,
            stopping=lambda: self._stopping,
            queue=lambda: self._queue,
            stream=lambda: self._stream,
            observer=lambda: self.observer,
        )
        journal, writes = self._journal, self._journal_writes
        self._intake = Intake(
            self.name,
            self.redactor,
            live=live,
            supervisor=self._supervision,
            letters=self._letters,
            journal=journal,
            writes=writes,
            emit=self._emit,
        )
        self._runner = EventRunner(
            self.name,
            self.redactor,
            self.hooks,
            live=live,
            pool=self._pool,
            rewinder=self._rewinder,
            supervisor=self._supervision,
            letters=self._letters,
            journal=journal,
            writes=writes,
            loop=lambda: self._loop,
            budget=lambda: self._changes.budget,
            emit=self._emit,
            emit_worker=self._emit_worker,
            meter=self._changes.meter,
            enqueue=self._intake.enqueue,
            durable=self._durable,
        )
        #: The last runs' transcripts, and the model.for_run answer of each (see EventRunner).
        self.transcripts = self._runner.transcripts
        self.run_models = self._runner.run_models
        self._teardown = Teardown(
            self.redactor.text,
            runners=self._runners,
            pool=self._pool,
            events=self._runner,
            letters=self._letters,
            hooks=self.hooks,
            history=self.history,
            journal=journal,
            writes=writes,
            keep=self._stop_waiters,
            ends=Ends(
                halting=self._halting,
                stop_timeout=lambda: self.config.stop_timeout,
                children=lambda: self.children.values(),
                close_mcp=self._changes.close_mcp,
                model=lambda: self._model if self.parent is None else None,
                enter=self._ended,
                stores=lambda: (
                    self._journal,
                    self._history_store,
                    self.plugins.artifacts,
                    self._durable,
                ),
                stopped=None if self.parent is None else self._tell_parent,
            ),
        )

    def __repr__(self) -> str:
        return f"AgentProcess({self.name!r}, state={self.state.value!r})"

    def watch(self, watcher: Watcher) -> None:
        """Tell ``watcher`` of every dispatch of this process's events (see Watcher): a live
        view sees each event as its hooks left it, without a hook of its own."""
        self._emitter.watchers.append(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        with contextlib.suppress(ValueError):
            self._emitter.watchers.remove(watcher)

    def observe(self, observer: Observer) -> None:
        """Report this process's tasks, runs, model and tool calls and hook runs to
        ``observer`` (telemetry: see tether.telemetry). One observer at a time."""
        if self.observer is not None:
            raise ProcessStateError(f"process {self.name!r} already has an observer")
        self.observer = observer

        def hook_runs(runs: list[HookRun]) -> None:
            observer.hook_runs(self.name, self.hooks, runs)

        self.history.add_listener(hook_runs)
        if self._loop is not None:
            self._loop.observer = observer

    # -- state held by collaborators -------------------------------------------------------

    @property
    def config(self) -> ProcessConfig:
        """The configuration now (a change replaces it: see ConfigChanges)."""
        return self._changes.config

    @config.setter
    def config(self, config: ProcessConfig) -> None:
        self._changes.config = config

    @property
    def loop(self) -> AgentLoop | None:
        """The agent loop the runs use (``None`` before the first start)."""
        return self._loop

    @property
    def model(self) -> Model | None:
        """The model client the runs call (``None`` before the first start and once
        closed); a spawned child shares its parent's."""
        return self._model

    @property
    def invocation_count(self) -> int:
        """Runs started since the process was created."""
        return self._runner.invocation_count

    @property
    def filtered_count(self) -> int:
        """File changes a file_changed hook filtered out."""
        return self._intake.filtered_count

    @property
    def last_error(self) -> str | None:
        """The error of the last crash, if any."""
        return self._supervision.last_error

    @property
    def dead_letters(self) -> list[dict[str, Any]]:
        """The dead letters, oldest first (see DeadLetterBox)."""
        return self._letters.entries

    @property
    def journal_errors(self) -> int:
        """Journal writes that failed since the process was created (see _journaling)."""
        return self._journal_writes.errors

    @property
    def journal_error(self) -> str | None:
        """The error of the last journal write that failed (redacted)."""
        return self._journal_writes.error

    @property
    def journal_file(self) -> str | None:
        """ "deleted" or "replaced" once the journal file went while open (its writes are
        refused then: see _journaling), else None (no journal, or the file is there)."""
        return None if self._journal is None else self._journal.gone()

    @property
    def journal_pending(self) -> int:
        """Journal writes handed to the writer thread whose outcome is not recorded yet."""
        return self._journal_writes.pending

    @property
    def pending_approvals(self) -> list[dict[str, Any]]:
        """The approvals the runs wait on (journaled: a restart keeps them), oldest first:
        request_id, tool_name, arguments (redacted), event_id, reason, asked_at."""
        return self._durable.approvals.pending()

    def answer_approval(
        self,
        request_id: str,
        approved: bool,
        *,
        reason: str | None = None,
        reviewer: str | None = None,
    ) -> dict[str, Any] | None:
        """An operator's answer to a pending approval (see pending_approvals): the run waiting
        on it goes on (or, after a restart, takes it when it gets there). Returns what the
        request asked; None when no request of that id waits."""
        return self._durable.approvals.answer(request_id, approved, reason, reviewer)

    def _dead(self, event: TriggerEvent, reason: str, error: str | None, attempts: int) -> None:
        self._letters.add(event, reason, error, attempts)

    async def redeliver_dead_letters(self, event_ids: list[str] | None = None) -> int:
        """Inject dead-lettered events again (all, or those named); return how many (see
        DeadLetterBox.redeliver)."""
        return await self._letters.redeliver(event_ids)

    def clear_dead_letters(self) -> int:
        """Forget every dead letter; return how many."""
        return self._letters.clear()

    # -- hooks, as recorded and dry-run (see HookInspector) ---------------------------------

    def hook_runs(self, **filters: Any) -> list[HookRun]:
        """Recorded hook runs, oldest first (filters: event, outcome, hook, since, last)."""
        return self._inspector.hook_runs(**filters)

    async def dry_run(self, event: HookEvent | str, data: dict[str, Any]) -> dict[str, Any]:
        """Push a sample event through the resolved chain (see HookInspector.dry_run)."""
        return await self._inspector.dry_run(event, data)

    # -- configuration changes (see ConfigChanges) ------------------------------------------

    async def change_config(
        self,
        change: str,
        *,
        source: str = "operator",
        apply: Callable[[], Any],
        snapshot: Callable[[], Saved] | None = None,
        **details: Any,
    ) -> bool:
        """Fire config_change, then apply: always for operators, unless blocked for the agent."""
        return await self._changes.change_config(
            change, source=source, apply=apply, snapshot=snapshot, **details
        )

    @property
    def config_history(self) -> list[dict[str, Any]]:
        """The applied changes rollback() can undo, oldest first (secret values redacted)."""
        return self._changes.config_history

    @property
    def next_rollback(self) -> AppliedChange | None:
        """The applied change rollback() would undo now, if any."""
        return self._changes.next_rollback

    async def rollback(
        self, *, source: str = "operator", check: Callable[[AppliedChange], None] | None = None
    ) -> bool:
        """Undo the newest applied change, restoring what it replaced."""
        return await self._changes.rollback(source=source, check=check)

    async def update_instructions(self, instructions: str, *, source: str = "operator") -> bool:
        return await self._changes.update_instructions(instructions, source=source)

    async def set_mission(self, mission: str | None, *, source: str = "operator") -> bool:
        """Set the standing goal given to the model after the instructions (None clears it)."""
        return await self._changes.set_mission(mission, source=source)

    async def add_tool(self, fn: Callable[..., Awaitable[Any]] | Tool) -> bool:
        return await self._changes.add_tool(fn)

    async def remove_tool(self, name: str) -> bool:
        return await self._changes.remove_tool(name)

    async def add_trigger(self, trigger: TriggerConfig, *, source: str = "operator") -> bool:
        """Add a trigger (and start its runner when running); ValueError if its id is taken."""
        return await self._changes.add_trigger(trigger, source=source)

    async def remove_trigger(self, trigger_id: str, *, source: str = "operator") -> bool:
        """Remove a trigger (stopping its runner); KeyError when there is none."""
        return await self._changes.remove_trigger(trigger_id, source=source)

    async def set_budget(self, budget: Any) -> bool:
        return await self._changes.set_budget(budget)

    async def set_health(
        self, health: RestartPolicy | Mapping[str, Any], *, source: str = "operator"
    ) -> bool:
        """Change the supervision settings (``config.restart``): see ConfigChanges.set_health."""
        return await self._changes.set_health(health, source=source)

    async def add_mcp_server(
        self, server: McpServerConfig | Mapping[str, Any], *, source: str = "operator"
    ) -> bool:
        """Declare an MCP server; a running process connects to it before this returns."""
        return await self._changes.add_mcp_server(server, source=source)

    async def remove_mcp_server(self, name: str, *, source: str = "operator") -> bool:
        """Remove the declared MCP server ``name``; KeyError when there is none."""
        return await self._changes.remove_mcp_server(name, source=source)

    async def rewind(
        self, messages: int, *, source: str = "operator", timeout: float = REWIND_WAIT
    ) -> bool:
        """Drop the newest ``messages`` messages of the conversation (see Rewinder.rewind);
        ProcessStateError when awaited from a hook or run of this process."""
        self._emitter.guard("rewind")
        return await self._rewinder.rewind(messages, source=source, timeout=timeout)

    # -- hooks -----------------------------------------------------------------------------

    def _session_end(self, reason: str) -> Awaitable[DispatchResult]:
        """session_end (to await), fired at a stop and when a crash is supervised: its
        documented keys only (a crash's error is in status()["last_error"])."""
        return self._emit(
            HookEvent.SESSION_END,
            {
                "reason": reason,
                "invocation_count": self.invocation_count,
                "process_usage": self._changes.meter.to_dict(),
            },
        )

    def _on_compact(self, phase: str, data: dict[str, Any]) -> Awaitable[Any]:
        event = HookEvent.PRE_COMPACT if phase == "pre" else HookEvent.POST_COMPACT
        return self._emit_worker(event, data)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, *, _restart: bool = False) -> None:
        """Enter RUNNING: fire session_start, then start workers and triggers."""
        self._emitter.guard("start")
        supervisor = self._supervision.busy
        if supervisor is not None:  # an automatic restart (or failure) is under way
            await asyncio.wait([supervisor])
        if self.state in (ProcessState.STARTING, ProcessState.RUNNING):
            return
        if self.state == ProcessState.STOPPING:
            raise ProcessStateError(f"process {self.name!r} is stopping; start it once stopped")
        self.state = ProcessState.STARTING
        self._stopping = False
        self._running_loop = asyncio.get_running_loop()
        try:
            if self._model is None:
                self._model = model_of(self.config)
            self._loop = agent_loop(
                self.name,
                self.config,
                self._model,
                self.context,
                emit=self._emit_worker,
                tools=self._changes.tools,
                budget=self._changes.budget,
                redactor=self.redactor,
                observer=self.observer,
                open_mode_tools=self._open_mode_tools,
                meter=self._changes.meter,
                listens=self._emitter.listens,
            )
            self._loop.transcript_file = transcript_file(
                self._hook_metadata, self.process_id, self.redactor
            )
            self._loop.approval = self._durable.approvals.policy(self.config.approval)
            if self._journal is not None:
                from ._recovery import claim

                claim(self._journal, self.name)
            recovered = self._recover()
        except BaseException:
            self.state = ProcessState.FAILED
            self._start_failed()
            raise
        self.state = ProcessState.RUNNING
        self._started_at = time.monotonic()
        try:
            started = await self._emit(
                HookEvent.SESSION_START, {"restart": _restart, "recovered": recovered}
            )
        except BaseException:
            if self.state == ProcessState.RUNNING:  # no worker will run: say so, not "running"
                self.state = ProcessState.FAILED
                self._start_failed()
            raise
        if self.state != ProcessState.RUNNING:  # a session_start hook scheduled a stop
            return
        context = started.data.get("additional_context")
        if self._loop is not None:  # context for the model, for every run of this session
            self._loop.session_context = context if isinstance(context, str) and context else None
        # Runs see the MCP servers' tools from the first: each has connected, or failed once
        # (and is retried in the background), before a worker starts.
        await self._changes.sync_mcp()
        if self.state != ProcessState.RUNNING:  # stopped meanwhile
            return
        self._pool.tasks = [
            asyncio.get_running_loop().create_task(
                self._runner.work(), name=f"{self.name}-worker-{i}"
            )
            for i in range(self.config.concurrency)
        ]
        for trigger_id, trigger in self._changes.triggers:
            if trigger_id not in self._runners:  # one added by a session_start hook runs already
                self._start_trigger(trigger_id, trigger)

    def use_queue(self, queue: StreamQueue) -> None:
        """Keep this process's events in ``queue`` (a cluster's Redis stream) from now on.

        Only before the first start, with nothing queued: ProcessStateError otherwise."""
        if self.state != ProcessState.CREATED or self._queue.qsize() or self._journal:
            raise ProcessStateError(
                f"process {self.name!r}: a queue backend is chosen before its first start, "
                "with nothing queued and no journal (a cluster keeps its events in Redis)"
            )
        queue.redact = self.redactor.declared.value
        queue.dead_letter = self._dead
        self._queue = self._stream = queue

    def use_steps(self, store: StepJournal, writes: JournalWrites) -> None:
        """Journal this process's steps, conversation, state and approvals to ``store``
        through ``writes`` (a cluster's Redis: set at each takeover, before ``start``, which
        restores them and resumes the runs the stream's claim took over)."""
        self._durable.use(store, writes)

    def _start_failed(self) -> None:
        """A process whose start failed runs nothing, so it holds no journal lease: another
        object of its name (or this one, started again) may take the journal."""
        if self._journal is not None:
            self._journal.release()

    def _open_mode_tools(self) -> list[Tool]:
        from ._open_mode import open_mode_tools

        return open_mode_tools(self, self._spawner)

    def _recover(self) -> dict[str, Any] | None:
        """Requeue what the journal says was unfinished (first start of this object only)."""
        from ._recovery import recover

        if self._stream is not None:  # a cluster's stream: what its claim() took over
            return self._durable.recover(self._stream.take_recovered())
        if self._journal is None or self._recovered_once:
            return None
        self._recovered_once = True
        recovered = recover(
            self._journal,
            self._queue,
            max_retries=self.config.max_retries,
            dead_letters=self.dead_letters,
            dead_letter=self._dead,
            enqueue=self._enqueue,
        )
        return self._durable.recover(recovered)  # runs resume; conversation and state back

    async def stop(self, *, reason: str = "stop") -> None:
        """Fire session_end, stop triggers, let runs finish (up to stop_timeout), then stop.

        Events still queued are dead-lettered ("process stopped") and can be redelivered.
        """
        self._emitter.guard("stop")
        me = asyncio.current_task()  # a deferred call awaiting this stop is not cancelled by it
        self._stop_waiters.add(me)
        try:
            await self._stopped(reason)
        finally:
            self._stop_waiters.discard(me)

    async def _stopped(self, reason: str) -> None:
        stopper = self._stopper
        if stopper is None or stopper.done():
            if self.state in (ProcessState.STOPPED, ProcessState.CREATED):
                never_started = self.state == ProcessState.CREATED
                self.state = ProcessState.STOPPED
                if never_started:  # events injected before start() are dead-lettered too
                    loop = asyncio.get_running_loop()
                    deadline = stop_deadline(loop.time(), self.config.stop_timeout)
                    leftovers = self._runner.waiting(ProcessState.STOPPED)
                    await self._letters.dead_letter_all(leftovers, "process stopped", deadline)
                return
            if self.state == ProcessState.STOPPING:
                while self.state == ProcessState.STOPPING:
                    await asyncio.sleep(0.01)
                return
            # The stop runs as a task of its own: a caller that gives up waiting (a timeout,
            # a cancelled request) does not leave the process half stopped.
            stopper = self._stopper = asyncio.get_running_loop().create_task(
                self._stop(reason), name=f"{self.name}-stop"
            )
        await asyncio.shield(stopper)

    async def _stop(self, reason: str) -> None:
        failing = self._supervision.failing  # one teardown at a time: the crash's ends first
        if failing is not None and failing is not asyncio.current_task():
            await asyncio.wait([failing])
        self._supervision.cancel()
        was_failed = self.state == ProcessState.FAILED
        self.state = ProcessState.STOPPING
        restarting = reason == "restart"
        try:
            if not was_failed:
                await self._session_end(reason)
        finally:  # a session_end hook raising what the engine does not isolate still stops it
            await self._teardown.run(ProcessState.STOPPED, restarting=restarting)
            if not restarting:  # its session's files, once its hooks (async ones too) are done
                from ._parts import forget_session

                forget_session(self.process_id)

    async def restart(self) -> None:
        """session_end (reason "restart"), teardown, then session_start with restart=True."""
        self._emitter.guard("restart")
        if self.state in (ProcessState.RUNNING, ProcessState.FAILED):
            await self.stop(reason="restart")
        self.restart_count += 1
        await self.start(_restart=True)

    async def __aenter__(self) -> AgentProcess:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()
        await self.aclose()

    async def aclose(self) -> None:
        """Release the model's connections (after stop)."""
        if self._model is not None:
            await self._model.aclose()
            self._model = None

    # -- events in -------------------------------------------------------------------------

    async def inject(self, event: TriggerEvent) -> str:
        """Queue an event (after task_created); return its id. Never drops: see dead_letters."""
        return await self._intake.inject(event)

    async def outcome(self, event_id: str, *, timeout: float = 0.0) -> str | None:
        """The task_completed outcome an event was decided with (``success``, ``failed``,
        ``blocked``, ``dead_lettered``; never ``retrying``), waiting up to ``timeout`` seconds
        for it; None when it is not decided by then. The last 1000 decided are kept."""
        return await self._runner.outcome(event_id, timeout)

    def _enqueue(self, event: TriggerEvent, attempts: int) -> bool:
        """Queue ``event`` (journaled); False when the queue is full: it is dead-lettered."""
        return self._intake.enqueue(event, attempts)

    async def fire(self, trigger_id: str, trigger_type: str, payload: dict[str, Any]) -> str:
        """Build a TriggerEvent from a trigger and inject it."""
        return await self.inject(TriggerEvent(trigger_id, trigger_type, payload))

    # -- triggers --------------------------------------------------------------------------

    def _start_trigger(self, trigger_id: str, trigger: TriggerConfig) -> None:
        """Start the runner of a cron or file-watch trigger; one runner per id, never two."""
        if trigger_id in self._runners:
            raise ProcessStateError(f"trigger {trigger_id!r} of {self.name!r} already runs")
        runner: TriggerRunner
        if isinstance(trigger, CronTrigger):
            runner = CronRunner(trigger_id, trigger, redact=self.redactor.text)
        elif isinstance(trigger, FileWatchTrigger):
            runner = FileWatchRunner(
                trigger_id, trigger, self._intake.file_changed, redact=self.redactor.text
            )
        else:  # webhook and event triggers are fed from outside (HTTP layer, runtime)
            return
        self._runners[trigger_id] = runner
        runner.start(self.fire)

    @property
    def webhook_triggers(self) -> list[tuple[str, WebhookTrigger]]:
        return [(i, t) for i, t in self._changes.triggers if isinstance(t, WebhookTrigger)]

    @property
    def event_triggers(self) -> list[tuple[str, EventTrigger]]:
        return [(i, t) for i, t in self._changes.triggers if isinstance(t, EventTrigger)]

    @property
    def triggers(self) -> list[tuple[str, TriggerConfig]]:
        return list(self._changes.triggers)

    def on_triggers_change(self, listener: Callable[[], None] | None) -> None:
        """Call ``listener()`` after each change of this process's triggers (an add, a
        remove, a rollback), once it applied; None: no one is told. One listener at a time:
        the runtime holding the process indexes its webhook triggers with it."""
        self._changes.triggers_changed = listener

    # -- subagents -------------------------------------------------------------------------

    async def _child_stopped(self, child: AgentProcess) -> None:
        if self.children.pop(child.name, None) is not child:
            return  # told already (a failed child stopped again): subagent_stop fires once
        await self._emit(
            HookEvent.SUBAGENT_STOP, {"process_name": child.name, "state": child.state.value}
        )

    # -- supervision and teardown ----------------------------------------------------------

    def _enter(self, state: ProcessState) -> None:
        self.state = state

    def _halting(self) -> None:
        self._stopping = True

    def _ended(self, state: ProcessState) -> None:
        self.state = state
        self._running_loop = None

    async def _tell_parent(self) -> None:
        assert self.parent is not None
        await self.parent._child_stopped(self)

    async def _restart_after_crash(self) -> None:
        self.restart_count += 1
        self.state = ProcessState.STOPPED
        await self.start(_restart=True)

    # -- status ----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """A JSON-ready summary of the process."""
        return {
            "name": self.name,
            "process_id": self.process_id,
            "state": self.state.value,
            "invocation_count": self.invocation_count,
            "hook_count": len(self.hooks),
            "queue_size": self._queue.qsize() + self._rewinder.waiting,
            "in_flight": len(self._pool.inflight),
            "retrying": len(self._runner.retries),
            "dead_letter_count": len(self._letters.entries),
            "restart_count": self.restart_count,
            "filtered_count": self.filtered_count,
            "children": sorted(self.children),
            "execution_mode": self.config.execution_mode,
            "uptime_s": (
                round(time.monotonic() - self._started_at, 3)
                if self._started_at is not None and self.state == ProcessState.RUNNING
                else None
            ),
            "last_error": self.last_error,
            # Tool calls waiting for an approval (answer_approval, the API, the CLI).
            "awaiting_approval": self.pending_approvals,
            # Journal writes that failed (the process went on: see _journaling), the last error.
            "journal_errors": self.journal_errors,
            "journal_error": self.journal_error,
            # The journal file deleted or replaced while open (None: there, or no journal).
            "journal_file": self.journal_file,
            # Triggers whose runner ended with an error: they fire no more until a restart.
            "trigger_errors": {
                i: self.redactor.text(describe(r.error))
                for i, r in self._runners.items()
                if r.error is not None
            },
            # Each declared MCP server's connection (state, tools, last error).
            "mcp_servers": self._changes.mcp_status(),
            # Model tokens and cost so far (by the pricing), and today's cost.
            "usage": self._changes.meter.to_dict(),
        }


AgentProcess.__module__ = "tether"
