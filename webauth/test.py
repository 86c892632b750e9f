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

import time
from collections.abc import Mapping
from typing import Any

from django.test import Client

from . import cookies as ck
from .conf import get_config
from .sessions import (
    binding_claims,
    default_token,
    encode_token,
    jwt_lifetime,
    new_database_session,
)
from .utils import user_to_dict

__all__ = ["force_sign_in", "force_sign_out", "session_cookie_for"]


def session_cookie_for(
    user: Any, *, secure: bool = False, claims: Mapping[str, Any] | None = None
) -> tuple[str, str]:
    """``(cookie name, value)`` of a session for *user*.

    With the ``jwt`` strategy the value is a JWT (extra *claims* merged in); with
    ``database`` a session is created through the adapter and the value is its token.
    """
    config = get_config()
    now = time.time()
    info = user_to_dict(user)
    name = ck.cookie_specs(config, secure)["session_token"].name
    if config.session.strategy == "database":
        result = new_database_session(
            config, user_id=str(info["id"]), user_agent="webauth.test", user=user
        )
        assert result.cookie is not None
        return name, result.cookie
    token = {
        **default_token(info),  # as a sign-in makes it: only the fields the user has
        # As a sign-in makes it: bound to a Django user's password and activeness.
        **binding_claims(user, now),
        **(claims or {}),
    }
    return name, encode_token(config, token, name, jwt_lifetime(config, token, now)[0])


def force_sign_in(
    client: Client, user: Any, *, secure: bool = False, claims: Mapping[str, Any] | None = None
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
