"""The event path: workers take events and make one attempt of each, to an outcome.

An attempt journals its event ``running``, renders the prompt, dispatches user_prompt_submit,
runs the guardrails and the budget check, then the agent loop; it ends in exactly one
task_completed (through Outcomes.complete): ``success``, ``blocked``, ``dead_lettered``
(refused), ``retrying`` (a retry is scheduled with backoff) or ``failed`` (no retries left:
dead-lettered). A worker whose run
raises what nothing isolates is a crash: its event is dead-lettered and the process supervised.

An event whose run is under way is in ``WorkerPool.inflight`` until its fate is decided; one
that leaves it (done, dead-lettered, waiting for a retry, given up on by a stop) is never
recorded twice.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable
from typing import TYPE_CHECKING, Any, Final

from ..agent import (
    RunBlocked,
    RunRefused,
    RunResult,
    Tool,
    Usage,
    permission_denied,
    scan,
    scan_payload,
)
from ..models import ModelConfigError
from ._event import CURRENT_EVENT, TriggerEvent, render_prompt
from ._extensions import extensions_for_run, render_for_run
from ._supervise import describe, is_fatal

if TYPE_CHECKING:
    from ..models import Model
    from ..store import Journal
    from ._changes import ConfigChanges
    from ._dead_letters import DeadLetterBox
    from ._durable import DurableRuns
    from ._intake import Intake
    from ._journaling import JournalWrites
    from ._lifecycle import ProcessHooks
    from ._outcomes import Outcomes
    from ._rewind import Rewinder
    from ._state import LiveState, ProcessState
    from ._supervise import Supervisor
    from ._workers import WorkerPool

__all__ = ["TRANSCRIPTS_KEPT", "EventRunner"]

logger = logging.getLogger("tether.process")

#: Run transcripts kept for plugins (converse) after a task completes.
TRANSCRIPTS_KEPT: Final = 100


class EventRunner:
    """The workers' loop and each attempt of an event (see the module docstring).

    It is handed the process's state (``live``: its configuration, queue, agent loop and
    observer now) and the collaborators it drives: its hook points (``hooks``), workers,
    rewinds, supervision, outcomes, dead letters, intake (to queue a retry), configuration
    (the budget of the moment), journal and its writes, and durable runs.
    """

    def __init__(
        self,
        live: LiveState,
        hooks: ProcessHooks,
        *,
        pool: WorkerPool,
        rewinder: Rewinder,
        supervisor: Supervisor,
        outcomes: Outcomes,
        letters: DeadLetterBox,
        intake: Intake,
        changes: ConfigChanges,
        journal: Journal | None,
        writes: JournalWrites,
        durable: DurableRuns,
    ) -> None:
        self.name = hooks.name
        self.redactor = hooks.redactor
        self.hooks = hooks.manager
        self._hooks = hooks
        self._live = live
        self._pool = pool
        self._rewinder = rewinder
        self._supervision = supervisor
        self._outcomes = outcomes
        self._letters = letters
        self._intake = intake
        self._changes = changes
        self._journal = journal
        self._writes = writes
        self._durable = durable
        # The pool's own (never rebound), read on every event's path.
        self._inflight = pool.inflight
        self._busy = pool.busy
        self._abandoned = pool.abandoned
        self.invocation_count = 0
        #: Events waiting for a retry's timer: (timer, event, attempts so far).
        self.retries: dict[str, tuple[asyncio.TimerHandle, TriggerEvent, int]] = {}
        # Events whose run was cancelled by stop() or a restart: (event, attempt cut off).
        # (A tuple replaced as a whole, as the other records here that are mostly empty: the
        # empty one is shared, and a process that never ran holds none of its own.)
        self._cut_off: tuple[tuple[TriggerEvent, int], ...] = ()
        #: The run transcript of each of the last TRANSCRIPTS_KEPT events, by id.
        self.transcripts: dict[str, list[dict[str, Any]]] = {}
        #: The model.for_run answer of each kept transcript (None: the process's model).
        self.run_models: dict[str, Model | None] = {}

    # -- the worker ------------------------------------------------------------------------

    async def work(self) -> None:
        """One worker: take events and attempt each, until a stop or a crash's restart."""
        me = asyncio.current_task()
        assert me is not None
        live, rewinder = self._live, self._rewinder
        # After a crash (a supervisor is set) workers take no new events: they wait for the
        # restart.
        while not (live.stopping or self._supervision.restarting or me in self._abandoned):
            if rewinder.held is not None:  # a rewind() waits for the runs in flight: no new one
                await rewinder.held.wait()
                continue
            # A given-back event first, then the queue's next.
            event, attempts = rewinder.given_back() or await live.queue.get()
            if rewinder.held is not None:  # taken while a rewind began: run it once it is over
                await rewinder.wait_out(event, attempts)
            if live.stopping or self._supervision.restarting:
                rewinder.give_back(event, attempts)
                return
            await self._take(me, event, attempts + 1)

    async def _take(self, me: asyncio.Task[Any], event: TriggerEvent, attempt: int) -> None:
        self._busy[me] = event.event_id
        self._inflight[event.event_id] = (event, attempt)
        try:
            await self._handle(event, attempt)
        except BaseException as exc:
            if me in self._abandoned:  # given up on at a stop: its event is decided
                return
            if is_fatal(exc):
                if isinstance(exc, asyncio.CancelledError) and event.event_id in self._inflight:
                    self._cut_off += ((event, attempt),)  # by stop() or a restart
                raise
            # A bug in the machinery, or a hook, model or tool raising what no layer
            # isolates (a BaseException, a stray CancelledError): supervise, never lose it.
            await self._worker_crashed(event, attempt, exc)
        finally:
            if me not in self._abandoned:  # (its event id may be running again by now)
                self._inflight.pop(event.event_id, None)
                self._busy.pop(me, None)
            self._live.queue.task_done()

    async def _block(
        self, event: TriggerEvent, attempt: int, started: float, reason: str, error: str
    ) -> None:
        self._inflight.pop(event.event_id, None)
        self._letters.add(event, reason, error, attempt)
        await self._outcomes.complete(
            event, "dead_lettered", (time.perf_counter() - started) * 1e3, error, worker=True
        )

    async def _handle(self, event: TriggerEvent, attempt: int) -> None:
        token = CURRENT_EVENT.set((self.name, event.event_id))
        try:
            await self._observed_attempt(event, attempt)
        finally:
            CURRENT_EVENT.reset(token)

    async def _observed_attempt(self, event: TriggerEvent, attempt: int) -> None:
        observer = self._live.observer
        if observer is None:
            return await self._attempt(event, attempt)
        with observer.task(
            self.name,
            event.event_id,
            event.trigger_id,
            event.trigger_type,
            attempt,
            event.traceparent,
        ) as note:
            self._outcomes.notes[event.event_id] = note
            try:
                await self._attempt(event, attempt)
            finally:
                self._outcomes.notes.pop(event.event_id, None)

    # -- one attempt -----------------------------------------------------------------------

    async def _attempt(self, event: TriggerEvent, attempt: int) -> None:
        started = time.perf_counter()
        if self._journal is not None:  # a failed write: see _journaling (at-least-once)
            await self._writes.landed(
                event.event_id, self._journal.running, event.event_id, attempt
            )
        stream = self._live.stream
        # The attempt counts on the next host, as in recovery; a host that no longer holds
        # the lease starts none (the entry is the next holder's).
        if stream is not None and not await stream.running(event, attempt):
            return
        prompt = await self._prompt(event, attempt, started)
        if prompt is None or not await self._allowed(event, attempt, started, prompt):
            return
        self.invocation_count += 1
        assert self._live.agent_loop is not None
        try:
            await self._observed_run(prompt, event)
        except RunBlocked as exc:  # a model-call hook's block: as a blocked prompt's
            self._inflight.pop(event.event_id, None)
            self._letters.add(event, "blocked by hook", str(exc), attempt)
            duration = (time.perf_counter() - started) * 1e3
            await self._outcomes.complete(event, "blocked", duration, str(exc), worker=True)
            return
        except RunRefused as exc:  # a budget refused a model call: as a refused run
            await self._block(event, attempt, started, "budget exceeded", str(exc))
            return
        except Exception as exc:
            await self._failed(event, attempt, started, exc)
            return
        self.go_on()
        self._supervision.succeeded()  # recovered: max_restarts counts restarts in a row
        self._inflight.pop(event.event_id, None)  # finished: a stop() now cuts off no run
        if self._journal is not None:
            self._writes.write(event.event_id, self._journal.done, event.event_id)
        self._durable.ended(event.event_id)  # its steps go; conversation and state saved
        await self._outcomes.complete(
            event, "success", (time.perf_counter() - started) * 1e3, None, worker=True
        )

    async def _prompt(self, event: TriggerEvent, attempt: int, started: float) -> str | None:
        """The prompt of the run, as rendered and as user_prompt_submit left it; None when a
        hook blocked it (the event is dead-lettered and its task_completed dispatched)."""
        prompt = (
            await render_for_run(self.hooks, event, self.name)
            if self.hooks.implemented("prompt.render")  # a coroutine only when one may render
            else render_prompt(event)
        )
        self.go_on()  # (a prompt.render handler may have swallowed a stop's cancellation)
        shown = self.redactor.declared.text(prompt)
        gate = await self._hooks.user_prompt_submit(event, shown)
        if gate.blocked:
            self._inflight.pop(event.event_id, None)
            self._letters.add(event, "blocked by hook", gate.reason, attempt)
            await self._outcomes.complete(
                event, "blocked", (time.perf_counter() - started) * 1e3, gate.reason, worker=True
            )
            return None
        changed = gate.data.get("prompt")
        return changed if isinstance(changed, str) and changed != shown else prompt

    async def _allowed(
        self, event: TriggerEvent, attempt: int, started: float, prompt: str
    ) -> bool:
        """Whether the guardrails and the budget let the run go; a block dispatches
        permission_denied and dead-letters the event."""
        rails = self._live.config.guardrails
        # Scanners may suspend; the payload scan alone never does.
        scanning = scan(rails, event.payload, prompt) if rails.scanners else None
        denial = await scanning if scanning is not None else scan_payload(rails, event.payload)
        self.go_on()
        if denial is not None:
            await permission_denied(
                self._hooks.dispatch_in_worker,
                "guardrail",
                None,
                denial.reason,
                denial.decided_by,
                event_id=event.event_id,
                trigger_type=event.trigger_type,
            )
            await self._block(event, attempt, started, "guardrail refused", denial.reason)
            return False
        budget = self._changes.budget
        over = budget.check_run() if budget is not None else None
        if over is not None:
            await permission_denied(
                self._hooks.dispatch_in_worker,
                "budget",
                None,
                over.reason,
                "budget",
                limit_name=over.limit_name,
                limit_value=over.limit_value,
                current_value=over.current_value,
                event_id=event.event_id,
            )
            await self._block(event, attempt, started, "budget exceeded", over.reason)
            return False
        return True

    async def _observed_run(self, prompt: str, event: TriggerEvent) -> RunResult:
        observer = self._live.observer
        if observer is None:
            return await self._run(prompt, event)
        with observer.run(self.name, event.event_id) as note:
            try:
                result = await self._run(prompt, event)
            except Exception as exc:
                note.outcome, note.error = "error", self.redactor.text(f"{exc}")
                raise
            note.attributes.update(turns=result.turns, tool_calls=result.tool_calls)
            return result

    def _run(self, prompt: str, event: TriggerEvent) -> Awaitable[RunResult]:
        """One run (to await), with the extension points for its model and extra tools."""
        hooks = self.hooks
        if hooks.implemented("model.for_run") or hooks.implemented("tools.for_run"):
            return self._run_extended(prompt, event)
        return self._start_run(prompt, event, None, [])  # no handler: no coroutine of its own

    async def _run_extended(self, prompt: str, event: TriggerEvent) -> RunResult:
        model, tools = await extensions_for_run(self.hooks, event, self.name)
        self.go_on()
        return await self._start_run(prompt, event, model, tools)

    def _start_run(
        self, prompt: str, event: TriggerEvent, model: Model | None, tools: list[Tool]
    ) -> Awaitable[RunResult]:
        loop = self._live.agent_loop
        assert loop is not None
        transcript: list[dict[str, Any]] = []
        usages = self._outcomes.usage
        usage = usages[event.event_id] = Usage()
        if len(usages) > TRANSCRIPTS_KEPT:  # runs given up on at a stop never complete
            usages.pop(next(iter(usages)))
        self.transcripts[event.event_id] = transcript
        self.run_models[event.event_id] = model
        if len(self.transcripts) > TRANSCRIPTS_KEPT:
            self.run_models.pop(next(iter(self.transcripts)), None)
            self.transcripts.pop(next(iter(self.transcripts)))
        return loop.run(
            prompt,
            event_id=event.event_id,
            extra_tools=tools,
            model=model,
            transcript=transcript,
            usage=usage,
            steps=self._durable.for_run(event.event_id),
        )

    # -- failures and retries --------------------------------------------------------------

    async def _failed(
        self, event: TriggerEvent, attempt: int, started: float, exc: Exception
    ) -> None:
        if asyncio.current_task() in self._abandoned:  # given up on at a stop: decided
            return
        error = self.redactor.text(f"{exc}")
        duration = (time.perf_counter() - started) * 1e3
        self._supervision.run_failed()
        self._inflight.pop(event.event_id, None)
        self._durable.ended(event.event_id, saved=False)  # a retry starts afresh
        config = self._live.config
        misconfigured = is_misconfiguration(exc)  # a retry would meet the same missing key
        # A crash's restart keeps what waits (its supervisor is set): a retry waits for it too.
        if (
            not misconfigured
            and attempt <= config.max_retries
            and (not self._live.stopping or self._supervision.restarting)
        ):
            delay = min(config.retry_backoff * (2 ** (attempt - 1)), config.retry_backoff_max)
            handle = asyncio.get_running_loop().call_later(delay, self._retry, event.event_id)
            self.retries[event.event_id] = (handle, event, attempt)
            if self._journal is not None:
                stored = self.redactor.declared.value(event.to_dict())
                self._writes.write(event.event_id, self._journal.queued, stored, attempt)
            await self._outcomes.complete(event, "retrying", duration, error, worker=True)
        else:
            reason = "model misconfigured" if misconfigured else "process failed"
            self._letters.add(event, reason, error, attempt)
            await self._outcomes.complete(event, "failed", duration, error, worker=True)
        self._supervision.crash_if_failing(error)

    def _retry(self, event_id: str) -> None:
        entry = self.retries.pop(event_id, None)
        if entry is not None:
            _, event, attempts = entry
            if not self._intake.enqueue(event, attempts):  # its hooks heard "retrying": say how
                self._letters.dispatch_later(event, "queue full")

    def go_on(self) -> None:
        """In a run that a stop gave up on (see WorkerPool.halt), raise CancelledError:
        its event is dead-lettered already, so the run goes no further and records nothing
        (its worker returns). Called after each step a swallowed cancellation may get past."""
        # The pool's abandoned set is empty but during a stop: asyncio.current_task() costs a
        # getpid() system call on Python 3.11, and this runs four times per event.
        if self._abandoned and asyncio.current_task() in self._abandoned:
            raise asyncio.CancelledError

    async def _worker_crashed(self, event: TriggerEvent, attempt: int, exc: BaseException) -> None:
        """A worker's run of ``event`` raised what nothing isolated: the process crashed.

        The event is dead-lettered ("process failed", task_completed "failed") unless its fate
        was decided already (it left ``inflight``: done, dead-lettered or waiting for a
        retry), so a redelivery never runs a finished event twice.
        """
        error = self.redactor.text(describe(exc))
        logger.error("worker of %s crashed: %s", self.name, error)
        if self._inflight.pop(event.event_id, None) is not None:
            self._letters.add(event, "process failed", error, attempt)
            try:
                await self._outcomes.complete(event, "failed", 0.0, error, worker=True)
            except BaseException as again:
                if is_fatal(again):
                    raise
                logger.error("task_completed of %s failed too", event.event_id)
        self._supervision.crashed(f"worker crashed: {error}")

    # -- what a stop or a restart leaves ---------------------------------------------------

    async def requeue_cut_off(self) -> None:
        """Queue again the runs a crash's pause cut off: their attempt does not count."""
        cut_off, self._cut_off = self._cut_off, ()
        for event, attempt in cut_off:
            if not self._intake.enqueue(
                event, attempt - 1
            ):  # it reached a worker: say how it ended
                await self._letters.dispatch_dead_lettered([event], "queue full", None)

    def waiting(self, final_state: ProcessState) -> list[tuple[TriggerEvent, int, str]]:
        """Take what waits for a retry or in the queue (given-back events first), to
        dead-letter."""
        leftovers: list[tuple[TriggerEvent, int]] = []
        for handle, event, attempts in self.retries.values():
            handle.cancel()
            leftovers.append((event, attempts))
        self.retries.clear()
        leftovers += self._rewinder.take_waiting()
        note = f"still queued when the process {final_state.value}"
        return [(event, attempts, note) for event, attempts in leftovers]

    def unfinished(self, final_state: ProcessState) -> list[tuple[TriggerEvent, int, str]]:
        """Take every event a stop leaves to dead-letter: the runs it cut off, those it gave
        up on, then what waits."""
        cut_off, self._cut_off = self._cut_off, ()
        note = f"cancelled while running when the process {final_state.value}"
        return (
            [(event, attempt, note) for event, attempt in cut_off]
            + self._pool.take_given_up()
            + self.waiting(final_state)
        )


def is_misconfiguration(exc: BaseException) -> bool:
    """Whether ``exc`` (or what caused it) is a model configuration error (no API key, a
    rejected key, an unknown model): every retry would fail the same way."""
    seen: BaseException | None = exc
    for _ in range(8):  # a cause chain is short; a cycle is not followed for ever
        if seen is None:
            return False
        if isinstance(seen, ModelConfigError):
            return True
        seen = seen.__cause__
    return False
