"""The house's rules, read from the code: imports flow one way, providers are configuration.

docs/architecture.md describes the layers; these tests keep the code to it. They
read every module's imports (top level, inside functions and under
``TYPE_CHECKING``) with ``ast``, without importing anything.
"""

from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "webauth"

# Reads source files only: CI runs this module once (tests/conftest.py, .ci/run).
pytestmark = pytest.mark.backend_independent


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


class _Imports(ast.NodeVisitor):
    """Every import of a module: (target module, line, inside a function?)."""

    def __init__(self, module: str, is_package: bool) -> None:
        self.package = module if is_package else module.rpartition(".")[0]
        self.depth = 0
        self.found: list[tuple[str, int, bool]] = []

    def visit_FunctionDef(self, node: ast.AST) -> None:
        self.depth += 1
        self.generic_visit(node)
        self.depth -= 1

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self.found.append((alias.name, node.lineno, self.depth > 0))

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        if node.level:
            base = self.package.split(".")
            if node.level > 1:
                base = base[: len(base) - (node.level - 1)]
            target = ".".join(base) + (f".{node.module}" if node.module else "")
        else:
            target = node.module or ""
        for alias in node.names:
            self.found.append((f"{target}.{alias.name}", node.lineno, self.depth > 0))
        self.found.append((target, node.lineno, self.depth > 0))


def _graph() -> tuple[dict[str, set[str]], dict[str, Path], list[tuple[str, int, str]]]:
    files = {_module_name(p): p for p in PACKAGE.rglob("*.py") if "migrations" not in p.parts}
    graph: dict[str, set[str]] = defaultdict(set)
    lazy: list[tuple[str, int, str]] = []
    for name, path in files.items():
        visitor = _Imports(name, path.name == "__init__.py")
        visitor.visit(ast.parse(path.read_text()))
        for target, line, in_function in visitor.found:
            dest = target
            while dest and dest not in files:
                dest = dest.rpartition(".")[0]
            if not dest or dest == name:
                continue
            if path.name == "__init__.py" and dest.startswith(name + "."):
                continue  # a package importing its own submodules
            graph[name].add(dest)
            if in_function:
                lazy.append((name, line, dest))
    return graph, files, lazy


def _reaches(graph: dict[str, set[str]], start: str) -> set[str]:
    seen: set[str] = set()
    todo = [start]
    while todo:
        for dest in graph.get(todo.pop(), ()):
            if dest not in seen:
                seen.add(dest)
                todo.append(dest)
    return seen


def test_no_module_imports_itself_back():
    graph, files, _ = _graph()
    loops = sorted(name for name in files if name in _reaches(graph, name))
    assert loops == [], f"modules in an import cycle: {loops}"


def test_imports_inside_functions_say_why():
    # The only reason allowed is Django's app registry (models, or modules that
    # import them, cannot be imported while apps load); a comment says so.
    _, files, lazy = _graph()
    unexplained = []
    for name, line, dest in lazy:
        if name == "webauth":
            continue  # the lazy public API: ``import webauth`` before settings exist
        lines = files[name].read_text().splitlines()
        # The comment stands just above the import, or above its block of imports.
        window = "\n".join(lines[max(0, line - 10) : line]).lower()
        if "app registry" not in window:
            unexplained.append(f"{files[name].relative_to(PACKAGE.parent)}:{line} -> {dest}")
    assert unexplained == []


@pytest.mark.parametrize(
    "lower, higher",
    [
        # Providers are configuration: they know nothing of requests, flows or storage.
        ("webauth.providers", "webauth.flows"),
        ("webauth.providers", "webauth.state"),
        ("webauth.providers", "webauth.actions"),
        ("webauth.providers", "webauth.views"),
        ("webauth.providers", "webauth.oauth"),
        ("webauth.providers", "webauth.adapters"),
        ("webauth.providers", "webauth.conf"),
        # The protocol helpers serve the flows, never the other way round.
        ("webauth.oauth", "webauth.flows"),
        ("webauth.oauth", "webauth.actions"),
        # Flows end sign-ins; the routes choose them.
        ("webauth.flows", "webauth.actions"),
        ("webauth.flows", "webauth.views"),
        ("webauth.flows", "webauth.pages"),
        ("webauth.flows", "webauth.middleware"),
        ("webauth.flows", "webauth.helpers"),
        # The per-request state sits below everything that uses it.
        ("webauth.state", "webauth.flows"),
        ("webauth.state", "webauth.actions"),
        ("webauth.state", "webauth.middleware"),
        ("webauth.state", "webauth.helpers"),
        # Storage knows nothing of requests.
        ("webauth.adapters", "webauth.state"),
        ("webauth.adapters", "webauth.flows"),
        ("webauth.sessions", "webauth.state"),
        # The JWT code is self-contained.
        ("webauth.jwt", "webauth.conf"),
        ("webauth._jose", "webauth.conf"),
    ],
)
def test_layers(lower, higher):
    graph, files, _ = _graph()
    offenders = []
    for name in files:
        if name == lower or name.startswith(lower + "."):
            for dest in _reaches(graph, name):
                if dest == higher or dest.startswith(higher + "."):
                    offenders.append(f"{name} -> {dest}")
    # adapters.django is reached by conf only through the app-registry import
    # checked above; conf itself must not reach request handling.
    assert offenders == []


def test_only_the_django_adapter_and_admin_touch_the_models():
    # Storage goes through the adapter: the ORM models are the Django adapter's
    # (plus its admin pages and its maintenance commands: the purge, and the
    # audit of stored addresses).
    graph, files, _ = _graph()
    allowed = {
        "webauth.adapters.django",
        "webauth.admin",
        "webauth.purge",
        "webauth.management.commands.webauth_purge",
        "webauth.addresses",
        "webauth.management.commands.webauth_addresses",
    }
    users = sorted(name for name in files if "webauth.models" in graph[name])
    assert set(users) <= allowed, users
