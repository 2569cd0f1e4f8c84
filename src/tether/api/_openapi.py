"""The OpenAPI 3.1 document of the control API (``GET /api/v1/openapi.json``), generated from
the route table (``_routes.ROUTES``) and the pydantic models of the request bodies.

It says what the server does, no more: bearer security (and its 401) only when the API has a
token; each parameter's pattern, length or enum as the server checks it, so that a value the
document allows is never refused as malformed (see NAME_PATTERN, EVENT_ID_PATTERN).
"""

from __future__ import annotations

import copy
import functools
from typing import Any, Final

from pydantic.json_schema import models_json_schema

from ._routes import ROUTES, Operation, Param

__all__ = ["openapi_document"]

_ERROR: Final = {"$ref": "#/components/responses/Error"}
_ERROR_SCHEMA: Final = {
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
_DESCRIPTION: Final = (
    "Drive a tether runtime: deploy, start, stop and inspect agent processes, inject "
    "events, handle dead letters, and observe and control hooks (taxonomy, catalog, "
    "run history, enable/disable, dry runs, plugin artifacts). Send "
    "'Authorization: Bearer <token>' when the runtime has a token."
    ' Every error is {"error": {"code", "message"}}.'
)


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
    from .._version import __version__

    paths: dict[str, dict[str, Any]] = {}
    for route in ROUTES:
        paths.setdefault(route.documented_at, {})[route.method.lower()] = _operation(route)
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "tether control API",
            "version": __version__,
            "description": _DESCRIPTION,
        },
        "components": {
            "schemas": _schemas(),
            "responses": {
                "Error": {
                    "description": "An error",
                    "content": {
                        "application/json": {"schema": {"$ref": "#/components/schemas/Error"}}
                    },
                }
            },
        },
        "paths": paths,
    }


def _schemas() -> dict[str, Any]:
    """The JSON Schemas of every body the table names (and of the error answer)."""
    models = list(dict.fromkeys(route.body for route in ROUTES if route.body is not None))
    _, defs = models_json_schema(
        [(model, "validation") for model in models], ref_template="#/components/schemas/{model}"
    )
    return {**defs.get("$defs", {}), "Error": _ERROR_SCHEMA}


def _operation(route: Operation) -> dict[str, Any]:
    """One operation: its parameters, its body and every answer it may give (but the 401)."""
    responses: dict[str, Any] = {"description": "OK", "content": {route.media: {}}}
    operation: dict[str, Any] = {"summary": route.summary, "responses": {route.ok: responses}}
    path_params = route.path_parameters()
    params = [_parameter(p, "path") for p in path_params]
    params += [_parameter(p, "query") for p in route.query]
    if params:
        operation["parameters"] = params
    statuses = ["404"] if path_params else []
    statuses += ["400"] if route.query else []
    if route.body is not None:
        operation["requestBody"] = {
            "required": route.body_required,
            "content": {
                "application/json": {
                    "schema": {"$ref": f"#/components/schemas/{route.body.__name__}"}
                }
            },
        }
        statuses += ["400", "413", "422"]
    for status in (*statuses, *route.errors):
        operation["responses"][status] = _ERROR
    if route.deprecated:
        operation["deprecated"] = True
    if route.public:
        operation["security"] = []  # kept only in a secured document (see openapi_document)
    return operation


def _parameter(param: Param, where: str) -> dict[str, Any]:
    found: dict[str, Any] = {"name": param.name, "in": where, "required": where == "path"}
    if param.description or where == "query":
        found["description"] = param.description
    found["schema"] = dict(param.schema) if param.schema else {"type": "string"}
    return found
