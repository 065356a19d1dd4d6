"""The package's import graph: no cycle (function-level imports included) and one-way layers."""

from __future__ import annotations

import ast
import functools
from collections.abc import Iterator
from pathlib import Path

import emulator

ROOT = Path(emulator.__file__).parent

# Lower layers never import higher ones; a package may import its own layer only where it
# is acyclic (checked below). Top-level modules not named here sit in the bottom layer.
LAYERS: dict[str, int] = {
    **dict.fromkeys(
        [
            "app",
            "services",
            "workspaces",
            "cli",
            "control",
            "dashboard",
            "testing",
            "seed_process",  # builds a seeded image with the whole app's seeders
            "__main__",
        ],
        2,
    ),
    **dict.fromkeys(
        [
            "simulation",
            "exporter",
            "scenarios",
            "public_api",
            "crm",
            "verify",
            "server",
            "state",
            "openapi",
            "path_roots",
            "file_schemas",  # the scenario file's schema comes from scenarios' structs
            "file_check",
            "calls",
        ],
        1,
    ),
}
# Imports the `platform` branch (issue 12 item 1) removes: connection validation and fixture
# seeding move into platform/, the engagement vocabulary too. Each must still exist (a stale
# entry fails), so this list only shrinks.
PENDING = {}
# The walls of style.md: the two sides of Part A meet only over HTTP.
WALLS = {("crm", "exporter"), ("exporter", "crm"), ("crm", "public_api"), ("public_api", "crm")}


def module_name(path: Path) -> str:
    parts = path.relative_to(ROOT.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _type_checking_only(node: ast.AST) -> bool:
    return isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)


def runtime_imports(tree: ast.AST) -> Iterator[ast.Import | ast.ImportFrom]:
    """Every import statement that runs, at any depth (functions included); not the ones
    under `if TYPE_CHECKING:`, which never run."""
    stack = [tree]
    while stack:
        node = stack.pop()
        for child in ast.iter_child_nodes(node):
            if _type_checking_only(child):
                continue
            if isinstance(child, (ast.Import, ast.ImportFrom)):
                yield child
            stack.append(child)


def imported(
    name: str, is_package: bool, node: ast.Import | ast.ImportFrom, modules: set[str]
) -> set[str]:
    """Our modules one import statement loads (`from pkg import mod` names the module)."""
    if isinstance(node, ast.Import):
        targets = [alias.name for alias in node.names]
    else:
        if node.level:
            base = name.split(".") if is_package else name.split(".")[:-1]
            base = base[: len(base) - node.level + 1]
            source = ".".join(base + ([node.module] if node.module else []))
        else:
            source = node.module or ""
        targets = [source] + [f"{source}.{alias.name}" for alias in node.names]
    return {t for t in targets if t in modules and t != name}


@functools.cache
def package_imports() -> dict[str, frozenset[str]]:
    """Module -> the modules it imports, all edges: the package parsed once for the module's
    tests (about a second each time), which only read it."""
    files = {module_name(p): p for p in ROOT.rglob("*.py")}
    modules = set(files)
    graph: dict[str, frozenset[str]] = {}
    for name, path in files.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        is_package = path.name == "__init__.py"
        graph[name] = frozenset().union(
            *(imported(name, is_package, node, modules) for node in runtime_imports(tree))
        )
    return graph


def import_graph(pending: bool = False) -> dict[str, set[str]]:
    """Module -> the modules it imports; without the PENDING edges unless `pending`."""
    return {
        name: set(targets) - (set() if pending else {dst for src, dst in PENDING if src == name})
        for name, targets in package_imports().items()
    }


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One cycle of `graph` as a path that returns to its start, or None."""
    state: dict[str, int] = {}  # 1 on the current path, 2 done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state and (found := visit(nxt)):
                return found
        path.pop()
        state[node] = 2
        return None

    for start in sorted(graph):
        if start not in state and (found := visit(start)):
            return found
    return None


def area(module: str) -> str:
    """The package (or top-level module) a module belongs to: emulator.crm.routes -> crm."""
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "emulator"


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    packages: dict[str, set[str]] = {}
    for src, targets in graph.items():
        packages.setdefault(area(src), set()).update(
            area(t) for t in targets if area(t) != area(src)
        )
    return packages


def test_no_import_cycle_between_modules() -> None:
    assert find_cycle(import_graph(pending=True)) is None


def test_pending_imports_still_exist() -> None:
    graph = import_graph(pending=True)
    assert [edge for edge in sorted(PENDING) if edge[1] not in graph[edge[0]]] == []


def test_no_two_way_dependency_between_packages() -> None:
    assert find_cycle(package_graph(import_graph())) is None


def test_layers_import_downwards_only() -> None:
    upward = sorted(
        f"{src} -> {dst}"
        for src, targets in import_graph().items()
        for dst in targets
        if LAYERS.get(area(dst), 0) > LAYERS.get(area(src), 0)
    )
    assert upward == []


def test_crm_exporter_and_public_api_walls_hold() -> None:
    crossing = sorted(
        f"{src} -> {dst}"
        for src, targets in import_graph().items()
        for dst in targets
        if (area(src), area(dst)) in WALLS
    )
    assert crossing == []


def test_find_cycle_sees_a_cycle_through_a_function_level_import() -> None:
    tree = ast.parse("import os\ndef f():\n    from emulator import b\n")
    targets = set().union(
        *(imported("emulator.a", False, n, {"emulator.b"}) for n in runtime_imports(tree))
    )
    graph = {"emulator.a": targets, "emulator.b": {"emulator.a"}}
    assert find_cycle(graph) == ["emulator.a", "emulator.b", "emulator.a"]


def test_type_checking_imports_do_not_count() -> None:
    tree = ast.parse(
        "from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from emulator import b\n"
    )
    assert [n for n in runtime_imports(tree) if n.module == "emulator"] == []
