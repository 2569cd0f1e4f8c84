"""Tools the agent may call: plain async functions described by a JSON schema."""

from __future__ import annotations

import inspect
import json
import os
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import TetherError

__all__ = ["Tool", "ToolArgumentsError", "as_tool", "tool"]

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


class ToolArgumentsError(TetherError, ValueError):
    """The model sent arguments that do not fit the tool's schema."""


@dataclass(slots=True)
class Tool:
    """One callable tool: name, description, JSON-schema parameters and the async function."""

    name: str
    fn: Callable[..., Awaitable[Any]]
    description: str = ""
    parameters: dict[str, Any] = field(default_factory=dict)
    #: The MCP server the tool comes from (``None``: a code or manifest tool).
    server: str | None = None
    #: Safe to run again when a crash left its outcome unknown (see tether.agent._steps).
    idempotent: bool = False
    _validator: Any = None

    def __post_init__(self) -> None:
        # What the OpenAI API accepts: any other name fails every request that offers it.
        if not isinstance(self.name, str) or not _NAME.fullmatch(self.name):
            raise ValueError(
                f"tool name {self.name!r} must be 1 to 64 letters, digits, '_' and '-'"
            )

    @property
    def validator(self) -> Any:
        """The pydantic model the arguments are validated with (``None``: a tool described by
        its JSON schema alone, e.g. an MCP server's)."""
        return self._validator

    def spec(self) -> dict[str, Any]:
        """The OpenAI tool spec."""
        return {
            "type": "function",
            "function": {
                "name": self.name,
                "description": self.description,
                "parameters": self.parameters,
            },
        }

    def parse_arguments(self, raw: str | dict[str, Any]) -> dict[str, Any]:
        """Parse and validate the model's arguments; raise ToolArgumentsError with the reason."""
        if isinstance(raw, dict):
            args = raw
        else:
            try:
                args = json.loads(raw) if raw and raw.strip() else {}
            except ValueError as exc:
                raise ToolArgumentsError(f"arguments are not valid JSON ({exc})") from None
        if not isinstance(args, dict):
            raise ToolArgumentsError("arguments must be a JSON object")
        if self._validator is not None:
            from pydantic import ValidationError

            try:
                model = self._validator.model_validate(args)
            except ValidationError as exc:
                problems = "; ".join(
                    f"{'.'.join(str(p) for p in e['loc']) or 'arguments'}: {e['msg']}"
                    for e in exc.errors()
                )
                raise ToolArgumentsError(problems) from None
            return {k: getattr(model, k) for k in type(model).model_fields}
        return args


def tool(
    fn: Callable[..., Awaitable[Any]] | None = None,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
) -> Any:
    """Describe an async function as a Tool (usable bare or with arguments). ``idempotent``:
    safe to run again when a crash of the host left a call's outcome unknown."""

    def build(f: Callable[..., Awaitable[Any]]) -> Tool:
        return as_tool(f, name=name, description=description, idempotent=idempotent)

    return build(fn) if fn is not None else build


def as_tool(
    fn: Callable[..., Awaitable[Any]] | Tool,
    *,
    name: str | None = None,
    description: str | None = None,
    idempotent: bool = False,
) -> Tool:
    """A Tool for an async function, its JSON schema inferred from the signature."""
    if isinstance(fn, Tool):
        return fn
    if not inspect.iscoroutinefunction(fn):
        raise TypeError(f"tool {getattr(fn, '__name__', fn)!r} must be an async function")
    from pydantic import ConfigDict, create_model

    sig = inspect.signature(fn)
    hints = inspect.get_annotations(fn, eval_str=True)
    fields: dict[str, Any] = {}
    for pname, param in sig.parameters.items():
        if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
            continue
        annotation = hints.get(pname, Any)
        default = ... if param.default is inspect.Parameter.empty else param.default
        fields[pname] = (annotation, default)
    tool_name = name or fn.__name__
    model = create_model(f"{tool_name}_arguments", __config__=ConfigDict(extra="forbid"), **fields)
    schema = model.model_json_schema()
    schema.pop("title", None)
    for prop in schema.get("properties", {}).values():
        prop.pop("title", None)
    doc = inspect.getdoc(fn) or ""
    return Tool(
        name=tool_name,
        fn=fn,
        description=description or doc.split("\n\n")[0],
        parameters=schema,
        idempotent=idempotent,
        _validator=model,
    )


#: What a tool named by its import path looks like: ``package.module:function``.
_IMPORT_PATH = re.compile(r"[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*:[A-Za-z_][\w]*(\.[A-Za-z_][\w]*)*")


def check_import_path(path: str) -> str:
    """``path`` if it has the shape ``package.module:function``; else a ValueError saying so."""
    if not isinstance(path, str) or not _IMPORT_PATH.fullmatch(path):
        raise ValueError(
            f"tool {path!r} is not an import path; write 'package.module:function' "
            "(an async function, or a Tool, importable on the runtime's host)"
        )
    return path


def import_tool(path: str, folder: str | os.PathLike[str] | None = None) -> Tool:
    """The Tool named by ``path`` (``package.module:function``): the module is imported and
    the attribute made a Tool (an async function's schema is inferred from its signature).
    ``folder`` (a manifest's) is searched for the module first, while it is imported.

    Raises ValueError naming the path and what is wrong (no such module, no such attribute,
    not an async function).
    """
    import importlib
    import sys

    module_name, _, attribute = check_import_path(path).partition(":")
    where = os.fspath(folder) if folder is not None else None
    added = where is not None and where not in sys.path
    if added:
        sys.path.insert(0, where)  # type: ignore[arg-type]
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        searched = f"; searched {where} and sys.path" if where is not None else ""
        raise ValueError(
            f"tool {path!r}: cannot import module {module_name!r} ({exc}{searched})"
        ) from None
    finally:
        if added:
            sys.path.remove(where)  # type: ignore[arg-type]
    target: Any = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValueError(
                f"tool {path!r}: module {module_name!r} has no attribute {attribute!r}"
            ) from None
    try:
        return as_tool(target)
    except TypeError as exc:
        raise ValueError(f"tool {path!r}: {exc}") from None
