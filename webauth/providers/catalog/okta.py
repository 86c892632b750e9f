"""Sign in with Okta (OpenID Connect).

Users of an Okta org. The issuer is the org URL or one of its authorization
servers (``.../oauth2/default``).

The issuer is required: ``Okta(issuer=...)`` or ``AUTH_OKTA_ISSUER``. The endpoints
come from its discovery document.

Environment: ``AUTH_OKTA_ID``, ``AUTH_OKTA_SECRET``, ``AUTH_OKTA_ISSUER``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Okta"]


class Okta(OIDC):
    """Okta (checks PKCE and state). The profile is the ID token's standard claims."""

    default_id = "okta"
    default_name = "Okta"
    checks = ("pkce", "state")
    style = {"logo": "webauth/providers/okta.svg", "bg": "#007abd", "text": "#fff"}
