"""The engine's import graph, counting function-local and TYPE_CHECKING imports: no cycle
inside tether.hooks, no part importing the manager that is built from them, and each hook kind
one module of hooks/kinds/ listed once in the registry."""

from __future__ import annotations

from collections.abc import Mapping

from _imports_support import SRC, imported_modules, module_name
from tether.hooks.kinds._registry import KINDS

HOOKS = "tether.hooks"


def engine_graph() -> dict[str, set[str]]:
    """Each module of tether.hooks -> the modules of tether.hooks it imports (anywhere)."""
    graph: dict[str, set[str]] = {}
    for path in sorted((SRC / "hooks").rglob("*.py")):
        name = module_name(path)
        graph[name] = {
            m for m in imported_modules(path) if m == HOOKS or m.startswith(f"{HOOKS}.")
        } - {name}
    return graph


def cycles(graph: Mapping[str, set[str]]) -> list[list[str]]:
    """The strongly connected components of more than one module (each a cycle or several)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found: list[list[str]] = []

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        for goal in sorted(graph.get(node, ())):
            if goal not in graph:
                continue
            if goal not in index:
                visit(goal)
                low[node] = min(low[node], low[goal])
            elif goal in stack:
                low[node] = min(low[node], index[goal])
        if low[node] == index[node]:
            component: list[str] = []
            while True:
                member = stack.pop()
                component.append(member)
                if member == node:
                    break
            if len(component) > 1:
                found.append(sorted(component))

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return found


def test_the_cycle_finder_finds_a_cycle_through_three_modules() -> None:
    graph = {"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}
    assert cycles(graph) == [["a", "b", "c"]]
    assert cycles({"a": {"b"}, "b": set()}) == []


def test_the_engine_has_no_import_cycle() -> None:
    assert cycles(engine_graph()) == []


def test_only_the_package_imports_the_manager() -> None:
    """The parts of the engine type the manager by the Engine protocol (hooks/_hook.py)."""
    importers = sorted(m for m, goals in engine_graph().items() if f"{HOOKS}._manager" in goals)
    assert importers == [HOOKS]


def test_no_part_of_the_engine_imports_the_package_itself() -> None:
    importers = sorted(m for m, goals in engine_graph().items() if HOOKS in goals)
    assert importers == []


def test_each_kind_is_one_module_of_hooks_kinds_listed_once_in_the_registry() -> None:
    modules = [cls.__module__ for cls in KINDS.values()]
    assert len(set(modules)) == len(modules)
    assert all(m.startswith(f"{HOOKS}.kinds._") for m in modules)


def test_a_kind_module_imports_no_other_kind_but_the_one_it_refines() -> None:
    kinds = f"{HOOKS}.kinds."
    shared = {f"{kinds}_base", f"{kinds}_registry"}
    between = sorted(
        f"{module} imports {goal}"
        for module, goals in engine_graph().items()
        if module.startswith(kinds) and module not in shared
        for goal in goals
        if goal.startswith(kinds) and goal not in shared
    )
    # A persistent hook is a command with ``persistent: true``: its config refines the command's.
    assert between == [f"{kinds}_persistent imports {kinds}_command"]
