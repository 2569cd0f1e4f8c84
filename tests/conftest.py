"""Shared fixtures. Keep this small: a fixture belongs here only when several test files use it."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from tether import AgentRuntime

#: Writes an executable Python script into the test's tmp_path and returns its absolute path.
ScriptFactory = Callable[..., str]


@pytest.fixture
def make_script(tmp_path: Path) -> ScriptFactory:
    """Write ``body`` (dedented) as an executable script run by this interpreter."""

    def make(body: str, name: str = "hook.py") -> str:
        path = tmp_path / name
        path.write_text(f"#!{sys.executable}\n" + textwrap.dedent(body))
        path.chmod(0o755)
        return str(path)

    return make


@pytest.fixture
async def runtime() -> AsyncIterator[AgentRuntime]:
    """A started AgentRuntime with a shared HookManager, stopped after the test."""
    from tether import AgentRuntime, HookManager

    runtime = AgentRuntime(hooks=HookManager())
    await runtime.start_all()
    yield runtime
    await runtime.stop_all()
