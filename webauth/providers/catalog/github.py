"""Sign in with GitHub (OAuth 2; GitHub is not an OpenID provider).

The profile is ``GET /user``. A user who keeps their email private has
``"email": null`` there, so the provider then reads ``GET /user/emails`` (the
``user:email`` scope allows it) and takes the primary address, else the first.

GitHub Enterprise Server: ``GitHub(enterprise_base_url="https://github.example.com")``
moves the OAuth endpoints to ``<base>/login/oauth/...`` and the API to
``<base>/api/v3``.

Environment: ``AUTH_GITHUB_ID``, ``AUTH_GITHUB_SECRET``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import requests

from ..oauth import OAuth2
from ..profile import Profile, dig, json_object, require_id, text
from ._base import request_json

if TYPE_CHECKING:
    from collections.abc import Mapping

__all__ = ["GitHub"]

#: GitHub's API refuses requests without a User-Agent.
USER_AGENT = "webauth"


class GitHub(OAuth2):
    """GitHub.com or GitHub Enterprise Server (``enterprise_base_url=``)."""

    default_id = "github"
    default_name = "GitHub"
    # GitHub sends this as the ``iss`` of the authorization response (RFC 9207).
    issuer = "https://github.com/login/oauth"
    authorization_endpoint = "https://github.com/login/oauth/authorize"
    token_endpoint = "https://github.com/login/oauth/access_token"
    userinfo_endpoint = "https://api.github.com/user"
    emails_endpoint: str = "https://api.github.com/user/emails"
    scope = "read:user user:email"
    style = {"logo": "webauth/providers/github.svg", "bg": "#24292f", "text": "#fff"}

    def __init__(
        self,
        *,
        enterprise_base_url: str | None = None,
        emails_endpoint: str | None = None,
        **options: Any,
    ) -> None:
        self.enterprise_base_url = enterprise_base_url.rstrip("/") if enterprise_base_url else None
        if self.enterprise_base_url:
            base = self.enterprise_base_url
            api = f"{base}/api/v3"
            for key, value in (
                ("issuer", f"{base}/login/oauth"),
                ("authorization_endpoint", f"{base}/login/oauth/authorize"),
                ("token_endpoint", f"{base}/login/oauth/access_token"),
                ("userinfo_endpoint", f"{api}/user"),
            ):
                if options.get(key) is None:
                    options[key] = value
            emails_endpoint = emails_endpoint or f"{api}/user/emails"
        super().__init__(**options)
        if emails_endpoint:
            self.emails_endpoint = emails_endpoint

    def _headers(self) -> dict[str, str]:
        return {"User-Agent": USER_AGENT, "Accept": "application/vnd.github+json"}

    def get_userinfo(
        self, http: requests.Session, tokens: dict[str, object], endpoint: str | None
    ) -> dict[str, object]:
        """``GET /user``, plus the primary address from ``GET /user/emails`` when it has none."""
        url = self.userinfo_url(endpoint)
        profile = json_object(
            request_json(http, "GET", url, tokens, self._headers()), "GitHub's /user response"
        )
        if not text(profile.get("email")):
            email = self._primary_email(http, tokens)
            if email:
                profile["email"] = email
        return profile

    def _primary_email(self, http: requests.Session, tokens: Mapping[str, object]) -> str | None:
        # Without the user:email scope (or on a GitHub App without the email
        # permission) this answers 404 or 403: the user then has no email.
        try:
            emails = request_json(http, "GET", self.emails_endpoint, tokens, self._headers())
        except (requests.RequestException, ValueError):
            return None
        if not isinstance(emails, list):
            return None
        entries = [entry for entry in emails if text(dig(entry, "email"))]
        chosen = next((entry for entry in entries if entry.get("primary") is True), None)
        if chosen is None and entries:
            chosen = entries[0]
        return text(dig(chosen, "email"))

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id, name (else the login), email, ``avatar_url``."""
        return {
            "id": require_id(profile.get("id"), self.id),
            "name": text(profile.get("name")) or text(profile.get("login")),
            "email": text(profile.get("email")),
            "image": text(profile.get("avatar_url")),
        }
