"""The OpenAPI document says what the server does: security only with a token, a 405's Allow
lists every method of its path, and each parameter's pattern, length or enum is the one the
server checks (a value the document allows is never refused as malformed, and back)."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator
from typing import Any

import httpx
import pytest

from tether import AgentRuntime, OrchestrationAPI
from tether.api._openapi import openapi_document
from tether.api._routes import EVENT_ID_PATTERN, NAME_PATTERN
from tether.process._names import validate_name

TOKEN = "rules-token-1"


@pytest.fixture
async def secured(runtime: AgentRuntime) -> AsyncIterator[httpx.AsyncClient]:
    api = OrchestrationAPI(runtime, port=0, token=TOKEN, webhooks=False)
    await api.start()
    headers = {"Authorization": f"Bearer {TOKEN}"}
    async with httpx.AsyncClient(base_url=f"{api.url}/api/v1", headers=headers) as client:
        yield client
    await api.stop()


async def test_without_a_token_the_document_declares_no_security_and_no_401(
    client: httpx.AsyncClient,
) -> None:
    doc = (await client.get("/openapi.json")).json()
    assert "security" not in doc
    assert "securitySchemes" not in doc["components"]
    for path, operations in doc["paths"].items():
        for method, operation in operations.items():
            assert "401" not in operation["responses"], (method, path)


async def test_with_a_token_every_operation_declares_bearer_security_and_its_401(
    secured: httpx.AsyncClient,
) -> None:
    doc = (await secured.get("/openapi.json")).json()
    assert doc["security"] == [{"bearer": []}]
    assert doc["components"]["securitySchemes"] == {"bearer": {"type": "http", "scheme": "bearer"}}
    for operations in doc["paths"].values():
        for op in operations.values():  # every one but the public pages (security: [])
            assert ("401" in op["responses"]) == (op.get("security") != []), op["summary"]
    async with httpx.AsyncClient(base_url=str(secured.base_url)) as anonymous:
        assert (await anonymous.get("/openapi.json")).status_code == 401


def routed(api: OrchestrationAPI) -> dict[str, set[str]]:
    """Every path the app routes, with its methods, as the document writes paths."""
    from starlette.routing import Route

    app: Any = api.app
    while not hasattr(app, "routes"):  # the guard and the cluster router wrap the Starlette app
        app = app.app
    table: dict[str, set[str]] = {}
    for route in app.routes:
        assert isinstance(route, Route)
        path = route.path.replace(":path}", "}")
        table[path] = {m for m in route.methods or () if m != "HEAD"}
    return table


async def test_the_document_lists_exactly_the_routed_paths_and_methods(
    api: OrchestrationAPI, client: httpx.AsyncClient
) -> None:
    doc = (await client.get("/openapi.json")).json()
    documented = {path: {m.upper() for m in ops} for path, ops in doc["paths"].items()}
    assert documented == routed(api)


@pytest.mark.parametrize("method", ["OPTIONS", "PUT", "TRACE"])
async def test_a_405_allows_every_method_of_its_path(
    api: OrchestrationAPI, client: httpx.AsyncClient, method: str
) -> None:
    """Regression: OPTIONS /api/v1/processes answered 'allow: HEAD, GET', without POST."""
    for path, methods in routed(api).items():
        concrete = re.sub(r"\{[^}]+\}", "x", path)
        r = await client.request(method, f"{api.url}{concrete}")
        assert r.status_code == 405, (method, path, r.status_code)
        allowed = {m.strip() for m in r.headers["allow"].split(",")}
        expected = methods | ({"HEAD"} if "GET" in methods else set())
        assert allowed == expected, (method, path)
        assert r.json()["error"]["code"] == "METHOD_NOT_ALLOWED"


NAMES = ["a", "A9", "a.b", "a.", "a-_.x", "x" * 64, "", ".a", "-a", "a..b", "x" * 65, "é", "a b"]


@pytest.mark.parametrize("name", NAMES)
def test_the_name_pattern_is_what_validate_name_takes(name: str) -> None:
    try:
        validate_name(name)
        taken = True
    except ValueError:
        taken = False
    assert (re.fullmatch(NAME_PATTERN.strip("^$"), name) is not None and len(name) <= 64) == taken


@pytest.mark.parametrize(
    ("task_id", "taken"),
    [
        ("abc", True),
        ("a.b-c_d", True),
        (".a", True),
        ("a.", True),
        ("a..b", False),
        (".", False),
        ("..", False),
        ("é", False),
        ("x" * 200, True),
        ("x" * 201, False),
    ],
)
async def test_the_task_id_pattern_is_what_the_artifacts_endpoint_takes(
    client: httpx.AsyncClient, task_id: str, taken: bool
) -> None:
    await client.post("/processes", json={"name": "triage", "config": {"model": "scripted"}})
    matches = re.fullmatch(EVENT_ID_PATTERN.strip("^$"), task_id) is not None
    assert (matches and len(task_id) <= 200) == taken
    r = await client.get(f"/processes/triage/tasks/{task_id}/artifacts")
    assert (r.status_code == 200) == taken, r.text


async def test_an_empty_or_malformed_process_filter_is_400_and_an_unknown_one_404(
    client: httpx.AsyncClient,
) -> None:
    empty = await client.get("/hooks/catalog", params={"process": ""})
    unknown = await client.get("/hooks/catalog", params={"process": "nobody"})
    assert (empty.status_code, empty.json()["error"]["code"]) == (400, "INVALID_QUERY")
    assert (unknown.status_code, unknown.json()["error"]["code"]) == (404, "PROCESS_NOT_FOUND")


def test_the_dry_run_event_and_the_catalog_event_are_declared_as_the_server_checks() -> None:
    doc = openapi_document(secured=False)
    dry_run = doc["components"]["schemas"]["DryRunRequest"]["properties"]["event"]
    assert "session_start" in dry_run["enum"]
    assert "pre_tool_use" in dry_run["enum"]
    catalog = doc["paths"]["/api/v1/hooks/catalog"]["get"]
    [event] = [p for p in catalog["parameters"] if p["name"] == "event"]
    [events, dotted] = event["schema"]["anyOf"]
    assert events["enum"] == dry_run["enum"]
    assert re.fullmatch(dotted["pattern"].strip("^$"), "prompt.render")
    assert not re.fullmatch(dotted["pattern"].strip("^$"), ".prompt")


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"rollback": 0}, "rollback"),
        ({"instructions": 5}, "instructions"),
        ({"budget": {"max_runs_per_day": True}}, "budget.max_runs_per_day"),
    ],
)
async def test_a_json_value_of_the_wrong_type_is_refused_not_coerced(
    client: httpx.AsyncClient, body: dict[str, Any], field: str
) -> None:
    """Regression: ``{"rollback": 0}`` was taken as false, ``true`` as a number."""
    await client.post("/processes", json={"name": "triage", "config": {"model": "scripted"}})
    r = await client.patch("/processes/triage/config", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["error"]["details"][0]["path"] == field
