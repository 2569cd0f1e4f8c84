"""The control API's route table: each operation declared once, then both served and described.

``OrchestrationAPI`` builds its routes from ``ROUTES`` (method, path, the endpoint serving it,
the query parameters it takes) and ``openapi_document`` (see _openapi) generates the OpenAPI
document from the same entries and the pydantic models of their bodies, so a path, a method, a
parameter or a body cannot be served without being described, nor described without being
served. Each parameter's pattern, length or enum is the one the server checks, so a value the
document allows is never refused as malformed.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field

from ..hooks import EXECUTOR_KINDS, HookEvent
from ..hooks._records import OUTCOMES
from ..hooks._taxonomy import FAMILIES
from ..manifest import ProcessSpec
from ._approvals import ApprovalAnswer
from ._changes import ConfigChange, RewindRequest
from ._hooks import MAX_LAST, MODES, OUTCOME_ALIASES, SOURCES, DryRunRequest
from ._observe import PublishEvent

__all__ = [
    "NAME_PATTERN",
    "PREFIX",
    "ROUTES",
    "TASK_ID_PATTERN",
    "TRACEPARENT_PATTERN",
    "CreateProcess",
    "InjectEvent",
    "Operation",
    "Param",
    "Redeliver",
]

#: Where the JSON endpoints are served (the metrics and the dashboard's files are not).
PREFIX: Final = "/api/v1"

# -- what parameters and bodies take ------------------------------------------------------------

#: A process name as ``validate_name`` takes it: a letter or digit, then letters, digits, '_',
#: '-' and '.' (never two dots in a row), at most 64 characters.
NAME_PATTERN: Final = r"^[A-Za-z0-9](?:\.?[A-Za-z0-9_-])*\.?$"
NAME_SCHEMA: Final = {"type": "string", "pattern": NAME_PATTERN, "minLength": 1, "maxLength": 64}
#: A task id as the artifact stores take it: letters, digits, '_', '-' and '.' (never two dots
#: in a row, not only dots), at most 200 characters.
TASK_ID_PATTERN: Final = r"^\.?(?:[A-Za-z0-9_-]\.?)+$"
#: A boolean query parameter, as document 004 types it (1/0, yes/no, on/off are taken too).
_FLAG: Final = {"type": "boolean"}
_SELECTOR: Final = "A hook id or a tag; a tag may contain '/' (sent as is or as %2F)"
#: A dotted extension-point name: a dot inside, none at either end, no space.
_DOTTED: Final = r"^[^ .][^ ]*\.[^ ]*[^ .]$"
_EVENTS: Final = [e.value for e in HookEvent]


def _nonzero_hex(width: int) -> str:
    """``width`` lowercase hex digits, not all zero, without a lookahead (which not every
    JSON Schema tool takes): one alternative per place of the first digit that is not 0."""
    places = []
    for i in range(width):
        zeros = f"0{{{i}}}" if i else ""
        rest = f"[0-9a-f]{{{width - i - 1}}}" if width - i - 1 else ""
        places.append(f"{zeros}[1-9a-f]{rest}")
    return "(?:" + "|".join(places) + ")"


#: A W3C traceparent as check_traceparent takes it: version (not ff), trace id and span id
#: (neither all zeros), flags, in lowercase hex.
TRACEPARENT_PATTERN: Final = (
    "^(?:[0-9a-e][0-9a-f]|f[0-9a-e])-" + _nonzero_hex(32) + "-" + _nonzero_hex(16) + "-[0-9a-f]{2}$"
)


class _Strict(BaseModel):
    model_config = ConfigDict(extra="forbid")


class CreateProcess(_Strict):
    """POST /api/v1/processes."""

    name: str = Field(
        description="Process name: letters, digits, '_', '-', '.' (at most 64)",
        json_schema_extra={"pattern": NAME_PATTERN, "minLength": 1, "maxLength": 64},
    )
    config: ProcessSpec = Field(default_factory=ProcessSpec, description="Like a manifest")


#: The longest POST /inject waits for an event's outcome.
MAX_INJECT_WAIT: Final = 300


class InjectEvent(_Strict):
    """POST /api/v1/processes/{name}/inject."""

    payload: Any = Field(default_factory=dict, description="The event's JSON payload")
    trigger_id: str = Field(default="api", min_length=1, max_length=200)
    trigger_type: str = Field(default="manual", min_length=1, max_length=100)
    traceparent: str | None = Field(
        default=None,
        description="W3C trace context of the caller: the event's spans are its children",
        # As check_traceparent takes it (which also refuses all-zero ids).
        json_schema_extra={"pattern": TRACEPARENT_PATTERN},
    )
    wait: float = Field(
        default=0,
        ge=0,
        le=MAX_INJECT_WAIT,
        description="Seconds to wait for the event's outcome (status 'done' with its outcome, "
        "or 'dead_lettered', e.g. refused by a user_prompt_submit hook); 0: answer once queued",
    )


class Redeliver(_Strict):
    """POST /api/v1/processes/{name}/dead-letters/redeliver."""

    event_ids: list[str] | None = Field(default=None, description="Which ones (default: all)")


# -- the table ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Param:
    """A path or query parameter: its name, what it means, the JSON Schema of its value."""

    name: str
    description: str = ""
    schema: Mapping[str, Any] | None = None


#: The ``{name}`` of every process path: the process, as ``validate_name`` takes it.
PROCESS: Final = Param("name", schema=NAME_SCHEMA)
#: A path parameter: ``{name}`` or ``{name:converter}`` (starlette's syntax).
_PATH_PARAM: Final = re.compile(r"{(\w+)(?::\w+)?}")


@dataclass(frozen=True, slots=True)
class Operation:
    """One method on one path: how it is served and how the document describes it.

    ``endpoint`` names the method serving it, ``"owner.method"``, on the OrchestrationAPI
    (``api``) or on one of its endpoint groups (``hooks``, ``changes``, ``approvals``,
    ``observe``).
    ``query`` is every query parameter it takes (``query_params`` refuses any other);
    ``path_params`` describes its path's parameters other than ``{name}``. ``ok`` is the
    status of its answer, of type ``media``; ``errors`` the error statuses it may answer
    beyond those its parameters and body imply. ``public``: served without the token;
    ``prefixed``: under PREFIX.
    """

    method: str
    path: str
    endpoint: str
    summary: str
    ok: str = "200"
    body: type[BaseModel] | None = None
    body_required: bool = False
    path_params: tuple[Param, ...] = ()
    query: tuple[Param, ...] = ()
    errors: tuple[str, ...] = ()
    media: str = "application/json"
    public: bool = False
    prefixed: bool = True

    @property
    def served_at(self) -> str:
        """The path as routed (with starlette's converters, e.g. ``{selector:path}``)."""
        return PREFIX + self.path if self.prefixed else self.path

    @property
    def documented_at(self) -> str:
        """The path as the OpenAPI document writes it (no converters)."""
        return _PATH_PARAM.sub(r"{\1}", self.served_at)

    @property
    def query_names(self) -> tuple[str, ...]:
        return tuple(param.name for param in self.query)

    def path_parameters(self) -> list[Param]:
        """Its path's parameters in order, each described (ValueError for one that is not)."""
        names = _PATH_PARAM.findall(self.path)
        described = {param.name: param for param in self.path_params}
        if sorted(name for name in names if name != "name") != sorted(described):
            raise ValueError(f"{self.method} {self.path}: describe exactly its path parameters")
        return [PROCESS if name == "name" else described[name] for name in names]


_get = functools.partial(Operation, "GET")
_post = functools.partial(Operation, "POST")

_RUNS_OUTCOMES: Final = list(dict.fromkeys((*OUTCOMES, *OUTCOME_ALIASES)))
_ONLY_PROCESS: Final = Param("process", "Only this process (404 if there is none)", NAME_SCHEMA)

#: Every operation of the control API, its dashboard and its metrics.
ROUTES: Final[tuple[Operation, ...]] = (
    _get("/health", "api._health", "Runtime health"),
    _get("/openapi.json", "api._openapi", "This document"),
    _get("/processes", "api._list", "List processes"),
    _post(
        "/processes",
        "api._create",
        "Deploy a process (403 COMMANDS_NOT_ALLOWED for command hooks, stdio MCP "
        "servers or open-mode tool creation unless command deploys are allowed; "
        "403 ENV_NOT_ALLOWED for a ${VAR} reference to a host variable the operator "
        "did not allow; 403 MCP_HOST_NOT_ALLOWED for an HTTP MCP server on a host "
        "not allowed). "
        "config.plugins names plugins installed on the host; an unknown name "
        "answers 422 listing the available ones",
        ok="201",
        body=CreateProcess,
        body_required=True,
        errors=("403", "409"),
    ),
    _get(
        "/processes/{name}", "api._detail", "A process: status, configuration, triggers and hooks"
    ),
    Operation("DELETE", "/processes/{name}", "api._delete", "Stop and remove a process"),
    _post("/processes/{name}/start", "api._start", "Start", errors=("409",)),
    _post("/processes/{name}/stop", "api._stop", "Stop", errors=("409",)),
    _post("/processes/{name}/restart", "api._restart", "Restart", errors=("409",)),
    _post(
        "/processes/{name}/inject",
        "api._inject",
        "Inject an event; in a cluster whose Redis does not answer, 503 QUEUE_UNAVAILABLE with "
        "Retry-After (the event is not queued: retry)",
        ok="202",
        body=InjectEvent,
        errors=("503",),
    ),
    Operation(
        "PATCH",
        "/processes/{name}/config",
        "changes.change",
        "Change the configuration: instructions, mission, budget, health (the "
        "restart policy), triggers and MCP servers, each firing config_change with "
        "source 'operator'; or roll the last applied change back (rollback: true, "
        "alone; 409 NOTHING_TO_ROLL_BACK when none is left). A stdio MCP server "
        "answers 403 COMMANDS_NOT_ALLOWED unless command deploys are allowed; a "
        "${VAR} reference to a host variable not allowed, 403 ENV_NOT_ALLOWED; an "
        "HTTP MCP server on a host not allowed, 403 MCP_HOST_NOT_ALLOWED",
        body=ConfigChange,
        body_required=True,
        errors=("403", "409"),
    ),
    _post(
        "/processes/{name}/rewind",
        "changes.rewind",
        "Drop the newest messages of the conversation (config_change 'rewind'); "
        "waits for the runs in flight, 409 PROCESS_BUSY after timeout",
        body=RewindRequest,
        body_required=True,
        errors=("409",),
    ),
    _get(
        "/processes/{name}/approvals",
        "approvals.pending",
        "The tool calls waiting for an approval (journaled: kept over a restart)",
    ),
    _post(
        "/processes/{name}/approvals/{request_id}",
        "approvals.answer",
        "Answer a pending approval: the run waiting on it goes on (after a restart, when it "
        "reaches the call again); 404 APPROVAL_NOT_FOUND for a request not pending",
        body=ApprovalAnswer,
        body_required=True,
        path_params=(
            Param(
                "request_id",
                "The request's id (see GET .../approvals)",
                {"type": "string", "minLength": 1, "maxLength": 200},
            ),
        ),
    ),
    _get("/processes/{name}/hooks", "api._hooks", "The resolved hook chain"),
    _get("/processes/{name}/dead-letters", "api._dead_letters", "List dead letters"),
    Operation("DELETE", "/processes/{name}/dead-letters", "api._clear", "Forget every dead letter"),
    _post(
        "/processes/{name}/dead-letters/redeliver",
        "api._redeliver",
        "Inject dead letters again",
        body=Redeliver,
    ),
    _get(
        "/hooks/events",
        "hooks.events",
        "The lifecycle events: family, whether a hook may block, what a block does, "
        "sync_eligible, matcher fields, and JSON Schemas of the payload and of what a "
        "hook may change",
        query=(
            Param("blockable", "Only blockable (true) or non-blockable (false) events", _FLAG),
            Param("family", "Only the events of this family", {"enum": list(FAMILIES)}),
            Param(
                "sync_only",
                "Only the sync-eligible events: those whose hooks can refuse the "
                "action or change what the process reads back (the others report "
                "what happened: async-only)",
                _FLAG,
            ),
        ),
    ),
    _get(
        "/hooks/catalog",
        "hooks.catalog",
        "Every resolved hook of every process: event, name, source, mode, "
        f"executor_kind ({', '.join(EXECUTOR_KINDS)}), protocol (a command's: tether "
        "or claude-code), priority, order, timeout (as "
        "declared; a command hook's engine backstop is not included) and "
        "timeout_ms, fail_closed (also as required), once, tag, matcher, enabled, "
        "command (never env values), metadata (tag and owner as strings)",
        query=(
            _ONLY_PROCESS,
            Param(
                "event",
                "Only this lifecycle event (or dotted extension point)",
                {"anyOf": [{"enum": _EVENTS}, {"type": "string", "pattern": _DOTTED}]},
            ),
            Param("source", "Only hooks from", {"enum": list(SOURCES)}),
            Param("mode", "Only sync or async hooks", {"enum": list(MODES)}),
        ),
        errors=("404",),
    ),
    _get(
        "/processes/{name}/hooks/runs",
        "hooks.runs",
        "Hook-run history, oldest first. Each run: recorded_at, hook_id, hook_name, "
        "event, process (and process_id), source, mode, outcome, duration_ms, error, "
        "patch_applied, dispatch_id, dispatch_depth, data_before, data_after, "
        "required (the hook's fail_closed; null in runs stored before it was kept), "
        "duration_shared (timed together with the other hooks of a chain found "
        "fast every time: duration_ms is an even share of their time), changes, notice "
        "(what the hook told the operator, or null)",
        query=(
            Param("event", "Only this event", {"enum": _EVENTS}),
            Param(
                "outcome",
                "Only this outcome; document 004's names are taken too: applied, "
                "denied (blocked), failed, rejected (failed), skipped, dropped",
                {"enum": _RUNS_OUTCOMES},
            ),
            Param(
                "hook",
                "Only this hook: its id (a hook of the running runtime: ids are "
                "numbered afresh at each start) or its name (any run)",
                {"type": "string", "minLength": 1, "pattern": r"\S"},
            ),
            Param(
                "since",
                "Only runs at or after this ISO 8601 time (UTC without an offset)",
                {"type": "string", "format": "date-time"},
            ),
            Param(
                "last",
                "Only the last N runs",
                {"type": "integer", "format": "int32", "minimum": 0, "maximum": MAX_LAST},
            ),
        ),
    ),
    _get(
        "/processes/{name}/hooks/stats",
        "hooks.stats",
        "Per hook that ran in the window (an hour unless given): hook_id, "
        "hook_name, event, runs, blocked, errors (failed, timed_out, dropped), "
        "per_bucket and problems_per_bucket (60 slices, oldest first), p50_ms, "
        "p95_ms, block_rate, error_rate, p50_per_step and p95_per_step (12 slices, "
        "null where it did not run), runs_svg and duration_svg (small charts of "
        "them); runs skipped by a matcher are not counted",
        query=(
            Param(
                "window",
                "The span in seconds (default 3600)",
                {"type": "integer", "minimum": 60, "maximum": 86400},
            ),
        ),
    ),
    _post(
        "/processes/{name}/hooks/dry-run",
        "hooks.dry_run",
        "Push a sample event through the resolved chain (command hooks really run); "
        "answers the per-hook trace (outcome, data_before, data_after, duration_ms) "
        "and the decision (blocked, decision: blocked or allowed, reason). Nothing is "
        "queued and the agent "
        "is not touched: every hook sees metadata.dry_run true, plugins do not call "
        "the model, and the warnings and artifacts they would have kept are answered "
        "under 'withheld' (hook_name, action, task_id, message or artifact and "
        "payload) instead.",
        body=DryRunRequest,
        body_required=True,
    ),
    # A tag may contain "/" (e.g. "team/security"), sent as is or as %2F.
    _post(
        "/processes/{name}/hooks/{selector:path}/disable",
        "hooks.disable",
        "Disable hooks of the resolved chain by id or tag, without removing them "
        "(an inherited or shared hook is disabled wherever it runs)",
        path_params=(Param("selector", _SELECTOR),),
    ),
    _post(
        "/processes/{name}/hooks/{selector:path}/enable",
        "hooks.enable",
        "Enable hooks again by id or tag",
        path_params=(Param("selector", _SELECTOR),),
    ),
    _get(
        "/processes/{name}/tasks/{task_id}/artifacts",
        "hooks.artifacts",
        "The artifacts plugins emitted for a task, and the task's plugin warnings",
        path_params=(
            Param(
                "task_id",
                "The task's event id",
                {"type": "string", "pattern": TASK_ID_PATTERN, "maxLength": 200},
            ),
        ),
        errors=("400",),
    ),
    _get(
        "/processes/{name}/tasks",
        "observe.tasks",
        "The ids of the tasks whose timeline the API keeps, newest last",
    ),
    _get(
        "/processes/{name}/tasks/{task_id}/timeline",
        "observe.timeline",
        "A task's timeline: its hook runs (as in the run history, with event_id), "
        "the roles of its run's messages (and tool-call counts; never their text) "
        "and its dead letters. Kept for the last events the API saw",
        path_params=(Param("task_id", "The task's event id"),),
    ),
    _get(
        "/hooks/runs/stream",
        "observe.stream",
        "Live hook runs as server-sent events: 'hook_run' (a run as in the "
        "history, with event_id) and 'lost' ({count}: runs dropped because the "
        "client fell behind); ': keep-alive' comments when idle",
        query=(
            _ONLY_PROCESS,
            Param("event", "Only this event", {"enum": _EVENTS}),
            Param("outcome", "Only this outcome", {"enum": list(OUTCOMES)}),
            Param("hook_name", "Only the runs of hooks of this name"),
        ),
        errors=("404",),
        media="text/event-stream",
    ),
    _post(
        "/events",
        "observe.publish",
        "Publish a runtime event: every process with an event trigger of this "
        "event_type gets one event (answers their ids)",
        ok="202",
        body=PublishEvent,
        body_required=True,
    ),
    _get(
        "/metrics",
        "observe.metrics",
        "Prometheus metrics (text format); the token is needed unless the "
        "operator serves them open to this machine (open_metrics)",
        errors=("503",),
        media="text/plain",
        prefixed=False,
    ),
    _get(
        "/",
        "observe.index",
        "The dashboard (a page with no data of its own)",
        media="text/html",
        public=True,
        prefixed=False,
    ),
    _get(
        "/dashboard/{file}",
        "observe.asset",
        "The dashboard's files",
        path_params=(Param("file", "index.html, app.js or app.css"),),
        media="text/plain",
        public=True,
        prefixed=False,
    ),
)
