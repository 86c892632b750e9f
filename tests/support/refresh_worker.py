"""One process calling ``webauth.get_access_token``, for the concurrent-refresh test.

    python -m tests.support.refresh_worker <database name> <user id> <token endpoint>

It connects to the test database the parent process made (``WEBAUTH_TEST_*``
choose the server as for the suite), configures the provider ``rotating`` with
the given token endpoint, prints ``ready``, waits for a line on stdin (so that
every worker starts at once) and prints the result as JSON: ``{"token": ...}``
or ``{"error": "<type>: <message>"}``.
"""

from __future__ import annotations

import json
import os
import sys


def main() -> None:
    name, user_pk, token_endpoint = sys.argv[1:4]
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.support.settings")
    from django.conf import settings

    settings.DATABASES["default"]["NAME"] = name
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.db import connection

    from tests.support.token_endpoint import rotating_provider
    from webauth import get_access_token
    from webauth.conf import reset_config

    settings.WEBAUTH = {
        **settings.WEBAUTH,
        "providers": [rotating_provider(token_endpoint)],
        "adapter": "webauth.adapters.django.DjangoAdapter",
    }
    reset_config()
    user = get_user_model().objects.get(pk=user_pk)
    connection.close()  # the workers race from a cold start, as separate requests would
    print("ready", flush=True)
    sys.stdin.readline()
    try:
        result = {"token": get_access_token(user, "rotating")}
    except Exception as exc:
        result = {"error": f"{type(exc).__name__}: {exc}"}
    print(json.dumps(result), flush=True)


if __name__ == "__main__":
    main()
