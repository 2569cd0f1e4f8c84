"""The README's and the docs' blocks marked runnable run as printed (issue 30).

Each document's blocks run in order in a folder of their own, in a network namespace of their
own (the docs serve on their fixed ports, 9781 and 9782), through the runner of
_runnable_docs; the marker is described in CONTRIBUTING.md.
"""

from __future__ import annotations

import re
import shlex
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from _runnable_docs import (
    ROOT,
    MarkerError,
    commands,
    documents,
    marked_blocks,
    prepare,
    serves,
)
from _tutorial_support import isolating_prefix

#: One worker runs them all under pytest-xdist: the module's fixture starts every document's
#: runner at once, and a second worker would start them all again.
pytestmark = [pytest.mark.slow, pytest.mark.xdist_group("runnable-docs")]

RUNNER = Path(__file__).resolve().parent / "_runnable_docs.py"
MARKED = [doc for doc in documents() if marked_blocks(doc)]


@pytest.fixture(scope="module")
def runners(
    tmp_path_factory: pytest.TempPathFactory,
) -> Iterator[dict[Path, subprocess.Popen[str]]]:
    """Every document's runner, started at once (each in a namespace of its own: the wait for
    servers to start and stop overlaps)."""
    prefix = isolating_prefix()
    if not prefix:
        pytest.skip("the docs serve on fixed ports: this host cannot give them a network namespace")
    started = {}
    for doc in MARKED:
        work = tmp_path_factory.mktemp(doc.stem)
        prepare(work)
        started[doc] = subprocess.Popen(
            [*prefix, sys.executable, str(RUNNER), str(doc), str(work)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
        )
    yield started
    for runner in started.values():
        if runner.poll() is None:
            runner.kill()
            runner.communicate()


@pytest.mark.parametrize("doc", MARKED, ids=[d.relative_to(ROOT).as_posix() for d in MARKED])
def test_the_runnable_blocks_of_a_document_run_as_printed(
    doc: Path, runners: dict[Path, subprocess.Popen[str]]
) -> None:
    output, _ = runners[doc].communicate(timeout=240)
    assert runners[doc].returncode == 0, output
    ran = re.findall(r"^\S+:\d+: (?:ran|written)", output, re.MULTILINE)
    assert len(ran) == len(marked_blocks(doc)), output


def test_the_blocks_a_new_user_copies_and_runs_are_marked() -> None:
    """The README's and the docs' programs and command sequences a reader copies and runs
    are marked (fragments, placeholders and remote hosts are not)."""
    count = {d.relative_to(ROOT).as_posix(): len(marked_blocks(d)) for d in documents()}
    assert sum(count.values()) >= 26, count
    for doc in ("README.md", "docs/cli.md", "docs/api.md", "docs/eval.md", "docs/history.md"):
        assert count[doc] >= 1, doc


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "page.md"
    path.write_text(text)
    return path


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("<!-- runnable -->\nsome prose\n", "must be right before a ``` fence"),
        ("<!-- runnable -->\n```sh\nls\n", "never closed"),
        ("<!-- runnable -->\n```yaml\na: 1\n```\n", "a yaml block cannot run"),
        ("<!-- runnable: twice -->\n```sh\nls\n```\n", "'exit N' or 'with COMMAND'"),
        ("<!-- runnable: with tether ps -->\n```sh\nls\n```\n", "serves until Ctrl-C"),
    ],
)
def test_a_bad_marker_is_an_error_naming_the_line_and_what_is_allowed(
    tmp_path: Path, text: str, message: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(MarkerError, match=r"^page.md:1: .*" + re.escape(message)):
        marked_blocks(path)


def test_markers_read_files_exit_statuses_and_commands(tmp_path: Path) -> None:
    path = _write(
        tmp_path,
        "<!-- runnable: file a.agent -->\n```yaml\nname: a\n```\n"
        "<!-- runnable: exit 1 -->\n```console\n$ tether eval run \\\n    pack.yaml\nout\n```\n"
        "<!-- runnable -->\n```sh\n# a comment\ntether ps   # all\n\ntether fake-llm &\n```\n"
        "<!-- runnable: with tether serve a.agent -->\n```python\nprint(1)\n```\n",
    )
    file, console, shell, python = marked_blocks(path)
    assert (file.file, file.line, file.text) == ("a.agent", 2, "name: a\n")
    assert console.exit == 1
    assert commands(console) == ["tether eval run      pack.yaml"]
    assert commands(shell) == ["tether ps   # all", "tether fake-llm &"]
    assert shell.exit == 0
    assert (python.lang, python.serving) == ("python", "tether serve a.agent")


@pytest.mark.parametrize(
    ("command", "serving"),
    [
        ("tether serve a.agent --port 9781 &", True),
        ("A=1 B=2 tether serve a.agent", True),
        ("tether run a.agent", True),
        ("tether run a.agent --inject '{}' --until-idle", False),
        ("tether fake-llm --port 8781", True),
        ("tether hooks runs triage --follow", True),
        ("tether ps   # or: tether runtime start", False),
    ],
)
def test_a_command_serves_until_ctrl_c_by_its_words(command: str, serving: bool) -> None:
    assert serves(shlex.split(command, comments=True)) is serving


def _run_page(tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    page = _write(tmp_path, text)
    work = tmp_path / "work"
    work.mkdir()
    prepare(work)
    return subprocess.run(
        [sys.executable, str(RUNNER), str(page), str(work)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def test_the_runner_fails_on_a_command_that_does_not_exit_as_marked(tmp_path: Path) -> None:
    """The runner is no rubber stamp: a command exiting otherwise than its marker says fails
    the document, with the block's line, the command, its status and its output."""
    done = _run_page(tmp_path, "<!-- runnable: exit 1 -->\n```sh\ntether ps --nonsense\n```\n")
    assert done.returncode == 1
    assert done.stdout.startswith("page.md:2: FAILED\ntether ps --nonsense\nexited 2, not 1:")
    assert "No such option: --nonsense" in done.stdout


def test_a_python_block_must_print_what_its_comments_say(tmp_path: Path) -> None:
    """A comment after a print() states its output (a <placeholder> stands for any word)."""
    page = '<!-- runnable -->\n```python\nprint("id-1 ok")  # <id> ok\nprint(2)  # 3\n```\n'
    done = _run_page(tmp_path, page)
    assert done.returncode == 1
    assert done.stdout.endswith("printed:\nid-1 ok\n2\n\nwhere its comments say:\n<id> ok\n3\n")
