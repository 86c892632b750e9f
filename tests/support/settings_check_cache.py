"""tests.support.check_cache_site's settings: PostgreSQL over TCP (a schema of the
run's own), Redis, JWT sessions with ``session.user_check_cache``
(tests/test_session_check_cache_processes.py)."""

import os

from .settings import *  # noqa: F403
from .settings import MIDDLEWARE

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.postgresql",
        "HOST": os.environ.get("WEBAUTH_TEST_POSTGRES_HOST", "127.0.0.1"),
        "PORT": os.environ.get("WEBAUTH_TEST_POSTGRES_PORT", "5432"),
        "USER": os.environ.get("WEBAUTH_TEST_POSTGRES_USER", "postgres"),
        "NAME": os.environ.get("WEBAUTH_TEST_POSTGRES_DB", "test"),
        "OPTIONS": {"options": f"-c search_path={os.environ['WEBAUTH_TEST_PG_SCHEMA']}"},
    }
}
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("WEBAUTH_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        "KEY_PREFIX": os.environ["WEBAUTH_TEST_REDIS_PREFIX"],
    }
}
# The worker's pid and the queries each request made, on every answer.
MIDDLEWARE = [
    "tests.support.ratelimit_site.worker_pid",
    "tests.support.check_cache_site.query_count",
    *MIDDLEWARE,
]
WEBAUTH = {
    "secret": "test-secret-0123456789abcdef0123456789abcdef",
    "providers": ["webauth.providers.DjangoCredentials"],
    "session": {
        "strategy": "jwt",
        "user_check_cache": {
            "cache": "default",
            "max_staleness": int(os.environ.get("WEBAUTH_TEST_MAX_STALENESS", "3")),
        },
    },
}
