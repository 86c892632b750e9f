"""What the second factor's tests share: the settings, the clock, a confirmed key."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from typing import Any

import pyotp
from freezegun import freeze_time

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
PASSWORD = "correct horse battery staple"
#: Now, to the second, when the tests were collected: the clock the tests freeze
#: (sessions forced at the real time stay valid under it).
NOW = float(int(time.time()))


def at(when: float) -> str:
    """*when* (a POSIX time) as freeze_time takes it."""
    return datetime.fromtimestamp(when, UTC).isoformat()


def mfa_settings(*, mfa: dict[str, Any] | None = None, **options: Any) -> dict[str, Any]:
    """``WEBAUTH`` with the ORM adapter, a password provider and the second factor on."""
    return {
        "secret": SECRET,
        "adapter": "webauth.adapters.django.DjangoAdapter",
        "providers": ["webauth.providers.DjangoCredentials"],
        "mfa": {"enabled": True, **(mfa or {})},
        **options,
    }


def add_key(user: Any, when: float = NOW - 300) -> str:
    """A confirmed TOTP key of *user*, confirmed with the code of *when*; the key."""
    from webauth.conf import get_config
    from webauth.mfa import factors

    config = get_config()
    enrolment = factors.begin_totp(config, user.pk, account=user.email, issuer="Example")
    with freeze_time(at(when)):
        code = pyotp.TOTP(enrolment.key).at(when)
        assert factors.confirm_totp(config, user.pk, enrolment.factor.id, code)
    return enrolment.key


def person(name: str, **fields: Any) -> Any:
    """A user called *name*, with the address ``<name>@example.com`` and :data:`PASSWORD`."""
    from django.contrib.auth import get_user_model

    return get_user_model().objects.create_user(
        name, fields.pop("email", f"{name}@example.com"), PASSWORD, **fields
    )


def race(client: Any, bodies: list[dict[str, Any]], path: str = "/auth/mfa") -> list[Any]:
    """POST each of *bodies* to *path* at once, each from a copy of *client*'s cookies
    (its CSRF token added), one thread and database connection each; the answers."""
    import threading

    from django.db import connections
    from django.test import Client

    from .helpers import csrf_pair

    token = csrf_pair(client)
    cookies = {name: morsel.value for name, morsel in client.cookies.items()}
    barrier = threading.Barrier(len(bodies))
    answers: list[Any] = []

    def send(body: dict[str, Any]) -> None:
        mine = Client()
        for name, value in cookies.items():
            mine.cookies[name] = value
        try:
            barrier.wait(30)
            answers.append(mine.post(path, {"csrfToken": token, **body}))
        finally:
            connections.close_all()

    threads = [threading.Thread(target=send, args=(body,)) for body in bodies]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert len(answers) == len(bodies), "a racing request did not answer"
    return answers
