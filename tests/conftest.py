import json
import os
from pathlib import Path

import pytest

from webauth.conf import reset_config

# What gives a test the suite's database (pytest-django blocks every other way in);
# live_server asks for transactional_db at run time, so it is named here.
_DATABASE_FIXTURES = frozenset(
    {
        "db",
        "transactional_db",
        "django_db_reset_sequences",
        "django_db_serialized_rollback",
        "live_server",
    }
)


def pytest_collection_modifyitems(config, items):
    """A ``backend_independent`` test must have no way to the suite's database.

    CI runs those tests once, with SQLite, and leaves them out of the PostgreSQL
    and MariaDB runs (.ci/run). That is only sound while they cannot reach the
    database: pytest-django refuses access to a test without a database fixture
    or the ``django_db`` mark, so this refuses the marker on a test that has one.
    """
    wrong = [
        item.nodeid
        for item in items
        if item.get_closest_marker("backend_independent")
        and (
            item.get_closest_marker("django_db")
            or _DATABASE_FIXTURES.intersection(getattr(item, "fixturenames", ()))
        )
    ]
    if wrong:
        raise pytest.UsageError(
            "marked backend_independent but using the database: " + ", ".join(wrong)
        )
    _longest_modules_first(items)


#: Seconds per test module, measured (scripts/test_durations.py writes it).
_DURATIONS = Path(__file__).with_name("durations.json")


def _longest_modules_first(items):
    """Collect the modules longest first, each module's tests in their own order.

    pytest-xdist (``--dist loadfile``, scripts/test) hands whole modules to the
    workers in collection order; with the slow ones first, the last modules to
    run are short and the cores finish together (the longest-processing-time
    rule). Every worker sorts the same list the same way, as xdist requires.
    Without the file, or for a module it does not list, the order is pytest's.
    """
    try:
        seconds = json.loads(_DURATIONS.read_text())
    except (OSError, ValueError):
        return
    rank = {}
    for item in items:
        module = item.nodeid.split("::", 1)[0]
        rank.setdefault(module, (-float(seconds.get(module, 0)), len(rank)))
    items.sort(key=lambda item: rank[item.nodeid.split("::", 1)[0]])


@pytest.fixture(autouse=True)
def _fresh_config(monkeypatch):
    # Tests must not see the developer's AUTH_* environment.
    for key in list(os.environ):
        if key.startswith("AUTH_"):
            monkeypatch.delenv(key)
    reset_config()
    yield
    reset_config()


@pytest.fixture(autouse=True)
def _empty_caches(settings):
    # Rate-limit counters (and cached discovery documents) must not leak from one
    # test into the next: a test that signs in many times starts from zero. Only
    # the in-process caches: RedisCache.clear() would flush a whole shared database
    # (the Redis tests use a key prefix of their own instead).
    from django.core.cache import caches

    def clear():
        for alias, options in settings.CACHES.items():
            if options.get("BACKEND") == "django.core.cache.backends.locmem.LocMemCache":
                caches[alias].clear()

    clear()
    yield
    clear()


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup, django_db_blocker):
    """pytest-django's test databases, dropped only once nothing else uses them.

    Threads of the tests (the live server's request threads, a race's callers)
    close their database connections as they end, which can be just after a
    worker's last test: PostgreSQL then refuses to drop the database ("is being
    accessed by other users"; CI saw it after the concurrency tests). Before the
    drop this waits up to 10 s for the worker's own connection to be the test
    database's only one, then ends those left (the database is about to go),
    saying on stderr what they were.
    """
    yield
    import sys
    import time

    from django.db import connections

    others = (
        "SELECT pid, state, left(query, 120) FROM pg_stat_activity"
        " WHERE datname = current_database() AND pid <> pg_backend_pid()"
    )
    with django_db_blocker.unblock():
        for connection in connections.all():
            if connection.vendor != "postgresql":
                continue
            deadline = time.monotonic() + 10
            with connection.cursor() as cursor:
                cursor.execute(others)
                left = cursor.fetchall()
                while left and time.monotonic() < deadline:
                    time.sleep(0.05)
                    cursor.execute(others)
                    left = cursor.fetchall()
                for pid, state, query in left:
                    print(
                        f"ending a leftover session of the test database: {state} {query!r}",
                        file=sys.stderr,
                    )
                    cursor.execute("SELECT pg_terminate_backend(%s)", [pid])
            connection.close()


@pytest.fixture(scope="module")
def browser():
    """One headless Chromium for a module's tests (each test opens its own contexts).

    Debian's, through Playwright (tests/support/browser.py): the test skips
    without it, or fails where WEBAUTH_REQUIRE_BROWSER is set. A module may
    name its own ``browser`` fixture for something else (a test client).
    """
    from .support.browser import chromium

    with chromium() as launched:
        yield launched


@pytest.fixture
def client_factory():
    """Make independent test clients (one per simulated browser)."""
    from django.test import Client

    return Client
