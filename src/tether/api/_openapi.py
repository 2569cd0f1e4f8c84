"""The OpenAPI 3.1 document of the control API (``GET /api/v1/openapi.json``).

It says what the server does, no more: bearer security (and its 401) only when the API has a
token; each parameter's pattern, length or enum as the server checks it, so that a value the
document allows is never refused as malformed (see NAME_PATTERN, TASK_ID_PATTERN).
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final

from pydantic.json_schema import models_json_schema

__all__ = ["openapi_document"]

#: A boolean query parameter, as document 004 types it (1/0, yes/no, on/off are taken too).
_FLAG: Final = {"type": "boolean"}

_ERROR = {"$ref": "#/components/responses/Error"}
_SELECTOR = "A hook id or a tag; a tag may contain '/' (sent as is or as %2F)"
#: A process name as ``validate_name`` takes it: a letter or digit, then letters, digits, '_',
#: '-' and '.' (never two dots in a row), at most 64 characters.
NAME_PATTERN: Final = r"^[A-Za-z0-9](?:\.?[A-Za-z0-9_-])*\.?$"
NAME_SCHEMA: Final = {"type": "string", "pattern": NAME_PATTERN, "minLength": 1, "maxLength": 64}
#: A task id as the artifact stores take it: letters, digits, '_', '-' and '.' (never two dots
#: in a row, not only dots), at most 200 characters.
TASK_ID_PATTERN: Final = r"^\.?(?:[A-Za-z0-9_-]\.?)+$"


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
#: A dotted extension-point name: a dot inside, none at either end, no space.
_DOTTED: Final = r"^[^ .][^ ]*\.[^ ]*[^ .]$"


def _path(
    name: str, description: str | None = None, schema: dict[str, Any] | None = None
) -> dict[str, Any]:
    param: dict[str, Any] = {"name": name, "in": "path", "required": True}
    if description:
        param["description"] = description
    param["schema"] = schema or {"type": "string"}
    return param


def _query(name: str, description: str, schema: dict[str, Any] | None = None) -> dict[str, Any]:
    return {
        "name": name,
        "in": "query",
        "required": False,
        "description": description,
        "schema": schema or {"type": "string"},
    }


def _op(
    summary: str,
    *,
    ok: str = "200",
    body: str | None = None,
    name: bool = True,
    errors: tuple[str, ...] = (),
    path: tuple[dict[str, Any], ...] = (),
    query: tuple[dict[str, Any], ...] = (),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {ok: {"description": "OK", "content": {"application/json": {}}}},
    }
    params = ([_path("name", schema=NAME_SCHEMA)] if name else []) + list(path) + list(query)
    if params:
        op["parameters"] = params
    if name or path:
        op["responses"]["404"] = _ERROR
    if query:
        op["responses"]["400"] = _ERROR
    if body is not None:
        op["requestBody"] = {
            "required": body in _REQUIRED_BODIES,
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        }
        op["responses"]["400"] = _ERROR
        op["responses"]["413"] = _ERROR
        op["responses"]["422"] = _ERROR
    for status in errors:
        op["responses"][status] = _ERROR
    return op


_REQUIRED_BODIES = (
    "CreateProcess",
    "ConfigChange",
    "DryRunRequest",
    "RewindRequest",
    "PublishEvent",
    "ApprovalAnswer",
)


def _text(summary: str, media: str, *, public: bool = False) -> dict[str, Any]:
    """An operation answering ``media`` (not JSON); ``public``: served without the token."""
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {"200": {"description": "OK", "content": {media: {}}}},
    }
    if public:
        op["security"] = []  # kept only in a secured document (see openapi_document)
    return op


def openapi_document(*, secured: bool = True) -> dict[str, Any]:
    """The document of an API with a token (``secured``) or without one.

    With a token every operation but the public ones (``security: []``) declares bearer
    security and its 401; without one, no operation declares security or a 401: such an API
    refuses no request for want of a token (it serves loopback only).
    """
    document = copy.deepcopy(_document())
    if secured:
        document["components"]["securitySchemes"] = {"bearer": {"type": "http", "scheme": "bearer"}}
        document["security"] = [{"bearer": []}]
    for operations in document["paths"].values():
        for operation in operations.values():
            public = operation.get("security") == []
            if not secured:
                operation.pop("security", None)
            elif not public:
                operation["responses"]["401"] = _ERROR
    return document


@functools.cache
def _document() -> dict[str, Any]:
    """The document without security (built once)."""
    from .. import __version__
    from ..hooks import HookEvent
    from ..hooks._hook import EXECUTOR_KINDS
    from ..hooks._records import OUTCOMES
    from ..hooks._taxonomy import FAMILIES
    from ._api import CreateProcess, InjectEvent, Redeliver
    from ._approvals import ApprovalAnswer
    from ._changes import ConfigChange, RewindRequest
    from ._hooks import MAX_LAST, MODES, OUTCOME_ALIASES, SOURCES, DryRunRequest
    from ._observe import PublishEvent

    models = (
        CreateProcess,
        InjectEvent,
        Redeliver,
        ConfigChange,
        RewindRequest,
        DryRunRequest,
        PublishEvent,
        ApprovalAnswer,
    )
    _, defs = models_json_schema(
        [(m, "validation") for m in models], ref_template="#/components/schemas/{model}"
    )
    events = [e.value for e in HookEvent]
    schemas: dict[str, Any] = dict(defs.get("$defs", {}))
    schemas["Error"] = {
        "type": "object",
        "required": ["error"],
        "properties": {
            "error": {
                "type": "object",
                "required": ["code", "message"],
                "properties": {
                    "code": {"type": "string", "examples": ["PROCESS_NOT_FOUND"]},
                    "message": {"type": "string"},
                    "details": {
                        "type": "array",
                        "items": {
                            "type": "object",
                            "properties": {
                                "path": {"type": "string"},
                                "message": {"type": "string"},
                            },
                        },
                    },
                },
            }
        },
    }
    p = "/api/v1"
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tether control API",
            "version": __version__,
            "description": (
                "Drive a tether runtime: deploy, start, stop and inspect agent processes, inject "
                "events, handle dead letters, and observe and control hooks (taxonomy, catalog, "
                "run history, enable/disable, dry runs, plugin artifacts). Send "
                "'Authorization: Bearer <token>' when the runtime has a token."
                ' Every error is {"error": {"code", "message"}}.'
            ),
        },
        "components": {
            "schemas": schemas,
            "responses": {
                "Error": {
                    "description": "An error",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                }
            },
        },
        "paths": {
            f"{p}/health": {"get": _op("Runtime health", name=False)},
            f"{p}/openapi.json": {"get": _op("This document", name=False)},
            f"{p}/processes": {
                "get": _op("List processes", name=False),
                "post": _op(
                    "Deploy a process (403 COMMANDS_NOT_ALLOWED for command hooks, stdio MCP "
                    "servers or open-mode tool creation unless command deploys are allowed; "
                    "403 ENV_NOT_ALLOWED for a ${VAR} reference to a host variable the operator "
                    "did not allow; 403 MCP_HOST_NOT_ALLOWED for an HTTP MCP server on a host "
                    "not allowed). "
                    "config.plugins names plugins installed on the host; an unknown name "
                    "answers 422 listing the available ones",
                    ok="201",
                    body="CreateProcess",
                    name=False,
                    errors=("403", "409"),
                ),
            },
            f"{p}/processes/{{name}}": {
                "get": _op("A process: status, configuration, triggers and hooks"),
                "delete": _op("Stop and remove a process"),
            },
            f"{p}/processes/{{name}}/start": {"post": _op("Start", errors=("409",))},
            f"{p}/processes/{{name}}/stop": {"post": _op("Stop", errors=("409",))},
            f"{p}/processes/{{name}}/restart": {"post": _op("Restart", errors=("409",))},
            f"{p}/processes/{{name}}/inject": {
                "post": _op("Inject an event", ok="202", body="InjectEvent")
            },
            f"{p}/processes/{{name}}/config": {
                "patch": _op(
                    "Change the configuration: instructions, mission, budget, health (the "
                    "restart policy), triggers and MCP servers, each firing config_change with "
                    "source 'operator'; or roll the last applied change back (rollback: true, "
                    "alone; 409 NOTHING_TO_ROLL_BACK when none is left). A stdio MCP server "
                    "answers 403 COMMANDS_NOT_ALLOWED unless command deploys are allowed; a "
                    "${VAR} reference to a host variable not allowed, 403 ENV_NOT_ALLOWED; an "
                    "HTTP MCP server on a host not allowed, 403 MCP_HOST_NOT_ALLOWED",
                    body="ConfigChange",
                    errors=("403", "409"),
                )
            },
            f"{p}/processes/{{name}}/rewind": {
                "post": _op(
                    "Drop the newest messages of the conversation (config_change 'rewind'); "
                    "waits for the runs in flight, 409 PROCESS_BUSY after timeout",
                    body="RewindRequest",
                    errors=("409",),
                )
            },
            f"{p}/processes/{{name}}/approvals": {
                "get": _op(
                    "The tool calls waiting for an approval (journaled: kept over a restart)"
                )
            },
            f"{p}/processes/{{name}}/approvals/{{request_id}}": {
                "post": _op(
                    "Answer a pending approval: the run waiting on it goes on (after a restart, "
                    "when it reaches the call again)",
                    body="ApprovalAnswer",
                    path=(_path("request_id", "The request's id (see GET .../approvals)"),),
                )
            },
            f"{p}/processes/{{name}}/hooks": {"get": _op("The resolved hook chain")},
            f"{p}/processes/{{name}}/dead-letters": {
                "get": _op("List dead letters"),
                "delete": _op("Forget every dead letter"),
            },
            f"{p}/processes/{{name}}/dead-letters/redeliver": {
                "post": _op("Inject dead letters again", body="Redeliver")
            },
            f"{p}/hooks/events": {
                "get": _op(
                    "The lifecycle events: family, whether a hook may block, what a block does, "
                    "sync_eligible, matcher fields, and JSON Schemas of the payload and of what a "
                    "hook may change",
                    name=False,
                    query=(
                        _query(
                            "blockable",
                            "Only blockable (true) or non-blockable (false) events",
                            _FLAG,
                        ),
                        _query(
                            "family", "Only the events of this family", {"enum": list(FAMILIES)}
                        ),
                        _query(
                            "sync_only",
                            "Only the sync-eligible events: those whose hooks can refuse the "
                            "action or change what the process reads back (the others report "
                            "what happened: async-only)",
                            _FLAG,
                        ),
                    ),
                )
            },
            f"{p}/hooks/catalog": {
                "get": _op(
                    "Every resolved hook of every process: event, name, source, mode, "
                    f"executor_kind ({', '.join(EXECUTOR_KINDS)}), protocol (a command's: tether "
                    "or claude-code), priority, order, timeout (as "
                    "declared; a command hook's engine backstop is not included) and "
                    "timeout_ms, fail_closed (also as required), once, tag, matcher, enabled, "
                    "command (never env values), metadata (tag and owner as strings)",
                    name=False,
                    query=(
                        _query("process", "Only this process (404 if there is none)", NAME_SCHEMA),
                        _query(
                            "event",
                            "Only this lifecycle event (or dotted extension point)",
                            {"anyOf": [{"enum": events}, {"type": "string", "pattern": _DOTTED}]},
                        ),
                        _query("source", "Only hooks from", {"enum": list(SOURCES)}),
                        _query("mode", "Only sync or async hooks", {"enum": list(MODES)}),
                    ),
                    errors=("404",),
                )
            },
            f"{p}/processes/{{name}}/hooks/runs": {
                "get": _op(
                    "Hook-run history, oldest first. Each run: recorded_at, hook_id, hook_name, "
                    "event, process (and process_id), source, mode, outcome, duration_ms, error, "
                    "patch_applied, dispatch_id, dispatch_depth, data_before, data_after, "
                    "required (the hook's fail_closed; null in runs stored before it was kept), "
                    "duration_shared (timed together with the other hooks of a chain found "
                    "fast every time: duration_ms is an even share of their time)",
                    query=(
                        _query("event", "Only this event", {"enum": events}),
                        _query(
                            "outcome",
                            "Only this outcome; document 004's names are taken too: applied, "
                            "denied (blocked), failed, rejected (failed), skipped, dropped",
                            {"enum": list(dict.fromkeys((*OUTCOMES, *OUTCOME_ALIASES)))},
                        ),
                        _query(
                            "hook",
                            "Only this hook: its id (a hook of the running runtime: ids are "
                            "numbered afresh at each start) or its name (any run)",
                            {"type": "string", "minLength": 1, "pattern": r"\S"},
                        ),
                        _query(
                            "since",
                            "Only runs at or after this ISO 8601 time (UTC without an offset)",
                            {"type": "string", "format": "date-time"},
                        ),
                        _query(
                            "last",
                            "Only the last N runs",
                            {
                                "type": "integer",
                                "format": "int32",
                                "minimum": 0,
                                "maximum": MAX_LAST,
                            },
                        ),
                    ),
                )
            },
            f"{p}/processes/{{name}}/hooks/stats": {
                "get": _op(
                    "Per hook that ran in the window (an hour unless given): hook_id, "
                    "hook_name, event, runs, blocked, errors (failed, timed_out, dropped), "
                    "per_bucket and problems_per_bucket (60 slices, oldest first), p50_ms, "
                    "p95_ms, block_rate, error_rate, p50_per_step and p95_per_step (12 slices, "
                    "null where it did not run), runs_svg and duration_svg (small charts of "
                    "them); runs skipped by a matcher are not counted",
                    query=(
                        _query(
                            "window",
                            "The span in seconds (default 3600)",
                            {"type": "integer", "minimum": 60, "maximum": 86400},
                        ),
                    ),
                )
            },
            f"{p}/processes/{{name}}/hooks/dry-run": {
                "post": _op(
                    "Push a sample event through the resolved chain (command hooks really run); "
                    "answers the per-hook trace (outcome, data_before, data_after, duration_ms) "
                    "and the decision (blocked, decision: blocked or allowed, reason). Nothing is "
                    "queued and the agent "
                    "is not touched: every hook sees metadata.dry_run true, plugins do not call "
                    "the model, and the warnings and artifacts they would have kept are answered "
                    "under 'withheld' (hook_name, action, task_id, message or artifact and "
                    "payload) instead.",
                    body="DryRunRequest",
                )
            },
            f"{p}/processes/{{name}}/hooks/{{selector}}/disable": {
                "post": _op(
                    "Disable hooks of the resolved chain by id or tag, without removing them "
                    "(an inherited or shared hook is disabled wherever it runs)",
                    path=(_path("selector", _SELECTOR),),
                )
            },
            f"{p}/processes/{{name}}/hooks/{{selector}}/enable": {
                "post": _op(
                    "Enable hooks again by id or tag",
                    path=(_path("selector", _SELECTOR),),
                )
            },
            f"{p}/processes/{{name}}/tasks": {
                "get": _op("The ids of the tasks whose timeline the API keeps, newest last")
            },
            f"{p}/processes/{{name}}/tasks/{{task_id}}/timeline": {
                "get": _op(
                    "A task's timeline: its hook runs (as in the run history, with event_id), "
                    "the roles of its run's messages (and tool-call counts; never their text) "
                    "and its dead letters. Kept for the last events the API saw",
                    path=(_path("task_id", "The task's event id"),),
                )
            },
            f"{p}/hooks/runs/stream": {
                "get": {
                    **_op(
                        "Live hook runs as server-sent events: 'hook_run' (a run as in the "
                        "history, with event_id) and 'lost' ({count}: runs dropped because the "
                        "client fell behind); ': keep-alive' comments when idle",
                        name=False,
                        query=(
                            _query(
                                "process", "Only this process (404 if there is none)", NAME_SCHEMA
                            ),
                            _query("event", "Only this event", {"enum": events}),
                            _query("outcome", "Only this outcome", {"enum": list(OUTCOMES)}),
                            _query("hook_name", "Only the runs of hooks of this name"),
                        ),
                    ),
                    "responses": {
                        "200": {"description": "OK", "content": {"text/event-stream": {}}},
                        "400": _ERROR,
                        "404": _ERROR,
                    },
                }
            },
            f"{p}/events": {
                "post": _op(
                    "Publish a runtime event: every process with an event trigger of this "
                    "event_type gets one event (answers their ids)",
                    ok="202",
                    body="PublishEvent",
                    name=False,
                )
            },
            "/metrics": {
                "get": {
                    **_text(
                        "Prometheus metrics (text format); the token is needed unless the "
                        "operator serves them open to this machine (open_metrics)",
                        "text/plain",
                    ),
                    "responses": {
                        "200": {"description": "OK", "content": {"text/plain": {}}},
                        "503": _ERROR,
                    },
                }
            },
            "/": {
                "get": _text(
                    "The dashboard (a page with no data of its own)", "text/html", public=True
                )
            },
            "/dashboard/{file}": {
                "get": {
                    **_text("The dashboard's files", "text/plain", public=True),
                    "parameters": [_path("file", "index.html, app.js or app.css")],
                    "responses": {
                        "200": {"description": "OK", "content": {"text/plain": {}}},
                        "404": _ERROR,
                    },
                }
            },
            f"{p}/processes/{{name}}/tasks/{{task_id}}/artifacts": {
                "get": _op(
                    "The artifacts plugins emitted for a task, and the task's plugin warnings",
                    path=(
                        _path(
                            "task_id",
                            "The task's event id",
                            {"type": "string", "pattern": TASK_ID_PATTERN, "maxLength": 200},
                        ),
                    ),
                    errors=("400",),
                )
            },
        },
    }
