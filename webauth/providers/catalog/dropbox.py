"""Sign in with Dropbox (OAuth 2).

Dropbox's user endpoint, ``users/get_current_account``, is an RPC call: it
must be a ``POST``. ``token_access_type=offline`` asks for a refresh token.

Environment: ``AUTH_DROPBOX_ID`` (the app key), ``AUTH_DROPBOX_SECRET``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..oauth import OAuth2
from ..profile import Profile, dig, json_object, require_id, text
from ._base import request_json

if TYPE_CHECKING:
    import requests

__all__ = ["Dropbox"]


class Dropbox(OAuth2):
    """Dropbox. id = ``account_id``, name = ``name.display_name``."""

    default_id = "dropbox"
    default_name = "Dropbox"
    authorization_endpoint = "https://www.dropbox.com/oauth2/authorize"
    token_endpoint = "https://api.dropboxapi.com/oauth2/token"
    userinfo_endpoint = "https://api.dropboxapi.com/2/users/get_current_account"
    scope = "account_info.read"
    authorization_params = {"token_access_type": "offline"}
    style = {"logo": "webauth/providers/dropbox.svg", "bg": "#0061fe", "text": "#fff"}

    def get_userinfo(
        self, http: requests.Session, tokens: dict[str, object], endpoint: str | None
    ) -> dict[str, object]:
        """``POST /2/users/get_current_account`` (no body: the call takes no arguments)."""
        url = self.userinfo_url(endpoint)
        data = request_json(http, "POST", url, tokens)
        return json_object(data, "Dropbox's get_current_account response")

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """``account_id``, ``name.display_name``, email, ``profile_photo_url``."""
        return {
            "id": require_id(profile.get("account_id"), self.id),
            "name": text(dig(profile, "name", "display_name")),
            "email": text(profile.get("email")),
            "image": text(profile.get("profile_photo_url")),
        }
