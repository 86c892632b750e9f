"""A real OpenID provider for the tests: django-oauth-toolkit with OIDC enabled.

It is mounted at ``/idp/`` of the test project and served over HTTP by
pytest-django's ``live_server``; webauth (the relying party, driven by Django's
test client at http://testserver) talks to it with real requests: discovery,
JWKS, token and userinfo.
"""

from __future__ import annotations

from oauth2_provider.oauth2_validators import OAuth2Validator

#: Email claims a test gives the provider's users, by username (the default:
#: ``<username>@idp.example``). The provider runs in the live server's thread
#: of the same process, so a test sets these before the sign-in.
EMAIL_CLAIMS: dict[str, str] = {}
#: ``amr`` claims (RFC 8176) a test has the provider put in its users' ID tokens,
#: by username: how the provider says it signed them in (none by default).
AMR_CLAIMS: dict[str, list[str]] = {}


class Validator(OAuth2Validator):
    """Puts the user's name and email into ID tokens and userinfo."""

    oidc_claim_scope = None

    def get_additional_claims(self, request):
        user = request.user
        # The relying party shares this database in the tests; an email the
        # user table does not hold keeps the two sides' users apart.
        username = user.get_username()
        claims = {
            "email": EMAIL_CLAIMS.get(username, f"{username}@idp.example"),
            "email_verified": True,
            "name": user.get_full_name() or user.get_username(),
            "preferred_username": user.get_username(),
        }
        if username in AMR_CLAIMS:
            claims["amr"] = AMR_CLAIMS[username]
        return claims
