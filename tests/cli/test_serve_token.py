"""``tether serve`` takes its token from TETHER_API_TOKEN or --token-file, so no secret sits on
its command line; --token still works and warns that it shows in ``ps``."""

from __future__ import annotations

import os
import signal
from pathlib import Path

import httpx
import pytest

from _cli_support import CLI, running
from _net_support import free_port

pytestmark = pytest.mark.slow

TOKEN = "s3cret-token-for-serve"
WARNING = "warning: --token shows in `ps` to every user of this machine"


async def serve(*args: str, env: dict[str, str] | None = None) -> tuple[int, str, str, int]:
    """Run ``tether serve ARGS`` until it serves, ask /processes with and without the token,
    stop it; (status without the token, stdout, stderr, status with it)."""
    port = free_port()
    base = {k: v for k, v in os.environ.items() if k != "TETHER_API_TOKEN"}
    env = {**base, "COLUMNS": "200", "NO_COLOR": "1", **(env or {})}
    async with running(*CLI, "serve", "--port", str(port), *args, env=env) as tether:
        await tether.read_until("Ctrl-C stops")
        url = f"http://127.0.0.1:{port}/api/v1/processes"
        async with httpx.AsyncClient() as client:
            anonymous = (await client.get(url)).status_code
            bearer = await client.get(url, headers={"Authorization": f"Bearer {TOKEN}"})
        out, err = await tether.stop(signal.SIGTERM)
    assert tether.proc.returncode == 0, err
    return anonymous, "".join(tether.seen) + out, err, bearer.status_code


async def test_the_token_comes_from_tether_api_token_without_a_warning() -> None:
    anonymous, _, err, bearer = await serve(env={"TETHER_API_TOKEN": TOKEN})
    assert (anonymous, bearer) == (401, 200)
    assert WARNING not in err


async def test_the_token_comes_from_the_first_line_of_a_token_file(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(f"{TOKEN}\n")
    path.chmod(0o600)
    anonymous, out, err, bearer = await serve("--token-file", str(path))
    assert (anonymous, bearer) == (401, 200)
    assert err == ""
    assert TOKEN not in out


async def test_a_token_on_the_command_line_works_and_warns_it_shows_in_ps() -> None:
    anonymous, out, err, bearer = await serve("--token", TOKEN)
    assert (anonymous, bearer) == (401, 200)
    assert err.startswith(WARNING)
    assert "TETHER_API_TOKEN or --token-file" in err
    assert TOKEN not in out + err


async def test_a_token_file_readable_by_others_is_used_with_a_warning(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    path.chmod(0o644)
    _, _, err, bearer = await serve("--token-file", str(path))
    assert bearer == 200
    assert f"warning: --token-file {path} can be read by other users (mode 644)" in err


def run_quick(*args: str) -> tuple[int, str]:
    import subprocess

    done = subprocess.run(
        [*CLI, "serve", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={k: v for k, v in os.environ.items() if k != "TETHER_API_TOKEN"},
    )
    return done.returncode, done.stderr


@pytest.mark.parametrize(
    ("content", "problem"),
    [("", "the file is empty"), ("\n  \n", "the file is empty"), (None, "No such file")],
)
def test_an_unusable_token_file_is_refused_naming_the_file(
    tmp_path: Path, content: str | None, problem: str
) -> None:
    path = tmp_path / "token"
    if content is not None:
        path.write_text(content)
    code, err = run_quick("--token-file", str(path))
    assert code == 2
    assert err.startswith(f"error: --token-file {path}: {problem}")


def test_a_token_file_that_is_a_device_is_refused() -> None:
    code, err = run_quick("--token-file", "/dev/zero")
    assert (code, err) == (2, "error: --token-file /dev/zero: not a regular file\n")


def test_token_and_token_file_together_are_a_usage_error(tmp_path: Path) -> None:
    path = tmp_path / "token"
    path.write_text(TOKEN)
    code, err = run_quick("--token", TOKEN, "--token-file", str(path))
    assert code == 2
    assert "give --token or --token-file, not both" in err


class Source:
    """A click ParameterSource as serve_token reads it (by name)."""

    def __init__(self, name: str) -> None:
        self.name = name


def test_serve_token_in_process_reads_the_file_and_warns_only_for_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import click

    from tether.cli._token import TokenFileError, read_token_file, serve_token

    path = tmp_path / "token"
    path.write_text(f"  {TOKEN}  \nsecond line\n")
    path.chmod(0o600)
    assert serve_token(None, None, path) == TOKEN
    assert serve_token(TOKEN, Source("ENVIRONMENT"), None) == TOKEN
    assert capsys.readouterr().err == ""
    assert serve_token(TOKEN, Source("COMMANDLINE"), None) == TOKEN
    assert capsys.readouterr().err.startswith(WARNING)
    with pytest.raises(click.UsageError, match="not both"):
        serve_token(TOKEN, Source("COMMANDLINE"), path)
    big = tmp_path / "big"
    big.write_bytes(b"x" * (64 * 1024 + 1))
    with pytest.raises(TokenFileError, match="more than 65536 bytes"):
        read_token_file(big)
    binary = tmp_path / "binary"
    binary.write_bytes(b"\xff\xfe")
    with pytest.raises(TokenFileError, match="not UTF-8"):
        read_token_file(binary)
    with pytest.raises(TokenFileError, match="not a regular file"):
        read_token_file(tmp_path)
