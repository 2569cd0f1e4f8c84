"""``tether hooks test`` on the model-call events: their samples, and what a process would do
with a model hook's answer (the recipe of docs/model-hooks.md among them)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
REDACT = f"{sys.executable} {EXAMPLES / 'hooks' / 'redact_model_pii.py'}"
ANSWER = """\
import json, sys
event = json.load(sys.stdin)
data = dict(event["data"], response="P3: known issue, see the status page.")
print(json.dumps({"data": data}))
"""


async def test_the_redaction_recipe_rewrites_the_messages_of_the_sample(cli: Any) -> None:
    messages = [
        {"role": "system", "content": "You triage support tickets."},
        {"role": "user", "content": "jane.doe@example.com paid with 4111 1111 1111 1111"},
    ]
    data = json.dumps({"messages": messages})
    done = await cli("hooks", "test", "pre_model_call", "--command", REDACT, "--data", data)
    assert done.returncode == 0, done.stderr
    assert "meaning  data replaced; changed: messages" in done.stdout
    assert "the model receives the rewritten messages" in done.stdout
    assert "[email] paid with [card]" in done.stdout


async def test_the_sample_of_pre_model_call_passes_the_recipe_unchanged(cli: Any) -> None:
    done = await cli("hooks", "test", "pre_model_call", "--command", REDACT)
    assert done.returncode == 0, done.stderr
    assert '"provider": "openai"' in done.stdout  # the sample went to stdin
    assert "meaning  passed: nothing changed" in done.stdout


async def test_an_answer_instead_of_the_model_is_explained(cli: Any, tmp_path: Path) -> None:
    script = tmp_path / "answer.py"
    script.write_text(ANSWER)
    done = await cli("hooks", "test", "pre_model_call", "--command", f"{sys.executable} {script}")
    assert done.returncode == 0, done.stderr
    assert "the model is not called: the loop reads this answer instead" in done.stdout


async def test_a_block_of_post_model_call_says_the_run_fails(cli: Any, tmp_path: Path) -> None:
    script = tmp_path / "audit.py"
    script.write_text('print(\'{"block": true, "reason": "the answer promises a refund"}\')\n')
    done = await cli("hooks", "test", "post_model_call", "--command", f"{sys.executable} {script}")
    assert done.returncode == 0, done.stderr
    assert "BLOCKED (the answer promises a refund): the agent loop does not read the answer" in (
        done.stdout
    )
