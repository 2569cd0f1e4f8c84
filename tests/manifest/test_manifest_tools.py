"""Manifests name tools by import path and Claude Code hook files; both load at creation."""

from __future__ import annotations

import json
import re
import sys
from pathlib import Path
from typing import Any

import pytest

from _manifest_support import problems, write, write_manifest
from _process_support import Recorder, run_task
from tether import AgentProcess, ProcessConfig, load_manifest, manifest_to_process_config
from tether.hooks import HookEvent
from tether.manifest import ManifestError
from tether.models import ScriptedModel


def process_of(path: Path, calls: list[tuple[str, dict[str, Any]]]) -> AgentProcess:
    config = manifest_to_process_config(load_manifest(path, environ={}))
    return AgentProcess("shop", config.model_copy(update={"model": ScriptedModel("Done.", calls)}))


async def test_tools_named_by_import_path_are_offered_and_run(tmp_path: Path) -> None:
    path = write(
        tmp_path,
        """\
        name: shop
        model: scripted
        tools: ["_tool_support:lookup_order", "_tool_support:search"]
        """,
    )
    process = process_of(path, [("lookup_order", {"order_id": 4})])
    model = process.config.model
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.POST_TOOL_USE)
    async with process:
        await run_task(process, rec)
    offered = [t["function"]["name"] for t in model.requests[0]["tools"]]
    assert offered == ["lookup_order", "search"]
    [post] = rec.of(HookEvent.POST_TOOL_USE)
    assert json.loads(post["result"]) == {"order": 4, "status": "shipped"}


def test_a_tool_that_is_not_an_import_path_is_refused_at_load_naming_the_entry(
    tmp_path: Path,
) -> None:
    found = problems(tmp_path, "name: shop\ntools: [lookup_order]\n")
    assert found == [
        "2: tools[0]: tool 'lookup_order' is not an import path; write "
        "'package.module:function' (an async function, or a Tool, importable on the "
        "runtime's host)"
    ]


@pytest.mark.parametrize(
    ("path", "message"),
    [
        ("no_such_package.tools:lookup", "cannot import module 'no_such_package.tools'"),
        ("_tool_support:missing", "module '_tool_support' has no attribute 'missing'"),
        ("_tool_support:not_async", "must be an async function"),
    ],
)
def test_a_tool_that_cannot_be_imported_fails_the_process_creation_naming_it(
    path: str, message: str
) -> None:
    config = ProcessConfig(model="scripted", tools=[path])
    with pytest.raises(ValueError, match=r"^tools\[0\]: tool ") as caught:
        AgentProcess("shop", config)
    assert message in str(caught.value)
    assert path in str(caught.value)


def test_a_process_config_refuses_a_malformed_import_path_at_declaration() -> None:
    with pytest.raises(ValueError, match=r"tools\[1\]: tool 'a b' is not an import path"):
        ProcessConfig(tools=["_tool_support:lookup_order", "a b"])


SHOPTOOLS = """\
async def issue_credit(order_id: int, amount: float) -> str:
    \"\"\"Credit a customer for an order.\"\"\"
    return f"credited {amount} for order {order_id}"
"""


def shop_next_to_its_tools(tmp_path: Path, request: pytest.FixtureRequest) -> tuple[Path, str]:
    """A manifest naming a tool of a module beside it (named for the test: imported once)."""
    module = "shoptools_" + re.sub(r"\W", "_", request.node.name)
    (tmp_path / f"{module}.py").write_text(SHOPTOOLS)
    text = f'name: shop\nmodel: scripted\ntools: ["{module}:issue_credit"]\n'
    return write(tmp_path, text), module


async def test_a_tool_in_a_module_next_to_its_manifest_is_imported_from_there(
    tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    """Regression: `tools: ["shoptools:issue_credit"]` beside the manifest could not be
    imported (only sys.path was searched), though eval packs import from their folder."""
    path, module = shop_next_to_its_tools(tmp_path, request)
    assert str(tmp_path) not in sys.path
    process = process_of(path, [("issue_credit", {"order_id": 4, "amount": 5})])
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.POST_TOOL_USE)
    async with process:
        await run_task(process, rec)
    [post] = rec.of(HookEvent.POST_TOOL_USE)
    assert post["result"] == "credited 5.0 for order 4"
    assert str(tmp_path) not in sys.path  # searched while importing, not left there
    assert module in sys.modules


def test_a_manifest_tool_that_cannot_be_imported_is_an_error_naming_its_line(
    tmp_path: Path,
) -> None:
    path = write(
        tmp_path,
        """\
        name: shop
        model: scripted
        tools:
          - _tool_support:lookup_order
          - no_such_module_beside_it:issue_credit
        """,
    )
    with pytest.raises(ManifestError) as caught:
        manifest_to_process_config(load_manifest(path, environ={}))
    [issue] = caught.value.errors
    assert (issue.path, issue.line) == ("tools[1]", 5)
    assert f"searched {tmp_path}" in issue.message
    assert str(caught.value).startswith(f"{path}:5: tools[1]: tool ")


def test_validate_names_the_line_of_a_tool_that_cannot_be_imported(tmp_path: Path) -> None:
    from _cli_support import validate

    path = write(tmp_path, "name: shop\nmodel: scripted\ntools: [nope_module:fn]\n")
    done = validate(path)
    assert done.returncode == 1
    assert f"error: {path}:3: tools[0]: tool 'nope_module:fn': cannot import" in done.stderr


def claude_settings(folder: Path, hooks: dict[str, Any]) -> Path:
    file = folder / ".claude" / "settings.json"
    file.parent.mkdir(parents=True, exist_ok=True)
    file.write_text(json.dumps({"hooks": hooks}))
    return file


async def test_claude_code_hooks_named_by_a_manifest_run_for_its_process(tmp_path: Path) -> None:
    guard = tmp_path / "guard.py"
    guard.write_text(
        "import sys\nsys.stdin.read()\nprint('not today', file=sys.stderr)\nsys.exit(2)\n"
    )
    claude_settings(
        tmp_path,
        {
            "PreToolUse": [
                {
                    "matcher": "lookup_order",
                    "hooks": [
                        {
                            "type": "command",
                            "command": (f"{sys.executable} $CLAUDE_PROJECT_DIR/guard.py"),
                        }
                    ],
                }
            ]
        },
    )
    path = write(
        tmp_path,
        """\
        name: shop
        model: scripted
        tools: ["_tool_support:lookup_order"]
        claude_code_hooks: [.claude/settings.json]
        """,
    )
    process = process_of(path, [("lookup_order", {"order_id": 4})])
    [hook] = process.hooks.describe(HookEvent.PRE_TOOL_USE)
    assert hook.source == "claude-code"
    rec = Recorder().attach(process.hooks, HookEvent.TASK_COMPLETED, HookEvent.PERMISSION_DENIED)
    async with process:
        await run_task(process, rec)
    assert rec.of(HookEvent.PERMISSION_DENIED)[0]["reason"] == "not today"


def test_a_claude_code_hooks_file_that_cannot_be_read_is_a_manifest_problem(
    tmp_path: Path,
) -> None:
    (tmp_path / ".claude").mkdir()
    (tmp_path / ".claude" / "settings.json").write_text("{not json")
    found = problems(tmp_path, "name: shop\nclaude_code_hooks:\n  - .claude/settings.json\n")
    assert len(found) == 1
    assert found[0].startswith("3: claude_code_hooks[0]: ")
    assert "not a JSON document" in found[0]


def test_a_manifest_hook_may_speak_the_claude_code_protocol(tmp_path: Path) -> None:
    guard = {
        "event": "pre_tool_use",
        "command": ["guard"],
        "protocol": "claude-code",
        "matcher": {"tool_name": "re:^mcp__"},
    }
    path = write_manifest(tmp_path / "shop.agent", name="shop", hooks=[guard])
    [hook] = manifest_to_process_config(load_manifest(path, environ={})).hooks
    assert hook.protocol == "claude-code"
    assert hook.matcher == {"tool_name": "re:^mcp__"}


def test_a_manifest_refuses_an_unknown_protocol(tmp_path: Path) -> None:
    found = problems(
        tmp_path, "name: shop\nhooks:\n  - {event: pre_tool_use, command: x, protocol: cursor}\n"
    )
    assert len(found) == 1
    assert found[0].startswith("3: hooks[0].protocol: ")
    assert "claude-code" in found[0]


def test_a_manifest_refuses_an_invalid_regular_expression_matcher(tmp_path: Path) -> None:
    found = problems(
        tmp_path,
        "name: shop\nhooks:\n  - {event: pre_tool_use, command: x, matcher: {tool_name: 're:('}}\n",
    )
    assert len(found) == 1
    assert "not a valid regular expression" in found[0]
