"""The public names of ``tether`` come from one table (``tether/_public.py``): the facade's
``__all__``, what it loads, and the ``__module__`` its classes and functions show."""

from __future__ import annotations

import ast
import importlib
import json
import subprocess
import sys
import types

import pytest

import tether
from _imports_support import SRC


def _imports_for_type_checkers() -> dict[str, str]:
    """Name -> package, as the ``if TYPE_CHECKING:`` block of tether/__init__.py writes it."""
    tree = ast.parse((SRC / "__init__.py").read_text())
    block = next(
        node
        for node in tree.body
        if isinstance(node, ast.If) and ast.unparse(node.test) == "TYPE_CHECKING"
    )
    found: dict[str, str] = {}
    for node in block.body:
        assert isinstance(node, ast.ImportFrom)
        assert node.level == 1
        for alias in node.names:
            assert alias.asname == alias.name, f"import {alias.name} as itself (re-export)"
            found[alias.name] = f"tether.{node.module}"
    return found


def test_the_imports_for_type_checkers_name_every_public_name_once() -> None:
    assert sorted(_imports_for_type_checkers()) == sorted(tether.__all__)


@pytest.mark.parametrize("name", sorted(_imports_for_type_checkers()))
def test_each_import_for_type_checkers_names_the_package_tether_loads_it_from(name: str) -> None:
    package = _imports_for_type_checkers()[name]

    assert getattr(importlib.import_module(package), name) is getattr(tether, name)


#: Packages whose public classes and functions say ``tether`` (approval and manifest keep their
#: own public module paths; so does the dataclass ``Tool``, which pydantic validates).
PUBLISHING = (
    "tether.agent",
    "tether.api",
    "tether.cluster",
    "tether.process",
    "tether.runtime",
    "tether.telemetry",
)


@pytest.mark.parametrize(
    "name",
    sorted(n for n, package in _imports_for_type_checkers().items() if package in PUBLISHING),
)
def test_a_public_class_or_function_says_it_lives_in_tether(name: str) -> None:
    value = getattr(tether, name)
    if isinstance(value, type | types.FunctionType) and name != "Tool":
        assert value.__module__ == "tether"


def test_a_package_says_tether_before_tether_lends_the_name() -> None:
    """Reached through its own package first, a public class already says ``tether``."""
    code = (
        "import json, tether.process, tether.agent, tether.runtime; "
        "print(json.dumps([tether.process.AgentProcess.__module__, "
        "tether.agent.PromptHook.__module__, tether.runtime.AgentRuntime.__module__]))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )

    assert json.loads(out.stdout) == ["tether", "tether", "tether"]


def test_import_tether_loads_the_engine_and_nothing_it_lends_from_elsewhere() -> None:
    code = (
        "import json, sys, tether; "
        "print(json.dumps(sorted(m for m in sys.modules if m.count('.') == 1 "
        "and m.startswith('tether.') and not m.startswith('tether._'))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )

    assert json.loads(out.stdout) == ["tether.errors", "tether.hooks"]


def test_a_process_config_with_tools_validates_after_the_light_import() -> None:
    """Regression: a dataclass pydantic validates (Tool) keeps its defining module, where its
    annotations resolve; saying ``tether`` there broke the first ProcessConfig."""
    code = "from tether import HookConfig, AgentProcess; print(AgentProcess('p').name)"
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )

    assert out.stdout.split() == ["p"]
