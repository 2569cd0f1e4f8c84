"""One exception tree: every exception tether defines derives from TetherError, keeps the
built-in base its callers catch, says when it is raised, and is drawn in tether/errors.py."""

from __future__ import annotations

import ast
import importlib
import pkgutil
import re
import sqlite3
from pathlib import Path

import pytest

import tether
import tether.errors
from tether import TetherError


def _subclasses(cls: type[BaseException]) -> set[type[BaseException]]:
    found: set[type[BaseException]] = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def tether_exceptions() -> dict[str, type[BaseException]]:
    """Every exception class a tether module defines (all modules imported), by name."""
    for module in pkgutil.walk_packages(tether.__path__, "tether."):
        if not module.name.endswith("__main__"):
            importlib.import_module(module.name)
    classes = {
        cls
        for cls in _subclasses(BaseException)
        if cls.__module__ == "tether" or cls.__module__.startswith("tether.")
    }
    by_name = {cls.__qualname__: cls for cls in classes}
    assert len(by_name) == len(classes), "two tether exceptions share a name"
    return by_name


EXCEPTIONS = tether_exceptions()

#: One drawn line: tree, class name, where it lives, then "[built-in bases]" and what it means.
_LINE = re.compile(r"^ {4}[│├└─ ]*(?P<name>\w+) +(?P<where>\w+) +(?P<rest>.*)$")


def drawn_tree() -> dict[str, tuple[int, str, str]]:
    """The tree in tether/errors.py's docstring: name -> (depth, where, the rest of its line)."""
    doc = tether.errors.__doc__ or ""
    tree = doc.split("Exception tree::\n\n", 1)[1].split("\n\n", 1)[0]
    drawn: dict[str, tuple[int, str, str]] = {}
    for line in tree.splitlines():
        match = _LINE.match(line)
        assert match, f"not a line of the tree: {line!r}"
        depth = (len(line) - len(line[4:].lstrip("│├└─ ")) - 4) // 4
        drawn[match["name"]] = (depth, match["where"], match["rest"])
    return drawn


def drawn_parents() -> dict[str, str]:
    """Each drawn class's parent in the drawing (the nearest line above it, one level up)."""
    parents: dict[str, str] = {}
    chain: list[str] = []
    for name, (depth, _, _) in drawn_tree().items():
        del chain[depth:]
        if chain:
            parents[name] = chain[-1]
        chain.append(name)
    return parents


def test_the_scan_finds_the_exceptions_of_every_layer() -> None:
    for name in ("HookError", "ModelError", "ProcessError", "ManifestError", "APIError"):
        assert name in EXCEPTIONS
    assert len(EXCEPTIONS) > 40


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_every_tether_exception_derives_from_tether_error(name: str) -> None:
    assert issubclass(EXCEPTIONS[name], TetherError)


@pytest.mark.parametrize("name", sorted(EXCEPTIONS))
def test_every_tether_exception_says_in_one_line_when_it_is_raised(name: str) -> None:
    doc = EXCEPTIONS[name].__doc__
    assert doc, f"{name} has no docstring"
    assert doc.strip().splitlines()[0].strip()


def test_tether_error_is_public_and_says_it_lives_in_tether() -> None:
    assert "TetherError" in tether.__all__
    assert TetherError.__module__ == "tether"
    assert TetherError.__bases__ == (Exception,)


def test_the_drawn_tree_names_every_tether_exception_once() -> None:
    assert sorted(drawn_tree()) == sorted(EXCEPTIONS)


def test_the_drawn_tree_gives_each_exception_its_real_parent() -> None:
    wrong = {
        name: parent
        for name, parent in drawn_parents().items()
        if EXCEPTIONS[parent] not in EXCEPTIONS[name].__bases__
    }
    assert wrong == {}
    assert set(drawn_parents()) == set(EXCEPTIONS) - {"TetherError"}


def test_the_drawn_tree_names_the_built_in_bases_each_exception_keeps() -> None:
    missing = []
    for name, (_, _, rest) in drawn_tree().items():
        bases = rest[1 : rest.index("]")].split(", ") if rest.startswith("[") else []
        mro = {cls.__qualname__ for cls in EXCEPTIONS[name].__mro__}
        missing += [f"{name}: {base}" for base in bases if base.split(".")[-1] not in mro]
    assert missing == []


@pytest.mark.parametrize(
    ("name", "base"),
    [
        ("ManifestError", ValueError),
        ("HookTimeoutError", TimeoutError),
        ("InvalidEventError", TypeError),
        ("ProgramNotFoundError", OSError),
        ("ClusterError", RuntimeError),
        ("JournalFileGone", sqlite3.OperationalError),
    ],
)
def test_an_exception_keeps_the_built_in_base_its_callers_catch(
    name: str, base: type[BaseException]
) -> None:
    assert issubclass(EXCEPTIONS[name], base)


def test_one_except_clause_catches_what_the_public_api_raises(tmp_path: Path) -> None:
    bad = tmp_path / "bad.agent"
    bad.write_text("name: [not, a, name]\n")

    with pytest.raises(TetherError) as raised:
        tether.load_manifest(bad)

    assert isinstance(raised.value, tether.ManifestError)
    assert isinstance(raised.value, ValueError)


def test_the_root_of_the_tree_imports_nothing() -> None:
    tree = ast.parse(Path(tether.errors.__file__).read_text())
    imports = [
        ast.unparse(node)
        for node in ast.walk(tree)
        if isinstance(node, ast.Import)
        or (isinstance(node, ast.ImportFrom) and node.module != "__future__")
    ]
    assert imports == []
