"""The test settings without "webauth" in INSTALLED_APPS (tests/test_checks.py)."""

from .settings import *  # noqa: F403

INSTALLED_APPS = [app for app in INSTALLED_APPS if app != "webauth"]  # noqa: F405
ROOT_URLCONF = "tests.support.urls_auth_only"
