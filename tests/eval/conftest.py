"""Fixtures of the eval harness's tests: packs written into the test's folder."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path

import pytest

#: Writes a pack (dedented YAML) into tmp_path and returns its path.
PackFactory = Callable[..., Path]


@pytest.fixture
def write_pack(tmp_path: Path) -> PackFactory:
    def write(text: str, name: str = "pack.yaml") -> Path:
        path = tmp_path / name
        path.write_text(textwrap.dedent(text), encoding="utf-8")
        return path

    return write
