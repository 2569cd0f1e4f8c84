"""claude_code_hooks() refuses at once a path that is not a regular file, or a file over
1 MiB, naming the file, its type or size, and the limit (as a manifest is refused)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from tether import ClaudeCodeHooksError, claude_code_hooks
from tether.hooks._files import MAX_FILE_BYTES

HOOKS = {"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "notify done"}]}]}}


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_dev_zero_is_refused_at_once_as_not_a_regular_file() -> None:
    """Regression: it was read whole (read_text), until memory ran out."""
    with pytest.raises(ClaudeCodeHooksError) as caught:
        claude_code_hooks("/dev/zero")
    assert str(caught.value) == "/dev/zero: not a regular file (a character device)"


@pytest.mark.slow
def test_a_named_pipe_without_a_writer_is_refused_without_waiting(tmp_path: Path) -> None:
    """Regression: opening it waited for a writer, for ever. Run in a subprocess: a
    regression fails at the timeout instead of hanging the suite."""
    fifo = tmp_path / "settings.json"
    os.mkfifo(fifo)
    program = (
        "import sys, tether\n"
        "try:\n"
        "    tether.claude_code_hooks(sys.argv[1])\n"
        "except tether.ClaudeCodeHooksError as exc:\n"
        "    print(exc)\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, str(fifo)], capture_output=True, text=True, timeout=10
    )
    assert done.stdout == f"{fifo}: not a regular file (a named pipe)\n", done.stderr


def test_a_file_over_one_mebibyte_is_refused_naming_its_size_and_the_limit(
    tmp_path: Path,
) -> None:
    big = tmp_path / "settings.json"
    big.write_text(json.dumps(HOOKS) + " " * MAX_FILE_BYTES)
    size = big.stat().st_size
    with pytest.raises(ClaudeCodeHooksError) as caught:
        claude_code_hooks(big)
    assert str(caught.value) == (
        f"{big}: the file is {size} bytes; a Claude Code hooks file may have at most "
        "1048576 bytes (1 MiB)"
    )


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "settings.json"
    text = json.dumps(HOOKS)
    path.write_text(text + " " * (MAX_FILE_BYTES - len(text)))
    assert path.stat().st_size == MAX_FILE_BYTES
    assert [hook.event for hook in claude_code_hooks(path)] == ["agent_stop"]
