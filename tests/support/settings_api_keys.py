"""tests.support.api_keys_site's settings: one SQLite file, Redis, API keys on
(tests/test_api_keys_processes.py)."""

import os

from .settings import *  # noqa: F403
from .settings import MIDDLEWARE

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["WEBAUTH_TEST_API_KEYS_DB"],
        # Several processes write (the last use): wait for the lock, do not fail.
        "OPTIONS": {"timeout": 20},
    }
}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("WEBAUTH_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "KEY_PREFIX": os.environ["WEBAUTH_TEST_REDIS_PREFIX"],
    }
}
ROOT_URLCONF = "tests.support.api_keys_urls"
MIDDLEWARE = ["tests.support.api_keys_site.worker_pid", *MIDDLEWARE]
WEBAUTH = {
    "secret": "test-secret-0123456789abcdef0123456789abcdef",
    "providers": [],
    "api_keys": {"scopes": ["read"]},
    # A long window: the test cannot straddle one.
    "rate_limits": {"api_key": os.environ.get("WEBAUTH_TEST_API_KEY_RATE", "1000/1000d/key")},
}
