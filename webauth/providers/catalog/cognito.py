"""Sign in with Cognito (OpenID Connect).

Users of an Amazon Cognito user pool. The issuer is the user pool URL (it holds
the pool id, not the app client id).

The issuer is required: ``Cognito(issuer=...)`` or ``AUTH_COGNITO_ISSUER``. The endpoints
come from its discovery document.

Environment: ``AUTH_COGNITO_ID``, ``AUTH_COGNITO_SECRET``, ``AUTH_COGNITO_ISSUER``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Cognito"]


class Cognito(OIDC):
    """Amazon Cognito (the issuer is the user pool URL). The profile is the ID token's claims."""

    default_id = "cognito"
    default_name = "Cognito"
    style = {"logo": "webauth/providers/cognito.svg", "bg": "#c17b9e", "text": "#000"}
