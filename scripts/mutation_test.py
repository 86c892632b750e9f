#!/usr/bin/env python
"""Mutation testing of webauth's security code: would the tests notice a bug?

Each mutant is one small change to one security module (a comparison flipped,
``and`` made ``or``, a ``not`` dropped, a constant or string changed, a slice
bound moved, a return value replaced, a statement deleted). The tests mapped to
the module run against it; a mutant the tests do not fail on "survived", and
either a test is missing or the change is equivalent (it cannot change
behaviour). Equivalent mutants are listed, with the reason, in
``scripts/mutation_equivalent.txt`` and reported apart from the survivors.

Slow, so not run in CI. Run it module by module, at low priority::

    nice -n 10 python scripts/mutation_test.py csrf
    nice -n 10 python scripts/mutation_test.py --list          # modules and their tests
    nice -n 10 python scripts/mutation_test.py idtoken --line 120   # one line only
    nice -n 10 python scripts/mutation_test.py email --jobs 2       # two mutants at once
    # a second pass: the survivors of a run (their keys in a file) against more tests
    nice -n 10 python scripts/mutation_test.py email --keys survivors.txt \
        --tests tests/test_a.py tests/test_b.py
    python scripts/mutation_test.py csrf --dry-run             # print the mutants only

With coverage.py installed (the ``test`` extra), the unmutated run records
which tests reach each line (``scripts/_mutation_coverage.py``), and each
mutant is tried first against those; one that survives them, or whose line no
test reaches in-process, is then run against the module's whole test files, so
a survivor is always one the whole files let through (``--all-tests``: the
whole files for every mutant). Only the pytest plugins the suite needs are
loaded in each run.

The working tree is never touched: the project is copied to a temporary
directory and each mutant is written there (no bytecode is written, so a stale
``.pyc`` can never stand in for a mutant). The exit status is 1 when a mutant
survived that is not listed as equivalent.

What is not mutated: docstrings, annotations, imports, ``__all__``, the text of
messages given to exceptions and loggers (f-strings included), ``TYPE_CHECKING``
blocks, and lines marked ``# pragma: no mutate``.
"""

from __future__ import annotations

import argparse
import ast
import concurrent.futures
import copy
import importlib.util
import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EQUIVALENT_FILE = ROOT / "scripts" / "mutation_equivalent.txt"
# The pytest plugins a mutant's run loads (see _run_tests).
PYTEST_PLUGINS = ("pytest_django.plugin", "_hypothesis_pytestplugin", "anyio.pytest_plugin")


@dataclass(frozen=True)
class Target:
    """One security module: which file, which functions (``None``: all), which tests."""

    path: str
    tests: tuple[str, ...]
    functions: tuple[str, ...] | None = None


# The narrowest set of test files that is meant to catch every change in each module.
TARGETS: dict[str, Target] = {
    "csrf": Target("webauth/csrf.py", ("tests/test_csrf.py",)),
    # The second factor (issue 22).
    "mfa_totp": Target("webauth/mfa/totp.py", ("tests/test_mfa_factors.py",)),
    "mfa_recovery": Target("webauth/mfa/recovery.py", ("tests/test_mfa_factors.py",)),
    "mfa_factors": Target(
        "webauth/mfa/factors.py",
        (
            "tests/test_mfa_factors.py",
            "tests/test_mfa_account.py",
            "tests/test_mfa_policy.py",
            "tests/test_mfa_signin.py",
            "tests/test_mfa_events.py",
            "tests/test_mfa_trust.py",
            "tests/test_mfa_keys_unit.py",
            "tests/test_mfa_verify_edges.py",
        ),
    ),
    "mfa_pending": Target(
        "webauth/mfa/pending.py",
        ("tests/test_mfa_signin.py", "tests/test_mfa_app.py", "tests/test_mfa_keys.py"),
    ),
    "mfa_keys": Target(
        "webauth/mfa/keys.py", ("tests/test_mfa_keys_unit.py", "tests/test_mfa_keys.py")
    ),
    "mfa_verify": Target(
        "webauth/mfa/verify.py",
        (
            "tests/test_mfa_signin.py",
            "tests/test_mfa_app.py",
            "tests/test_mfa_policy.py",
            "tests/test_mfa_assurance.py",
            "tests/test_mfa_keys.py",
            "tests/test_mfa_events.py",
            "tests/test_mfa_verify_edges.py",
        ),
    ),
    "mfa_step": Target(
        "webauth/mfa/step.py",
        (
            "tests/test_mfa_signin.py",
            "tests/test_mfa_app.py",
            "tests/test_mfa_policy.py",
            "tests/test_mfa_provider_amr.py",
            "tests/test_mfa_keys.py",
            "tests/test_mfa_trust.py",
            "tests/test_mfa_step_edges.py",
        ),
    ),
    "mfa_policy": Target("webauth/mfa/policy.py", ("tests/test_mfa_policy.py",)),
    "mfa_trust": Target(
        "webauth/mfa/trust.py", ("tests/test_mfa_trust_unit.py", "tests/test_mfa_trust.py")
    ),
    "mfa_access": Target(
        "webauth/mfa/access.py",
        ("tests/test_mfa_access.py", "tests/test_mfa_assurance.py", "tests/test_mfa_policy.py"),
    ),
    "redirect": Target(
        "webauth/callbacks.py",
        ("tests/test_redirect_callback.py",),
        ("default_redirect", "_default_redirect", "run_redirect"),
    ),
    "cookies": Target(
        "webauth/cookies.py", ("tests/test_cookies.py", "tests/test_cookies_attributes.py")
    ),
    "jwt": Target(
        "webauth/_jose.py",
        ("tests/test_jwt.py",),
        (
            "_b64url_decode",
            "_parse_json",
            "_reject_constant",
            "_derived",
            "_al",
            "_tag",
            "_cbc_decrypt",
            "_route",
            "_decrypt_cbc_hs512",
            "_decrypt_gcm",
            "_is_number",
            "_js_equal",
            "_replicated_claims_match",
            "_decode",
            "decode",
            "_secrets",
        ),
    ),
    "sessions": Target(
        "webauth/sessions/jwt.py",
        (
            "tests/test_sessions_reading.py",
            "tests/test_session_end.py",
            "tests/test_sessions_ending.py",
        ),
        (
            "_bound_user",
            "jwt_lifetime",
            "_token_deadline",
            "decode_token",
            "default_session",
            "read_jwt_session",
        ),
    ),
    "session_binding": Target(
        "webauth/sessions/binding.py",
        (
            "tests/test_sessions_reading.py",
            "tests/test_session_end.py",
            "tests/test_sessions_ending.py",
            "tests/test_sessions_check.py",
        ),
        ("auth_hash_matches", "session_auth_hash", "auth_time"),
    ),
    "session_database": Target(
        "webauth/sessions/database.py",
        (
            "tests/test_sessions_reading.py",
            "tests/test_session_end.py",
            "tests/test_sessions_ending.py",
            "tests/test_sessions_database.py",
        ),
        ("read_database_session", "_database_session_ended"),
    ),
    "checks": Target("webauth/oauth/checks.py", ("tests/test_oauth_checks.py",)),
    "webauthn": Target(
        "webauth/flows/webauthn.py",
        ("tests/test_flows_webauthn.py", "tests/test_passkeys.py"),
        (
            "_read_binding",
            "_decide",
            "_read_credential",
            "_verify",
            "_authenticate",
            "_register",
            "_says_not_discoverable",
        ),
    ),
    "idtoken": Target("webauth/oauth/idtoken.py", ("tests/test_oauth_idtoken.py",)),
    # Issue 20: the canonical form of an address, and the newer security code of
    # issues 11 and 14 (email sign-in, app sign-in, the limiter, the client's
    # address, bearer tokens).
    "identity": Target("webauth/identity.py", ("tests/test_identity.py",)),
    "email": Target("webauth/flows/email.py", ("tests/test_flows_email.py",)),
    "app": Target("webauth/flows/app.py", ("tests/test_app_signin.py",)),
    "ratelimit": Target("webauth/ratelimit.py", ("tests/test_ratelimit.py",)),
    "client_ip": Target("webauth/client_ip.py", ("tests/test_client_ip.py",)),
    "bearer": Target("webauth/bearer.py", ("tests/test_bearer.py",)),
    # Issue 24: the bot challenge (webauth.challenges).
    "challenges_base": Target("webauth/challenges/base.py", ("tests/test_challenges.py",)),
    "challenges_services": Target("webauth/challenges/services.py", ("tests/test_challenges.py",)),
    "challenges_gate": Target(
        "webauth/challenges/gate.py",
        ("tests/test_challenge_flows.py", "tests/test_challenges.py"),
    ),
    # Issue 24: sign-up with a password.
    "passwords_signup": Target(
        "webauth/passwords/signup.py",
        (
            "tests/test_passwords_signup_units.py",
            "tests/test_passwords_signup.py",
            "tests/test_passwords_signup_concurrency.py",
            "tests/test_challenge_flows.py",
        ),
    ),
    # Issue 24: the password reset.
    "passwords_reset": Target(
        "webauth/passwords/reset.py",
        (
            "tests/test_passwords_reset_units.py",
            "tests/test_passwords_reset.py",
            "tests/test_challenge_flows.py",  # the bot challenge asked before anything else
        ),
    ),
    # Issue 24: changing and setting a password in the account center.
    "passwords_change": Target("webauth/passwords/change.py", ("tests/test_passwords_change.py",)),
    # Issue 24: the breached-password validator (against a local fake of the range API).
    "passwords_breached": Target(
        "webauth/passwords/breached.py", ("tests/test_passwords_breached.py",)
    ),
    # Issue 25: access tokens for other services.
    "tokens_keys": Target(
        "webauth/tokens/keys.py", ("tests/test_tokens_keys_unit.py", "tests/test_tokens.py")
    ),
    "tokens_mint": Target(
        "webauth/tokens/mint.py", ("tests/test_tokens_mint.py", "tests/test_tokens.py")
    ),
    "tokens_verifier": Target(
        "webauth/tokens/verifier.py",
        (
            "tests/test_tokens_verifier_unit.py",
            "tests/test_tokens.py",
            "tests/test_tokens_ended.py",
            "tests/test_tokens_node.py",
        ),
    ),
    "api_keys": Target(
        "webauth/api_keys.py",
        (
            "tests/test_api_keys_unit.py",
            "tests/test_api_keys.py",
            "tests/test_api_keys_owners.py",
            "tests/test_api_keys_processes.py",
        ),
    ),
    "tokens_ended": Target(
        "webauth/tokens/ended.py",
        ("tests/test_tokens_ended_unit.py", "tests/test_tokens_ended.py", "tests/test_tokens.py"),
    ),
}

_CMP_SWAPS: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BINOP_SWAPS: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitAnd: ast.BitOr,
    ast.BitOr: ast.BitAnd,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
}
_LOG_METHODS = {"debug", "info", "warning", "error", "exception", "critical", "warn"}
_DELETABLE = (
    ast.Expr,
    ast.Assign,
    ast.AugAssign,
    ast.AnnAssign,
    ast.If,
    ast.Raise,
    ast.For,
    ast.With,
    ast.Try,
    ast.Continue,
    ast.Break,
)


@dataclass(frozen=True)
class Mutant:
    """One change: where, what it was, what it became, and the new source."""

    path: str
    line: int
    column: int
    kind: str
    before: str
    after: str
    source: str

    @property
    def key(self) -> str:
        """A stable identity, as written in the equivalent-mutants file."""
        return (
            f"{self.path}:{self.line}:{self.column} | {self.kind} | {self.before} -> {self.after}"
        )


def _short(text: str, limit: int = 90) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 3] + "..."


class _Collector(ast.NodeVisitor):
    """Finds the nodes that may be mutated (outside skipped regions)."""

    def __init__(self, source: str, functions: tuple[str, ...] | None) -> None:
        self.lines = source.splitlines()
        self.functions = functions
        self.sites: list[tuple[ast.AST, str]] = []  # (node, kind of site)
        self._skip: set[int] = set()  # ids of nodes not to mutate (and their subtrees)
        self._in_function = False

    # -- regions that are never mutated
    def _skip_tree(self, node: ast.AST | None) -> None:
        if node is not None:
            for sub in ast.walk(node):
                self._skip.add(id(sub))

    def _marked(self, node: ast.AST) -> bool:
        line = getattr(node, "lineno", None)
        return line is not None and "pragma: no mutate" in self.lines[line - 1]

    def visit_Module(self, node: ast.Module) -> None:
        for stmt in node.body:
            if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
                self.visit(stmt)
            elif self.functions is None:
                self._visit_module_statement(stmt)

    def _visit_module_statement(self, stmt: ast.stmt) -> None:
        if isinstance(stmt, ast.Import | ast.ImportFrom):
            return
        if isinstance(stmt, ast.If) and "TYPE_CHECKING" in ast.unparse(stmt.test):
            return
        if isinstance(stmt, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id == "__all__" for t in stmt.targets
        ):
            return
        if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
            return  # the module docstring
        self.generic_visit_stmt(stmt, deletable=False)

    def generic_visit_stmt(self, stmt: ast.stmt, deletable: bool) -> None:
        if deletable and isinstance(stmt, _DELETABLE) and not self._marked(stmt):
            self.sites.append((stmt, "delete"))
        self.visit(stmt)

    def visit_ClassDef(self, node: ast.ClassDef) -> None:
        if self.functions is not None and node.name not in self.functions:
            # A listed method inside a class is still found.
            for stmt in node.body:
                if isinstance(stmt, ast.FunctionDef | ast.AsyncFunctionDef):
                    self.visit(stmt)
            return
        for dec in node.decorator_list:
            self._skip_tree(dec)
        for stmt in node.body:
            if isinstance(stmt, ast.Expr) and isinstance(stmt.value, ast.Constant):
                continue  # docstring
            if isinstance(stmt, ast.AnnAssign):
                self._skip_tree(stmt.annotation)
                if stmt.value is not None:
                    self.visit(stmt.value)
                continue
            self.visit(stmt)

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if self.functions is not None and node.name not in self.functions:
            return
        for dec in node.decorator_list:
            self._skip_tree(dec)
        self._skip_tree(node.returns)
        for arg in [*node.args.args, *node.args.kwonlyargs, *node.args.posonlyargs]:
            self._skip_tree(arg.annotation)
        for default in [*node.args.defaults, *node.args.kw_defaults]:
            if default is not None:
                self.visit(default)
        body = node.body
        if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
            body = body[1:]
        self._visit_block(body)

    visit_AsyncFunctionDef = visit_FunctionDef

    def _visit_block(self, body: list[ast.stmt]) -> None:
        for stmt in body:
            self.generic_visit_stmt(stmt, deletable=True)

    # Blocks nested in statements: their statements may be deleted too.
    def visit_If(self, node: ast.If) -> None:
        if "TYPE_CHECKING" in ast.unparse(node.test):
            return
        self.visit(node.test)
        self._visit_block(node.body)
        self._visit_block(node.orelse)

    def visit_For(self, node: ast.For) -> None:
        self.visit(node.iter)
        self._visit_block(node.body)
        self._visit_block(node.orelse)

    def visit_While(self, node: ast.While) -> None:
        self.visit(node.test)
        self._visit_block(node.body)

    def visit_With(self, node: ast.With) -> None:
        for item in node.items:
            self.visit(item.context_expr)
        self._visit_block(node.body)

    def visit_Try(self, node: ast.Try) -> None:
        self._visit_block(node.body)
        for handler in node.handlers:
            if handler.type is not None:
                self._skip_tree(handler.type)
            self._visit_block(handler.body)
        self._visit_block(node.orelse)
        self._visit_block(node.finalbody)

    def visit_Raise(self, node: ast.Raise) -> None:
        # The exception and its message are what they are; the raise itself may go.
        self._skip_tree(node.exc)
        self._skip_tree(node.cause)

    def visit_Call(self, node: ast.Call) -> None:
        func = node.func
        if isinstance(func, ast.Attribute) and func.attr in _LOG_METHODS:
            self._skip_tree(node)
            return
        if isinstance(func, ast.Name) and func.id in ("isinstance", "issubclass"):
            self.visit(node.args[0])  # the classes named are not constants to change
            self._skip_tree(node.args[1])
            self._maybe(node, "call")
            return
        self._maybe(node, "call")
        self.generic_visit(node)

    def visit_JoinedStr(self, node: ast.JoinedStr) -> None:
        self._skip_tree(node)

    def visit_AnnAssign(self, node: ast.AnnAssign) -> None:
        self._skip_tree(node.annotation)
        if node.value is not None:
            self.visit(node.value)

    def _maybe(self, node: ast.AST, kind: str) -> None:
        if id(node) not in self._skip and not self._marked(node):
            self.sites.append((node, kind))

    def visit_Compare(self, node: ast.Compare) -> None:
        self._maybe(node, "compare")
        self.generic_visit(node)

    def visit_BoolOp(self, node: ast.BoolOp) -> None:
        self._maybe(node, "boolop")
        self.generic_visit(node)

    def visit_UnaryOp(self, node: ast.UnaryOp) -> None:
        if isinstance(node.op, ast.Not):
            self._maybe(node, "not")
        self.generic_visit(node)

    def visit_BinOp(self, node: ast.BinOp) -> None:
        if type(node.op) in _BINOP_SWAPS:
            self._maybe(node, "binop")
        self.generic_visit(node)

    def visit_Constant(self, node: ast.Constant) -> None:
        self._maybe(node, "constant")

    def visit_Slice(self, node: ast.Slice) -> None:
        self._maybe(node, "slice")
        self.generic_visit(node)

    def visit_Subscript(self, node: ast.Subscript) -> None:
        self.visit(node.value)
        self.visit(node.slice)

    def visit_Return(self, node: ast.Return) -> None:
        self._maybe(node, "return")
        if node.value is not None:
            self.visit(node.value)

    def visit_IfExp(self, node: ast.IfExp) -> None:
        self._maybe(node, "ifexp")
        self.generic_visit(node)


def _variants(node: ast.AST, kind: str) -> Iterator[tuple[str, ast.AST | None]]:
    """``(label, replacement)`` pairs for one site; ``None`` replaces a statement by ``pass``."""
    if kind == "delete":
        yield "statement deleted", None
    elif kind == "compare":
        assert isinstance(node, ast.Compare)
        for i, op in enumerate(node.ops):
            swap = _CMP_SWAPS.get(type(op))
            if swap is not None:
                new = copy.deepcopy(node)
                new.ops[i] = swap()
                yield "comparison changed", new
    elif kind == "boolop":
        assert isinstance(node, ast.BoolOp)
        swapped = copy.deepcopy(node)
        swapped.op = ast.Or() if isinstance(node.op, ast.And) else ast.And()
        yield "boolean operator swapped", swapped
        # Each operand dropped in turn: a condition that no test needs.
        for i in range(len(node.values)):
            rest = [copy.deepcopy(v) for j, v in enumerate(node.values) if j != i]
            yield (
                "operand dropped",
                rest[0] if len(rest) == 1 else ast.BoolOp(op=copy.deepcopy(node.op), values=rest),
            )
    elif kind == "not":
        assert isinstance(node, ast.UnaryOp)
        yield "not removed", copy.deepcopy(node.operand)
    elif kind == "binop":
        assert isinstance(node, ast.BinOp)
        changed = copy.deepcopy(node)
        changed.op = _BINOP_SWAPS[type(node.op)]()
        yield "arithmetic changed", changed
    elif kind == "constant":
        assert isinstance(node, ast.Constant)
        value = node.value
        if value is True or value is False:
            yield "constant changed", ast.Constant(not value)
        elif value is None:
            return
        elif isinstance(value, int | float):
            yield "constant changed", ast.Constant(value + 1 if value else 1)
        elif isinstance(value, str):
            yield "string changed", ast.Constant("XX" + value if value else "XX")
        elif isinstance(value, bytes):
            yield "bytes changed", ast.Constant(b"XX" + value)
    elif kind == "slice":
        assert isinstance(node, ast.Slice)
        for bound in ("lower", "upper"):
            limit = getattr(node, bound)
            if limit is not None:
                moved = copy.deepcopy(node)
                setattr(
                    moved,
                    bound,
                    ast.BinOp(left=copy.deepcopy(limit), op=ast.Add(), right=ast.Constant(1)),
                )
                yield "slice bound moved", moved
                dropped = copy.deepcopy(node)
                setattr(dropped, bound, None)
                yield "slice bound dropped", dropped
    elif kind == "return":
        assert isinstance(node, ast.Return)
        returned = node.value
        if returned is None or (isinstance(returned, ast.Constant) and returned.value is None):
            return
        if isinstance(returned, ast.Constant) and isinstance(returned.value, bool):
            return  # the constant mutation flips it already
        yield "return value replaced", ast.Return(value=ast.Constant(None))
    elif kind == "call":
        assert isinstance(node, ast.Call)
        func = ast.unparse(node.func)
        # Predicates and comparisons the security code relies on.
        if func in ("isinstance", "hmac.compare_digest", "callable") or func.endswith(
            (".startswith", ".endswith", ".isdigit", ".fullmatch")
        ):
            yield "call replaced by True", ast.Constant(True)
            yield "call replaced by False", ast.Constant(False)
    elif kind == "ifexp":
        assert isinstance(node, ast.IfExp)
        yield "conditional: always the first branch", copy.deepcopy(node.body)
        yield "conditional: always the second branch", copy.deepcopy(node.orelse)


def _line_offsets(source: str) -> list[int]:
    offsets = [0]
    for line in source.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def _replace(source: str, offsets: list[int], node: ast.AST, text: str) -> str:
    # Positions are in UTF-8 bytes within the line; convert through the line's bytes.
    lines = source.splitlines(keepends=True)

    def position(line: int, col: int) -> int:
        prefix = lines[line - 1].encode("utf-8")[:col].decode("utf-8")
        return offsets[line - 1] + len(prefix)

    start = position(node.lineno, node.col_offset)  # type: ignore[attr-defined]
    end = position(node.end_lineno, node.end_col_offset)  # type: ignore[attr-defined]
    return source[:start] + text + source[end:]


def mutants(target: Target, only_line: int | None = None) -> list[Mutant]:
    """Every mutant of *target*, in source order."""
    source = (ROOT / target.path).read_text()
    tree = ast.parse(source)
    collector = _Collector(source, target.functions)
    collector.visit(tree)
    offsets = _line_offsets(source)
    found: list[Mutant] = []
    seen: set[str] = set()
    for node, kind in collector.sites:
        line = node.lineno  # type: ignore[attr-defined]
        if only_line is not None and line != only_line:
            continue
        before = ast.get_source_segment(source, node) or ast.unparse(node)
        for label, replacement in _variants(node, kind):
            if replacement is None:
                text, after = "pass", "pass"
            else:
                after = ast.unparse(replacement)
                bare = isinstance(replacement, ast.stmt | ast.Slice)
                text = after if bare else f"({after})"
            new_source = _replace(source, offsets, node, text)
            try:
                compile(new_source, target.path, "exec")
            except SyntaxError:
                continue  # e.g. deleting the only statement of a block
            column = node.col_offset  # type: ignore[attr-defined]
            mutant = Mutant(
                target.path, line, column, label, _short(before), _short(after), new_source
            )
            if mutant.key in seen or new_source == source:
                continue
            seen.add(mutant.key)
            found.append(mutant)
    return found


def load_equivalent() -> dict[str, str]:
    """``{mutant key: reason}`` from the checked-in list."""
    result: dict[str, str] = {}
    if not EQUIVALENT_FILE.exists():
        return result
    for raw in EQUIVALENT_FILE.read_text().splitlines():
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        key, sep, reason = line.rpartition(" || ")
        if not sep:
            raise SystemExit(f"{EQUIVALENT_FILE}: no ' || reason' in {line!r}")
        result[key.strip()] = reason.strip()
    return result


def _copy_project(dest: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", ".git", "node_modules", ".venv")
    for name in ("webauth", "tests", "example_project", "docs", "benchmarks"):
        if (ROOT / name).exists():
            shutil.copytree(ROOT / name, dest / name, ignore=ignore)
    for name in ("pyproject.toml", "tox.ini"):
        if (ROOT / name).exists():
            shutil.copy2(ROOT / name, dest / name)


def _run_tests(
    workdir: Path, tests: tuple[str, ...], timeout: float, extra_env: dict[str, str] | None = None
) -> tuple[str, float]:
    env = {
        **os.environ,
        **(extra_env or {}),
        "PYTHONPATH": str(workdir),
        "PYTHONDONTWRITEBYTECODE": "1",
        # Only the plugins the suite needs: autoloading every installed plugin
        # (schemathesis imports most of hypothesis at start-up) cost about 3 s of
        # each mutant's 2.5 to 20. The baseline run catches a test that needs one more.
        "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
    }
    plugins = [arg for name in PYTEST_PLUGINS for arg in ("-p", name)]
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-x",
        "-q",
        "-p",
        "no:cacheprovider",
        *plugins,
        *tests,
    ]
    started = time.monotonic()
    try:
        completed = subprocess.run(  # noqa: S603 - our own interpreter and fixed arguments
            command,
            cwd=workdir,
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout", time.monotonic() - started
    elapsed = time.monotonic() - started
    # pytest: 0 all passed, 1 some failed, 2 interrupted, 5 no tests collected.
    return ("survived" if completed.returncode == 0 else "killed"), elapsed


def run_target(name: str, target: Target, args: argparse.Namespace) -> bool:
    """Mutate one module and report; true when every mutant was caught or explained."""
    found = mutants(target, args.line)
    if args.keys:
        # A second pass: only these mutants (the survivors of a run), for
        # example against more tests than the module's own (--tests).
        wanted = {
            line.strip()
            for line in Path(args.keys).read_text().splitlines()
            if line.strip() and not line.startswith("#")
        }
        found = [m for m in found if m.key in wanted]
    if args.tests:
        target = Target(target.path, tuple(args.tests), target.functions)
    equivalent = load_equivalent()
    print(f"== {name}: {target.path} ({len(found)} mutants; tests: {' '.join(target.tests)})")
    if args.dry_run:
        for m in found:
            mark = "  [equivalent]" if m.key in equivalent else ""
            print(f"   {m.key}{mark}")
        return True
    jobs = max(1, args.jobs)
    with tempfile.TemporaryDirectory(prefix="webauth-mutation-") as tmp:
        # One copy of the project per job: each writes its mutant into its own.
        workdirs: queue.Queue[Path] = queue.Queue()
        for n in range(jobs):
            work = Path(tmp) / f"job{n}"
            work.mkdir()
            _copy_project(work)
            workdirs.put(work)
        original = (ROOT / target.path).read_text()
        job0 = Path(tmp) / "job0"
        report = Path(tmp) / "coverage.json"
        selecting = not args.all_tests and importlib.util.find_spec("coverage") is not None
        extra_env = None
        if selecting:
            # The baseline run also records which tests run which lines (see
            # _mutation_coverage.py), so that each mutant is tried first against
            # the tests that reach its line.
            shutil.copy2(ROOT / "scripts" / "_mutation_coverage.py", job0)
            extra_env = {
                "WEBAUTH_MUTATION_TARGET": str(job0 / target.path),
                "WEBAUTH_MUTATION_COVERAGE": str(report),
            }
        status, baseline = _run_tests(
            job0,
            (*(("-p", "_mutation_coverage") if selecting else ()), *target.tests),
            600,
            extra_env,
        )
        if status != "survived":
            print(f"   the tests fail without any mutation ({status}); fix them first")
            return False
        reaching: dict[int, tuple[str, ...]] = {}
        if selecting:
            reaching = {int(k): tuple(v) for k, v in json.loads(report.read_text()).items()}
        timeout = max(30.0, baseline * 4 * jobs)
        survivors: list[Mutant] = []
        explained: list[tuple[Mutant, str]] = []
        killed = 0
        done = 0
        lock = threading.Lock()

        def run_one(m: Mutant) -> None:
            nonlocal killed, done
            work = workdirs.get()
            try:
                (work / m.path).write_text(m.source)
                try:
                    status = "survived"
                    first = reaching.get(m.line)
                    if first:
                        status, _ = _run_tests(work, first, timeout)
                    # Not reached by any test in-process (a line run at import, or
                    # only in a server the tests start), or survived those: the
                    # module's whole test files decide.
                    if status == "survived":
                        status, _ = _run_tests(work, target.tests, timeout)
                finally:
                    (work / m.path).write_text(original)
            finally:
                workdirs.put(work)
            with lock:
                done += 1
                if status == "survived":
                    if m.key in equivalent:
                        explained.append((m, equivalent[m.key]))
                    else:
                        survivors.append(m)
                else:
                    killed += 1
                if args.verbose:
                    print(f"   [{done}/{len(found)}] {status:8} {m.key}", flush=True)

        with concurrent.futures.ThreadPoolExecutor(max_workers=jobs) as pool:
            list(pool.map(run_one, found))
        order = {m.key: i for i, m in enumerate(found)}
        survivors.sort(key=lambda m: order[m.key])
        explained.sort(key=lambda pair: order[pair[0].key])
    total = len(found)
    # Equivalent mutants cannot be caught: they are left out of the score.
    scored = total - len(explained)
    score = 100.0 * killed / scored if scored else 100.0
    print(
        f"   mutants {total}, killed {killed}, survived {len(survivors)},"
        f" equivalent {len(explained)}"
    )
    print(f"   score {score:.1f}% (killed / non-equivalent mutants)")
    if survivors:
        print("   SURVIVED:")
        for m in survivors:
            print(f"     {m.key}")
    if explained:
        print("   equivalent (scripts/mutation_equivalent.txt):")
        for m, reason in explained:
            print(f"     {m.key}\n         -> {reason}")
    stale = [k for k in equivalent if k.startswith(target.path + ":")] if args.line is None else []
    listed = {m.key for m, _ in explained}
    stale = [k for k in stale if k not in listed]
    if stale:
        print("   listed as equivalent but not a surviving mutant any more (remove them):")
        for key in stale:
            print(f"     {key}")
    return not survivors


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("modules", nargs="*", help=f"some of: {', '.join(TARGETS)} (default all)")
    parser.add_argument("--list", action="store_true", help="list the modules and their tests")
    parser.add_argument("--dry-run", action="store_true", help="print the mutants, run nothing")
    parser.add_argument("--line", type=int, help="only the mutants of this line")
    parser.add_argument(
        "--all-tests",
        action="store_true",
        help="run the module's whole test files for every mutant (by default, when"
        " coverage.py is installed, the tests that reach the mutant's line go first)",
    )
    parser.add_argument("-v", "--verbose", action="store_true", help="one line per mutant")
    parser.add_argument(
        "--tests",
        nargs="+",
        help="run these test files (or pytest arguments) instead of the module's own",
    )
    parser.add_argument(
        "--keys",
        help="a file of mutant keys, one per line (as the script prints them): only those",
    )
    parser.add_argument(
        "-j",
        "--jobs",
        type=int,
        default=1,
        help="mutants tested at once, each in its own copy of the project (default 1; "
        "the limiter's tests share one Redis, so run ratelimit with 1)",
    )
    args = parser.parse_args(argv)
    if args.list:
        for name, target in TARGETS.items():
            only = f" [{', '.join(target.functions)}]" if target.functions else ""
            print(f"{name:9} {target.path}{only}\n          tests: {' '.join(target.tests)}")
        return 0
    names = args.modules or list(TARGETS)
    unknown = [n for n in names if n not in TARGETS]
    if unknown:
        parser.error(f"unknown module(s) {unknown}; choose from {list(TARGETS)}")
    ok = True
    for name in names:
        ok = run_target(name, TARGETS[name], args) and ok
    return 0 if ok else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # output piped into head and the like
        sys.stderr.close()
        sys.exit(1)
