"""Sign in with LinkedIn (OpenID Connect).

Needs the "Sign In with LinkedIn using OpenID Connect" product on the app.
LinkedIn authenticates the client with ``client_secret_post``; as in Auth.js,
the flow is protected by state (and the ID token) rather than PKCE.

Environment: ``AUTH_LINKEDIN_ID``, ``AUTH_LINKEDIN_SECRET``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["LinkedIn"]


class LinkedIn(OIDC):
    """LinkedIn. Claims: ``sub``, ``name``, ``email``, ``picture``."""

    default_id = "linkedin"
    default_name = "LinkedIn"
    issuer = "https://www.linkedin.com/oauth"
    client_auth_method = "client_secret_post"
    checks = ("state",)
    style = {"logo": "webauth/providers/linkedin.svg", "bg": "#0a66c2", "text": "#fff"}
