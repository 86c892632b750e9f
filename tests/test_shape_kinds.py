"""A provider kind is described once: no code outside the flow table compares a ``type``.

What a kind of provider (credentials, OAuth, OIDC, email, passkeys) can do is
its entry in :data:`webauth.flows.FLOWS`; everything else asks that table
(``flow_for``, ``can``, ``providers_with``). This test reads the source with
``ast``, without importing anything, and finds every comparison that decides
by a kind's name outside the table's module:

* a comparison (``==``, ``!=``, ``in``, ``not in``, ``is``, ``is not``) one of
  whose sides is an attribute ``.type`` or a subscript ``["type"]`` of anything;
* an equality with a string naming a kind (``kind == "webauthn"``);
* a membership test in a literal collection, or a module-level constant,
  holding a kind's name (``x in ("oauth", "oidc")``, ``x in OAUTH_TYPES``);
* a ``match`` on a ``.type`` or ``["type"]``.

Records whose ``type`` is not a provider's kind are allowed by name, below.
"""

from __future__ import annotations

import ast
from collections.abc import Iterable
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "webauth"

#: The flow table's module: the one place a kind is named and compared.
TABLE_MODULES = {"webauth/flows/__init__.py"}

#: The kinds' names (``Provider.type``), as the table keys them.
KINDS = frozenset({"credentials", "oauth", "oidc", "email", "webauthn"})

#: The kinds' names that mean nothing else (a collection of field names may hold "email").
ONLY_KINDS = KINDS - {"email", "credentials"}

#: Owners whose ``type`` is not a provider kind, anywhere: an error's type is its
#: Auth.js class name (``error.type == "EmailSignInError"``).
ANY_FILE_OWNERS = frozenset({"error", "exc"})

#: (file, owner) pairs allowed in one file only, each for the reason given.
FILE_OWNERS = frozenset(
    {
        # The adapter's stored Account rows (the ``type`` column Auth.js's account
        # records carry): storage sits below the flows and must not import them
        # (tests/test_architecture.py), and pairs a passkey with its row.
        ("webauth/adapters/django.py", "obj"),
        ("webauth/adapters/django.py", "kind"),
        # The in-memory adapter's stored accounts, for the same reason.
        ("webauth/testing/memory.py", "account"),
        # The adapter contract suites check the records an adapter gave back.
        ("webauth/testing/adapter.py", "account"),
        ("webauth/testing/extensions.py", "a"),
        # The sign-in page's layout asks a form field for its HTML input type
        # ("password", "email"), which is no provider kind.
        ("webauth/pages.py", "field"),
    }
)

# Reads source files only: CI runs this module once (tests/conftest.py, .ci/run).
pytestmark = pytest.mark.backend_independent


def _owner(node: ast.expr) -> str:
    """The name at the root of *node* (``p`` for ``p.type``, ``row`` for ``row["type"]``)."""
    while isinstance(node, ast.Attribute | ast.Subscript | ast.Call):
        node = node.func if isinstance(node, ast.Call) else node.value
    return node.id if isinstance(node, ast.Name) else ast.unparse(node)


def _is_type(node: ast.expr) -> bool:
    if isinstance(node, ast.Attribute):
        return node.attr == "type"
    if isinstance(node, ast.Subscript):
        key = node.slice
        return isinstance(key, ast.Constant) and key.value == "type"
    return False


def _names_kind(node: ast.expr) -> bool:
    return isinstance(node, ast.Constant) and node.value in KINDS


def _holds_kind(node: ast.expr, constants: set[str]) -> bool:
    """A literal collection with a kind's name in it, or a module constant that is one."""
    if isinstance(node, ast.Call) and node.args:  # frozenset({...}), tuple([...])
        return _holds_kind(node.args[0], constants)
    if isinstance(node, ast.Tuple | ast.List | ast.Set):
        # "email" and "credentials" alone are field and section names as well.
        named = {e.value for e in node.elts if isinstance(e, ast.Constant) and e.value in KINDS}
        return len(named) > 1 or bool(named & ONLY_KINDS)
    if isinstance(node, ast.Attribute):  # sections.OAUTH_TYPES
        return node.attr in constants
    return isinstance(node, ast.Name) and node.id in constants


def _kind_constants(tree: ast.Module) -> set[str]:
    """Module-level names bound to a collection of kinds' names."""
    found = set()
    for stmt in tree.body:
        targets: list[ast.expr] = []
        value: ast.expr | None = None
        if isinstance(stmt, ast.Assign):
            targets, value = stmt.targets, stmt.value
        elif isinstance(stmt, ast.AnnAssign) and stmt.value is not None:
            targets, value = [stmt.target], stmt.value
        if value is not None and _holds_kind(value, set()):
            found.update(t.id for t in targets if isinstance(t, ast.Name))
    return found


def kind_comparisons(source: str, path: str, constants: Iterable[str] = ()) -> list[str]:
    """Each comparison of *source* that decides by a provider kind's name, as ``path:line``."""
    tree = ast.parse(source)
    constants = set(constants) | _kind_constants(tree)
    found = []
    for node in ast.walk(tree):
        owners: list[str] = []
        if isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            owners += [_owner(s) for s in sides if _is_type(s)]
            for op, left, right in zip(node.ops, sides[:-1], sides[1:], strict=True):
                if isinstance(op, ast.Eq | ast.NotEq | ast.Is | ast.IsNot):
                    owners += [
                        _owner(o) for a, o in ((left, right), (right, left)) if _names_kind(a)
                    ]
                elif isinstance(op, ast.In | ast.NotIn) and _holds_kind(right, constants):
                    owners.append(_owner(left))
        elif isinstance(node, ast.Match) and _is_type(node.subject):
            owners.append(_owner(node.subject))
        if any(o not in ANY_FILE_OWNERS and (path, o) not in FILE_OWNERS for o in owners):
            found.append(f"{path}:{node.lineno}: {ast.unparse(node)[:80]}")
    return found


def _package_constants() -> set[str]:
    names: set[str] = set()
    for file in PACKAGE.rglob("*.py"):
        if file.relative_to(PACKAGE.parent).as_posix() not in TABLE_MODULES:
            names |= _kind_constants(ast.parse(file.read_text()))
    return names


def test_no_comparison_of_a_provider_kind_outside_the_flow_table():
    constants = _package_constants()
    found = []
    for file in sorted(PACKAGE.rglob("*.py")):
        path = file.relative_to(PACKAGE.parent).as_posix()
        if path not in TABLE_MODULES:
            found += kind_comparisons(file.read_text(), path, constants)
    assert found == [], "ask webauth.flows (flow_for, can, providers_with) instead:\n" + "\n".join(
        found
    )


def test_no_module_lists_kinds_outside_the_flow_table():
    # A constant such as OAUTH_TYPES = ("oauth", "oidc") is a second description
    # of which kinds can do something; so is a dict keyed by kinds (the app
    # routes' provider type -> flow was one).
    assert _package_constants() == set()
    tables = []
    for file in sorted(PACKAGE.rglob("*.py")):
        path = file.relative_to(PACKAGE.parent).as_posix()
        if path in TABLE_MODULES:
            continue
        for node in ast.walk(ast.parse(file.read_text())):
            if (
                isinstance(node, ast.Dict)
                and sum(k is not None and _names_kind(k) for k in node.keys) > 1
            ):
                tables.append(f"{path}:{node.lineno}")
    assert tables == []


@pytest.mark.parametrize(
    "line",
    [
        'if p.type == "webauthn": pass',
        'if "webauthn" == p.type: pass',
        'if provider.type != "credentials": pass',
        'if provider.type in ("oauth", "oidc"): pass',
        'if provider.type not in frozenset({"oauth", "oidc"}): pass',
        'ok = [p for p in config.providers if p.type == "email"]',
        'if entry["type"] == "webauthn": pass',
        "if a.type in KINDS: pass",
        'kind = p.type\nif kind == "email": pass',
        'if kind in ("oauth", "oidc"): pass',
        'if kind in ("webauthn",): pass',
        'if kind not in {"credentials", "email"}: pass',
        'OAUTH = ("oauth", "oidc")\nif kind in OAUTH: pass',
        "if a.type in sections.OAUTH_TYPES: pass",
        'match p.type:\n    case "webauthn": pass',
        "if error.type == p.type: pass",
    ],
)
def test_the_reader_finds_a_kind_comparison(line):
    assert kind_comparisons(line, "webauth/pages.py", {"OAUTH_TYPES"}) != []


@pytest.mark.parametrize(
    "line",
    [
        'if error.type == "EmailSignInError": pass',
        "if error.type in SIGN_IN_ERRORS: pass",
        'if "email" in fields: pass',
        'if name in ("username", "email"): pass',
        'if name == "username": pass',
        "if flow is not None and flow.is_passkey: pass",
    ],
)
def test_the_reader_leaves_other_comparisons(line):
    assert kind_comparisons(line, "webauth/pages.py") == []


def test_the_table_module_names_every_kind():
    # The kinds listed here are the table's keys: a new kind is added to both.
    tree = ast.parse((PACKAGE / "flows" / "__init__.py").read_text())
    keys: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign) and getattr(node.target, "id", "") == "FLOWS":
            assert isinstance(node.value, ast.Dict)
            keys = {k.value for k in node.value.keys if isinstance(k, ast.Constant)}
    assert keys == KINDS
