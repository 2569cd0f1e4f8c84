"""``tether run --plugin NAME`` with third-party plugins installed through an entry point:
activation is explicit (installing activates nothing), and the plugins run in activation order
(the manifest's ``plugins:`` first, then each ``--plugin`` in the order given)."""

from __future__ import annotations

import sys
import textwrap
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from tether.cli import main

MODULE = """
from tether import Plugin

ORDER = []


def make(plugin_name):
    class Noting(Plugin):
        name = plugin_name

        async def on_task_created(self, ctx):
            ORDER.append(self.name)

    return Noting


Alpha, Beta, Gamma = make("alpha"), make("beta"), make("gamma")
"""


@dataclass
class Done:
    code: int
    out: str
    err: str


@pytest.fixture
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """A distribution declaring three ``tether.plugins`` entry points, on sys.path."""
    name = f"acme_cli_{uuid.uuid4().hex[:8]}"
    site = tmp_path / "site-packages"
    site.mkdir()
    (site / f"{name}.py").write_text(textwrap.dedent(MODULE))
    dist = site / f"{name}-1.0.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: 1.0\n")
    (dist / "entry_points.txt").write_text(
        f"[tether.plugins]\nalpha = {name}:Alpha\nbeta = {name}:Beta\ngamma = {name}:Gamma\n"
    )
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")
    yield name
    sys.modules.pop(name, None)


def agent(tmp_path: Path, plugins: str = "") -> Path:
    path = tmp_path / "triage.agent"
    path.write_text(f"name: triage\nmodel: scripted\n{plugins}")
    return path


def run(capsys: pytest.CaptureFixture[str], *args: str) -> Done:
    with pytest.raises(SystemExit) as exited:
        main(["run", *args, "--inject", '{"ticket": "Login is down"}', "--until-idle"])
    out, err = capsys.readouterr()
    code = exited.value.code
    return Done(code if isinstance(code, int) else 0, out, err)


def test_installed_plugins_stay_inactive_without_a_plugin_flag(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run(capsys, str(agent(tmp_path)))

    assert done.code == 0, done.err
    assert "plugins:" not in done.out
    assert module not in sys.modules  # not even imported


def test_a_third_party_plugin_flag_activates_it_by_its_entry_point_name(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    done = run(capsys, str(agent(tmp_path)), "--plugin", "beta")

    assert done.code == 0, done.err
    assert "plugins: beta\n" in done.out
    assert sys.modules[module].ORDER == ["beta"]


def test_plugins_run_in_activation_order_manifest_first_then_each_flag(
    module: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    manifest = agent(tmp_path, "plugins: [gamma]\n")

    done = run(capsys, str(manifest), "--plugin", "beta", "--plugin", "alpha", "--plugin", "gamma")

    assert done.code == 0, done.err
    assert "plugins: gamma, beta, alpha\n" in done.out
    assert sys.modules[module].ORDER == ["gamma", "beta", "alpha"]
