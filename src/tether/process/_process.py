"""AgentProcess: a long-lived, supervised agent with a queue, workers, triggers and hooks.

Lifecycle: created -> starting -> running -> stopping -> stopped (or failed, then maybe a
restart). Every lifecycle event is dispatched from exactly one method of ProcessHooks
(``_lifecycle``); the data a hook sees is a plain dict with secret values already redacted.

Invariants:
* Nothing is dropped: an event that cannot run is dead-lettered with a reason.
* ``task_completed`` is dispatched once per attempt of every event that reached a worker, and
  once (outcome ``dead_lettered``) for every queued event that ``stop()`` dead-letters, up to
  the stop's deadline (see ``_teardown``): the dead letter of one it cut off says so.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
import warnings
from collections.abc import Awaitable, Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any

from .._redact import Redactor
from ..agent import AgentContext, AgentLoop, Tool, UsageMeter
from ..hooks import CommandSecrets, HookEvent, HookManager
from ._builders import agent_loop_of, hook_metadata, hooks_of, model_of, tools_of, transcript_file
from ._changes import AppliedChange, ConfigChanges, Saved
from ._config import EventTrigger, ProcessConfig, RestartPolicy, TriggerConfig, WebhookTrigger
from ._config_secrets import config_secrets, resolve_secrets
from ._dead_letters import DeadLetterBox
from ._durable import durable_runs
from ._errors import ProcessStateError
from ._event import TriggerEvent
from ._event_runner import EventRunner
from ._intake import Intake
from ._journaling import JournalWrites
from ._lifecycle import ProcessHooks, Watcher
from ._mcp import McpServerConfig, check_entries
from ._names import validate_name
from ._observe import HookInspector
from ._outcomes import Outcomes
from ._queue import MemoryQueue
from ._rewind import REWIND_WAIT, Rewinder
from ._state import LiveState, ProcessState
from ._supervise import Supervisor
from ._teardown import Child, Teardown, stop_deadline
from ._triggers import TriggerRunners
from ._workers import WorkerPool

if TYPE_CHECKING:
    from ..agent import Observer
    from ..hooks import DispatchResult, HookRun
    from ..models import Model
    from ..store import HistoryStore, Journal, StepJournal
    from ._open_mode import ChildSpawner
    from ._stream_queue import StreamQueue

__all__ = ["AgentProcess", "ProcessState"]

logger = logging.getLogger("tether.process")


class AgentProcess:
    """One supervised agent. ``hooks`` (optional) is a shared manager dispatched to after own
    hooks.

    Its state (LiveState: the configuration, queue, loops, model and observer now) is one
    object handed to its collaborators, each of which is handed the others it drives (no
    callables): its hook points (ProcessHooks), the changes of its configuration
    (ConfigChanges), the events coming in (Intake), their attempts (EventRunner) and outcomes
    (Outcomes), its dead letters (DeadLetterBox), its journal writes (JournalWrites), its
    workers (WorkerPool), trigger runners (TriggerRunners), rewinds (Rewinder), crash
    supervision (Supervisor), its stop (Teardown) and the view of its hooks (HookInspector).
    The public methods are here.
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
        self._live = live = LiveState(config, MemoryQueue(config.max_queue_size))
        self.hooks: HookManager = hooks_of(
            config, hooks, parent.hooks if parent is not None else None, live
        )
        # Declared secrets, and what the command hooks of the chain hand their programs (looked
        # up at each use: hooks registered later, in code or by a plugin, count too).
        self.redactor = Redactor(
            resolve_secrets(config) + config_secrets(config.triggers, config),
            learned=CommandSecrets(self.hooks),
        )
        self._pool = WorkerPool(self.name)
        self._abandoned = self._pool.abandoned
        self._hook_metadata: dict[str, str] = hook_metadata(
            self.name, self.process_id, config, None if parent is None else parent._hook_metadata
        )
        self._hooks = ProcessHooks(
            self.name,
            self.hooks,
            self.redactor,
            self._hook_metadata,
            busy=self._pool.busy,
            live=live,
        )
        self.context = AgentContext(
            config.context.conversation_max_messages,
            config.context.initial_state,
            on_compact=self._hooks.compaction,
        )
        self.restart_count = 0
        self.children: dict[str, AgentProcess] = {}
        #: Spawns the children of an open-mode process (made with its agent loop).
        self._spawner: ChildSpawner | None = None
        self.on_spawn: Callable[[AgentProcess], Awaitable[None]] | None = None
        self._owner = _Owner(self)
        self._supervision = Supervisor(self.name, live, self.redactor, self._owner)
        self._stopper: asyncio.Task[None] | None = None
        self._stop_waiters: set[asyncio.Task[Any] | None] = set()
        self._started_at: float | None = None
        self._recovered_once = False
        self._init_collaborators(config)
        from ._plugins import PluginManager

        self.plugins = PluginManager(self)
        for plugin in config.plugins:
            self.plugins.add(plugin)

    def _init_collaborators(self, config: ProcessConfig) -> None:
        """The journal and hook-run history (in SQLite with a journal), how events enter
        (Intake), are run (EventRunner) and end (Outcomes, DeadLetterBox), the configuration's
        changes and rewinds, and what a stop does with them (Teardown)."""
        from ..hooks import HistoryRecorder

        live, hooks, redactor = self._live, self._hooks, self.redactor
        self._journal: Journal | None = None
        self._history_store: HistoryStore | None = None
        if config.journal_path:
            from ..store import HistoryStore, Journal

            self._journal = Journal(config.journal_path, self.name, redact=redactor.declared.text)
            self._history_store = HistoryStore(config.journal_path)
        journal = self._journal
        writes = self._journal_writes = JournalWrites(
            self.name, redactor, running=live.in_loop, path=config.journal_path
        )
        self._durable = durable_runs(self.name, config, writes, self.context)
        meter = UsageMeter(config.pricing)
        self._outcomes = Outcomes(hooks, live, meter)
        self._letters = DeadLetterBox(
            self.name, redactor, live, outcomes=self._outcomes, journal=journal, writes=writes
        )
        store = self._history_store
        redact = redactor.text  # (one bound method for the manager and the history)
        self.history = HistoryRecorder(
            self.name,
            redact=redact,
            sink=store.write if store is not None else None,
            offload=writes.history_offload,
        )
        self.hooks.recorder = self.history
        self.hooks.redact = redact
        self.hooks.redact_declared = redactor.declared.text
        self._intake = Intake(
            live,
            hooks,
            supervisor=self._supervision,
            letters=self._letters,
            journal=journal,
            writes=writes,
            pool=self._pool,
        )
        self._triggers = TriggerRunners(self.name, self._intake, redactor)
        self._runners = self._triggers.runners
        self._changes = ConfigChanges(
            live, hooks, tools=tools_of(config.tools), triggers=self._triggers, meter=meter
        )
        self._rewinder = Rewinder(live, self.context, self._pool.busy, self._changes)
        self._runner = EventRunner(
            live,
            hooks,
            pool=self._pool,
            rewinder=self._rewinder,
            supervisor=self._supervision,
            outcomes=self._outcomes,
            letters=self._letters,
            intake=self._intake,
            changes=self._changes,
            journal=journal,
            writes=writes,
            durable=self._durable,
        )
        #: The last runs' transcripts, and the model.for_run answer of each (see EventRunner).
        self.transcripts = self._runner.transcripts
        self.run_models = self._runner.run_models
        self._teardown = Teardown(
            live,
            redactor,
            triggers=self._triggers,
            pool=self._pool,
            events=self._runner,
            letters=self._letters,
            changes=self._changes,
            hooks=self.hooks,
            history=self.history,
            journal=journal,
            writes=writes,
            keep=self._stop_waiters,
            owner=self._owner,
        )

    def __repr__(self) -> str:
        return f"AgentProcess({self.name!r}, state={self.state.value!r})"

    def watch(self, watcher: Watcher) -> None:
        """Tell ``watcher`` of every dispatch of this process's events (see Watcher): a live
        view sees each event as its hooks left it, without a hook of its own."""
        self._hooks.watch(watcher)

    def unwatch(self, watcher: Watcher) -> None:
        self._hooks.unwatch(watcher)

    def observe(self, observer: Observer) -> None:
        """Report this process's tasks, runs, model and tool calls and hook runs to
        ``observer`` (telemetry: see tether.telemetry). One observer at a time."""
        if self.observer is not None:
            raise ProcessStateError(f"process {self.name!r} already has an observer")
        self.observer = observer

        def hook_runs(runs: list[HookRun]) -> None:
            observer.hook_runs(self.name, self.hooks, runs)

        self.history.add_listener(hook_runs)
        if self._live.agent_loop is not None:
            self._live.agent_loop.observer = observer

    # -- its state (LiveState) -------------------------------------------------------------

    @property
    def state(self) -> ProcessState:
        """Where the process is in its lifecycle (see the module docstring)."""
        return self._live.state

    @state.setter
    def state(self, state: ProcessState) -> None:
        self._live.state = state

    @property
    def config(self) -> ProcessConfig:
        """The configuration now (a change replaces it: see ConfigChanges)."""
        return self._live.config

    @config.setter
    def config(self, config: ProcessConfig) -> None:
        self._live.config = config

    @property
    def observer(self) -> Observer | None:
        """Told of each task, run, model call, tool call and hook run (see observe())."""
        return self._live.observer

    @observer.setter
    def observer(self, observer: Observer | None) -> None:
        self._live.observer = observer

    @property
    def agent_loop(self) -> AgentLoop | None:
        """The agent loop the runs use (``None`` before the first start)."""
        return self._live.agent_loop

    @property
    def loop(self) -> AgentLoop | None:
        """Deprecated name of agent_loop (``loop`` is the asyncio loop)."""
        warnings.warn(
            "AgentProcess.loop is deprecated; use agent_loop", DeprecationWarning, stacklevel=2
        )
        return self._live.agent_loop

    @property
    def model(self) -> Model | None:
        """The model client the runs call (``None`` before the first start and once
        closed); a spawned child shares its parent's."""
        return self._live.model

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
        """Journal writes that failed since creation, a cluster's step journal's included."""
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
        return await self._letters.redeliver(self._intake, event_ids)

    def clear_dead_letters(self) -> int:
        """Forget every dead letter; return how many."""
        return self._letters.clear()

    # -- hooks, as recorded and dry-run (see HookInspector) ---------------------------------

    def hook_runs(self, **filters: Any) -> list[HookRun]:
        """Recorded hook runs, oldest first (filters: event, outcome, hook, since, last)."""
        return self._inspector().hook_runs(**filters)

    async def dry_run(self, event: HookEvent | str, data: dict[str, Any]) -> dict[str, Any]:
        """Push a sample event through the resolved chain (see HookInspector.dry_run)."""
        return await self._inspector().dry_run(event, data)

    def _inspector(self) -> HookInspector:
        """The view of its hooks (made at the first look: most processes are never looked
        at so)."""
        return HookInspector(
            self.name,
            self.process_id,
            self.hooks,
            self.history,
            self.redactor,
            self._history_store,
            self._live,
        )

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
        """Dispatch config_change, then apply: always for operators, unless blocked for the
        agent."""
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
        self._hooks.guard("rewind")
        return await self._rewinder.rewind(messages, source=source, timeout=timeout)

    # -- lifecycle -------------------------------------------------------------------------

    async def start(self, *, _restart: bool = False) -> None:
        """Enter RUNNING: dispatch session_start, then start workers and triggers."""
        self._hooks.guard("start")
        supervisor = self._supervision.busy
        if supervisor is not None:  # an automatic restart (or failure) is under way
            await asyncio.wait([supervisor])
        if self.state in (ProcessState.STARTING, ProcessState.RUNNING):
            return
        if self.state == ProcessState.STOPPING:
            raise ProcessStateError(f"process {self.name!r} is stopping; start it once stopped")
        self.state = ProcessState.STARTING
        self._live.stopping = False
        self._live.running_loop = asyncio.get_running_loop()
        try:
            if self._live.model is None:
                self._live.model = model_of(self.config)
            agent_loop = self._live.agent_loop = agent_loop_of(
                self._live, self._hooks, self._changes, self.context, self._open_mode_tools
            )
            agent_loop.transcript_file = transcript_file(
                self._hook_metadata, self.process_id, self.redactor
            )
            agent_loop.approval = self._durable.approvals.policy(self.config.approval)
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
            started = await self._hooks.session_start(_restart, recovered)
        except BaseException:
            if self.state == ProcessState.RUNNING:  # no worker will run: say so, not "running"
                self.state = ProcessState.FAILED
                self._start_failed()
            raise
        if self.state != ProcessState.RUNNING:  # a session_start hook scheduled a stop
            return
        context = started.data.get("additional_context")
        if (
            self._live.agent_loop is not None
        ):  # context for the model, for every run of this session
            self._live.agent_loop.session_context = (
                context if isinstance(context, str) and context else None
            )
        # Runs see the MCP servers' tools from the first: each has connected, or failed once
        # (and is retried in the background), before a worker starts.
        await self._changes.sync_mcp()
        if self.state != ProcessState.RUNNING:  # stopped meanwhile
            return
        # Workers are made at the first event queued (an idle process holds none), or now: events
        # wait already (injected before, recovered, kept through a crash) or come from a stream.
        live = self._live
        waiting = live.stream is not None or not live.queue.empty() or self._rewinder.waiting
        self._pool.open(self._runner, self.config.concurrency, now=bool(waiting))
        for trigger_id, trigger in self._changes.triggers:
            if trigger_id not in self._runners:  # one added by a session_start hook runs already
                self._triggers.start(trigger_id, trigger)

    def use_queue(self, queue: StreamQueue) -> None:
        """Keep this process's events in ``queue`` (a cluster's Redis stream) from now on.

        Only before the first start, with nothing queued: ProcessStateError otherwise."""
        if self.state != ProcessState.CREATED or self._live.queue.qsize() or self._journal:
            raise ProcessStateError(
                f"process {self.name!r}: a queue backend is chosen before its first start, "
                "with nothing queued and no journal (a cluster keeps its events in Redis)"
            )
        queue.redact = self.redactor.declared.value
        queue.dead_letter = self._dead
        self._live.queue = self._live.stream = queue

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
        from ._open_mode import ChildSpawner, open_mode_tools

        if self._spawner is None:
            self._spawner = ChildSpawner(self, self._hooks, self._live)
        return open_mode_tools(self, self._spawner)

    def _recover(self) -> dict[str, Any] | None:
        """Requeue what the journal says was unfinished (first start of this object only)."""
        from ._recovery import recover

        if self._live.stream is not None:  # a cluster's stream: what its claim() took over
            return self._durable.recover(self._live.stream.take_recovered())
        if self._journal is None or self._recovered_once:
            return None
        self._recovered_once = True
        recovered = recover(
            self._journal,
            self._live.queue,
            max_retries=self.config.max_retries,
            dead_letters=self.dead_letters,
            dead_letter=self._dead,
            enqueue=self._intake.enqueue,
        )
        return self._durable.recover(recovered)  # runs resume; conversation and state back

    async def stop(self, *, reason: str = "stop") -> None:
        """Dispatch session_end, stop triggers, let runs finish (up to stop_timeout), then stop.

        Events still queued are dead-lettered ("process stopped") and can be redelivered.
        """
        self._hooks.guard("stop")
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
                await self._owner.session_ended(reason)
        finally:  # a session_end hook raising what the engine does not isolate still stops it
            await self._teardown.run(ProcessState.STOPPED, restarting=restarting)
            if not restarting:  # its session's files, once its hooks (async ones too) are done
                from ._builders import forget_session

                forget_session(self.process_id)

    async def restart(self) -> None:
        """session_end (reason "restart"), teardown, then session_start with restart=True."""
        self._hooks.guard("restart")
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
        if self._live.model is not None:
            await self._live.model.aclose()
            self._live.model = None

    # -- events in -------------------------------------------------------------------------

    async def inject(self, event: TriggerEvent) -> str:
        """Queue an event (after task_created); return its id. Never drops: see dead_letters."""
        return await self._intake.inject(event)

    async def outcome(self, event_id: str, *, timeout: float = 0.0) -> str | None:
        """The outcome an event was decided with (task_completed's: ``success``, ``failed``,
        ``blocked``, ``dead_lettered``; ``dead_lettered`` too, with none, when it was refused
        unqueued), waiting ``timeout`` seconds at most; else None. The last 1000 are kept."""
        return await self._outcomes.wait(event_id, timeout)

    async def inject_trigger(
        self, trigger_id: str, trigger_type: str, payload: dict[str, Any]
    ) -> str:
        """Build a TriggerEvent of what a trigger saw and inject it; return its id."""
        return await self._intake.inject_trigger(trigger_id, trigger_type, payload)

    async def fire(self, trigger_id: str, trigger_type: str, payload: dict[str, Any]) -> str:
        """Deprecated alias of inject_trigger()."""
        warnings.warn(
            "AgentProcess.fire() is deprecated; use inject_trigger()",
            DeprecationWarning,
            stacklevel=2,
        )
        return await self.inject_trigger(trigger_id, trigger_type, payload)

    # -- triggers --------------------------------------------------------------------------

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

    async def adopt_child(self, name: str, config: ProcessConfig) -> AgentProcess:
        """Make, keep and start the child an open-mode spawn allowed (it shares this process's
        model client, which this process closes, and its observer)."""
        child = AgentProcess(name, config, parent=self)
        child._live.model = self.model
        if self.observer is not None:
            child.observe(self.observer)
        self.children[name] = child
        if self.on_spawn is not None:
            await self.on_spawn(child)
        if child.state != ProcessState.RUNNING:
            await child.start()
        return child

    # -- status ----------------------------------------------------------------------------

    def status(self) -> dict[str, Any]:
        """A JSON-ready summary of the process."""
        return {
            "name": self.name,
            "process_id": self.process_id,
            "state": self.state.value,
            "invocation_count": self.invocation_count,
            "hook_count": len(self.hooks),
            "queue_size": self._live.queue.qsize() + self._rewinder.waiting,
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
            "awaiting_approval": self.pending_approvals,
            "journal_errors": self.journal_errors,
            "journal_error": self.journal_error,
            "journal_file": self.journal_file,
            "trigger_errors": self._triggers.errors(),
            "mcp_servers": self._changes.mcp_status(),
            "usage": self._changes.meter.to_dict(),
        }


AgentProcess.__module__ = "tether"


class _Owner:
    """What the process's supervision (Supervised) and teardown (Owner) ask of it beyond its
    state: the process says how, they say when."""

    __slots__ = ("_process",)

    def __init__(self, process: AgentProcess) -> None:
        self._process = process

    def session_ended(self, reason: str) -> Awaitable[DispatchResult]:
        p = self._process
        return p._hooks.session_end(reason, p.invocation_count, p._changes.meter.to_dict())

    async def pause(self) -> None:
        await self._process._teardown.pause()

    async def restart_after_crash(self) -> None:
        self._process.restart_count += 1
        self._process.state = ProcessState.STOPPED
        await self._process.start(_restart=True)

    async def fail(self) -> None:
        await self._process._teardown.run(ProcessState.FAILED)

    def children(self) -> Iterable[Child]:
        return self._process.children.values()

    def model_held(self) -> Model | None:
        return self._process._live.model if self._process.parent is None else None

    def stores(self) -> Iterable[object]:
        p = self._process
        return (p._journal, p._history_store, p.plugins.artifacts, p._durable)

    async def stopped(self) -> None:
        child, parent = self._process, self._process.parent
        # subagent_stop is dispatched once (a failed child may be stopped again).
        if parent is not None and parent.children.pop(child.name, None) is child:
            await parent._hooks.subagent_stop(child.name, child.state.value)
