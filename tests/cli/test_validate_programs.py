"""``tether validate`` finds what would fail at run time, every problem at once: hook programs
and MCP server commands that cannot run, errors under ``hooks:`` and ``mcp_servers:`` together,
a did-you-mean for a hook key or event typo, Claude Code's event names."""

from __future__ import annotations

import json
import sys
import textwrap
from pathlib import Path

import pytest

from _cli_support import validate
from tether.manifest import ManifestError, load_manifest

pytestmark = pytest.mark.slow


def agent(tmp_path: Path, body: str) -> Path:
    path = tmp_path / "a.agent"
    path.write_text("name: a\nmodel: scripted\n" + textwrap.dedent(body))
    return path


def errors(path: Path) -> list[str]:
    done = validate(path)
    assert done.returncode == 1, done.stdout
    return [line for line in done.stderr.splitlines() if line.startswith("error: ")]


def test_a_missing_hook_program_is_an_error_naming_it_and_its_line(tmp_path: Path) -> None:
    """Regression: validate said ok, and the hook failed open at every event of the run."""
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: user_prompt_submit
            command: ["${TETHER_MANIFEST_DIR}/hooks/gate.py"]
        """,
    )
    [error] = errors(path)
    assert f"a.agent:5: hooks[0].command: program '{tmp_path}/hooks/gate.py' not found" in error


def test_a_hook_program_that_is_not_executable_is_an_error_saying_what_to_do(
    tmp_path: Path,
) -> None:
    (tmp_path / "gate.py").write_text("print('{}')\n")
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: ["${TETHER_MANIFEST_DIR}/gate.py"]
        """,
    )
    [error] = errors(path)
    assert "hooks[0].command: program" in error
    assert "is not executable (chmod +x it" in error


def test_a_missing_script_given_to_an_interpreter_is_an_error(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: "${TETHER_PYTHON} ${TETHER_MANIFEST_DIR}/hooks/gaet.py"
        """,
    )
    [error] = errors(path)
    assert f"script '{tmp_path}/hooks/gaet.py' that" in error
    assert "runs not found" in error


def test_a_program_not_on_path_is_an_error(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: ["no-such-program-tether-test", "--flag"]
        """,
    )
    [error] = errors(path)
    assert "program 'no-such-program-tether-test' not found on PATH" in error


def test_programs_that_run_and_inline_code_are_no_problem(tmp_path: Path) -> None:
    gate = tmp_path / "gate.py"
    gate.write_text("#!/bin/sh\necho '{}'\n")
    gate.chmod(0o755)
    path = agent(
        tmp_path,
        f"""\
        hooks:
          - event: task_created
            command: ["${{TETHER_MANIFEST_DIR}}/gate.py"]
          - event: task_created
            command: ["{sys.executable}", "-c", "print('{{}}')"]
          - event: task_created
            command: "${{TETHER_PYTHON}} -u ${{TETHER_MANIFEST_DIR}}/gate.py"
        mcp_servers:
          - name: orders
            command: ["{sys.executable}", "-m", "no_such_module_is_only_known_at_run_time"]
        """,
    )
    done = validate(path)
    assert done.returncode == 0, done.stderr


def test_an_mcp_server_command_that_cannot_run_is_an_error(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        mcp_servers:
          - name: orders
            command: ["${TETHER_PYTHON}"]
            args: ["${TETHER_MANIFEST_DIR}/mcp/orders_server.py"]
        """,
    )
    [error] = errors(path)
    assert f"a.agent:5: mcp_servers[0].command: script '{tmp_path}/mcp/orders_server.py'" in error


def test_errors_under_hooks_do_not_hide_those_under_mcp_servers(tmp_path: Path) -> None:
    """Regression: an error under hooks: stopped the check before mcp_servers: was read."""
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: ["true"]
            timout: 5
        mcp_servers:
          - name: orders
            comand: ["x"]
        """,
    )
    found = errors(path)
    assert len(found) == 2, found
    assert "a.agent:6: hooks[0].timout: unknown key 'timout' (did you mean 'timeout'?)" in found[0]
    assert "a.agent:9: mcp_servers[0].comand: unknown key 'comand' (did you mean" in found[1]


def test_a_hook_key_typo_gets_a_did_you_mean(tmp_path: Path) -> None:
    """Regression: top-level keys got a did-you-mean, a hook's keys (a union of kinds) none."""
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: ["true"]
            fail_close: true
        """,
    )
    [error] = errors(path)
    assert "unknown key 'fail_close' (did you mean 'fail_closed'?)" in error


def test_claude_code_s_event_names_are_recognised(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: UserPromptSubmit
            command: ["true"]
          - event: PreToolUse
            command: ["true"]
        """,
    )
    manifest = load_manifest(path)
    assert [hook.event for hook in manifest.hooks] == ["user_prompt_submit", "pre_tool_use"]


def test_an_event_typo_gets_a_did_you_mean(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: user_promt_submit
            command: ["true"]
        """,
    )
    with pytest.raises(ManifestError, match="did you mean 'user_prompt_submit'"):
        load_manifest(path)


def test_validate_json_lists_program_problems_with_their_lines(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: ["./missing.py"]
        """,
    )
    done = validate(path, "--json")
    assert done.returncode == 1
    [report] = json.loads(done.stdout)["files"]
    [error] = report["errors"]
    assert (error["path"], error["line"]) == ("hooks[0].command", 5)
    assert error["message"].startswith("program './missing.py' not found (from ")


def test_a_run_does_not_check_programs_a_host_may_provide_later(tmp_path: Path) -> None:
    path = agent(
        tmp_path,
        """\
        hooks:
          - event: task_created
            command: ["./missing.py"]
        """,
    )
    assert load_manifest(path).hooks[0].command == ["./missing.py"]


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def test_the_example_validates_as_cli_md_shows_without_its_secret_set(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Regression: `tether validate examples/*.agent`, the first command of cli.md, failed
    where TRIAGE_WEBHOOK_SECRET is not set (a CI job, a laptop)."""
    monkeypatch.delenv("TRIAGE_WEBHOOK_SECRET", raising=False)
    done = validate(*sorted(EXAMPLES.glob("*.agent")))
    assert done.returncode == 0, done.stderr
    assert "1 trigger, 4 hooks, 1 MCP server)" in done.stdout
    assert "warning: " in done.stderr
    assert "'TRIAGE_WEBHOOK_SECRET' is not set" in done.stderr
    assert "it must be set where the manifest runs" in done.stderr


def test_require_env_makes_an_unset_variable_an_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TRIAGE_WEBHOOK_SECRET", raising=False)
    done = validate(EXAMPLES / "triage.agent", "--require-env")
    assert done.returncode == 1
    assert "error: " in done.stderr
    assert "triggers[0].secret: environment variable 'TRIAGE_WEBHOOK_SECRET' is not set" in (
        done.stderr
    )


def test_an_unset_variable_whose_value_cannot_be_checked_without_it_is_an_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("TETHER_TEST_UNSET_PORT", raising=False)
    path = agent(
        tmp_path,
        """\
        triggers:
          - type: webhook
            id: w
            webhook_path: /w
            webhook_port: ${TETHER_TEST_UNSET_PORT}
        """,
    )
    [error] = errors(path)
    assert "triggers[0].webhook_port: environment variable 'TETHER_TEST_UNSET_PORT'" in error
