"""Types of the eval harness's tests (the ``write_pack`` fixture is in tests/conftest.py)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

#: Writes a pack (dedented YAML) into tmp_path and returns its path.
PackFactory = Callable[..., Path]
