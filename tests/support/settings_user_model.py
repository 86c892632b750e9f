"""The test settings with webauth's own user model (``AUTH_USER_MODEL = "webauth.User"``)."""

import os

from .settings import *  # noqa: F403

AUTH_USER_MODEL = "webauth.User"

if not DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    # The outer test run owns test_test; this settings module runs in a subprocess,
    # one per xdist worker at a time (test_models_user and test_passwords_signup
    # both start one): a database of the worker's own, so that two never collide.
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    DATABASES["default"]["TEST"] = {  # noqa: F405
        **DATABASES["default"].get("TEST", {}),  # noqa: F405
        "NAME": f"test_webauth_user_model_{worker}",
    }
