"""The code's shape: AgentProcess is built by composition, and no module reaches into the
private names another module defines (it asks for a public method, or is handed a callable)."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from _imports_support import SRC
from _tests_of_modules import TESTED_BY

#: Private names of the standard library that are its public API (namedtuple's).
STDLIB_PRIVATE = {"_replace", "_asdict", "_fields", "_make"}

#: Known reaches into another module's private names, each "module: expression". The list only
#: shrinks: a new reach fails the test; mend it (a public method, or a callable handed over)
#: rather than adding it here. The hook engine's modules share the manager's internals as one
#: package, deliberately.
KNOWN_REACHES = {
    "hooks/_background.py: hook.manager._drop",
    "hooks/_background.py: manager._log_failure",
    "hooks/_background.py: manager._report",
    "hooks/_background.py: manager._timeout_of",
    "hooks/_claude_notification.py: manager._resolved",
    "hooks/_dispatch.py: hook.manager._drop",
    "hooks/_dispatch.py: self.manager._log_failure",
    "hooks/_dispatch.py: self.manager._shown",
    "hooks/_dispatch.py: self.manager._timeout_of",
    "hooks/_dispatch.py: self.manager._warn_blocked",
    "hooks/_history.py: manager._shared",
    "hooks/_manager.py: config._source",
    "hooks/_secrets.py: owner._by_id",
    "hooks/_secrets.py: self._manager._chain",
    "hooks/kinds/_persistent.py: shell._argv",
    "hooks/kinds/_persistent.py: shell._executable",
    "hooks/kinds/_plugin.py: manager._by_id",
    "hooks/kinds/_plugin.py: manager._drop",
}


def _sources() -> list[Path]:
    return sorted(SRC.rglob("*.py"))


def _names_defined(tree: ast.AST) -> set[str]:
    """Every name a module defines or binds: its functions and classes, the attributes it
    assigns (on any object), its variables and parameters."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Attribute) and isinstance(node.ctx, ast.Store):
            names.add(node.attr)
        elif isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store):
            names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
    return names


def private_reaches(source: str, where: str) -> set[str]:
    """``obj._name`` read in the module ``where`` (not on ``self`` or ``cls``) where no code
    of that module defines ``_name``: a reach into a private name of another module."""
    tree = ast.parse(source, where)
    own = _names_defined(tree) | STDLIB_PRIVATE
    found: set[str] = set()
    for node in ast.walk(tree):
        if not isinstance(node, ast.Attribute) or not node.attr.startswith("_"):
            continue
        if node.attr.startswith("__") or node.attr in own:
            continue
        if isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"):
            continue
        found.add(f"{where}: {ast.unparse(node)}")
    return found


def _reaches_in_tether() -> set[str]:
    return set().union(
        *(
            private_reaches(path.read_text(), path.relative_to(SRC).as_posix())
            for path in _sources()
        )
    )


def test_agent_process_is_built_by_composition_not_mixins() -> None:
    from tether.process import AgentProcess

    assert AgentProcess.__bases__ == (object,)
    assert AgentProcess.__mro__ == (AgentProcess, object)


def test_the_scan_finds_a_reach_into_another_modules_private_name() -> None:
    source = "def f(api, request):\n    return api._process(request)\n"
    assert private_reaches(source, "api/_x.py") == {"api/_x.py: api._process"}


def test_the_scan_lets_a_module_use_the_private_names_it_defines() -> None:
    source = "class A:\n    def _own(self, other):\n        return other._own\n"
    assert private_reaches(source, "x.py") == set()


def test_no_module_reaches_into_another_modules_private_names() -> None:
    found = _reaches_in_tether()
    assert sorted(found - KNOWN_REACHES) == []


def test_the_known_reaches_are_all_still_there() -> None:
    """The allowance shrinks with the code: a reach mended leaves the list too."""
    found = _reaches_in_tether()
    assert sorted(KNOWN_REACHES - found) == []


def test_no_api_module_calls_a_private_method_of_the_api() -> None:
    calls = [
        f"{path.relative_to(SRC)}: {ast.unparse(node)}"
        for path in sorted((SRC / "api").rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and isinstance(node.value, ast.Attribute)
        and node.value.attr == "api"
    ]
    assert calls == []


def test_only_the_cli_app_module_reads_its_state() -> None:
    importers = [
        path.relative_to(SRC).as_posix()
        for path in _sources()
        if path != SRC / "cli" / "_app.py"
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.ImportFrom)
        and (node.module or "").split(".")[-1] == "_app"
        and any(alias.name == "STATE" for alias in node.names)
    ]
    assert importers == []


# -- every module has its tests ------------------------------------------------------------------

TESTS = Path(__file__).resolve().parent


def _key_of(module: str) -> str:
    """The word a test file's name carries for ``module``: its name without the leading
    underscore, or its package's name for an ``__init__``."""
    path = Path(module)
    return path.parent.name if path.stem == "__init__" else path.stem.lstrip("_")


def files_named_after(module: str) -> list[str]:
    """Test files named after ``module`` (relative to SRC): ``test_*KEY*.py`` where KEY stands
    as whole words, in the folder of the module's package when tests has one."""
    folder = TESTS / Path(module).parts[0] if len(Path(module).parts) > 1 else TESTS
    if not folder.is_dir():
        folder = TESTS
    key = f"_{_key_of(module)}_"
    return sorted(
        path.relative_to(TESTS).as_posix()
        for path in folder.rglob("test_*.py")
        if key in f"_{path.stem.removeprefix('test_')}_"
    )


def _modules() -> list[str]:
    return [path.relative_to(SRC).as_posix() for path in _sources()]


def test_the_naming_rule_finds_the_files_named_after_a_module() -> None:
    assert "process/test_process_queue.py" in files_named_after("process/_queue.py")
    assert "runtime/test_runtime.py" in files_named_after("runtime.py")
    assert "cluster/test_cluster_queue.py" in files_named_after("cluster/__init__.py")
    assert files_named_after("hooks/_manager.py") == []


def test_every_module_has_test_files_named_after_it_or_listed_in_the_table() -> None:
    untested = [m for m in _modules() if not files_named_after(m) and m not in TESTED_BY]
    assert untested == [], (
        "name a test file after each of these modules, or list the files that test it in "
        "tests/_tests_of_modules.py"
    )


def test_the_table_lists_only_modules_the_naming_rule_misses() -> None:
    """The table shrinks with the code: a module whose tests gain its name leaves it."""
    assert sorted(m for m in TESTED_BY if files_named_after(m)) == []


def test_the_table_names_modules_and_test_files_that_exist() -> None:
    modules = set(_modules())
    assert sorted(set(TESTED_BY) - modules) == []
    assert (
        sorted(
            f"{module}: {test}"
            for module, tests in TESTED_BY.items()
            for test in tests
            if not (TESTS / test).is_file()
        )
        == []
    )


# -- the slow tests are marked -------------------------------------------------------------------

#: Test files slow as a whole (soak, tutorial scripts, schemathesis, Chromium, cluster hosts,
#: MCP servers and the CLI run as programs): `make test-fast` leaves them out.
SLOW_FILES = (
    "process/test_soak.py",
    "test_tutorial.py",
    "api/test_openapi_fuzz.py",
    "api/test_dashboard_browser.py",
    "cluster/test_cluster_hosts.py",
    "cluster/test_cluster_queue.py",
    "cluster/test_cluster_control.py",
    "cluster/test_cluster_cli.py",
    "process/test_mcp_stdio_servers.py",
    "process/test_mcp_http_servers.py",
    "cli/test_cli_first_use.py",
    "cli/test_serve_token.py",
    "cli/test_validate_programs.py",
    "cli/test_validate_hook_order.py",
    "cli/test_validate_bad_hook_files.py",
    "eval/test_eval_cli.py",
    "hooks/test_hook_strays.py",
    "hooks/test_hooks_shell_processes.py",
)


def _module_marks(path: Path) -> str:
    tree = ast.parse(path.read_text())
    return " ".join(
        ast.unparse(node.value)
        for node in tree.body
        if isinstance(node, ast.Assign)
        and any(isinstance(t, ast.Name) and t.id == "pytestmark" for t in node.targets)
    )


@pytest.mark.parametrize("name", SLOW_FILES)
def test_a_slow_test_file_is_marked_slow_as_a_whole(name: str) -> None:
    assert "pytest.mark.slow" in _module_marks(TESTS / name)
