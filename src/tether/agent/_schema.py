"""A small JSON Schema check for the arguments of tools described by a schema alone (an MCP
server's tools): the keywords that say what an argument object holds.

Checked: ``type`` (one or a list), ``enum``, ``const``, ``required``, ``properties``,
``additionalProperties`` (false or a schema) and ``items``; other keywords are not checked
(the tool's own side validates them). A code tool is checked by its pydantic model instead.
"""

from __future__ import annotations

from typing import Any

__all__ = ["schema_problems"]

_TYPES: dict[str, tuple[type, ...]] = {
    "object": (dict,),
    "array": (list,),
    "string": (str,),
    "boolean": (bool,),
    "null": (type(None),),
}


def _is(value: Any, kind: str) -> bool:
    if kind == "integer":
        return (isinstance(value, int) and not isinstance(value, bool)) or (
            isinstance(value, float) and value.is_integer()
        )
    if kind == "number":
        return isinstance(value, int | float) and not isinstance(value, bool)
    types = _TYPES.get(kind)
    return True if types is None else isinstance(value, types)


def schema_problems(value: Any, schema: Any, where: str = "arguments") -> list[str]:
    """What in ``value`` the ``schema`` refuses, each as ``path: problem`` (empty: none)."""
    if not isinstance(schema, dict):
        return []
    kind = schema.get("type")
    kinds = [kind] if isinstance(kind, str) else kind if isinstance(kind, list) else []
    if kinds and not any(_is(value, k) for k in kinds if isinstance(k, str)):
        return [f"{where}: expected {' or '.join(map(str, kinds))}, got {type(value).__name__}"]
    if "enum" in schema and isinstance(schema["enum"], list) and value not in schema["enum"]:
        return [f"{where}: {value!r} is not one of {schema['enum']!r}"]
    if "const" in schema and value != schema["const"]:
        return [f"{where}: expected {schema['const']!r}"]
    problems: list[str] = []
    if isinstance(value, dict):
        properties = schema.get("properties")
        properties = properties if isinstance(properties, dict) else {}
        for name in schema.get("required", []) or []:
            if name not in value:
                problems.append(f"{where}.{name}: missing required argument")
        extra = schema.get("additionalProperties", True)
        for name, item in value.items():
            if name in properties:
                problems += schema_problems(item, properties[name], f"{where}.{name}")
            elif extra is False:
                problems.append(f"{where}.{name}: not an argument of this tool")
            elif isinstance(extra, dict):
                problems += schema_problems(item, extra, f"{where}.{name}")
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        for i, item in enumerate(value):
            problems += schema_problems(item, schema["items"], f"{where}[{i}]")
    return problems
