"""Operator review of ``tether run``'s live output: what a model answers is shown as written
(its brackets are no console markup), with the process's secrets redacted."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from tether.cli import main
from tether.testing import FakeLLM

SECRET = "sekret-value-123"


def run_cli(capsys: pytest.CaptureFixture[str], *args: str) -> tuple[int, str, str]:
    with pytest.raises(SystemExit) as exited:
        main(list(args))
    out, err = capsys.readouterr()
    code = exited.value.code
    return (code if isinstance(code, int) else 0), out, err


@pytest.mark.parametrize(
    "reply",
    [
        f"Done [/] and [bold]x[/bold], token {SECRET}",
        f"Routed to [p2] with [link=https://x]a link[/link] ({SECRET})",
    ],
)
async def test_run_shows_an_answer_with_brackets_as_written_and_redacted(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reply: str,
) -> None:
    """Regression: the answer line was printed as console markup: "[/]" raised in the printer
    (the line was lost) and "[bold]x[/bold]" lost its brackets."""
    agent = tmp_path / "answer.agent"
    agent.write_text(f"name: triage\nmodel: openai:fake-llm\nsecrets: {{K: {SECRET}}}\n")
    monkeypatch.setenv("COLUMNS", "400")
    monkeypatch.setenv("NO_COLOR", "1")
    async with FakeLLM(port=0) as llm:
        llm.reply = reply
        monkeypatch.setenv("OPENAI_BASE_URL", llm.base_url)
        monkeypatch.setenv("OPENAI_API_KEY", "not-a-real-key")
        code, out, _err = await asyncio.to_thread(
            run_cli, capsys, "run", str(agent), "--inject", '{"ticket": "hi"}', "--until-idle"
        )
    assert code == 0
    [line] = [line for line in out.splitlines() if line.strip().startswith("answer")]
    assert line.split("answer", 1)[1].strip() == reply.replace(SECRET, "[REDACTED:K]")
    assert SECRET not in out
