"""The test settings with webauth's own user model (``AUTH_USER_MODEL = "webauth.User"``)."""

from .settings import *  # noqa: F403

AUTH_USER_MODEL = "webauth.User"

if not DATABASES["default"]["ENGINE"].endswith("sqlite3"):  # noqa: F405
    # The outer test run owns test_test; this settings module runs in a subprocess.
    DATABASES["default"]["TEST"] = {  # noqa: F405
        **DATABASES["default"].get("TEST", {}),  # noqa: F405
        "NAME": "test_webauth_user_model",
    }
