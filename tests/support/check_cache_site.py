"""The session route served by several gunicorn processes on PostgreSQL and Redis with
``session.user_check_cache`` on (tests/test_session_check_cache_processes.py), and the
commands that prepare and change its users from outside the servers.

``python -m tests.support.check_cache_site setup <names...>`` creates the schema
named by ``WEBAUTH_TEST_PG_SCHEMA``, migrates it, creates the users and prints a
session cookie per user (``name value`` lines); ``deactivate``, ``password`` and
``delete`` change a user through the ORM, ``update`` deactivates one with
``QuerySet.update()`` (no signal), ``everywhere`` signs one out everywhere,
``drop`` removes the schema.
"""

from __future__ import annotations

import os
import sys

from .ratelimit_site import application, worker_pid  # noqa: F401


def query_count(get_response):
    """Count the database queries of each request (``X-Queries``)."""
    from django.db import connection

    def middleware(request):
        count = [0]

        def counting(execute, sql, params, many, context):
            count[0] += 1
            return execute(sql, params, many, context)

        with connection.execute_wrapper(counting):
            response = get_response(request)
        response["X-Queries"] = str(count[0])
        return response

    return middleware


def main(argv: list[str]) -> None:
    import psycopg

    schema = os.environ["WEBAUTH_TEST_PG_SCHEMA"]
    command, names = argv[0], argv[1:]
    if command in ("setup", "drop"):
        with psycopg.connect(
            host=os.environ.get("WEBAUTH_TEST_POSTGRES_HOST", "127.0.0.1"),
            port=os.environ.get("WEBAUTH_TEST_POSTGRES_PORT", "5432"),
            user=os.environ.get("WEBAUTH_TEST_POSTGRES_USER", "postgres"),
            dbname=os.environ.get("WEBAUTH_TEST_POSTGRES_DB", "test"),
            autocommit=True,
        ) as connection:
            connection.execute(f'DROP SCHEMA IF EXISTS "{schema}" CASCADE')
            if command == "setup":
                connection.execute(f'CREATE SCHEMA "{schema}"')
        if command == "drop":
            return
    import django

    django.setup()
    from django.contrib.auth import get_user_model
    from django.core.management import call_command

    from webauth.test import session_cookie_for
    from webauth.user_sessions import sign_out_everywhere

    users = get_user_model().objects
    if command == "setup":
        call_command("migrate", verbosity=0)
        for name in names:
            user = users.create_user(name, f"{name}@example.com", f"pw-{name}-123")
            print(*session_cookie_for(user))
        return
    user = users.get(username=names[0])
    if command == "deactivate":
        user.is_active = False
        user.save()
    elif command == "password":
        user.set_password("a-new-password-456")
        user.save()
    elif command == "delete":
        user.delete()
    elif command == "update":
        users.filter(pk=user.pk).update(is_active=False)
    elif command == "everywhere":
        sign_out_everywhere(user)
    else:
        raise SystemExit(f"unknown command {command!r}")


if __name__ == "__main__":
    main(sys.argv[1:])
