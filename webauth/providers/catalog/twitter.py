"""Sign in with X (formerly Twitter), OAuth 2.0 with PKCE.

The profile is ``GET /2/users/me``, wrapped in ``{"data": {...}}``. X does not
share the email address through this API, so ``email`` is ``None``.

Environment: ``AUTH_TWITTER_ID``, ``AUTH_TWITTER_SECRET`` (the OAuth 2.0 client
id and secret, not the API key).
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Twitter"]


class Twitter(OAuth2):
    """X / Twitter (id ``twitter``). Checks PKCE and state."""

    default_id = "twitter"
    default_name = "Twitter"
    authorization_endpoint = "https://x.com/i/oauth2/authorize"
    token_endpoint = "https://api.x.com/2/oauth2/token"
    userinfo_endpoint = "https://api.x.com/2/users/me?user.fields=profile_image_url"
    scope = "users.read tweet.read offline.access"
    checks = ("pkce", "state")
    style = {"logo": "webauth/providers/twitter.svg", "bg": "#000", "text": "#fff"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """``data.id``, ``data.name``, no email, ``data.profile_image_url``."""
        return {
            "id": require_id(dig(profile, "data", "id"), self.id),
            "name": text(dig(profile, "data", "name")),
            "email": text(dig(profile, "data", "email")),
            "image": text(dig(profile, "data", "profile_image_url")),
        }
