"""Operator review of the shipped JSON Schema: a manifest that loads is not flagged by an editor
using the schema where it writes a ``${VAR}`` reference for a number or a flag."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest
import yaml

from tether import load_manifest
from tether.manifest import manifest_json_schema

EXAMPLE = Path(__file__).parents[2] / "examples" / "triage.agent"
TYPED = ("integer", "number", "boolean")


def takes_a_reference(schema: dict[str, Any], value: str) -> bool:
    """Whether ``schema`` offers a string alternative whose pattern finds ``value``'s reference."""
    for option in schema.get("anyOf", []):
        if option.get("type") == "string" and "pattern" in option:
            return re.search(option["pattern"], value) is not None
    return False


def typed_leaves(node: Any, path: str = "#") -> list[tuple[str, dict[str, Any]]]:
    """Every schema in ``node`` that takes an integer, a number or a boolean, with where it is;
    an anyOf's members are reported as the anyOf."""
    found: list[tuple[str, dict[str, Any]]] = []
    if isinstance(node, list):
        for i, item in enumerate(node):
            found += typed_leaves(item, f"{path}/{i}")
        return found
    if not isinstance(node, dict):
        return found
    if node.get("type") in TYPED:
        return [(path, node)]
    for key, value in node.items():
        if key == "anyOf" and any(isinstance(o, dict) and o.get("type") in TYPED for o in value):
            found.append((path, node))
        else:
            found += typed_leaves(value, f"{path}/{key}")
    return found


def test_every_number_or_flag_of_the_schema_takes_a_reference() -> None:
    """Regression: ``webhook_port: ${PORT:-9782}`` loads (the reference is resolved first), but
    the schema only took an integer there, so an editor flagged the shipped example."""
    leaves = typed_leaves(manifest_json_schema())
    assert leaves
    refused = [path for path, schema in leaves if not takes_a_reference(schema, "${X:-1}")]
    assert refused == []


def test_the_shipped_example_uses_a_reference_where_the_schema_takes_one() -> None:
    raw = yaml.safe_load(EXAMPLE.read_text())
    port = raw["triggers"][0]["webhook_port"]
    assert isinstance(port, str)
    assert port.startswith("${")
    webhook = manifest_json_schema()["$defs"]["WebhookTrigger"]["properties"]["webhook_port"]
    assert takes_a_reference(webhook, port)
    assert load_manifest(EXAMPLE, environ={"TRIAGE_WEBHOOK_SECRET": "s"}).triggers[0].webhook_port


@pytest.mark.parametrize(
    ("value", "matches"),
    [
        ("${PORT}", True),
        ("${PORT:-9782}", True),
        ("${RETRIES:-3}", True),
        ("9782", False),
        ("${9PORT}", False),
        ("$${PORT}", False),
        ("PORT", False),
    ],
)
def test_the_reference_pattern_matches_what_a_load_resolves(value: str, matches: bool) -> None:
    schema = manifest_json_schema()["$defs"]["WebhookTrigger"]["properties"]["webhook_port"]
    assert takes_a_reference(schema, value) is matches


def test_a_trigger_type_and_a_choice_keep_their_values() -> None:
    """The editor tells the kinds of trigger apart by ``type``; a choice lists its values."""
    schema = manifest_json_schema()
    cron = schema["$defs"]["CronTrigger"]["properties"]["type"]
    assert (cron["const"], "anyOf" in cron) == ("cron", False)
    assert schema["properties"]["execution_mode"]["enum"] == ["strict", "open"]
