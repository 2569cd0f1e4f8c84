"""The engine stays readable: short functions, normal constructors, no hidden global cells."""

from __future__ import annotations

import ast
from pathlib import Path

HOOKS = Path(__file__).parents[2] / "src" / "tether" / "hooks"
LONGEST = 80


def modules() -> list[tuple[str, ast.Module]]:
    return [
        (p.relative_to(HOOKS).as_posix(), ast.parse(p.read_text()))
        for p in sorted(HOOKS.rglob("*.py"))
    ]


def test_no_function_in_the_engine_is_longer_than_80_lines() -> None:
    long = []
    for name, tree in modules():
        for node in ast.walk(tree):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                length = (node.end_lineno or node.lineno) - node.lineno + 1
                if length > LONGEST:
                    long.append(f"{name}:{node.lineno} {node.name} ({length} lines)")
    assert long == []


def test_no_constructor_is_skipped_with_object_new() -> None:
    found = [
        f"{name}:{node.lineno}"
        for name, tree in modules()
        for node in ast.walk(tree)
        if isinstance(node, ast.Attribute)
        and node.attr == "__new__"
        and isinstance(node.value, ast.Name)
        and node.value.id == "object"
    ]
    assert found == []


def test_no_module_state_is_a_one_item_list() -> None:
    cells = [
        f"{name}:{node.lineno}"
        for name, tree in modules()
        for node in tree.body
        if isinstance(node, ast.Assign | ast.AnnAssign)
        and isinstance(node.value, ast.List)
        and len(node.value.elts) == 1
        and "__all__" not in ast.unparse(node)
    ]
    assert cells == []
