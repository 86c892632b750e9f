"""Sign in with Strava (OAuth 2).

The profile is ``GET /api/v3/athlete`` (scope ``read``). Strava shares no email
address. The client authenticates with ``client_secret_post``.

Environment: ``AUTH_STRAVA_ID``, ``AUTH_STRAVA_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, full_name, require_id, text

__all__ = ["Strava"]


class Strava(OAuth2):
    """Strava athletes. Name = first and last name, image = ``profile``."""

    default_id = "strava"
    default_name = "Strava"
    authorization_endpoint = "https://www.strava.com/api/v3/oauth/authorize"
    token_endpoint = "https://www.strava.com/api/v3/oauth/token"
    userinfo_endpoint = "https://www.strava.com/api/v3/athlete"
    scope = "read"
    authorization_params = {"approval_prompt": "auto"}
    client_auth_method = "client_secret_post"
    style = {"logo": "webauth/providers/strava.svg", "bg": "#fc4c02", "text": "#000"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, ``firstname lastname``, no email, ``profile`` (the large picture)."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": full_name(profile.get("firstname"), profile.get("lastname")),
            "email": None,
            "image": text(profile.get("profile")),
        }
