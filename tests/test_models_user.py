"""webauth.User: the adapter and the flows with webauth's own user model.

AUTH_USER_MODEL cannot change inside one test process, so these tests run a
second pytest in a subprocess with tests.support.settings_user_model.
"""

import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.parametrize(
    "module",
    [
        "tests/test_adapters_contract.py",
        "tests/support/user_model_flows.py",
        # The address audit on a model whose address column is unique.
        "tests/test_addresses.py",
    ],
)
def test_suite_passes_with_webauth_user_model(module):
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.support.settings_user_model"}
    # The child loads its plugins itself (the mutation script turns autoloading off).
    env.pop("PYTEST_DISABLE_PLUGIN_AUTOLOAD", None)
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", module],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-2000:]
    assert " passed" in result.stdout
