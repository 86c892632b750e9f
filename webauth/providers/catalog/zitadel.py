"""Sign in with ZITADEL (OpenID Connect).

Users of a ZITADEL instance, cloud or self-hosted. The issuer is the instance URL.

The issuer is required: ``Zitadel(issuer=...)`` or ``AUTH_ZITADEL_ISSUER``. The endpoints
come from its discovery document.

Environment: ``AUTH_ZITADEL_ID``, ``AUTH_ZITADEL_SECRET``, ``AUTH_ZITADEL_ISSUER``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Zitadel"]


class Zitadel(OIDC):
    """ZITADEL. The profile is the ID token's standard claims."""

    default_id = "zitadel"
    default_name = "ZITADEL"
    style = {"logo": "webauth/providers/zitadel.svg", "bg": "#ff7032", "text": "#000"}
