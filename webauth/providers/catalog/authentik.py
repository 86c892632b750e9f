"""Sign in with Authentik (OpenID Connect).

Users of an authentik instance. The issuer is the application's URL,
``https://<host>/application/o/<slug>/``.

The issuer is required: ``Authentik(issuer=...)`` or ``AUTH_AUTHENTIK_ISSUER``. The endpoints
come from its discovery document.

Environment: ``AUTH_AUTHENTIK_ID``, ``AUTH_AUTHENTIK_SECRET``, ``AUTH_AUTHENTIK_ISSUER``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Authentik"]


class Authentik(OIDC):
    """Authentik. The profile is the ID token's standard claims."""

    default_id = "authentik"
    default_name = "Authentik"
    style = {"logo": "webauth/providers/authentik.svg", "bg": "#fd4b2d", "text": "#000"}
