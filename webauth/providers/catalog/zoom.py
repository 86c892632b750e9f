"""Sign in with Zoom (OAuth 2).

Zoom apps declare their scopes in the Zoom App Marketplace, so the request
sends an empty ``scope`` rather than the default ``openid profile email``.
The profile is ``GET /v2/users/me``.

Environment: ``AUTH_ZOOM_ID``, ``AUTH_ZOOM_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, full_name, require_id, text

__all__ = ["Zoom"]


class Zoom(OAuth2):
    """Zoom. Name = first and last name, image = ``pic_url``."""

    default_id = "zoom"
    default_name = "Zoom"
    authorization_endpoint = "https://zoom.us/oauth/authorize"
    token_endpoint = "https://zoom.us/oauth/token"
    userinfo_endpoint = "https://api.zoom.us/v2/users/me"
    scope = ""
    style = {"logo": "webauth/providers/zoom.svg", "bg": "#0b5cff", "text": "#fff"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, ``first_name last_name``, email, ``pic_url``."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": full_name(profile.get("first_name"), profile.get("last_name")),
            "email": text(profile.get("email")),
            "image": text(profile.get("pic_url")),
        }
