"""``tether validate`` of a manifest naming, in ``claude_code_hooks``, what cannot be a hooks
file (a device, a FIFO, a file over 1 MiB) refuses it at once, naming the file."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest

from _cli_support import validate
from tether.hooks._files import MAX_FILE_BYTES

pytestmark = pytest.mark.slow


def naming(tmp_path: Path, hooks_file: str | Path) -> Path:
    manifest = tmp_path / "shop.agent"
    manifest.write_text(f"name: shop\nmodel: scripted\nclaude_code_hooks: [{hooks_file}]\n")
    return manifest


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_a_manifest_naming_dev_zero_is_refused_at_once(tmp_path: Path) -> None:
    """Regression: validate read /dev/zero until memory ran out."""
    manifest = naming(tmp_path, "/dev/zero")
    done = validate(manifest, timeout=10)
    assert done.returncode == 1
    assert done.stderr == (
        f"error: {manifest}:3: claude_code_hooks[0]: /dev/zero: not a regular file "
        "(a character device)\n"
    )


def test_a_manifest_naming_a_named_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    """Regression: validate hung, waiting for a writer of the FIFO."""
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    manifest = naming(tmp_path, fifo)
    done = validate(manifest, timeout=10)
    assert done.returncode == 1
    assert f"claude_code_hooks[0]: {fifo}: not a regular file (a named pipe)" in done.stderr


def test_a_manifest_naming_a_file_over_one_mebibyte_is_refused_naming_its_size(
    tmp_path: Path,
) -> None:
    big = tmp_path / "settings.json"
    hooks = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify"}]}]}}
    big.write_text(json.dumps(hooks) + " " * MAX_FILE_BYTES)
    manifest = naming(tmp_path, big)
    done = validate(manifest, timeout=10)
    assert done.returncode == 1
    assert (
        f"claude_code_hooks[0]: {big}: the file is {big.stat().st_size} bytes; a Claude Code "
        "hooks file may have at most 1048576 bytes (1 MiB)"
    ) in done.stderr
