"""Shared fixtures. Keep this small: a fixture belongs here only when several test files use it."""

from __future__ import annotations

import sys
import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

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
