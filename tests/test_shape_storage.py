"""Storage is typed: nothing calls an adapter method by its name as a string.

Flows and helpers call the typed methods of ``webauth.adapters.storage.Storage``
(``storage.get_user(id)``), whose answers the type checker knows; a call such as
``storage("get_user", id)`` hides them. These tests read every module with
``ast`` and count such calls: a call whose first positional argument is a
string literal naming a method of the adapter contract.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from webauth.adapters.base import ADAPTER_METHODS, EXTENSION_METHODS

PACKAGE = Path(__file__).resolve().parent.parent / "webauth"

# Reads source files only: CI runs this module once (tests/conftest.py, .ci/run).
pytestmark = pytest.mark.backend_independent

CONTRACT = frozenset(ADAPTER_METHODS) | frozenset(EXTENSION_METHODS)

#: Calls that ask about a method rather than call it: ``storage.has("x")``,
#: ``storage.require("x", "y")``, and which class of an adapter defines one
#: (``definer("get_user")`` in sessions/binding.py).
ASKING = frozenset({"has", "require", "definer"})

#: The façade itself: each typed method names its adapter method once.
FACADE = "adapters/storage.py"


def _callee(node: ast.Call) -> str:
    func = node.func
    if isinstance(func, ast.Attribute):
        return func.attr
    if isinstance(func, ast.Name):
        return func.id
    return ""


def calls_by_name(source: str) -> list[tuple[int, str]]:
    """``(line, method)`` of each call of an adapter method by its name in *source*."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if not isinstance(node, ast.Call) or not node.args:
            continue
        first = node.args[0]
        if (
            isinstance(first, ast.Constant)
            and first.value in CONTRACT
            and _callee(node) not in ASKING
        ):
            found.append((node.lineno, first.value))
    return sorted(found)


def _modules() -> list[tuple[str, Path]]:
    return sorted(
        (path.relative_to(PACKAGE).as_posix(), path)
        for path in PACKAGE.rglob("*.py")
        if "migrations" not in path.parts
    )


def test_nothing_calls_storage_by_a_method_name():
    found = [
        f"webauth/{name}:{line}: {method!r}"
        for name, path in _modules()
        if name != FACADE
        for line, method in calls_by_name(path.read_text(encoding="utf-8"))
    ]
    assert len(found) == 0, "call the typed Storage method instead:\n" + "\n".join(found)


def test_the_facade_is_where_it_is_said_to_be():
    assert FACADE in {name for name, _ in _modules()}


@pytest.mark.parametrize(
    ("source", "counted"),
    [
        ('config.storage("get_user", uid)', [(1, "get_user")]),
        ('storage("delete_session", token)', [(1, "delete_session")]),
        ('await storage.acall("get_user_by_email", email)', [(1, "get_user_by_email")]),
        ('call_it("prove_email", uid, "p", "a")', [(1, "prove_email")]),
        ("storage.get_user(uid)", []),
        ('storage.has("get_user")', []),
        ('storage.require("create_session", "delete_session")', []),
        ('storage("not_a_contract_method", 1)', []),
    ],
)
def test_what_counts_as_a_call_by_name(source, counted):
    assert calls_by_name(source) == counted


def test_each_facade_method_calls_the_adapter_method_of_its_own_name():
    tree = ast.parse((PACKAGE / FACADE).read_text(encoding="utf-8"))
    facade = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "Storage")
    methods = {n.name: n for n in facade.body if isinstance(n, ast.FunctionDef)}
    assert set(methods) >= CONTRACT, sorted(CONTRACT - set(methods))
    for name in CONTRACT:
        named = {method for _, method in calls_by_name(ast.unparse(methods[name]))}
        assert named == {name}, (name, named)
