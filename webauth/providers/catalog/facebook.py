"""Sign in with Facebook (OAuth 2, Graph API v19.0).

The profile is ``GET /me?fields=id,name,email,picture``. Accounts created on a
phone may have no email address.

Environment: ``AUTH_FACEBOOK_ID`` (the app id), ``AUTH_FACEBOOK_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Facebook"]


class Facebook(OAuth2):
    """Facebook Login. Image = ``picture.data.url``."""

    default_id = "facebook"
    default_name = "Facebook"
    authorization_endpoint = "https://www.facebook.com/v19.0/dialog/oauth"
    token_endpoint = "https://graph.facebook.com/oauth/access_token"
    userinfo_endpoint = "https://graph.facebook.com/me?fields=id,name,email,picture"
    scope = "email"
    style = {"logo": "webauth/providers/facebook.svg", "bg": "#0866ff", "text": "#fff"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, name, email, ``picture.data.url``."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(profile.get("name")),
            "email": text(profile.get("email")),
            "image": text(dig(profile, "picture", "data", "url")),
        }
