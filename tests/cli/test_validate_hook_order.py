"""``tether validate`` checks a manifest's hooks' before/after: a cycle is always an error, a
name no hook of the manifest has is one unless given with --runtime-hook (a hook the runtime
shares); each error with its path and line."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import pytest

from _cli_support import validate
from _manifest_support import ORDERED

pytestmark = pytest.mark.slow


def manifest(tmp_path: Path, target: str, field: str = "after") -> Path:
    """Two hooks: report after redact (declared later), and redact ``field`` ``target``."""
    path = tmp_path / "ordered.agent"
    path.write_text(textwrap.dedent(ORDERED.format(field=field, target=target)))
    return path


def test_a_forward_reference_among_the_manifests_hooks_is_valid(tmp_path: Path) -> None:
    done = validate(manifest(tmp_path, "report", field="before"))
    assert done.returncode == 0, done.stderr
    assert "ok" in done.stdout


def test_a_cycle_fails_with_the_path_the_line_and_the_cycle(tmp_path: Path) -> None:
    path = manifest(tmp_path, "report")
    done = validate(path)
    assert done.returncode == 1
    assert (
        f"error: {path}:11: hooks[1].after: hook 'redact': hooks' before/after make a cycle: "
        "'report' -> 'redact' -> 'report'"
    ) in done.stderr


def test_a_cycle_fails_even_with_runtime_hooks_given(tmp_path: Path) -> None:
    done = validate("--runtime-hook", "report", manifest(tmp_path, "report"))
    assert done.returncode == 1
    assert "make a cycle" in done.stderr


def test_an_unknown_name_fails_with_the_path_the_line_and_a_hint(tmp_path: Path) -> None:
    path = manifest(tmp_path, "audit")
    done = validate(path)
    assert done.returncode == 1
    assert (
        f"error: {path}:11: hooks[1].after: hook 'redact': after names 'audit', which no hook "
        "of task_created's chain is called; hooks there: 'redact', 'report'"
    ) in done.stderr
    assert "--runtime-hook NAME" in done.stderr


def test_a_name_given_as_a_runtime_hook_is_valid(tmp_path: Path) -> None:
    done = validate("--runtime-hook", "audit", manifest(tmp_path, "audit"))
    assert done.returncode == 0, done.stderr


def test_the_json_report_gives_the_unknown_names_path_and_line(tmp_path: Path) -> None:
    done = validate("--json", manifest(tmp_path, "audit"))
    assert done.returncode == 1
    (report,) = json.loads(done.stdout)["files"]
    assert [(e["path"], e["line"]) for e in report["errors"]] == [("hooks[1].after", 11)]
