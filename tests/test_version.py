"""One version: ``tether.__version__`` (kept in ``tether/_version.py``) is pyproject's."""

from __future__ import annotations

import tomllib
from pathlib import Path

import tether

PYPROJECT = Path(__file__).resolve().parents[1] / "pyproject.toml"


def test_the_version_is_the_one_pyproject_declares() -> None:
    declared = tomllib.loads(PYPROJECT.read_text())["project"]["version"]

    assert tether.__version__ == declared
