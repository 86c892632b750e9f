"""Helpers for a project's own tests.

``force_sign_in(client, user)`` signs *user* in on a Django test ``Client`` by
setting a valid webauth session cookie, as ``client.force_login`` does for
``django.contrib.auth``::

    from webauth.test import force_sign_in

    def test_dashboard(client, django_user_model):
        user = django_user_model.objects.create_user("alice")
        force_sign_in(client, user)
        assert client.get("/dashboard/").status_code == 200
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from django.test import Client

from . import cookies as ck
from .conf import get_config
from .sessions import strategy_of

__all__ = ["force_sign_in", "force_sign_out", "session_cookie_for"]


def session_cookie_for(
    user: Any, *, secure: bool = False, claims: Mapping[str, object] | None = None
) -> tuple[str, str]:
    """``(cookie name, value)`` of a session for *user*.

    With the ``jwt`` strategy the value is a JWT (extra *claims* merged in); with
    ``database`` a session is created through the adapter and the value is its token.
    """
    config = get_config()
    name = ck.cookie_specs(config, secure)["session_token"].name
    value = strategy_of(config).session_for(config, name, user, claims)
    return name, value


def force_sign_in(
    client: Client, user: Any, *, secure: bool = False, claims: Mapping[str, object] | None = None
) -> str:
    """Sign *user* (a model instance or a mapping with ``id``) in on *client*.

    Returns the session cookie's value (the JWT, or the database session token).
    """
    name, value = session_cookie_for(user, secure=secure, claims=claims)
    client.cookies[name] = value
    return value


def force_sign_out(client: Client) -> None:
    """Remove every webauth session cookie from *client*."""
    for name in list(client.cookies):
        if "authjs.session-token" in name:
            del client.cookies[name]
