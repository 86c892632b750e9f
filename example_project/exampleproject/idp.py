"""The Example IdP's claims: what the bundled OpenID provider says about its users."""

from oauth2_provider.oauth2_validators import OAuth2Validator


class Validator(OAuth2Validator):
    """Puts the IdP user's name and email into ID tokens."""

    oidc_claim_scope = None

    def get_additional_claims(self, request):
        user = request.user
        # The IdP shares this project's user table. A real IdP is a separate system;
        # an address of its own keeps its users apart from the site's (webauth
        # refuses to link an account to an existing user by email). idp-alice is
        # both: manage.py example_setup links her IdP account to her site user.
        return {
            "email": f"{user.get_username()}@idp.example",
            "email_verified": True,
            "name": user.get_full_name() or user.get_username(),
            "preferred_username": user.get_username(),
        }
