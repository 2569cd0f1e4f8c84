"""Package boundaries that are real (issue 25 item 6): tether's own import graph, read from the
source with every import counted (module level, inside functions, under ``TYPE_CHECKING``).

- A *unit* is a package of tether (``tether.process``), a top-level module (``tether.runtime``),
  or the ``tether`` facade itself. The helper modules of ``manifest.py`` (``_manifest_*.py``)
  belong to the unit ``tether.manifest``. Top-level private modules of no unit
  (``tether._json``, ``tether._redact``, ``tether._urls``) are private to the ``tether`` package
  and so shared by all of it.
- Another unit is imported through its entry only: the package's ``__init__`` or the top-level
  module, never one of its private modules (a dotted part starting with ``_``).
- No cycle: neither between modules (a strongly connected part of the module graph) nor between
  units.

What is still broken is listed below, exactly: a violation not listed fails, and so does a listed
one that is gone, so the lists only shrink. Mend one, then delete its line (running this file
from tests/ prints the lists as the code now makes them).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from functools import cache

from _imports_support import SRC, imported_modules, is_module, module_name

#: Imports of another unit's private module still to mend: "importer -> imported".
KNOWN_PRIVATE_IMPORTS: set[str] = set()

#: Cycles still to break, each the sorted members of one strongly connected part.
KNOWN_MODULE_CYCLES: set[tuple[str, ...]] = set()
KNOWN_UNIT_CYCLES: set[tuple[str, ...]] = set()


@cache
def graph() -> Mapping[str, frozenset[str]]:
    """Every tether module -> the tether modules it imports (packages and modules only)."""
    return {
        module_name(path): frozenset(
            t for t in imported_modules(path) if t == "tether" or is_module(t)
        )
        for path in sorted(SRC.rglob("*.py"))
    }


def unit_of(module: str) -> str:
    """The unit ``module`` belongs to: its package below tether, its top-level module, or the
    facade; ``tether._manifest_x`` belongs to ``tether.manifest``."""
    parts = module.split(".")
    if len(parts) == 1:
        return "tether"
    top = parts[1]
    if top.startswith("_manifest_"):
        return "tether.manifest"
    return f"tether.{top}"


def is_private_to_its_unit(module: str) -> bool:
    """A module other units may not import: a private module below its unit's entry."""
    unit = unit_of(module)
    if module == unit:
        return False
    if unit == "tether.manifest":
        return True
    rest = module.removeprefix(unit + ".").split(".")
    return unit != module and any(part.startswith("_") for part in rest)


def private_imports(edges: Mapping[str, Iterable[str]]) -> set[str]:
    return {
        f"{source} -> {target}"
        for source, targets in edges.items()
        for target in targets
        if unit_of(target) != unit_of(source) and is_private_to_its_unit(target)
    }


def cycles(edges: Mapping[str, Iterable[str]]) -> set[tuple[str, ...]]:
    """The strongly connected parts of ``edges`` with more than one member (Tarjan)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found: set[tuple[str, ...]] = set()

    def visit(node: str) -> None:
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for goal in sorted(edges.get(node, ())):
            if goal not in index:
                visit(goal)
                low[node] = min(low[node], low[goal])
            elif goal in on_stack:
                low[node] = min(low[node], index[goal])
        if low[node] == index[node]:
            part = []
            while True:
                member = stack.pop()
                on_stack.discard(member)
                part.append(member)
                if member == node:
                    break
            if len(part) > 1:
                found.add(tuple(sorted(part)))

    for node in sorted(edges):
        if node not in index:
            visit(node)
    return found


def unit_graph(edges: Mapping[str, Iterable[str]]) -> dict[str, set[str]]:
    units: dict[str, set[str]] = {}
    for source, targets in edges.items():
        units.setdefault(unit_of(source), set()).update(
            unit_of(t) for t in targets if unit_of(t) != unit_of(source)
        )
    return units


# -- the rules, on small graphs ------------------------------------------------------------------


def test_a_private_module_of_another_package_is_a_violation() -> None:
    edges = {"tether.api._x": ["tether.process._event", "tether.process", "tether._json"]}
    assert private_imports(edges) == {"tether.api._x -> tether.process._event"}


def test_a_package_may_import_its_own_private_modules() -> None:
    assert private_imports({"tether.process._a": ["tether.process._b"]}) == set()


def test_the_helpers_of_the_manifest_are_private_to_it() -> None:
    edges = {
        "tether.manifest": ["tether._manifest_yaml"],
        "tether.eval._pack": ["tether._manifest_yaml", "tether.manifest"],
    }
    assert private_imports(edges) == {"tether.eval._pack -> tether._manifest_yaml"}


def test_the_scan_finds_a_cycle_however_long() -> None:
    edges = {"a": ["b"], "b": ["c"], "c": ["a"], "d": ["a"]}
    assert cycles(edges) == {("a", "b", "c")}


def test_the_unit_graph_joins_the_modules_of_a_package() -> None:
    edges = {"tether.runtime": ["tether.cluster"], "tether.cluster._node": ["tether.runtime"]}
    assert cycles(unit_graph(edges)) == {("tether.cluster", "tether.runtime")}


def test_the_walker_counts_function_local_and_type_checking_imports() -> None:
    # tether/__init__ names its lazy exports for type checkers only.
    assert "tether.process" in graph()["tether"]


# -- tether's graph ------------------------------------------------------------------------------


def test_no_package_imports_another_packages_private_module() -> None:
    assert sorted(private_imports(graph()) - KNOWN_PRIVATE_IMPORTS) == []


def test_the_known_private_imports_are_all_still_there() -> None:
    """The allowance shrinks with the code: an import mended leaves the list too."""
    assert sorted(KNOWN_PRIVATE_IMPORTS - private_imports(graph())) == []


def test_no_modules_import_each_other_in_a_circle() -> None:
    assert sorted(cycles(graph()) - KNOWN_MODULE_CYCLES) == []


def test_the_known_module_cycles_are_all_still_there() -> None:
    assert sorted(KNOWN_MODULE_CYCLES - cycles(graph())) == []


def test_no_packages_import_each_other_in_a_circle() -> None:
    assert sorted(cycles(unit_graph(graph())) - KNOWN_UNIT_CYCLES) == []


def test_the_known_package_cycles_are_all_still_there() -> None:
    assert sorted(KNOWN_UNIT_CYCLES - cycles(unit_graph(graph()))) == []


if __name__ == "__main__":
    # ``python tests/test_import_graph.py`` (from tests/) prints what the lists above should
    # now hold, to paste after mending.
    current = graph()
    for title, found in (
        ("KNOWN_PRIVATE_IMPORTS", private_imports(current)),
        ("KNOWN_MODULE_CYCLES", cycles(current)),
        ("KNOWN_UNIT_CYCLES", cycles(unit_graph(current))),
    ):
        print(f"{title} ({len(found)}):")
        for item in sorted(found):
            print(f"    {item!r},")
