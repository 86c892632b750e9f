"""Sign in with Keycloak (OpenID Connect).

Users of a Keycloak realm (create a confidential OpenID Connect client in it).
The issuer is the realm URL.

The issuer is required: ``Keycloak(issuer=...)`` or ``AUTH_KEYCLOAK_ISSUER``. The endpoints
come from its discovery document.

Environment: ``AUTH_KEYCLOAK_ID``, ``AUTH_KEYCLOAK_SECRET``, ``AUTH_KEYCLOAK_ISSUER``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Keycloak"]


class Keycloak(OIDC):
    """Keycloak (the issuer is the realm URL). The profile is the ID token's standard claims."""

    default_id = "keycloak"
    default_name = "Keycloak"
    style = {"logo": "webauth/providers/keycloak.svg", "bg": "#3979b0", "text": "#fff"}
