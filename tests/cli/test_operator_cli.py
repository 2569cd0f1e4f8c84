"""Operator review of the ``tether`` command: every bad argument is one line on stderr and a
non-zero exit status (2 for a usage error), never a traceback, and so is an API that cannot be
reached."""

from __future__ import annotations

import functools
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _cli_support import Done, run_cli
from _net_support import free_port

CLI = [sys.executable, "-m", "tether.cli"]
ENV = {**os.environ, "COLUMNS": "200", "NO_COLOR": "1"}


@pytest.fixture
def cli(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """Run ``tether ARGS...`` in this process; returns a Done."""
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    return functools.partial(run_cli, capsys)


def one_error_line(done: Done) -> str:
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith("error: "), done.stderr
    assert "Traceback" not in done.stderr
    return lines[0]


# -- usage errors ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["hooks", "runs", "triage", "--last", "-1"], "--last"),
        (["hooks", "runs", "triage", "--last", "many"], "--last"),
        (["hooks", "runs", "triage", "--interval", "0"], "--interval"),
        (["hooks", "test", "user_prompt_submit", "--command", "true", "--timeout", "x"], "timeout"),
        (["serve", "--port", "http"], "--port"),
        (["hooks", "events", "--blockable", "--family"], "--family"),
    ],
)
def test_a_bad_option_value_exits_2_in_one_line_naming_the_option(
    cli: Any, args: list[str], named: str
) -> None:
    """Regression: typer's own usage errors (it ships its own click) were taken for failures:
    exit status 1 and a bare "error: Input should be greater than or equal to 0"."""
    done = cli(*args)
    assert done.returncode == 2
    assert named in one_error_line(done)


@pytest.mark.parametrize(
    ("args", "named"),
    [
        (["validate"], "FILES"),
        (["run"], "FILE"),
        (["inject"], "NAME"),
        (["hooks", "runs"], "NAME"),
        (["hooks", "dry-run", "triage"], "EVENT"),
        (["hooks", "test", "user_prompt_submit"], "--command"),
    ],
)
def test_a_missing_argument_exits_2_in_one_line(cli: Any, args: list[str], named: str) -> None:
    done = cli(*args)
    assert done.returncode == 2
    assert named.lower() in one_error_line(done).lower()


@pytest.mark.parametrize(
    ("args", "named"),
    [(["nosuchcmd"], "nosuchcmd"), (["ps", "--nope"], "--nope"), (["schema", "extra"], "extra")],
)
def test_an_unknown_command_option_or_argument_exits_2_in_one_line(
    cli: Any, args: list[str], named: str
) -> None:
    done = cli(*args)
    assert done.returncode == 2
    assert named in one_error_line(done)


@pytest.mark.parametrize("args", [[], ["hooks"], ["runtime"]])
def test_a_group_without_a_command_shows_its_help(cli: Any, args: list[str]) -> None:
    """Regression: ``tether`` alone printed "error: Usage: tether [OPTIONS] COMMAND [ARGS]..."
    and nothing else, instead of the help listing the commands."""
    done = cli(*args)
    shown = done.stdout + done.stderr
    assert done.returncode == 2
    assert "Usage: tether" in shown
    assert "Commands" in shown
    assert "error:" not in shown


@pytest.mark.slow
def test_a_usage_error_shows_no_traceback_even_with_debug() -> None:
    done = subprocess.run(
        [*CLI, "--debug", "hooks", "runs", "triage", "--last", "-1"],
        capture_output=True,
        text=True,
        timeout=60,
        env=ENV,
        check=False,
    )
    assert done.returncode == 2
    assert "Traceback" not in done.stderr
    assert "--last" in done.stderr


# -- JSON options ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["inject", "triage", "--payload", '{"amount": 1e400}'], "--payload"),
        (["inject", "triage", "--payload", "-1e999"], "--payload"),
        (["hooks", "dry-run", "triage", "user_prompt_submit", "--data", '{"n": 1e400}'], "--data"),
        (
            ["hooks", "test", "user_prompt_submit", "--command", "true", "--data", '{"n": 1e400}'],
            "--data",
        ),
        (["run", "x.agent", "--inject", '{"n": 1e400}'], "--inject"),
        (["inject", "triage", "--payload", '{"n": NaN}'], "--payload"),
    ],
)
def test_a_json_option_with_a_number_json_cannot_hold_exits_2(
    cli: Any, args: list[str], option: str
) -> None:
    """Regression: 1e400 was read as Infinity; `inject` then failed with "Out of range float
    values are not JSON compliant" and `hooks test` fed the program "Infinity", not JSON."""
    done = cli(*args)
    assert done.returncode == 2
    line = one_error_line(done)
    assert f"{option} is not valid JSON" in line


# -- options checked before a request --------------------------------------------------------


def test_a_since_too_far_back_exits_2_naming_it(cli: Any) -> None:
    """Regression: ``--since 99999999999d`` failed with "Python int too large to convert to C
    int"."""
    done = cli("hooks", "runs", "triage", "--since", "99999999999d", "--url", "http://127.0.0.1:9")
    assert done.returncode == 2
    assert "--since '99999999999d' is too far back" in one_error_line(done)


@pytest.mark.parametrize("url", ["http://[::1", "http://127.0.0.1:99999", "http://exa mple.com"])
def test_a_url_that_is_not_one_is_one_line_naming_it(cli: Any, url: str) -> None:
    """Regression: ``--url http://[::1`` failed with "error: Invalid port: ':1'"."""
    done = cli("ps", "--url", url)
    assert done.returncode == 1
    assert f"--url {url!r} is not a valid URL" in one_error_line(done)


@pytest.mark.parametrize("token", ["tökén", "new\nline"])
def test_a_token_a_header_cannot_carry_is_one_line_naming_the_option(cli: Any, token: str) -> None:
    """Regression: a non-ASCII token failed with "'ascii' codec can't encode character"."""
    done = cli("ps", "--url", f"http://127.0.0.1:{free_port()}", "--token", token)
    assert done.returncode == 1
    line = one_error_line(done)
    assert "--token" in line
    assert token not in line


# -- an API that cannot be reached -----------------------------------------------------------


@pytest.mark.parametrize(
    "args",
    [
        ["inject", "triage", "--payload", "{}"],
        ["ps"],
        ["ps", "--json"],
        ["publish", "deployed"],
        ["hooks", "list"],  # (not "hooks events": it reads the event table offline)
        ["hooks", "runs", "triage"],
        ["hooks", "runs", "triage", "--since", "10m"],
        ["hooks", "enable", "triage", "policy"],
        ["hooks", "disable", "triage", "policy"],
        ["hooks", "dry-run", "triage", "user_prompt_submit", "--data", "{}"],
    ],
)
def test_every_api_command_reports_an_unreachable_api_in_one_line(
    cli: Any, args: list[str]
) -> None:
    url = f"http://127.0.0.1:{free_port()}"
    done = cli(*args, "--url", url)
    assert done.returncode == 1
    assert f"cannot reach the tether API at {url}" in one_error_line(done)
    assert done.stdout == ""


def test_validate_of_a_folder_and_a_missing_file_reports_both(cli: Any, tmp_path: Path) -> None:
    done = cli("validate", str(tmp_path), str(tmp_path / "missing.agent"))
    assert done.returncode == 1
    assert f"error: {tmp_path}: cannot read: Is a directory" in done.stderr
    assert f"error: {tmp_path / 'missing.agent'}: cannot read: No such file" in done.stderr
    assert "0 of 2 manifests are valid" in done.stderr
