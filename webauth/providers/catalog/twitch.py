"""Sign in with Twitch (OpenID Connect).

Twitch puts the email and picture in the ID token only when the authorization
request asks for them with the ``claims`` parameter, and it authenticates the
client with ``client_secret_post``. Its token response lists ``scope`` as a
JSON array and reports errors as ``{"status", "message"}``:
:meth:`Twitch.conform_token` turns both into standard OAuth 2 shapes.

Environment: ``AUTH_TWITCH_ID``, ``AUTH_TWITCH_SECRET``.
"""

from __future__ import annotations

import json

from ..oauth import OIDC

__all__ = ["Twitch"]

#: The ID-token claims requested with the ``claims`` parameter (OpenID Connect Core 5.5).
CLAIMS = {"id_token": {"email": None, "picture": None, "preferred_username": None}}


class Twitch(OIDC):
    """Twitch. Claims: ``sub``, ``preferred_username`` (the name), ``email``, ``picture``."""

    default_id = "twitch"
    default_name = "Twitch"
    issuer = "https://id.twitch.tv/oauth2"
    scope = "openid user:read:email"
    # Sent already JSON-encoded, as the claims parameter must be.
    authorization_params = {"claims": json.dumps(CLAIMS, separators=(",", ":"))}
    client_auth_method = "client_secret_post"
    style = {"logo": "webauth/providers/twitch.svg", "bg": "#9146ff", "text": "#fff"}

    def conform_token(self, token: dict[str, object]) -> dict[str, object]:
        """Join an array ``scope`` with spaces; turn Twitch's error body into an OAuth error."""
        token = dict(token)
        scope = token.get("scope")
        if isinstance(scope, list):
            token["scope"] = " ".join(str(item) for item in scope)
        elif "scope" in token and not isinstance(scope, str):
            del token["scope"]
        if "access_token" not in token and not isinstance(token.get("error"), str):
            message = token.get("message")
            return {
                "error": "invalid_request",
                "error_description": message if isinstance(message, str) else None,
            }
        return token
