"""The benchmark site's credentials check, the twin of ``benchmarks/authjs/server.mjs``.

``bench_authjs.py`` compares webauth's credentials sign-in with Auth.js's. Both
``authorize`` functions do the same small amount of work: compare the submitted
username and password with those of :data:`USER`, in constant time, and answer
the user as a plain mapping. Neither hashes a password: Django's default
PBKDF2 hasher takes tens of milliseconds by design and would measure the hasher,
not the two libraries.

The site uses it when ``WEBAUTH_BENCH_CREDENTIALS=constant`` (see ``settings.py``);
``bench_http.py`` keeps the default ``DjangoCredentials`` provider.
"""

from __future__ import annotations

import hmac
from collections.abc import Mapping
from typing import Any

from django.http import HttpRequest

#: The one user both servers accept. ``bench_authjs.py`` hands it to the Node side.
USER = {
    "id": "1",
    "name": "Alice",
    "email": "alice@example.com",
    "username": "alice",
    "password": "bench-password",
}
_USERNAME = USER["username"].encode()
_PASSWORD = USER["password"].encode()
_ANSWER = {"id": USER["id"], "name": USER["name"], "email": USER["email"]}


def _same(given: Any, expected: bytes) -> bool:
    """Whether *given* is the string *expected*, compared in constant time."""
    return isinstance(given, str) and hmac.compare_digest(given.encode(), expected)


def authorize(credentials: Mapping[str, Any], request: HttpRequest) -> dict[str, str] | None:
    """The user when both fields match :data:`USER`, else ``None``."""
    username_ok = _same(credentials.get("username"), _USERNAME)
    password_ok = _same(credentials.get("password"), _PASSWORD)
    if not (username_ok and password_ok):
        return None
    return dict(_ANSWER)
