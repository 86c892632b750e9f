"""The test settings, served by several gunicorn processes sharing Redis (tests/test_ratelimit.py).

The limiter counts in Django's ``RedisCache``; the sign-in refuses every password
without touching a database (so the test measures the limiter, not the hasher);
each response names the worker process that served it (``X-Worker-Pid``).
"""

import os

from .settings import *  # noqa: F403
from .settings import MIDDLEWARE

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": os.environ.get("WEBAUTH_TEST_REDIS_URL", "redis://127.0.0.1:6379/0"),
        # A prefix per run: the counters start at zero without flushing the database.
        "KEY_PREFIX": os.environ["WEBAUTH_TEST_REDIS_PREFIX"],
    }
}

MIDDLEWARE = ["tests.support.ratelimit_site.worker_pid", *MIDDLEWARE]

WEBAUTH = {
    "secret": "test-secret-0123456789abcdef0123456789abcdef",
    "providers": [
        "tests.support.ratelimit_site.refuse_everyone",
    ],
    # Long windows: the test cannot straddle one. "signin" off: only failures count.
    "rate_limits": {
        "signin": False,
        "signin_failed": os.environ.get("WEBAUTH_TEST_SIGNIN_FAILED", "37/1000d/key"),
        "session_update": os.environ.get("WEBAUTH_TEST_SESSION_UPDATE", "23/1000d/ip"),
    },
}
