"""The engine demo (``make demo``) keeps running and showing what it claims to."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DEMO = Path(__file__).resolve().parents[2] / "examples" / "engine_demo.py"


@pytest.mark.slow
def test_the_engine_demo_rewrites_one_prompt_and_blocks_the_other() -> None:
    out = subprocess.run(
        [sys.executable, str(DEMO)], check=True, capture_output=True, text=True, timeout=60
    ).stdout

    assert "rewritten: '[helper] What is the capital of France? Answer in one sentence.'" in out
    assert "blocked: prompts may not ask for passwords" in out
    assert "fired 1 hook(s)" in out
    assert "fired 0 hook(s)" in out
    assert "failed" not in out


def test_the_readme_hook_example_runs_and_prints_what_it_says() -> None:
    readme = (DEMO.parent.parent / "README.md").read_text()
    section = readme.split("## A hook in code", 1)[1]
    code = section.split("```python\n", 1)[1].split("```", 1)[0]

    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    ).stdout

    assert out.splitlines() == [
        "Capital of France? Answer in one sentence.",
        "True prompts may not ask for passwords",
    ]


def test_the_readme_command_hook_example_blocks_a_refund_and_passes_the_rest(
    tmp_path: Path,
) -> None:
    readme = (DEMO.parent.parent / "README.md").read_text()
    section = readme.split("## A command hook", 1)[1]
    script = tmp_path / "gate.py"
    script.write_text(section.split("```python\n", 1)[1].split("```", 1)[0])

    def answer(prompt: str) -> str:
        event = {"event": "user_prompt_submit", "data": {"prompt": prompt}}
        return subprocess.run(
            [sys.executable, str(script)],
            input=json.dumps(event),
            check=True,
            capture_output=True,
            text=True,
            timeout=60,
        ).stdout

    assert json.loads(answer("Refund order 1182")) == {
        "block": True,
        "reason": "refunds need a human",
    }
    assert answer("Printer jammed") == ""


def test_the_readme_is_short_and_its_links_lead_to_files() -> None:
    root = DEMO.parent.parent
    readme = (root / "README.md").read_text()
    assert len(readme.splitlines()) <= 200
    links = re.findall(r"\]\(([^)#]+)\)", readme)
    assert "docs/hooks.md" in links
    assert [link for link in links if not (root / link).exists()] == []
