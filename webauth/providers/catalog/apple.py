"""Sign in with Apple (OpenID Connect, ``response_mode=form_post``).

Apple POSTs the authorization response to the callback, so the state and
nonce cookies must survive a cross-site POST. Its ID token never carries the
user's name: Apple sends it once, on the user's first consent, as the ``user``
form parameter (JSON), which :meth:`Apple.extra_callback_profile` reads. That
parameter is not signed, so only the name is taken from it; the email always
comes from the ID token.

The client secret is a JWT your application signs with its Apple key.

Environment: ``AUTH_APPLE_ID`` (the Services ID), ``AUTH_APPLE_SECRET``.
"""

from __future__ import annotations

import json
from collections.abc import Mapping

from ..oauth import OIDC
from ..profile import Profile, dig, full_name, require_id, text

__all__ = ["Apple"]

#: The ``user`` parameter is a few dozen bytes; anything much larger is not Apple's.
MAX_USER_PARAM = 4096


class Apple(OIDC):
    """Apple ID. Claims: ``sub``, ``email``, ``email_verified``, ``is_private_email``."""

    default_id = "apple"
    default_name = "Apple"
    issuer = "https://appleid.apple.com"
    scope = "name email"
    response_mode = "form_post"
    checks = ("nonce", "state")
    client_auth_method = "client_secret_post"
    style = {"logo": "webauth/providers/apple.svg", "bg": "#000", "text": "#fff"}

    def extra_callback_profile(self, params: Mapping[str, str]) -> dict[str, object]:
        """``{"user": {...}, "name": "First Last"}`` from the first-consent ``user`` parameter."""
        raw = params.get("user")
        if not isinstance(raw, str) or not raw or len(raw) > MAX_USER_PARAM:
            return {}
        try:
            data = json.loads(raw)
        except ValueError:
            return {}
        if not isinstance(data, dict):
            return {}
        first = text(dig(data, "name", "firstName"))
        last = text(dig(data, "name", "lastName"))
        user: dict[str, object] = {"name": {"firstName": first, "lastName": last}}
        if text(data.get("email")):
            user["email"] = data["email"]
        extra: dict[str, object] = {"user": user}
        name = full_name(first, last)
        if name:
            extra["name"] = name
        return extra

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id = ``sub``; name from the first-consent ``user`` parameter; no image."""
        name = text(profile.get("name")) or full_name(
            dig(profile, "user", "name", "firstName"), dig(profile, "user", "name", "lastName")
        )
        return {
            "id": require_id(profile.get("sub"), self.id),
            "name": name,
            "email": text(profile.get("email")),
            "image": None,
        }
