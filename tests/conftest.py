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


@pytest.fixture
def client_factory():
    """Make independent test clients (one per simulated browser)."""
    from django.test import Client

    return Client
