"""Each lifecycle event is dispatched from exactly one place in src/, so that
``grep -rn HookEvent.TASK_CREATED src`` finds where it comes from."""

from __future__ import annotations

import re
from pathlib import Path

import tether
from tether import HookEvent

SRC = Path(tether.__file__).parent
#: The engine's tables (events, matchers, taxonomy) and the CLI's views name every event
#: without firing any; the eval harness observes task_completed and fires nothing.
TABLES = ("hooks", "cli", "eval")
NAMED = re.compile(r"\bHookEvent\.([A-Z_]+)\b")
BY_STRING = re.compile(r"\b(?:_?emit\w*|dispatch)\(\s*[\"']")


def sources() -> dict[str, list[str]]:
    found: dict[str, list[str]] = {e.name: [] for e in HookEvent}
    for path in sorted(SRC.rglob("*.py")):
        relative = path.relative_to(SRC)
        if relative.parts[0] in TABLES:
            continue
        for number, line in enumerate(path.read_text().splitlines(), 1):
            for name in NAMED.findall(line):
                found[name].append(f"{relative}:{number}")
    return found


def test_every_event_is_fired_from_exactly_one_place_in_src() -> None:
    places = sources()
    wrong = {name: where for name, where in places.items() if len(where) != 1}
    assert wrong == {}


def test_no_event_is_dispatched_by_its_string_value() -> None:
    found = []
    for path in sorted(SRC.rglob("*.py")):
        if path.relative_to(SRC).parts[0] in TABLES:
            continue
        text = path.read_text()
        found += [f"{path.name}: {m.group(0)}" for m in BY_STRING.finditer(text)]
    assert found == []
