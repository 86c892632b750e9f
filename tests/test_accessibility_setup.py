"""Without axe-core the accessibility tests skip, saying what to install; in CI they fail.

axe-core comes from npm (``package.json``), which the README calls optional: a
contributor with only Python runs the suite, and the tests that inject axe-core
skip with the command that would run them. CI (``.ci/run``) sets
``WEBAUTH_REQUIRE_AXE``, which turns the skip into a failure.
"""

import re

import pytest

from .support import a11y

# No database, no browser: the helper and the CI script, read.
pytestmark = pytest.mark.backend_independent


@pytest.fixture
def no_axe(monkeypatch):
    monkeypatch.setattr(a11y, "AXE", a11y.ROOT / "node_modules" / "absent-axe" / "axe.min.js")
    monkeypatch.delenv("WEBAUTH_REQUIRE_AXE", raising=False)


def test_without_axe_core_the_tests_skip_with_the_command_to_run(no_axe, monkeypatch, tmp_path):
    (tmp_path / "npm").write_text("#!/bin/sh\n")
    (tmp_path / "npm").chmod(0o755)
    monkeypatch.setenv("PATH", str(tmp_path))  # npm is there
    with pytest.raises(pytest.skip.Exception) as skipped:
        a11y.axe_script()
    reason = str(skipped.value)
    assert "node_modules/absent-axe/axe.min.js" in reason and "run `npm ci`" in reason
    assert "install Node.js" not in reason


def test_without_npm_the_reason_says_to_install_node(no_axe, monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # an empty folder: no npm
    with pytest.raises(pytest.skip.Exception) as skipped:
        a11y.axe_script()
    reason = str(skipped.value)
    assert "install Node.js with npm (Debian: apt-get install npm)" in reason
    assert "then run `npm ci` at the repository root" in reason


def test_where_axe_is_required_its_absence_fails(no_axe, monkeypatch):
    monkeypatch.setenv("WEBAUTH_REQUIRE_AXE", "1")
    with pytest.raises(pytest.fail.Exception, match="WEBAUTH_REQUIRE_AXE is set"):
        a11y.axe_script()


def test_ci_requires_axe_core():
    ci = (a11y.ROOT / ".ci" / "run").read_text()
    assert re.search(r"^export WEBAUTH_REQUIRE_AXE=1\b", ci, re.M)
    # ...and installs it before the tests run.
    assert ci.index("npm ci") < ci.index("./scripts/test")
