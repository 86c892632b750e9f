"""Sign in with Spotify (OAuth 2).

The profile is ``GET /v1/me`` (scope ``user-read-email``).

Environment: ``AUTH_SPOTIFY_ID``, ``AUTH_SPOTIFY_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Spotify"]


class Spotify(OAuth2):
    """Spotify. Name = ``display_name``, image = the first of ``images``."""

    default_id = "spotify"
    default_name = "Spotify"
    authorization_endpoint = "https://accounts.spotify.com/authorize"
    token_endpoint = "https://accounts.spotify.com/api/token"
    userinfo_endpoint = "https://api.spotify.com/v1/me"
    scope = "user-read-email"
    style = {"logo": "webauth/providers/spotify.svg", "bg": "#1db954", "text": "#000"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, ``display_name``, email, ``images[0].url``."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(profile.get("display_name")),
            "email": text(profile.get("email")),
            "image": text(dig(profile, "images", 0, "url")),
        }
