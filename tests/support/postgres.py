"""PostgreSQL for the tests that start their own processes on it (CI runs one).

Tests that need it call :func:`postgres_or_skip`: without a PostgreSQL at
``WEBAUTH_TEST_POSTGRES_HOST:PORT`` they skip, unless ``WEBAUTH_REQUIRE_POSTGRES=1``
(set by ``.ci/run``), when they fail instead.
"""

import os

import pytest


def postgres_answers() -> str | None:
    """``None`` when PostgreSQL accepts a connection, else why not."""
    try:
        import psycopg
    except ImportError:
        return "psycopg is not installed"
    try:
        psycopg.connect(
            host=os.environ.get("WEBAUTH_TEST_POSTGRES_HOST", "127.0.0.1"),
            port=os.environ.get("WEBAUTH_TEST_POSTGRES_PORT", "5432"),
            user=os.environ.get("WEBAUTH_TEST_POSTGRES_USER", "postgres"),
            dbname=os.environ.get("WEBAUTH_TEST_POSTGRES_DB", "test"),
            connect_timeout=2,
        ).close()
    except Exception as exc:
        return f"no PostgreSQL ({exc})"
    return None


def postgres_or_skip() -> None:
    why = postgres_answers()
    if why is None:
        return
    if os.environ.get("WEBAUTH_REQUIRE_POSTGRES") == "1":
        pytest.fail(f"WEBAUTH_REQUIRE_POSTGRES=1 but {why}")
    pytest.skip(why)
