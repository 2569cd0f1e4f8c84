"""``tether validate`` refuses what cannot be a manifest at once (a device, a FIFO, a directory,
a file over 1 MiB), and an error never quotes more of a file than the offending line."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from _cli_support import validate
from tether.manifest import MAX_MANIFEST_BYTES, ManifestError, load_manifest

GOOD = 'version: "1.0"\nname: ok\nmodel: scripted\ninstructions: You help.\n'


@pytest.mark.slow
@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="no /dev/zero here")
def test_validate_of_dev_zero_is_refused_at_once_as_not_a_regular_file() -> None:
    done = validate("/dev/zero")
    assert done.returncode == 1
    assert done.stderr == "error: /dev/zero: not a regular file (a character device)\n"


def test_a_named_pipe_without_a_writer_is_refused_without_waiting(tmp_path: Path) -> None:
    fifo = tmp_path / "pipe.agent"
    os.mkfifo(fifo)
    with pytest.raises(ManifestError, match=r"not a regular file \(a named pipe\)"):
        load_manifest(fifo)


@pytest.mark.slow
def test_a_file_over_one_mebibyte_is_refused_naming_its_size_and_the_limit(
    tmp_path: Path,
) -> None:
    big = tmp_path / "big.agent"
    big.write_text(GOOD + "# " + "x" * MAX_MANIFEST_BYTES + "\n")
    done = validate(big)
    assert done.returncode == 1
    size = big.stat().st_size
    assert f"the file is {size} bytes; a manifest may have at most 1048576 bytes" in done.stderr
    assert "x" * 10 not in done.stderr


def test_a_file_of_exactly_the_limit_is_read(tmp_path: Path) -> None:
    path = tmp_path / "full.agent"
    padding = MAX_MANIFEST_BYTES - len(GOOD) - 3
    path.write_text(GOOD + "# " + "x" * padding + "\n")
    assert path.stat().st_size == MAX_MANIFEST_BYTES
    assert load_manifest(path).name == "ok"


def test_a_directory_still_reads_cannot_read_is_a_directory(tmp_path: Path) -> None:
    with pytest.raises(ManifestError, match="cannot read: Is a directory"):
        load_manifest(tmp_path)


@pytest.mark.slow
def test_an_error_quotes_no_more_than_the_offending_line(tmp_path: Path) -> None:
    """A 5,000-character bad name on line 2 is quoted cut short; no other line is quoted."""
    path = tmp_path / "long.agent"
    path.write_text(
        'version: "1.0"\n'
        f"name: {'n' * 5000}\n"
        "model: scripted\n"
        f"instructions: {'OTHER LINE ' * 200}\n"
        f"max_turns: {'t' * 3000}\n"
    )
    done = validate(path)
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2
    assert lines[0].startswith(f"error: {path}:2: name: process name 'nnn")
    assert lines[0].endswith(
        "(5000 characters) is not allowed: use 1-64 letters, digits, "
        "'_', '-' or '.', starting with a letter or digit"
    )
    assert lines[1].startswith(f"error: {path}:5: max_turns: Input should be a valid integer")
    assert "OTHER LINE" not in done.stderr
    assert all(len(line) < len(str(path)) + 350 for line in lines)


def test_every_problem_message_is_cut_to_a_bounded_length() -> None:
    from tether.manifest import MAX_ISSUE_CHARS, ManifestIssue

    error = ManifestError([ManifestIssue("name", 3, "q" * 10_000)], "f.agent")
    assert len(error.errors[0].message) == MAX_ISSUE_CHARS
    assert error.errors[0].message.endswith("...")


@pytest.mark.slow
def test_a_file_that_is_not_utf8_is_refused_without_quoting_it(tmp_path: Path) -> None:
    path = tmp_path / "binary.agent"
    path.write_bytes(b"name: \xff\xfe" + b"\x00" * 5000)
    done = validate(path)
    assert done.returncode == 1
    assert "cannot read: 'utf-8' codec can't decode byte 0xff" in done.stderr
    assert len(done.stderr) < 300
