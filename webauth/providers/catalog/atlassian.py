"""Sign in with Atlassian (OAuth 2.0 "3LO").

The authorization request carries ``audience=api.atlassian.com`` and
``prompt=consent``; the profile is ``GET https://api.atlassian.com/me``, which
needs the User Identity API enabled on the app and the ``read:me`` scope (the
default here; add product scopes such as ``read:jira-work offline_access``
with ``scope=``).

Environment: ``AUTH_ATLASSIAN_ID``, ``AUTH_ATLASSIAN_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, require_id, text

__all__ = ["Atlassian"]


class Atlassian(OAuth2):
    """Atlassian accounts (Jira, Confluence). Checks state."""

    default_id = "atlassian"
    default_name = "Atlassian"
    authorization_endpoint = "https://auth.atlassian.com/authorize"
    token_endpoint = "https://auth.atlassian.com/oauth/token"
    userinfo_endpoint = "https://api.atlassian.com/me"
    scope = "read:me"
    authorization_params = {"audience": "api.atlassian.com", "prompt": "consent"}
    checks = ("state",)
    style = {"logo": "webauth/providers/atlassian.svg", "bg": "#0052cc", "text": "#fff"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """``account_id``, name, email, picture."""
        return {
            "id": require_id(profile.get("account_id"), self.id),
            "name": text(profile.get("name")),
            "email": text(profile.get("email")),
            "image": text(profile.get("picture")),
        }
