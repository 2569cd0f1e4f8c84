"""The hook endpoints of the control API: taxonomy, catalog, run history, enable/disable,
dry runs, and the artifacts plugins emit beside a trigger event.

Every filter is checked: an unknown parameter or value answers 400 INVALID_QUERY naming the
parameter and the values it takes, so a typo never silently widens (or empties) an answer.
"""

from __future__ import annotations

import re
import time
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any, Final

from pydantic import BaseModel, ConfigDict, Field
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from ..hooks import OUTCOMES, HookEvent
from ..process import validate_name
from ._errors import APIError
from ._http import bad_query, query_params
from ._views import artifact_view, catalog_entry

if TYPE_CHECKING:
    from ._host import ApiHost

__all__ = ["SOURCES", "DryRunRequest", "HookEndpoints"]

#: Where a catalogued hook came from.
SOURCES: Final = ("code", "config", "manifest", "plugin", "inherited", "shared")
MODES: Final = ("sync", "async")
_EVENTS: Final = tuple(e.value for e in HookEvent)
_EVENT_ORDER: Final = {name: i for i, name in enumerate(_EVENTS)}
#: What the artifact stores accept as a task id (they name files after it): letters, digits,
#: '_', '-' and '.', never two dots in a row nor only dots (as the document's EVENT_ID_PATTERN).
_EVENT_ID: Final = re.compile(r"\.?(?:[A-Za-z0-9_-]\.?)+")  # fullmatch: "$" lets "id\n" in
#: The largest ``last`` a runs query takes (a signed 32-bit count, as the reference has it).
MAX_LAST: Final = 2**31 - 1
_DIGITS: Final = re.compile(r"^[0-9]{1,12}$")
#: A time's UTC offset whose '+' a query string decoded as a space.
_DECODED_PLUS: Final = re.compile(r" (\d{2}(?::?\d{2})?)$")


class DryRunRequest(BaseModel):
    """POST /api/v1/processes/{name}/hooks/dry-run."""

    model_config = ConfigDict(extra="forbid")

    event: str = Field(
        description="A lifecycle event, for example 'user_prompt_submit'",
        json_schema_extra={"enum": list(_EVENTS)},
    )
    data: dict[str, Any] = Field(
        default_factory=dict, description="The sample event data the hooks receive"
    )


def _outcome(params: dict[str, str]) -> str | None:
    """The ``outcome`` filter: one of tether's outcomes, or a name of document 004's."""
    value = _choice(params, "outcome", _OUTCOME_FILTERS)
    return OUTCOME_ALIASES.get(value, value) if value is not None else None


def _choice(params: dict[str, str], name: str, allowed: tuple[str, ...]) -> str | None:
    value = params.get(name)
    if value is not None and value not in allowed:
        raise bad_query(name, f"unknown value {value!r}; allowed: {', '.join(allowed)}")
    return value


def _event_filter(params: dict[str, str], *, extension_points: bool) -> str | None:
    """A lifecycle event (or, in the catalog, a dotted extension-point name)."""
    value = params.get("event")
    if value is None or value in _EVENTS:
        return value
    if extension_points and "." in value and value.strip(".") == value and " " not in value:
        return value
    tail = " or a dotted extension-point name" if extension_points else ""
    raise bad_query("event", f"unknown event {value!r}; allowed: {', '.join(_EVENTS)}{tail}")


def _since(value: str | None) -> datetime | None:
    """An ISO 8601 time (``Z`` or an offset; without one, UTC), aware."""
    if value is None:
        return None
    text = value.strip().replace("Z", "+00:00")
    try:
        when = datetime.fromisoformat(text)
    except ValueError:
        # The '+' of an offset written raw in a URL arrives as a space ("T09:30:00 01:00").
        try:
            when = datetime.fromisoformat(_DECODED_PLUS.sub(r"+\1", text))
        except ValueError:
            raise bad_query(
                "since", f"{value!r} is not an ISO 8601 time (e.g. 2025-01-31T09:30:00Z)"
            ) from None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    return when


def _last(value: str | None) -> int | None:
    """A count of runs: ASCII digits, at most MAX_LAST (the reference's int32)."""
    if value is None:
        return None
    digits = value.strip()
    if not _DIGITS.match(digits) or int(digits) > MAX_LAST:
        raise bad_query("last", f"{value!r} is not a whole number >= 0 (at most {MAX_LAST})")
    return int(digits)


#: The spans the hook charts take, in seconds: a minute to a day.
MIN_WINDOW: Final = 60
MAX_WINDOW: Final = 86_400


def _window(value: str | None, default: int) -> int:
    """The charts' span: whole seconds from MIN_WINDOW to MAX_WINDOW."""
    if value is None:
        return default
    digits = value.strip()
    if not _DIGITS.match(digits) or not MIN_WINDOW <= int(digits) <= MAX_WINDOW:
        raise bad_query(
            "window",
            f"{value!r} is not a whole number of seconds from {MIN_WINDOW} to {MAX_WINDOW}",
        )
    return int(digits)


def _hook_filter(value: str | None) -> str | None:
    """A hook id (``hook-3``) or name; an empty one could only ever match nothing."""
    if value is not None and not value.strip():
        raise bad_query("hook", f"{value!r} is empty; give a hook id (e.g. hook-3) or a name")
    return value


#: The spellings a boolean query parameter takes (case aside).
_TRUE: Final = ("true", "1", "yes", "on")
_FALSE: Final = ("false", "0", "no", "off")


def _bool(params: dict[str, str], name: str) -> bool | None:
    value = params.get(name)
    if value is None:
        return None
    lowered = value.lower()
    if lowered not in _TRUE + _FALSE:
        allowed = ", ".join(_TRUE + _FALSE)
        raise bad_query(name, f"unknown value {value!r}; allowed: {allowed}")
    return lowered in _TRUE


#: The outcome names of document 004's run history, as the filters of tether's outcomes they
#: stand for (docs/history.md): a hook that refused is ``blocked``; one whose answer could not
#: be used (``rejected``) is recorded ``failed``.
OUTCOME_ALIASES: Final = {
    "applied": "applied",
    "denied": "blocked",
    "failed": "failed",
    "skipped": "skipped",
    "dropped": "dropped",
    "rejected": "failed",
}
_OUTCOME_FILTERS: Final = tuple(dict.fromkeys((*OUTCOMES, *OUTCOME_ALIASES)))


def _run_view(run: dict[str, Any]) -> dict[str, Any]:
    """A run record as the API answers it: ``process`` names the process, as in the catalog
    (``process_id`` is kept for the clients that read it)."""
    run["process"] = run["process_id"]
    return run


def _catalog_order(entry: dict[str, Any]) -> tuple[int, str, int]:
    event = entry["event"]
    return (_EVENT_ORDER.get(event, len(_EVENT_ORDER)), event, entry["order"])


class HookEndpoints:
    """The handlers; each takes the request and answers JSON (errors as APIError)."""

    def __init__(self, api: ApiHost) -> None:
        self.api = api

    async def events(self, request: Request) -> Response:
        from ..hooks import FAMILIES, describe_events

        params = query_params(request)
        blockable = _bool(params, "blockable")
        family = _choice(params, "family", FAMILIES)
        sync_only = _bool(params, "sync_only")
        events = describe_events(blockable=blockable, family=family)
        if sync_only:
            events = [e for e in events if e["sync_eligible"]]
        return JSONResponse({"events": events})

    async def catalog(self, request: Request) -> Response:
        params = query_params(request)
        runtime = self.api.runtime
        name = params.get("process")
        if name is not None and runtime.get(name) is None:
            known = ", ".join(sorted(p.name for p in runtime)) or "none"
            try:
                validate_name(name)
            except ValueError:  # not a name at all: the query is malformed
                raise bad_query(
                    "process", f"no process named {name!r}; processes: {known}"
                ) from None
            raise APIError(
                404, "PROCESS_NOT_FOUND", f"no process named {name!r}; processes: {known}"
            )
        event = _event_filter(params, extension_points=True)
        source = _choice(params, "source", SOURCES)
        mode = _choice(params, "mode", MODES)
        hooks: list[dict[str, Any]] = []
        for process in list(runtime):
            if name is not None and process.name != name:
                continue
            entries = [
                catalog_entry(process, info)
                for info in process.hooks.describe(event)
                if (source is None or info.source == source) and (mode is None or info.mode == mode)
            ]
            hooks += sorted(entries, key=_catalog_order)
        return JSONResponse({"hooks": hooks})

    async def runs(self, request: Request) -> Response:
        process = self.api.process_for(request)
        params = query_params(request)
        filters = {
            "event": _event_filter(params, extension_points=False),
            "outcome": _outcome(params),
            "hook": _hook_filter(params.get("hook")),
            "last": _last(params.get("last")),
        }
        # An aware datetime: compared with the time each run shows (see hook_runs).
        since = _since(params.get("since"))
        runs = [_run_view(run.as_dict()) for run in process.hook_runs(since=since, **filters)]
        return JSONResponse({"name": process.name, "runs": process.redactor.value(runs)})

    async def stats(self, request: Request) -> Response:
        """Per hook, over the last ``window`` seconds (an hour unless given): runs per slice,
        p50 / p95 durations, block and error rates, and the two small charts drawn of them."""
        from ._charts import WINDOW_S, duration_svg, hook_stats, runs_svg

        process = self.api.process_for(request)
        params = query_params(request)
        window = _window(params.get("window"), WINDOW_S)
        now = time.time()
        since = datetime.fromtimestamp(now - window, UTC)
        hooks = hook_stats(process.hook_runs(since=since), now=now, window=window)
        for entry in hooks:
            entry["runs_svg"] = runs_svg(entry, window=window)
            entry["duration_svg"] = duration_svg(entry, window=window)
        answer = {"name": process.name, "window_s": window, "hooks": hooks}
        return JSONResponse(process.redactor.value(answer))

    async def disable(self, request: Request) -> Response:
        return self._set_enabled(request, False)

    async def enable(self, request: Request) -> Response:
        return self._set_enabled(request, True)

    def _set_enabled(self, request: Request, enabled: bool) -> Response:
        process = self.api.process_for(request)
        query_params(request)
        selector = request.path_params["selector"]
        # The whole resolved chain: an inherited or shared hook is one object, so switching it
        # here switches it for every process whose chain runs it (the catalog shows that).
        if process.hooks.set_enabled(selector, enabled, chain=True) == 0:
            raise APIError(
                404,
                "HOOK_NOT_FOUND",
                f"process {process.name!r} has no hook with the id or tag {selector!r}",
            )
        matched = [
            catalog_entry(process, info)
            for info in process.hooks.describe()
            if selector in (info.hook_id, info.tag)
        ]
        return JSONResponse(
            {
                "name": process.name,
                "selector": selector,
                "enabled": enabled,
                "hooks": sorted(matched, key=_catalog_order),
            }
        )

    async def dry_run(self, request: Request) -> Response:

        process = self.api.process_for(request)
        body = await self.api.parsed_body(request, DryRunRequest)
        if body.event not in _EVENTS:
            message = f"unknown hook event {body.event!r}; valid events are: {', '.join(_EVENTS)}"
            raise APIError(
                422,
                "VALIDATION_ERROR",
                f"event: {message}",
                [{"path": "event", "message": message}],
            )
        answer = await process.dry_run(body.event, body.data)
        answer["trace"] = [_run_view(run) for run in answer["trace"]]
        return JSONResponse({"name": process.name, **answer})

    async def artifacts(self, request: Request) -> Response:
        process = self.api.process_for(request)
        query_params(request)
        # The deprecated /tasks/{task_id} path answers under its own word (see _routes).
        key = "event_id" if "event_id" in request.path_params else "task_id"
        event_id = request.path_params[key]
        if len(event_id) > 200 or not _EVENT_ID.fullmatch(event_id):
            word = key.replace("_", " ")
            raise APIError(
                400,
                "BAD_REQUEST",
                f"{word} {event_id!r} is not valid: use letters, digits, '_', '-' and '.'",
            )
        items = process.plugins.artifacts.list(event_id)
        return JSONResponse(
            {
                "name": process.name,
                key: event_id,
                "artifacts": [artifact_view(process, item) for item in items],
                "warnings": process.plugins.task_warnings(event_id),
            }
        )
