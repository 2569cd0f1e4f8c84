"""The runner: provision, reset, inject, score, repeat, with the run-level hook points.

Per scenario::

    provision the process (start it)                  -> on_provisioned
    for each run:
        reset: fresh conversation and state, new run id and session id
                                                      -> on_run_start   (nothing injected yet)
        inject the turns in order, each awaited to its end
        freeze the trace (turns, tool calls, hook runs, timings), compute the score
                                                      -> on_run_scored  (session alive;
                                                         converse() valid only here)
                                                      -> on_run_end
        write the trace, score and hook artifacts of the run
    aggregate the runs                                -> on_scenario_end (process still up)
    teardown (stop the process)
    ...every scenario...                              -> on_pack_end

Invariants, each held where the data lives:
* The trace is frozen (serialised) before any hook sees the run, and the score is computed
  from it: a hook can neither add a turn nor change a score. Only the warnings channel
  (``worker_warnings``) is appended to after freezing, as the contract says.
* Each point's dispatch completes (or its hooks' deadlines pass) before the runner goes on,
  so ``on_run_scored`` always precedes the next reset.
* Without ``hooks``, no hook runs: nothing is activated by being installed.
"""

from __future__ import annotations

import asyncio
import inspect
import json
import logging
import time
import uuid
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final, Protocol

from ..hooks import HookContext, HookEvent, Plugin
from ._context import Deadlines, RunContext, Scope, dispatch
from ._folder import run_stem, stamp, write_json
from ._hooks import resolve_hooks
from ._pack import FakeLLMSpec, LoadedPack, Scenario, load_pack
from ._report import aggregate
from ._score import compute_score

if TYPE_CHECKING:
    from ..process import AgentProcess, ProcessConfig

__all__ = ["FakeModelServer", "PackResult", "Progress", "run_pack"]

logger = logging.getLogger("tether.eval")

TRACE_SCHEMA_VERSION: Final = 1
OBSERVER: Final = "eval:observer"
#: Turn outcomes after which the task is over (``retrying``: another attempt follows).
_FINAL: Final = frozenset({"success", "failed", "blocked", "dead_lettered"})


@dataclass(slots=True)
class Progress:
    """What the runner tells its ``progress`` callback: a run ended (or a scenario began)."""

    kind: str  # "scenario" (starting), "run" (scored), "scenario_end"
    scenario_id: str
    runs_total: int
    run_index: int | None = None
    verdict: str | None = None


@dataclass(slots=True)
class PackResult:
    """The outcome of one pack: an aggregate per scenario, the files written, the warnings."""

    pack: str
    sweep: str
    aggregates: list[dict[str, Any]]
    out: Path | None
    hooks: list[str]
    #: Scenario- and pack-scoped hook warnings: scenario id (or "pack") -> warnings.
    warnings: dict[str, list[str]] = field(default_factory=dict)
    traces: list[Path] = field(default_factory=list)

    @property
    def passed(self) -> bool:
        """Every scenario reached its pass rate (hook artifacts and warnings never count)."""
        return all(a["passed"] for a in self.aggregates)

    @property
    def exit_code(self) -> int:
        return 0 if self.passed else 1


PackResult.__module__ = "tether.eval"
Progress.__module__ = "tether.eval"


class FakeModelServer(Protocol):
    """What the runner scripts per run when the agent is served by a fake model: the shape of
    ``tether.testing.FakeLLM`` (which the CLI starts for ``fake_llm`` packs)."""

    reply: str
    tool_calls: list[tuple[str, dict[str, Any] | str]]
    latency: float

    @property
    def base_url(self) -> str: ...


async def run_pack(
    pack: LoadedPack | str | Path,
    *,
    hooks: Sequence[str | Plugin] = (),
    runs: int | None = None,
    out: str | Path | None = None,
    fake_llm: FakeModelServer | None = None,
    progress: Callable[[Progress], None] | None = None,
) -> PackResult:
    """Run every scenario of ``pack``; write its runs folder to ``out`` (if given).

    ``hooks`` are activated in this order (names: the built-ins, then ``tether.plugins``
    entry points; or Plugin objects); an unknown name is a PluginError listing the available
    ones, raised before anything runs. ``runs`` overrides every scenario's. ``fake_llm`` (a
    running ``tether.testing.FakeLLM``) serves the agent's model, scripted per scenario from
    the pack's ``fake_llm`` sections; a pack that asks for one needs it.
    """
    loaded = pack if isinstance(pack, LoadedPack) else load_pack(pack)
    active = resolve_hooks(hooks)
    deadlines = Deadlines.from_env()
    if runs is not None and (isinstance(runs, bool) or not isinstance(runs, int) or runs < 1):
        raise ValueError(f"runs must be a whole number >= 1, got {runs!r}")
    if loaded.spec.fake_llm is not None and fake_llm is None:
        raise ValueError(
            f"pack {loaded.name!r} is served by a fake model (its fake_llm section): pass "
            "fake_llm=<a running tether.testing.FakeLLM> ('tether eval run' starts one)"
        )
    folder = Path(out) if out is not None else None
    if folder is not None:
        folder.mkdir(parents=True, exist_ok=True)
    runner = _Runner(loaded, active, deadlines, runs, folder, progress)
    runner.fake = fake_llm
    runner.fake_reply = fake_llm.reply if fake_llm is not None else ""
    runner.fake_default = loaded.spec.fake_llm or FakeLLMSpec()
    return await runner.run()


class _Runner:
    def __init__(
        self,
        pack: LoadedPack,
        hooks: list[Plugin],
        deadlines: Deadlines,
        runs: int | None,
        folder: Path | None,
        progress: Callable[[Progress], None] | None,
    ) -> None:
        self.pack = pack
        self.hooks = hooks
        self.deadlines = deadlines
        self.runs = runs
        self.folder = folder
        self.progress = progress
        self.fake: FakeModelServer | None = None
        self.fake_default = FakeLLMSpec()
        self.fake_reply = ""
        self.sweep = stamp(datetime.now(UTC))
        self.result = PackResult(pack.name, self.sweep, [], folder, [h.name for h in hooks])

    def tell(self, event: Progress) -> None:
        if self.progress is not None:
            try:
                self.progress(event)
            except Exception:  # a progress display never stops a pack
                logger.exception("the eval progress callback failed")

    async def run(self) -> PackResult:
        for index, scenario in enumerate(self.pack.spec.scenarios):
            self.result.aggregates.append(await self.scenario(index, scenario))
        pack_scope = Scope("pack")
        await dispatch(
            "on_pack_end",
            self.hooks,
            pack_scope,
            self.deadlines,
            lambda plugin: RunContext(
                "on_pack_end",
                plugin,
                pack_scope,
                self.deadlines,
                pack=self.pack.name,
                aggregates=self.result.aggregates,
            ),
        )
        self.finish_scope(pack_scope, "pack", None)
        if self.folder is not None:
            write_json(
                self.folder / f"{self.sweep}.pack.json",
                {
                    "schema_version": 1,
                    "pack": self.pack.name,
                    "source": self.pack.source,
                    "sweep": self.sweep,
                    "hooks": self.result.hooks,
                    "aggregates": self.result.aggregates,
                    "warnings": self.result.warnings,
                },
            )
        return self.result

    # -- one scenario ------------------------------------------------------------------------

    async def scenario(self, index: int, scenario: Scenario) -> dict[str, Any]:
        total = self.runs or scenario.runs or self.pack.spec.runs
        self.tell(Progress("scenario", scenario.id, total))
        info = {
            "id": scenario.id,
            "description": scenario.description,
            "runs": total,
            "turns": [t.prompt for t in scenario.turns],
            "pass_rate": scenario.pass_rate,
        }
        scope = Scope("scenario")
        try:
            session = await _ScenarioSession.provision(self.pack, self.fake)
            session.fake_reply = self.fake_reply
        except Exception as exc:
            error = f"provisioning failed: {type(exc).__name__}: {exc}"
            logger.warning("scenario %s of %s: %s", scenario.id, self.pack.name, error)
            result = aggregate(self.pack.name, scenario.id, scenario.pass_rate, [], error=error)
            self.tell(Progress("scenario_end", scenario.id, total))
            return result
        scores: list[tuple[dict[str, Any], dict[str, Any]]] = []
        try:
            agent = session.agent_info()
            await dispatch(
                "on_provisioned",
                self.hooks,
                scope,
                self.deadlines,
                lambda plugin: RunContext(
                    "on_provisioned",
                    plugin,
                    scope,
                    self.deadlines,
                    pack=self.pack.name,
                    agent=agent,
                    scenario=info,
                    session=session,
                ),
            )
            for run_index in range(total):
                trace, score = await self.one_run(index, scenario, info, session, run_index)
                scores.append((trace, score))
                self.tell(Progress("run", scenario.id, total, run_index, score["verdict"]))
            result = aggregate(self.pack.name, scenario.id, scenario.pass_rate, scores)
            await dispatch(
                "on_scenario_end",
                self.hooks,
                scope,
                self.deadlines,
                lambda plugin: RunContext(
                    "on_scenario_end",
                    plugin,
                    scope,
                    self.deadlines,
                    pack=self.pack.name,
                    agent=agent,
                    scenario=info,
                    aggregate=result,
                ),
            )
        finally:
            await session.teardown()
        self.finish_scope(scope, "scenario", scenario.id, session.redact)
        self.tell(Progress("scenario_end", scenario.id, total))
        return result

    def finish_scope(
        self,
        scope: Scope,
        kind: str,
        scenario_id: str | None,
        redact: Callable[[Any], Any] = lambda value: value,
    ) -> None:
        """Keep a scenario's or the pack's warnings; write its hook artifacts at the root."""
        if scope.warnings:
            warnings = [redact(w) for w in scope.warnings]
            self.result.warnings[scenario_id or "pack"] = warnings
            for warning in warnings:
                logger.warning("%s (%s)", warning, scenario_id or f"pack {self.pack.name}")
        if self.folder is None:
            return
        for hook, label, payload, calls in scope.artifacts:
            parts = [self.sweep, hook]
            if kind == "scenario" and scenario_id is not None:
                parts.append(scenario_id)
            if label:
                parts.append(label)
            stamped = _stamped(payload, calls)
            write_json(self.folder / (".".join(parts) + ".pack.json"), redact(stamped))

    # -- one run -----------------------------------------------------------------------------

    async def one_run(
        self,
        index: int,
        scenario: Scenario,
        info: dict[str, Any],
        session: _ScenarioSession,
        run_index: int,
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        run_id = uuid.uuid4().hex
        session_id = uuid.uuid4().hex
        session.reset(scenario, self.fake, self.fake_default)
        started_at = datetime.now(UTC)
        agent = session.agent_info()
        scope = Scope("run")

        def context(point: str, **more: Any) -> Callable[[Plugin], RunContext]:
            return lambda plugin: RunContext(
                point,
                plugin,
                scope,
                self.deadlines,
                pack=self.pack.name,
                agent=agent,
                scenario=info,
                run_id=run_id,
                run_index=run_index,
                session_id=session_id,
                session=session,
                **more,
            )

        await dispatch("on_run_start", self.hooks, scope, self.deadlines, context("on_run_start"))
        started = time.perf_counter()
        turns = await session.inject_turns(scenario, self.pack.spec.turn_timeout)
        duration = (time.perf_counter() - started) * 1e3
        trace = session.redact(
            {
                "schema_version": TRACE_SCHEMA_VERSION,
                "run_id": run_id,
                "session_id": session_id,
                "pack": self.pack.name,
                "scenario_id": scenario.id,
                "scenario": info,
                "run_index": run_index,
                "agent": agent["name"],
                "model": agent["model"],
                "started_at": started_at.isoformat(),
                "duration_ms": round(duration, 3),
                "turns": turns,
                "hook_runs": [run for turn in turns for run in turn["hook_runs"]],
                "tool_call_count": sum(len(turn["tool_calls"]) for turn in turns),
                "worker_warnings": [],
            }
        )
        # Frozen: what hooks and the file get is this text, whatever a hook does later.
        frozen = json.dumps(trace, ensure_ascii=False)
        trace = json.loads(frozen)
        score = await compute_score(self.pack, index, scenario, trace)
        await dispatch(
            "on_run_scored",
            self.hooks,
            scope,
            self.deadlines,
            context("on_run_scored", trace=trace, score=score),
        )
        await dispatch(
            "on_run_end",
            self.hooks,
            scope,
            self.deadlines,
            context("on_run_end", trace=trace, score=score),
        )
        written = json.loads(frozen)
        written["worker_warnings"] = [session.redact_text(w) for w in scope.warnings]
        for warning in written["worker_warnings"]:
            logger.warning("%s (run %s of %s)", warning, run_id[:8], scenario.id)
        if self.folder is not None:
            stem = run_stem(started_at, run_id)
            write_json(self.folder / f"{stem}.score.json", score)
            write_json(self.folder / f"{stem}.json", written)
            for hook, label, payload, calls in scope.artifacts:
                name = f"{stem}.{hook}{'.' + label if label else ''}.json"
                write_json(self.folder / name, session.redact(_stamped(payload, calls)))
            self.result.traces.append(self.folder / f"{stem}.json")
        return written, score


def _stamped(payload: Any, calls: list[dict[str, Any]]) -> Any:
    """An object artifact of a handler that conversed says so: ``tools_disabled`` (every
    converse turn ran with the agent's tools off: always true in tether) and ``timed_out``
    (any converse call of that handler timed out)."""
    if not calls or not isinstance(payload, dict):
        return payload
    return {
        **payload,
        "tools_disabled": all(call["tools_disabled"] for call in calls),
        "timed_out": any(call["timed_out"] for call in calls),
    }


# -- the process of one scenario -------------------------------------------------------------


class _ScenarioSession:
    """One scenario's process, and the runner's ways to reset, drive and read it.

    This is the session a RunContext lends hooks (``converse``, ``snapshot``): it never
    hands them the process itself.
    """

    def __init__(self, process: AgentProcess, initial_state: dict[str, Any]) -> None:
        self.process = process
        self.initial_state = initial_state
        self.waiting: dict[str, asyncio.Future[dict[str, Any]]] = {}
        self.last_event: str | None = None
        self.fake_reply = ""
        self.tee: _TurnRecords

    @classmethod
    async def provision(cls, pack: LoadedPack, fake: FakeModelServer | None) -> _ScenarioSession:
        from ..process import AgentProcess

        name, config = await _agent_config(pack)
        if fake is not None:
            from ..models import OpenAIModel

            model = OpenAIModel(
                "fake-llm",
                base_url=fake.base_url,
                api_key="fake-llm",
                timeout=config.model_timeout,
                max_retries=0,
            )
            config = config.model_copy(update={"model": model})
        process = AgentProcess(name, config)
        session = cls(process, dict(config.context.initial_state or {}))
        session.tee = _TurnRecords(process)
        process.hooks.register(
            HookEvent.TASK_COMPLETED,
            session._observe,
            priority=-(2**31),  # the last hook of task_completed: the task is over for all
            name=OBSERVER,
            source="eval",
        )
        try:
            await process.start()
        except BaseException:
            await process.stop()
            await process.aclose()
            raise
        return session

    async def _observe(self, ctx: HookContext) -> None:
        outcome = ctx.data.get("outcome")
        waiter = self.waiting.get(str(ctx.data.get("event_id")))
        if outcome in _FINAL and waiter is not None and not waiter.done():
            waiter.set_result(dict(ctx.data))

    async def teardown(self) -> None:
        try:
            await self.process.stop()
        finally:
            await self.process.aclose()

    def agent_info(self) -> dict[str, Any]:
        model = self.process.config.model
        name = model if isinstance(model, str) else getattr(model, "name", type(model).__name__)
        if self.process.model is not None:
            name = getattr(self.process.model, "name", name)
        return {"name": self.process.name, "model": str(name)}

    def redact(self, value: Any) -> Any:
        return self.process.redactor.value(value)

    def redact_text(self, text: str) -> str:
        return self.process.redactor.text(text)

    # -- reset -------------------------------------------------------------------------------

    def reset(self, scenario: Scenario, fake: FakeModelServer | None, default: FakeLLMSpec) -> None:
        """A fresh run: no conversation, the initial state, the fake model's script anew
        (the scenario's, else the pack's; a reply neither sets is the server's own)."""
        context = self.process.context
        if scenario.reset.conversation:
            context.conversation.drop_last(len(context.conversation))
        if scenario.reset.state:
            context.state.clear()
            context.state.update(json.loads(json.dumps(self.initial_state, default=str)))
        self.last_event = None
        if fake is not None:
            spec = scenario.fake_llm or default
            fake.reply = spec.reply or default.reply or self.fake_reply
            fake.tool_calls = [(c.name, dict(c.arguments)) for c in spec.tool_calls]
            fake.latency = spec.latency

    # -- the session lent to hooks -------------------------------------------------------------

    def snapshot(self) -> dict[str, Any]:
        context = self.process.context
        value = {"conversation": context.conversation.recent(), "state": context.state}
        copied: dict[str, Any] = json.loads(json.dumps(self.redact(value), default=str))
        return copied

    async def converse(self, text: str, timeout: float) -> str:
        process = self.process
        agent_loop = process.agent_loop
        if agent_loop is None:
            raise RuntimeError(f"process {process.name!r} is not running; nothing to converse with")
        transcript = process.transcripts.get(self.last_event or "")
        model = process.run_models.get(self.last_event or "")
        if not transcript:  # no turn of the run reached the model: the conversation so far
            transcript = [agent_loop.system_message(), *process.context.conversation.recent()]
        reply = await agent_loop.converse(transcript, text, timeout=timeout, model=model)
        return self.redact_text(reply)

    # -- injecting -----------------------------------------------------------------------------

    async def inject_turns(self, scenario: Scenario, turn_timeout: float) -> list[dict[str, Any]]:
        """Each turn injected once the one before it ended; a turn cut off ends the run."""
        from ..process import TriggerEvent

        turns: list[dict[str, Any]] = []
        process = self.process
        for index, turn in enumerate(scenario.turns):
            event = TriggerEvent(f"eval-{scenario.id}", "eval", turn.prompt)
            waiter: asyncio.Future[dict[str, Any]] = asyncio.get_running_loop().create_future()
            self.waiting[event.event_id] = waiter
            self.tee.take()  # (what came between turns is not this turn's)
            started = time.perf_counter()
            dead_before = len(process.dead_letters)
            error: str | None = None
            try:
                await process.inject(event)
                done = await self._wait(event.event_id, waiter, dead_before, turn_timeout)
            finally:
                self.waiting.pop(event.event_id, None)
            if done is None:
                outcome, error = "timed_out", f"the turn took longer than {turn_timeout:g}s"
            else:
                outcome, error = str(done.get("outcome")), done.get("error")
            duration = (time.perf_counter() - started) * 1e3
            transcript = process.transcripts.get(event.event_id)
            if transcript:
                self.last_event = event.event_id
            turns.append(
                {
                    "index": index,
                    "event_id": event.event_id,
                    "prompt": turn.prompt,
                    "outcome": outcome,
                    "error": error,
                    "reply": _reply(transcript) if outcome == "success" else None,
                    "tool_calls": _tool_calls(transcript or []),
                    "duration_ms": round(duration, 3),
                    "hook_runs": self._hook_runs(),
                }
            )
            if done is None:
                # Cut the turn off: nothing of it may run into the next reset.
                await process.restart()
                break
        return turns

    async def _wait(
        self,
        event_id: str,
        waiter: asyncio.Future[dict[str, Any]],
        dead_before: int,
        turn_timeout: float,
    ) -> dict[str, Any] | None:
        """The turn's end: its task_completed data, or its dead letter's if inject() refused
        it (at task_created, or a full queue: no task_completed follows); None past
        ``turn_timeout``. An event that reached the queue always ends with task_completed."""
        for entry in self.process.dead_letters[dead_before:]:
            if entry["event_id"] == event_id:
                blocked = entry["reason"] == "blocked by hook"
                reason = entry["reason"]
                return {
                    "outcome": "blocked" if blocked else "dead_lettered",
                    "error": f"{reason}: {entry['error']}" if entry.get("error") else reason,
                }
        try:
            return await asyncio.wait_for(waiter, turn_timeout)
        except TimeoutError:
            return None

    def _hook_runs(self) -> list[dict[str, Any]]:
        runs = self.tee.take()
        return [run.as_dict() for run in runs if run.hook_name != OBSERVER]


class _TurnRecords:
    """The process's hook-run recorder, also keeping the raw records of the current turn.

    Everything still goes to the process's own history; the turn's records are expanded into
    HookRuns (redacted as history is) when the turn ends, so a turn costs what it recorded,
    not a walk of the whole history ring.
    """

    def __init__(self, process: AgentProcess) -> None:
        self._inner = process.hooks.recorder
        self._process = process
        self._pending: list[tuple[str, tuple[Any, ...], dict[str, Any]]] = []
        process.hooks.recorder = self

    def __getattr__(self, name: str) -> Any:
        attr = getattr(self._inner, name)
        if name not in ("add", "ran", "skipped", "dropped"):
            return attr

        def record(*args: Any, **kwargs: Any) -> Any:
            self._pending.append((name, args, kwargs))
            return attr(*args, **kwargs)

        return record

    def take(self) -> list[Any]:
        """The hook runs recorded since the last take, oldest first."""
        from ..hooks import HistoryRecorder

        pending, self._pending = self._pending, []
        scratch = HistoryRecorder(
            self._process.name, size=max(len(pending), 1), redact=self._process.redactor.text
        )
        for name, args, kwargs in pending:
            getattr(scratch, name)(*args, **kwargs)
        return scratch.runs()


def _reply(transcript: list[dict[str, Any]] | None) -> str | None:
    for message in reversed(transcript or []):
        if message.get("role") == "assistant" and not message.get("tool_calls"):
            return str(message.get("content") or "")
    return None


def _tool_calls(transcript: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The tool calls of a turn, each with its parsed arguments and the result it got."""
    results = {
        m.get("tool_call_id"): m.get("content") for m in transcript if m.get("role") == "tool"
    }
    calls: list[dict[str, Any]] = []
    for message in transcript:
        for call in message.get("tool_calls") or ():
            function = call.get("function") or {}
            raw = function.get("arguments")
            try:
                arguments = json.loads(raw) if isinstance(raw, str) else raw
            except ValueError:
                arguments = raw
            calls.append(
                {
                    "id": call.get("id"),
                    "name": function.get("name"),
                    "arguments": arguments,
                    "result": results.get(call.get("id")),
                }
            )
    return calls


async def _agent_config(pack: LoadedPack) -> tuple[str, ProcessConfig]:
    """The agent's name and a fresh ProcessConfig (a new one for each scenario)."""
    from ..manifest import ProcessSpec, load_manifest, manifest_to_process_config
    from ..process import ProcessConfig

    if pack.manifest is not None:
        manifest = load_manifest(pack.manifest)
        return manifest.name, manifest_to_process_config(manifest)
    assert pack.factory is not None
    made = pack.factory()
    if inspect.isawaitable(made):
        made = await made
    if isinstance(made, ProcessConfig):
        return pack.name, made
    if isinstance(made, ProcessSpec):
        name = getattr(made, "name", None) or pack.name
        return str(name), manifest_to_process_config(made)
    raise TypeError(
        f"agent factory {pack.spec.agent!r} answered a {type(made).__name__}; it must answer "
        "a tether.ProcessConfig or a manifest (tether.manifest.AgentManifest)"
    )
