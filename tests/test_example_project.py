"""The example project starts: system checks pass, it migrates, and its setup runs."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"


def manage(*args, env):
    return subprocess.run(
        [sys.executable, "manage.py", *args],
        cwd=EXAMPLE,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


@pytest.fixture
def env(tmp_path):
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("AUTH_", "DJANGO_"))}
    return {**clean, "EXAMPLE_DB": str(tmp_path / "example.sqlite3"), "PORT": "8123"}


def test_example_project_checks_migrates_and_sets_up(env):
    for args in (["check", "--fail-level", "WARNING"], ["migrate", "-v", "0"], ["example_setup"]):
        result = manage(*args, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
    assert "Demo user: demo / demo-password" in result.stdout
    assert "Example IdP user: idp-alice / idp-password" in result.stdout
    again = manage("example_setup", env=env)  # idempotent
    assert again.returncode == 0 and "(created)" not in again.stdout


def test_github_button_appears_with_its_environment_variables(env):
    code = (
        "from webauth.conf import get_config; print(sorted(p.id for p in get_config().providers))"
    )
    plain = manage("shell", "--no-imports", "-c", code, env=env)
    with_github = manage(
        "shell",
        "--no-imports",
        "-c",
        code,
        env={**env, "AUTH_GITHUB_ID": "x", "AUTH_GITHUB_SECRET": "y"},
    )
    assert plain.stdout.strip() == "['credentials', 'example-idp']", plain.stderr
    assert with_github.stdout.strip() == "['credentials', 'example-idp', 'github']"
