"""Sign in with Discord (OAuth 2).

The profile is ``GET /users/@me``. The image is the avatar's CDN URL (animated
avatars, whose hash starts with ``a_``, as GIF), or Discord's default avatar
for users without one. The name is the display name (``global_name``), else
the username.

Environment: ``AUTH_DISCORD_ID``, ``AUTH_DISCORD_SECRET``.
"""

from __future__ import annotations

from typing import Any

from ..oauth import OAuth2
from ..profile import Profile, require_id, text

__all__ = ["Discord"]

CDN = "https://cdn.discordapp.com"


def avatar_url(user_id: str, avatar: object, discriminator: Any) -> str:
    """The CDN URL of a user's avatar, or of the default avatar Discord shows instead."""
    avatar = text(avatar)
    if avatar:
        extension = "gif" if avatar.startswith("a_") else "png"
        return f"{CDN}/avatars/{user_id}/{avatar}.{extension}"
    # Users migrated to unique usernames have discriminator "0": their default
    # avatar is picked from the id's timestamp bits (6 choices); legacy users'
    # from the discriminator (5 choices).
    try:
        if discriminator in (None, "", "0"):
            index = (int(user_id) >> 22) % 6
        else:
            index = int(discriminator) % 5
    except (TypeError, ValueError):
        index = 0
    return f"{CDN}/embed/avatars/{index}.png"


class Discord(OAuth2):
    """Discord. Scope ``identify email``."""

    default_id = "discord"
    default_name = "Discord"
    authorization_endpoint = "https://discord.com/api/oauth2/authorize"
    token_endpoint = "https://discord.com/api/oauth2/token"
    userinfo_endpoint = "https://discord.com/api/users/@me"
    scope = "identify email"
    style = {"logo": "webauth/providers/discord.svg", "bg": "#5865f2", "text": "#fff"}

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, ``global_name`` else ``username``, email, avatar URL."""
        user_id = require_id(profile.get("id"), self.id)
        return {
            "id": user_id,
            "name": text(profile.get("global_name")) or text(profile.get("username")),
            "email": text(profile.get("email")),
            "image": avatar_url(user_id, profile.get("avatar"), profile.get("discriminator")),
        }
