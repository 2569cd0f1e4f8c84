"""One route table both serves the control API and describes it: the OpenAPI document is
generated from the declarations that build the routes, so the two cannot drift."""

from __future__ import annotations

import re

import httpx
import pytest

from tether import OrchestrationAPI
from tether.api._openapi import openapi_document
from tether.api._routes import ROUTES, Operation, Param

DOCUMENT = openapi_document(secured=False)
WITH_QUERY = [route for route in ROUTES if route.query]


def _concrete(path: str) -> str:
    return re.sub(r"\{[^}]+\}", "p", path)


@pytest.fixture
async def deployed(client: httpx.AsyncClient) -> httpx.AsyncClient:
    """``client``, its API running the process ``p``."""
    r = await client.post("/processes", json={"name": "p", "config": {"model": "scripted"}})
    assert r.status_code == 201
    return client


def test_each_route_is_one_operation_of_the_document() -> None:
    documented = {
        (method.upper(), path) for path, ops in DOCUMENT["paths"].items() for method in ops
    }
    declared = [(route.method, route.documented_at) for route in ROUTES]

    assert len(set(declared)) == len(declared)
    assert set(declared) == documented


@pytest.mark.parametrize("route", ROUTES, ids=lambda r: f"{r.method} {r.path}")
def test_each_operation_says_what_its_declaration_says(route: Operation) -> None:
    operation = DOCUMENT["paths"][route.documented_at][route.method.lower()]
    params = operation.get("parameters", [])

    assert operation["summary"] == route.summary
    assert list(operation["responses"][route.ok]["content"]) == [route.media]
    assert [p["name"] for p in params if p["in"] == "query"] == list(route.query_names)
    assert [p["name"] for p in params if p["in"] == "path"] == re.findall(r"{(\w+)", route.path)
    for status in route.errors:
        assert status in operation["responses"]


@pytest.mark.parametrize(
    "route", [r for r in ROUTES if r.body], ids=lambda r: f"{r.method} {r.path}"
)
def test_a_body_is_described_by_the_json_schema_of_its_model(route: Operation) -> None:
    assert route.body is not None
    body = DOCUMENT["paths"][route.documented_at][route.method.lower()]["requestBody"]
    name = route.body.__name__
    schema = DOCUMENT["components"]["schemas"][name]

    assert body["content"]["application/json"]["schema"] == {"$ref": f"#/components/schemas/{name}"}
    assert body["required"] is route.body_required
    assert set(schema["properties"]) == set(route.body.model_fields)


@pytest.mark.parametrize("route", WITH_QUERY, ids=lambda r: f"{r.method} {r.path}")
async def test_the_server_takes_exactly_the_query_parameters_the_document_lists(
    api: OrchestrationAPI, deployed: httpx.AsyncClient, route: Operation
) -> None:
    url = api.url + _concrete(route.served_at)
    r = await deployed.request(route.method, url, params={"nope": "1"})

    error = r.json()["error"]
    assert (r.status_code, error["code"]) == (400, "INVALID_QUERY")
    assert error["message"].endswith(f"allowed: {', '.join(route.query_names)}")


@pytest.mark.parametrize(
    ("method", "path"),
    [("POST", "/processes/p/hooks/x/disable"), ("GET", "/processes/p/tasks/t1/artifacts")],
)
async def test_a_route_that_checks_its_query_and_declares_none_refuses_any(
    deployed: httpx.AsyncClient, method: str, path: str
) -> None:
    r = await deployed.request(method, path, params={"a": "1"})

    assert r.status_code == 400
    assert r.json()["error"]["message"] == "a: unknown query parameter; allowed: none"


def test_a_path_parameter_left_undescribed_is_refused_by_the_table() -> None:
    route = Operation("GET", "/processes/{name}/things/{thing}", "api._list", "Things")

    with pytest.raises(ValueError, match="describe exactly its path parameters"):
        route.path_parameters()


def test_a_path_converter_is_served_but_not_documented() -> None:
    route = Operation(
        "POST", "/x/{selector:path}/go", "hooks.enable", "Go", path_params=(Param("selector"),)
    )

    assert route.served_at == "/api/v1/x/{selector:path}/go"
    assert route.documented_at == "/api/v1/x/{selector}/go"
    assert [p.name for p in route.path_parameters()] == ["selector"]
