"""Sign in with Patreon (OAuth 2).

The profile is ``GET /api/oauth2/api/current_user``, a JSON:API document:
the user is under ``data`` and its fields under ``data.attributes``.

Environment: ``AUTH_PATREON_ID``, ``AUTH_PATREON_SECRET``.
"""

from __future__ import annotations

from ..oauth import OAuth2
from ..profile import Profile, dig, require_id, text

__all__ = ["Patreon"]


class Patreon(OAuth2):
    """Patreon. Scope ``identity identity[email]``."""

    default_id = "patreon"
    default_name = "Patreon"
    authorization_endpoint = "https://www.patreon.com/oauth2/authorize"
    token_endpoint = "https://www.patreon.com/api/oauth2/token"
    userinfo_endpoint = "https://www.patreon.com/api/oauth2/api/current_user"
    scope = "identity identity[email]"
    style = {"logo": "webauth/providers/patreon.svg", "bg": "#ff424d", "text": "#000"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """``data.id`` and ``data.attributes``' full name, email and image URL."""
        return {
            "id": require_id(dig(profile, "data", "id"), self.id),
            "name": text(dig(profile, "data", "attributes", "full_name")),
            "email": text(dig(profile, "data", "attributes", "email")),
            "image": text(dig(profile, "data", "attributes", "image_url")),
        }
