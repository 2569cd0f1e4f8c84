"""The OpenAPI 3.1 document of the control API (``GET /api/v1/openapi.json``)."""

from __future__ import annotations

import functools
from typing import Any

from pydantic.json_schema import models_json_schema

__all__ = ["openapi_document"]

_ERROR = {"$ref": "#/components/responses/Error"}


def _op(
    summary: str,
    *,
    ok: str = "200",
    body: str | None = None,
    name: bool = True,
    errors: tuple[str, ...] = (),
) -> dict[str, Any]:
    op: dict[str, Any] = {
        "summary": summary,
        "responses": {ok: {"description": "OK", "content": {"application/json": {}}}},
    }
    if name:
        op["parameters"] = [
            {"name": "name", "in": "path", "required": True, "schema": {"type": "string"}}
        ]
        op["responses"]["404"] = _ERROR
    if body is not None:
        op["requestBody"] = {
            "required": body == "CreateProcess" or body == "ConfigChange",
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{body}"}}},
        }
        op["responses"]["400"] = _ERROR
        op["responses"]["413"] = _ERROR
        op["responses"]["422"] = _ERROR
    for status in errors:
        op["responses"][status] = _ERROR
    op["responses"]["401"] = _ERROR
    return op


@functools.cache
def openapi_document() -> dict[str, Any]:
    """The document (built once)."""
    from .. import __version__
    from ._api import ConfigChange, CreateProcess, InjectEvent, Redeliver

    _, defs = models_json_schema(
        [(m, "validation") for m in (CreateProcess, InjectEvent, Redeliver, ConfigChange)],
        ref_template="#/components/schemas/{model}",
    )
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
                "events and handle dead letters. Send 'Authorization: Bearer <token>' when the "
                'runtime has a token. Every error is {"error": {"code", "message"}}.'
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
            "securitySchemes": {"bearer": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"bearer": []}],
        "paths": {
            f"{p}/health": {"get": _op("Runtime health", name=False)},
            f"{p}/openapi.json": {"get": _op("This document", name=False)},
            f"{p}/processes": {
                "get": _op("List processes", name=False),
                "post": _op(
                    "Deploy a process (403 COMMANDS_NOT_ALLOWED for command hooks, stdio MCP "
                    "servers or open-mode tool creation unless command deploys are allowed)",
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
                    "Change the configuration (fires config_change with source 'operator')",
                    body="ConfigChange",
                    errors=("409",),
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
        },
    }
