"""A manifest's hooks' before/after: checked as one declaration when the file is loaded (a
cycle is a problem with its path and line); names the manifest lacks are left to the process
(the runtime may share them) unless ``hook_names`` says which names a run adds."""

from __future__ import annotations

from pathlib import Path

import pytest

from _manifest_support import ORDERED, problems, write
from tether import ManifestError, load_manifest

FORWARD = ORDERED.format(field="after", target="audit")

CYCLE = """\
    version: 1
    name: looped
    hooks:
      - event: task_created
        command: ["true"]
        name: x
        after: [y]
      - event: task_created
        command: ["true"]
        name: y
        after: [x]
      - event: task_completed
        command: ["true"]
        name: x
        after: [y]
    """


def test_a_cycle_among_a_manifests_hooks_is_a_problem_at_the_field_that_closes_it(
    tmp_path: Path,
) -> None:
    assert problems(tmp_path, CYCLE) == [
        "11: hooks[1].after: hook 'y': hooks' before/after make a cycle: 'x' -> 'y' -> 'x'"
    ]


def test_a_name_the_manifest_lacks_is_left_to_the_run_by_default(tmp_path: Path) -> None:
    manifest = load_manifest(write(tmp_path, FORWARD))
    assert [h.name for h in manifest.hooks] == ["report", "redact"]


def test_with_hook_names_a_name_neither_declared_nor_given_is_a_problem(tmp_path: Path) -> None:
    path = write(tmp_path, FORWARD)
    with pytest.raises(ManifestError) as caught:
        load_manifest(path, hook_names=["policy"])
    assert [(e.line, e.path) for e in caught.value.errors] == [(11, "hooks[1].after")]
    assert "after names 'audit', which no hook of task_created's chain is called" in str(
        caught.value
    )
    assert load_manifest(path, hook_names=["audit"]).name == "ordered"
