import os

import pytest

from webauth.conf import reset_config


@pytest.fixture(autouse=True)
def _fresh_config(monkeypatch):
    # Tests must not see the developer's AUTH_* environment.
    for key in list(os.environ):
        if key.startswith("AUTH_"):
            monkeypatch.delenv(key)
    reset_config()
    yield
    reset_config()
