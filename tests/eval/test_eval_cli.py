"""``tether eval``: the example pack in one command, reports, hook names and activation."""

from __future__ import annotations

import json
import os
import pty
import re
import select
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from _cli_support import CLI, run_cli

pytestmark = pytest.mark.slow

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "eval" / "pack.yaml"


@pytest.fixture(autouse=True)
def _wide(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("COLUMNS", "200")
    monkeypatch.setenv("NO_COLOR", "1")


def test_the_example_pack_runs_offline_in_one_command_with_the_debrief_hook(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    out = tmp_path / "runs"
    done = run_cli(capsys, "eval", "run", str(EXAMPLE), "--hook", "debrief", "--out", str(out))
    assert done.returncode == 1, done.stderr  # outages-are-p1 fails on purpose
    assert "routes-web-tickets" in done.stdout
    assert "outages-are-p1" in done.stdout
    traces = [p for p in out.glob("*.json") if "." not in p.name[:-5]]
    assert len(traces) == 9
    assert len(list(out.glob("*.score.json"))) == 9
    debriefs = list(out.glob("*.debrief.json"))
    assert len(debriefs) == 3
    debrief = json.loads(debriefs[0].read_text())
    assert debrief["scenario_id"] == "outages-are-p1"
    assert debrief["failed_layers"] == ["outcome"]
    assert type(debrief["duration_ms"]) is int  # document 002's schema: an integer
    prompt = debrief["prompt"]
    assert prompt.index("Environment") < prompt.index("Blockers") < prompt.index("differently")

    report = run_cli(
        capsys, "eval", "report", str(out), "--json", "--junit", str(tmp_path / "j.xml")
    )
    assert report.returncode == 1
    rows = {row["scenario_id"]: row for row in json.loads(report.stdout)["scenarios"]}
    assert rows["refuses-password-tickets"]["passed"] is True
    assert rows["outages-are-p1"]["pass_rate"] == 0
    assert (tmp_path / "j.xml").read_text().count("<testcase") == 9


def test_a_terminal_sees_a_progress_bar_of_the_runs_and_their_failures(tmp_path: Path) -> None:
    """On a terminal, ``tether eval run`` draws a rich progress bar on stderr: the pack and the
    scenario under way, runs done of all, and how many failed so far."""
    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [sys.executable, "-m", "tether.cli", "eval", "run", str(EXAMPLE), "--out", str(tmp_path)],
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=follower,
        env={**os.environ, "COLUMNS": "120", "TERM": "xterm"},
    )
    os.close(follower)
    drawn = b""
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline:
            if select.select([leader], [], [], 0.2)[0]:
                try:
                    chunk = os.read(leader, 65536)
                except OSError:  # the program closed its end
                    break
                if not chunk:
                    break
                drawn += chunk
            elif proc.poll() is not None:
                break
    finally:
        os.close(leader)
        proc.wait(timeout=30)
    assert proc.returncode == 1  # outages-are-p1 fails on purpose
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", drawn.decode("utf-8", "replace"))
    assert "triage-example: outages-are-p1" in text
    assert re.search(r"━+ 9/9 3 failed", text), text[-500:]
    assert re.search(r" [1-8]/9 \d failed", text)  # drawn while it ran, not only at the end


def test_an_unknown_hook_is_a_usage_error_listing_the_available_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    done = run_cli(capsys, "eval", "run", str(EXAMPLE), "--hook", "nope", "--out", str(tmp_path))
    assert done.returncode == 2
    assert "unknown hook 'nope'; available: " in done.stderr
    assert "debrief" in done.stderr
    assert "isolation" in done.stderr
    assert list(tmp_path.iterdir()) == []  # refused before anything ran


def test_a_bad_pack_is_reported_with_its_path_and_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    pack = tmp_path / "pack.yaml"
    pack.write_text("name: x\nagent: _eval_agents:plain\nscenarios:\n  - id: a\n    turns: 3\n")
    done = run_cli(capsys, "eval", "run", str(pack), "--out", str(tmp_path / "runs"))
    assert done.returncode == 1
    assert f"error: {pack}:5: scenarios[0].turns: " in done.stderr


def _install_entry_point(root: Path) -> None:
    """A real distribution on sys.path registering a 'tether.plugins' entry point."""
    (root / "evalmarker_plugin.py").write_text(
        textwrap.dedent(
            """\
            import os
            from pathlib import Path

            from tether import Plugin


            class Marker(Plugin):
                name = "marker"

                async def on_run_start(self, ctx):
                    # Knobs are TETHER_<HOOKNAME>_*: this one says where to write.
                    path = Path(ctx.knob("FILE"))
                    with path.open("a") as f:
                        f.write(ctx.run_id + "\\n")
            """
        )
    )
    info = root / "evalmarker_plugin-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: evalmarker-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[tether.plugins]\nmarker = evalmarker_plugin:Marker\n")


def test_an_installed_hook_never_runs_unless_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    site = tmp_path / "site"
    site.mkdir()
    _install_entry_point(site)
    monkeypatch.syspath_prepend(str(site))
    marker = tmp_path / "marker.txt"
    monkeypatch.setenv("TETHER_MARKER_FILE", str(marker))
    listed = run_cli(capsys, "eval", "hooks")
    assert listed.stdout.split() == ["debrief", "isolation", "marker"]

    plain = tmp_path / "plain"
    done = run_cli(capsys, "eval", "run", str(EXAMPLE), "--out", str(plain))
    assert done.returncode == 1
    assert not marker.exists()
    assert sorted({p.name.split(".", 1)[1] for p in plain.iterdir()}) == [
        "json",
        "pack.json",
        "score.json",
    ]

    done = run_cli(
        capsys,
        "eval",
        "run",
        str(EXAMPLE),
        "--hook",
        "marker",
        "--runs",
        "1",
        "--out",
        str(tmp_path / "marked"),
    )
    assert done.returncode == 1
    assert len(marker.read_text().split()) == 3  # one run of each of the 3 scenarios


def test_a_piped_eval_report_keeps_long_scenario_ids_whole(tmp_path: Path) -> None:
    """Regression: `tether eval run > file` cut scenario ids to the width of a terminal."""
    pack = tmp_path / "pack.yaml"
    scenario = "a-scenario-id-long-enough-to-be-cut-in-a-narrow-report-table"
    text = EXAMPLE.read_text(encoding="utf-8")
    pack.write_text(text, encoding="utf-8")
    original = re.search(r"^\s*- id: (\S+)", text, re.MULTILINE)
    assert original is not None
    text = text.replace(original.group(1), scenario, 1)
    agent = EXAMPLE.parent / "triage.agent"  # the example's, where its hooks are
    pack.write_text(text.replace("agent: triage.agent", f"agent: {agent}"), encoding="utf-8")
    done = subprocess.run(
        [*CLI, "eval", "run", str(pack), "--out", str(tmp_path / "runs")],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "40", "NO_COLOR": "1"},
        check=False,
    )
    assert scenario in done.stdout, done.stdout + done.stderr
