"""The package's shape: import boundaries between layers, the public API, a light import."""

from __future__ import annotations

import importlib
import json
import subprocess
import sys
from pathlib import Path

import pytest

import tether
import tether.hooks
from _imports_support import SRC, imported_modules, module_name

#: Layers, bottom to top. A module may import from its own layer and the layers below it only.
#: Each entry names the top-level modules or packages under ``tether`` that form the layer.
LAYERS: list[set[str]] = [
    {"errors"},  # the root of the exception tree (TetherError): imports nothing
    {"_version", "_public"},  # the version, the table of public names: import nothing
    # the engine (and the co-process helper, and how URLs are shown): nothing above
    {"hooks", "_json", "_urls", "hookserver"},
    {"store"},
    {"models"},
    {"_redact", "approval", "agent"},  # the agent loop and what it needs; no queues, no processes
    {"telemetry"},  # spans and metrics: handed to processes as an observer, never imported
    {"plugins", "process"},  # processes know nothing of HTTP
    {
        "manifest",
        "_manifest_yaml",
        "_manifest_errors",
        "_manifest_problems",
        "_manifest_programs",
        "_manifest_tools",
        "_manifest_claude",
        "runtime",
        "cluster",
    },
    {"eval"},  # the eval harness: drives processes from manifests; no HTTP
    {"api"},
    {"cli"},
]
#: Modules that may import anything: the facade re-exporting the public names, and test helpers.
ANYTHING_GOES = {"__init__", "__main__", "testing"}
#: Modules that may import the test helpers, and why: ``tether eval run --fake-llm`` (and a
#: pack's ``fake_llm``) serves the agent from tether.testing.FakeLLM, inside that command only.
MAY_IMPORT_TEST_HELPERS = {"tether.cli._eval"}
#: The lowest layer that may import the ``tether`` facade itself (for ``__version__``, say).
FACADE_FROM = "api"


def layer_of(top: str) -> int:
    for index, members in enumerate(LAYERS):
        if top in members:
            return index
    raise AssertionError(
        f"tether.{top} has no layer: add it to LAYERS in {Path(__file__).name} "
        "(bottom to top: hooks, store, models, agent, process, manifest/runtime, eval, api, cli)"
    )


def top_of(module: str) -> str:
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "__init__"


def all_modules() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def test_the_import_walker_resolves_relative_imports() -> None:
    imports = imported_modules(SRC / "hooks" / "_manager.py")

    assert "tether.hooks._context" in imports
    assert all(m.startswith("tether.hooks") for m in imports)


def test_every_top_level_module_has_a_layer() -> None:
    tops = {top_of(module_name(p)) for p in all_modules()} - ANYTHING_GOES
    for top in sorted(tops):
        layer_of(top)


#: The one module below the engine: TetherError, which every tether exception derives from.
ROOT_ERROR = "tether.errors"


def test_tether_hooks_imports_nothing_from_the_rest_of_tether() -> None:
    offenders = {
        f"{module_name(path)} imports {target}"
        for path in sorted((SRC / "hooks").rglob("*.py"))
        for target in imported_modules(path)
        if target not in ("tether", ROOT_ERROR) and not target.startswith("tether.hooks")
    }
    offenders |= {
        f"{module_name(path)} imports tether"
        for path in sorted((SRC / "hooks").rglob("*.py"))
        if "tether" in imported_modules(path)
    }

    assert sorted(offenders) == []


def test_no_layer_imports_a_layer_above_it() -> None:
    offenders: list[str] = []
    for path in all_modules():
        source = top_of(module_name(path))
        if source in ANYTHING_GOES:
            continue
        for target in sorted(imported_modules(path)):
            goal = top_of(target)
            if goal == "__init__":
                if layer_of(source) < layer_of(FACADE_FROM):
                    offenders.append(f"{module_name(path)} imports the tether facade")
            elif goal not in ANYTHING_GOES and layer_of(goal) > layer_of(source):
                offenders.append(f"{module_name(path)} imports {target}")
            elif goal in ANYTHING_GOES - {"__init__"} and module_name(path) not in (
                MAY_IMPORT_TEST_HELPERS
            ):
                offenders.append(f"{module_name(path)} imports test helpers {target}")

    assert offenders == []


# -- public API ----------------------------------------------------------------------------------

PUBLIC = [
    "AgentManifest",
    "AgentProcess",
    "AgentRuntime",
    "ApprovalDecision",
    "ApprovalPolicy",
    "ApprovalRequest",
    "BLOCKABLE_EVENTS",
    "BudgetConfig",
    "ClaudeCodeHooks",
    "ClaudeCodeHooksError",
    "ClusterError",
    "ClusterNode",
    "CommandHookError",
    "ContextConfig",
    "CronTrigger",
    "DispatchResult",
    "EventTrigger",
    "FileWatchTrigger",
    "GuardrailConfig",
    "HookBlocked",
    "HookConfig",
    "HookContext",
    "HookError",
    "HookErrorInfo",
    "HookEvent",
    "HookInfo",
    "HookManager",
    "HookRun",
    "HookTimeoutError",
    "HttpHook",
    "HttpHookError",
    "HttpHookTimeoutError",
    "InvalidEventError",
    "ManifestError",
    "McpServerConfig",
    "ModelPrice",
    "NothingToRollBackError",
    "OpenModeConfig",
    "OrchestrationAPI",
    "PersistentHook",
    "Plugin",
    "PluginContext",
    "PluginError",
    "ProcessBusyError",
    "ProcessConfig",
    "ProcessError",
    "ProcessExistsError",
    "ProcessState",
    "ProcessStateError",
    "PromptHook",
    "PromptHookError",
    "QueueUnavailableError",
    "RestartPolicy",
    "SAFE_ENV_VARS",
    "ShellHook",
    "ShellHookResult",
    "SpawnRefusedError",
    "Telemetry",
    "TetherError",
    "Tool",
    "ToolCallInfo",
    "TriggerEvent",
    "WebhookClashError",
    "WebhookTrigger",
    "available_plugins",
    "claude_code_hooks",
    "claude_code_settings",
    "current_tool_call",
    "hook_options",
    "implements",
    "load_manifest",
    "manifest_to_process_config",
    "tool",
]

#: The engine's names (issue 2), each re-exported from ``tether``.
ENGINE = [
    "BLOCKABLE_EVENTS",
    "DispatchResult",
    "HookBlocked",
    "HookConfig",
    "HookContext",
    "HookEvent",
    "HookManager",
    "SAFE_ENV_VARS",
    "ShellHook",
    "ShellHookResult",
]


def test_the_public_names_are_pinned() -> None:
    assert sorted(tether.__all__) == PUBLIC
    assert len(set(tether.__all__)) == len(tether.__all__)


@pytest.mark.parametrize("name", PUBLIC)
def test_every_public_name_resolves(name: str) -> None:
    assert getattr(tether, name) is not None
    assert name in dir(tether)


@pytest.mark.parametrize("name", ENGINE)
def test_the_engine_names_are_the_same_objects_in_tether_and_tether_hooks(name: str) -> None:
    assert getattr(tether, name) is getattr(tether.hooks, name)


def test_tether_hooks_lists_every_engine_name_that_tether_re_exports() -> None:
    engine = {
        name
        for name in tether.__all__
        if name in vars(tether.hooks) and getattr(tether, name) is getattr(tether.hooks, name)
    }

    assert engine - set(tether.hooks.__all__) == set()
    assert set(tether.hooks.__all__) - set(tether.__all__) == set()


def test_every_name_tether_hooks_exports_resolves() -> None:
    for name in tether.hooks.__all__:
        assert getattr(tether.hooks, name) is not None


@pytest.mark.parametrize(
    "name", [n for n in tether.hooks.__all__ if n[0].isupper() and not n.isupper()]
)
def test_the_engines_public_classes_say_they_live_in_tether(name: str) -> None:
    obj = getattr(tether.hooks, name)

    assert isinstance(obj, type)
    assert f"{obj.__module__}.{obj.__qualname__}" == f"tether.{name}"


@pytest.mark.parametrize("name", PUBLIC)
def test_a_public_class_is_found_where_its_module_says(name: str) -> None:
    obj = getattr(tether, name)
    if not isinstance(obj, type):
        return

    assert getattr(importlib.import_module(obj.__module__), obj.__qualname__) is obj


def test_an_unknown_attribute_raises_attribute_error() -> None:
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = tether.NoSuchThing  # type: ignore[attr-defined]
    with pytest.raises(AttributeError, match="NoSuchThing"):
        _ = tether.hooks.NoSuchThing  # type: ignore[attr-defined]


# -- a light import -----------------------------------------------------------------------------

HEAVY = ["pydantic", "openai", "httpx", "starlette", "uvicorn", "yaml", "rich", "typer"]


def test_import_tether_does_not_import_heavy_dependencies() -> None:
    code = (
        "import json, sys; import tether; "
        f"print(json.dumps(sorted({{m.split('.')[0] for m in sys.modules}} & set({HEAVY!r}))))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )

    assert json.loads(out.stdout) == []


def test_using_hook_config_imports_pydantic_on_demand() -> None:
    code = (
        "import sys; import tether; before = 'pydantic' in sys.modules; "
        "tether.HookConfig; print(before, 'pydantic' in sys.modules)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], check=True, capture_output=True, text=True, timeout=60
    )

    assert out.stdout.split() == ["False", "True"]
