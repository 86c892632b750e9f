"""Sign in with Google (OpenID Connect).

Everything comes from Google's discovery document; the profile is the ID
token's claims. For a refresh token, ask for offline access::

    Google(authorization_params={"access_type": "offline", "prompt": "consent"})

Environment: ``AUTH_GOOGLE_ID``, ``AUTH_GOOGLE_SECRET``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Google"]


class Google(OIDC):
    """Google accounts. Claims: ``sub``, ``name``, ``email``, ``email_verified``, ``picture``."""

    default_id = "google"
    default_name = "Google"
    issuer = "https://accounts.google.com"
    style = {"logo": "webauth/providers/google.svg", "bg": "#1a73e8", "text": "#fff"}
