"""Redis for the rate-limit tests: Django's RedisCache at 127.0.0.1:6379 (CI runs one).

Tests that need it call :func:`redis_or_skip`: without a Redis they skip, unless
``WEBAUTH_REQUIRE_REDIS=1`` (set by ``.ci/run``), when they fail instead.
"""

import os
import uuid

import pytest

HOST = os.environ.get("WEBAUTH_TEST_REDIS_HOST", "127.0.0.1")
PORT = int(os.environ.get("WEBAUTH_TEST_REDIS_PORT", "6379"))
URL = f"redis://{HOST}:{PORT}/0"

#: A CACHES entry on the test Redis (see :func:`fresh_redis_cache`).
REDIS_CACHE = {
    "BACKEND": "django.core.cache.backends.redis.RedisCache",
    "LOCATION": URL,
}


def fresh_redis_cache() -> dict:
    """:data:`REDIS_CACHE` under a key prefix no other test used: counters start at zero.

    (``cache.clear()`` would flush the whole Redis database, which others may share.)
    """
    return {**REDIS_CACHE, "KEY_PREFIX": f"webauth-test-{uuid.uuid4().hex}"}


def redis_answers() -> str | None:
    """``None`` when Redis answers a PING, else why not."""
    try:
        import redis
    except ImportError:
        return "the redis package is not installed (pip install redis)"
    try:
        redis.Redis(host=HOST, port=PORT, socket_connect_timeout=1).ping()
    except Exception as exc:
        return f"no Redis at {HOST}:{PORT} ({exc})"
    return None


def redis_or_skip() -> None:
    """Skip the test without Redis; fail it when WEBAUTH_REQUIRE_REDIS=1."""
    problem = redis_answers()
    if problem is None:
        return
    if os.environ.get("WEBAUTH_REQUIRE_REDIS") == "1":
        pytest.fail(f"WEBAUTH_REQUIRE_REDIS=1 but {problem}")
    pytest.skip(problem)
