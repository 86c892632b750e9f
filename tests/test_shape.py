"""One shape for every sign-in, read from the code: what must stay at 0.

Issue 21 counted the places where the code asked a question in the wrong room:
branches on the session strategy's name outside the sessions package, and
writes into an ``AuthState``'s ``__dict__`` from outside the class. These tests
read every module with ``ast`` (nothing is imported) and keep both at 0.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "webauth"

# Reads source files only: CI runs this module once (tests/conftest.py, .ci/run).
pytestmark = pytest.mark.backend_independent

#: The strategies' names, as the configuration spells them.
STRATEGY_NAMES = frozenset({"jwt", "database"})


def _modules(*, skip: tuple[str, ...] = ()) -> list[tuple[str, ast.Module]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        relative = path.relative_to(PACKAGE.parent).as_posix()
        if "migrations" in path.parts or relative.startswith(skip):
            continue
        found.append((relative, ast.parse(path.read_text())))
    return found


def _names_strategy(node: ast.AST) -> bool:
    """Whether *node* is the strategy's name: ``x.strategy``, ``strategy``, ``x.name`` of one."""
    if isinstance(node, ast.Attribute):
        return node.attr == "strategy" or (node.attr == "name" and "strateg" in ast.unparse(node))
    return isinstance(node, ast.Name) and "strategy" in node.id


def _strategy_literal(node: ast.AST) -> bool:
    if isinstance(node, ast.Constant):
        return node.value in STRATEGY_NAMES
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        return any(_strategy_literal(e) for e in node.elts)
    return False


def strategy_branches(tree: ast.Module) -> list[int]:
    """Lines comparing the session strategy's name (``config.session.strategy == "jwt"``)."""
    lines = []
    for node in ast.walk(tree):
        if not isinstance(node, ast.Compare):
            continue
        sides = [node.left, *node.comparators]
        if any(_names_strategy(s) for s in sides) and any(_strategy_literal(s) for s in sides):
            lines.append(node.lineno)
    return lines


def outside_dict_writes(tree: ast.Module) -> list[int]:
    """Lines writing into a state's ``__dict__`` (``state.__dict__["x"] = ...``, ``.pop``...)."""
    lines = []
    for node in ast.walk(tree):
        targets: list[ast.AST] = []
        if isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
        elif isinstance(node, ast.Delete):
            targets = list(node.targets)
        for target in targets:
            if isinstance(target, ast.Subscript) and _state_dict(target.value):
                lines.append(node.lineno)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and node.func.attr in ("pop", "setdefault", "update", "clear", "popitem")
            and _state_dict(node.func.value)
        ):
            lines.append(node.lineno)
    return lines


def _state_dict(node: ast.AST) -> bool:
    # ``<something state-like>.__dict__``; ``self.__dict__`` inside AuthState is its own.
    return (
        isinstance(node, ast.Attribute)
        and node.attr == "__dict__"
        and "state" in ast.unparse(node.value).lower()
    )


def test_no_branch_on_the_strategys_name_outside_the_sessions_package():
    # 18 before issue 21 (16 of them outside conf/ and sessions.py); everything
    # asks the strategy object (webauth.sessions.strategy_of, AuthState.sessions).
    offenders = [
        f"{name}:{line}"
        for name, tree in _modules(skip=("webauth/sessions/",))
        for line in strategy_branches(tree)
    ]
    assert offenders == []


def test_the_configurations_names_are_the_strategies():
    # The configuration accepts a name and knows whether it needs an adapter
    # (webauth.E003); the objects say the same.
    from webauth.conf.sections import STRATEGY_NEEDS_ADAPTER
    from webauth.sessions import STRATEGIES

    assert {name: s.stored for name, s in STRATEGIES.items()} == dict(STRATEGY_NEEDS_ADAPTER)
    assert all(name == s.name for name, s in STRATEGIES.items())


def test_nothing_writes_into_an_auth_states_dict_from_outside():
    offenders = [
        f"{name}:{line}"
        for name, tree in _modules(skip=("webauth/state.py",))
        for line in outside_dict_writes(tree)
    ]
    assert offenders == []


@pytest.mark.parametrize(
    "source, count",
    [
        ('if config.session.strategy == "jwt":\n    pass\n', 1),
        ('x = "database" if cfg.session.strategy != "jwt" else 0\n', 1),
        ('ok = strategy in ("jwt", "database")\n', 1),
        ("if state.sessions.stored:\n    pass\n", 0),
        ('if error.type == "jwt":\n    pass\n', 0),
    ],
)
def test_the_strategy_count_sees_a_branch(source, count):
    assert len(strategy_branches(ast.parse(source))) == count


@pytest.mark.parametrize(
    "source, count",
    [
        ('state.__dict__["bearer"] = True\n', 1),
        ('self.state.__dict__.pop("session_result", None)\n', 1),
        ('request.__dict__["_webauth"] = state\n', 0),
        ('self.__dict__["x"] = 1\n', 0),
    ],
)
def test_the_dict_count_sees_a_write(source, count):
    assert len(outside_dict_writes(ast.parse(source))) == count


def test_a_strategy_must_implement_the_whole_interface():
    # The interface is abstract: a strategy that leaves a method out cannot be
    # made, so STRATEGIES (made at import) holds only complete ones.
    from webauth.sessions import STRATEGIES, JwtSessions, SessionStrategy

    class Partial(SessionStrategy):
        name, stored, adapter_feature = "partial", False, "jwt_with_adapter"

    with pytest.raises(TypeError, match="abstract"):
        Partial()  # type: ignore[abstract]
    assert isinstance(STRATEGIES["jwt"], JwtSessions)
    assert SessionStrategy.__abstractmethods__ >= {"read", "create", "end", "slide"}


def _webauth_imports(tree: ast.Module) -> list[str]:
    """The modules of webauth that *tree* imports (relative imports, or ``webauth.*``)."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and (
            node.level or (node.module or "").split(".")[0] == "webauth"
        ):
            found.append("." * node.level + (node.module or ""))
        elif isinstance(node, ast.Import):
            found += [a.name for a in node.names if a.name.split(".")[0] == "webauth"]
    return found


def test_the_counters_import_nothing_of_webauth():
    # The rate limits decide what to count and hand the counters down: counting
    # must not climb back into webauth (docs/architecture.md, the journeys).
    tree = ast.parse((PACKAGE / "counters.py").read_text())
    assert _webauth_imports(tree) == []


def test_the_reader_of_imports_sees_a_relative_import():
    assert _webauth_imports(ast.parse("from .conf import Config\nimport webauth.jwt")) == [
        ".conf",
        "webauth.jwt",
    ]
