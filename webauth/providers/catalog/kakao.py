"""Sign in with Kakao (OAuth 2).

Consent items are configured in the Kakao Developers console, so the request
sends an empty ``scope``. The profile is ``GET /v2/user/me``; the fields the
user agreed to share are under ``kakao_account``. The client authenticates
with ``client_secret_post``.

Environment: ``AUTH_KAKAO_ID`` (the REST API key), ``AUTH_KAKAO_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Kakao"]


class Kakao(OAuth2):
    """Kakao. Name = ``kakao_account.profile.nickname``."""

    default_id = "kakao"
    default_name = "Kakao"
    authorization_endpoint = "https://kauth.kakao.com/oauth/authorize"
    token_endpoint = "https://kauth.kakao.com/oauth/token"
    userinfo_endpoint = "https://kapi.kakao.com/v2/user/me"
    scope = ""
    client_auth_method = "client_secret_post"
    style = {"logo": "webauth/providers/kakao.svg", "bg": "#fee500", "text": "#000"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, and the nickname, email and profile image from ``kakao_account``."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(dig(profile, "kakao_account", "profile", "nickname")),
            "email": text(dig(profile, "kakao_account", "email")),
            "image": text(dig(profile, "kakao_account", "profile", "profile_image_url")),
        }
