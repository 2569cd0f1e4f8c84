"""Writing a manifest into a test's folder and reading back every problem it has."""

from __future__ import annotations

import textwrap
from pathlib import Path
from typing import Any

import pytest
import yaml

from tether import ManifestError, load_manifest

#: Two task_created hooks, "report" after "redact"; "redact" names a hook in its own ``field``
#: (before or after): fill in ``field`` and ``target`` with str.format.
ORDERED = """\
    version: 1
    name: ordered
    hooks:
      - event: task_created
        command: ["true"]
        name: report
        after: [redact]
      - event: task_created
        command: ["true"]
        name: redact
        {field}: [{target}]
    """


def write(tmp_path: Path, text: str, name: str = "agent.agent") -> Path:
    """``text`` (dedented) as the file ``name`` in ``tmp_path``."""
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def write_manifest(path: Path, **fields: Any) -> Path:
    """The manifest ``fields`` as YAML in the file ``path`` (for a test that needs a manifest,
    not one that reads its text)."""
    path.write_text(yaml.safe_dump(fields, sort_keys=False))
    return path


def problems(tmp_path: Path, text: str, environ: dict[str, str] | None = None) -> list[str]:
    """Every problem of the manifest ``text`` as 'line: path: message'."""
    path = write(tmp_path, text)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, environ=environ or {})
    return [f"{e.line}: {e.path}: {e.message}" for e in caught.value.errors]
