"""Sign in with Yandex ID (OAuth 2).

The profile is ``GET https://login.yandex.ru/info?format=json`` with the
``login:info``, ``login:email`` and ``login:avatar`` scopes. The avatar is
built from ``default_avatar_id`` unless the user has none.

Environment: ``AUTH_YANDEX_ID``, ``AUTH_YANDEX_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Yandex"]

AVATAR_URL = "https://avatars.yandex.net/get-yapic/{avatar_id}/islands-200"


class Yandex(OAuth2):
    """Yandex. Name = ``display_name``, ``real_name`` or ``first_name``."""

    default_id = "yandex"
    default_name = "Yandex"
    authorization_endpoint = "https://oauth.yandex.ru/authorize"
    token_endpoint = "https://oauth.yandex.ru/token"
    userinfo_endpoint = "https://login.yandex.ru/info?format=json"
    scope = "login:info login:email login:avatar"
    style = {"logo": "webauth/providers/yandex.svg", "bg": "#fc3f1d", "text": "#000"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, a display name, the default email (else the first), the 200 px avatar."""
        avatar_id = text(profile.get("default_avatar_id"))
        image = None
        if avatar_id and profile.get("is_avatar_empty") is not True:
            image = AVATAR_URL.format(avatar_id=avatar_id)
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(profile.get("display_name"))
            or text(profile.get("real_name"))
            or text(profile.get("first_name")),
            "email": text(profile.get("default_email")) or text(dig(profile, "emails", 0)),
            "image": image,
        }
