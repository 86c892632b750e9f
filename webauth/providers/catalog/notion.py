"""Sign in with Notion (OAuth 2, public integrations).

``owner=user`` asks Notion for a user-owned token. Notion has no userinfo
endpoint: the profile is the integration's bot user, ``GET /v1/users/me`` (with
the ``Notion-Version`` header Notion requires), whose ``bot.owner.user`` is
the person who authorized it. Notion's token response may carry a
non-string ``refresh_token``, which :meth:`Notion.conform_token` drops.

Environment: ``AUTH_NOTION_ID`` (the OAuth client id), ``AUTH_NOTION_SECRET``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..oauth import OAuth2
from ..profile import Profile, dig, json_object, require_id, text
from ._base import request_json

if TYPE_CHECKING:
    import requests

__all__ = ["Notion"]

#: The Notion API version the profile request is written against.
NOTION_VERSION = "2022-06-28"


class Notion(OAuth2):
    """Notion. The profile is the owner of the integration's bot user."""

    default_id = "notion"
    default_name = "Notion"
    authorization_endpoint = "https://api.notion.com/v1/oauth/authorize"
    token_endpoint = "https://api.notion.com/v1/oauth/token"
    userinfo_endpoint = "https://api.notion.com/v1/users/me"
    authorization_params = {"owner": "user"}
    style = {"logo": "webauth/providers/notion.svg", "bg": "#000", "text": "#fff"}

    def conform_token(self, token: dict[str, object]) -> dict[str, object]:
        """Drop a ``refresh_token`` that is not a non-empty string."""
        refresh = token.get("refresh_token")
        if "refresh_token" in token and not (isinstance(refresh, str) and refresh):
            token = {key: value for key, value in token.items() if key != "refresh_token"}
        return token

    def get_userinfo(
        self, http: requests.Session, tokens: dict[str, object], endpoint: str | None
    ) -> dict[str, object]:
        """The user who owns the bot (``GET /v1/users/me`` → ``bot.owner.user``)."""
        url = self.userinfo_url(endpoint)
        data = request_json(http, "GET", url, tokens, {"Notion-Version": NOTION_VERSION})
        owner = dig(json_object(data, "Notion's /v1/users/me response"), "bot", "owner")
        user = dig(owner, "user")
        if dig(owner, "type") != "user" or not isinstance(user, dict):
            raise ValueError(
                "the Notion integration is owned by a workspace, not a user: "
                "authorize it with owner=user"
            )
        return user

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, name, ``person.email``, ``avatar_url``."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(profile.get("name")),
            "email": text(dig(profile, "person", "email")),
            "image": text(profile.get("avatar_url")),
        }
