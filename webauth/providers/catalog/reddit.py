"""Sign in with Reddit (OAuth 2).

The profile is ``GET /api/v1/me`` (scope ``identity``). Reddit shares no email
address. Reddit throttles API clients without a descriptive ``User-Agent``, so
the profile request sends one. For a refresh token add
``authorization_params={"duration": "permanent"}``.

Environment: ``AUTH_REDDIT_ID``, ``AUTH_REDDIT_SECRET``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..oauth import OAuth2
from ..profile import Profile, json_object, require_id, text
from ._base import request_json

if TYPE_CHECKING:
    import requests

__all__ = ["Reddit"]

USER_AGENT = "webauth"


class Reddit(OAuth2):
    """Reddit. Checks state; the name is the username, there is no email or image."""

    default_id = "reddit"
    default_name = "Reddit"
    authorization_endpoint = "https://www.reddit.com/api/v1/authorize"
    token_endpoint = "https://www.reddit.com/api/v1/access_token"
    userinfo_endpoint = "https://oauth.reddit.com/api/v1/me"
    scope = "identity"
    checks = ("state",)
    style = {"logo": "webauth/providers/reddit.svg", "bg": "#ff4500", "text": "#000"}

    def get_userinfo(
        self, http: requests.Session, tokens: dict[str, object], endpoint: str | None
    ) -> dict[str, object]:
        """``GET /api/v1/me`` with a ``User-Agent``."""
        url = self.userinfo_url(endpoint)
        data = request_json(http, "GET", url, tokens, {"User-Agent": USER_AGENT})
        return json_object(data, "Reddit's /api/v1/me response")

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, ``name`` (the username); no email or image, as in Auth.js."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(profile.get("name")),
            "email": None,
            "image": None,
        }
