"""Sign in with Naver (OAuth 2).

The profile is ``GET /v1/nid/me``; the user is under ``response``.

Environment: ``AUTH_NAVER_ID``, ``AUTH_NAVER_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Naver"]


class Naver(OAuth2):
    """Naver. Name = ``response.nickname``."""

    default_id = "naver"
    default_name = "Naver"
    authorization_endpoint = "https://nid.naver.com/oauth2.0/authorize"
    token_endpoint = "https://nid.naver.com/oauth2.0/token"
    userinfo_endpoint = "https://openapi.naver.com/v1/nid/me"
    style = {"logo": "webauth/providers/naver.svg", "bg": "#03c75a", "text": "#000"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """``response``'s id, nickname, email and profile image."""
        return {
            "id": require_id(dig(profile, "response", "id"), self.id),
            "name": text(dig(profile, "response", "nickname")),
            "email": text(dig(profile, "response", "email")),
            "image": text(dig(profile, "response", "profile_image")),
        }
