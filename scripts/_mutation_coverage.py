"""A pytest plugin for scripts/mutation_test.py: which tests run which lines.

Loaded (``-p _mutation_coverage``) into one run of a module's tests before its
mutants are tried. coverage.py measures the module named by
``WEBAUTH_MUTATION_TARGET`` with each test's node id as the context (its
fixtures' set-up and tear-down included), and the plugin writes
``{line: [node ids, in the run's order]}`` as JSON to ``WEBAUTH_MUTATION_COVERAGE``. Lines run only
at import (``def``, class bodies, constants) have no test and are left out.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from typing import Any

import coverage
import pytest

_measure: coverage.Coverage | None = None
_order: dict[str, int] = {}  # node id -> its place in the run (tests are listed in run order)


def pytest_configure(config: pytest.Config) -> None:
    global _measure
    _measure = coverage.Coverage(data_file=None, include=[os.environ["WEBAUTH_MUTATION_TARGET"]])
    _measure.start()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: Any) -> Iterator[None]:
    assert _measure is not None
    _order.setdefault(item.nodeid, len(_order))
    _measure.switch_context(item.nodeid)
    yield
    _measure.switch_context("")


def pytest_unconfigure(config: pytest.Config) -> None:
    if _measure is None:
        return
    _measure.stop()
    data = _measure.get_data()
    lines: dict[int, list[str]] = {}
    for measured in data.measured_files():
        for line, contexts in data.contexts_by_lineno(measured).items():
            tests = sorted((c for c in contexts if c), key=lambda c: _order.get(c, len(_order)))
            if tests:
                lines[line] = tests
    with open(os.environ["WEBAUTH_MUTATION_COVERAGE"], "w", encoding="utf-8") as out:
        json.dump(lines, out)
