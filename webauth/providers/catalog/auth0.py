"""Sign in with Auth0 (OpenID Connect).

Users of an Auth0 tenant. The issuer is the tenant's domain (or its custom domain).

The issuer is required: ``Auth0(issuer=...)`` or ``AUTH_AUTH0_ISSUER``. The endpoints
come from its discovery document.

Environment: ``AUTH_AUTH0_ID``, ``AUTH_AUTH0_SECRET``, ``AUTH_AUTH0_ISSUER``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Auth0"]


class Auth0(OIDC):
    """Auth0. The profile is the ID token's standard claims."""

    default_id = "auth0"
    default_name = "Auth0"
    style = {"logo": "webauth/providers/auth0.svg", "bg": "#eb5424", "text": "#000"}
