"""Four gunicorn processes sharing Redis and one SQLite file, with the second factor on.

For tests/test_mfa_processes.py: a held sign-in lives in Redis, the users in the
file; every wrong code is counted by the ``mfa_failed`` limit in Redis.
"""

import os

from .settings_ratelimit import *  # noqa: F403  (Redis, and the worker's pid on each answer)

DATABASES = {
    "default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["WEBAUTH_TEST_MFA_DB"]}
}

WEBAUTH = {
    "secret": "test-secret-0123456789abcdef0123456789abcdef",
    "adapter": "webauth.adapters.django.DjangoAdapter",
    "session": {"strategy": "jwt"},
    "bearer": True,
    "providers": ["webauth.providers.DjangoCredentials"],
    # The per-sign-in count out of the way: the limit across processes is measured.
    "mfa": {"enabled": True, "attempts": 1000, "notify": False},
    "rate_limits": {
        "signin": False,
        "signin_failed": False,
        "mfa_failed": os.environ.get("WEBAUTH_TEST_MFA_FAILED", "29/1000d/key"),
    },
}
