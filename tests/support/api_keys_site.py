"""An API-key view served by several gunicorn processes on one database and Redis
(tests/test_api_keys_processes.py), and the commands that prepare and change its keys.

``python -m tests.support.api_keys_site setup`` migrates the SQLite file named by
``WEBAUTH_TEST_API_KEYS_DB`` and prints a new key of a new user;
``revoke <key id>`` and ``expire <key id>`` end it from outside the servers, as
another process (the account center, the admin, a shell) would.
"""

from __future__ import annotations

import sys

# The same middleware and WSGI application as the limiter's site: it names the
# worker that answered, and Django is set up in each worker after gunicorn forks.
from .ratelimit_site import application, worker_pid  # noqa: F401


def main(argv: list[str]) -> None:
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command
    from django.utils import timezone

    from webauth.api_keys import create_key
    from webauth.models import ApiKey

    command = argv[0]
    if command == "setup":
        call_command("migrate", verbosity=0)
        user = get_user_model().objects.create_user("robot")
        print(create_key(user, name="fleet", scopes=["read"]).key)
    elif command == "revoke":
        ApiKey.objects.filter(key_id=argv[1]).update(revoked_at=timezone.now())
    elif command == "expire":
        ApiKey.objects.filter(key_id=argv[1]).update(expires=timezone.now())
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
