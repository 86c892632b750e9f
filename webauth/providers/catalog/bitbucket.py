"""Sign in with Bitbucket Cloud (OAuth 2).

The profile is ``GET /2.0/user`` (scope ``account``); it has no email address
(that needs the ``email`` scope and another request, which Auth.js does not make).

Environment: ``AUTH_BITBUCKET_ID`` (the consumer key), ``AUTH_BITBUCKET_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Bitbucket"]


class Bitbucket(OAuth2):
    """Bitbucket. id = ``account_id``; no email."""

    default_id = "bitbucket"
    default_name = "Bitbucket"
    authorization_endpoint = "https://bitbucket.org/site/oauth2/authorize"
    token_endpoint = "https://bitbucket.org/site/oauth2/access_token"
    userinfo_endpoint = "https://api.bitbucket.org/2.0/user"
    scope = "account"
    style = {"logo": "webauth/providers/bitbucket.svg", "bg": "#205081", "text": "#fff"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """``account_id``, ``display_name`` else ``username``, ``links.avatar.href``."""
        return {
            "id": require_id(profile.get("account_id"), self.id),
            "name": text(profile.get("display_name")) or text(profile.get("username")),
            "email": None,
            "image": text(dig(profile, "links", "avatar", "href")),
        }
