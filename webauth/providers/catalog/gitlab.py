"""Sign in with GitLab (OAuth 2), on gitlab.com or a self-managed instance.

``GitLab(base_url="https://gitlab.example.com")`` points every endpoint at your
instance. The profile is ``GET /api/v4/user`` (scope ``read_user``).

Environment: ``AUTH_GITLAB_ID``, ``AUTH_GITLAB_SECRET``.
"""

from __future__ import annotations

from typing import Any

from ..oauth import OAuth2
from ..profile import Profile, require_id, text

__all__ = ["GitLab"]


class GitLab(OAuth2):
    """GitLab; ``base_url=`` (default ``https://gitlab.com``) for self-managed GitLab."""

    default_id = "gitlab"
    default_name = "GitLab"
    base_url: str = "https://gitlab.com"
    authorization_endpoint = "https://gitlab.com/oauth/authorize"
    token_endpoint = "https://gitlab.com/oauth/token"
    userinfo_endpoint = "https://gitlab.com/api/v4/user"
    scope = "read_user"
    style = {"logo": "webauth/providers/gitlab.svg", "bg": "#fc6d26", "text": "#000"}

    def __init__(self, *, base_url: str | None = None, **options: Any) -> None:
        if base_url:
            base = base_url.rstrip("/")
            for key, value in (
                ("authorization_endpoint", f"{base}/oauth/authorize"),
                ("token_endpoint", f"{base}/oauth/token"),
                ("userinfo_endpoint", f"{base}/api/v4/user"),
            ):
                if options.get(key) is None:
                    options[key] = value
        super().__init__(**options)
        if base_url:
            self.base_url = base_url.rstrip("/")

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id (or ``sub``), name (else the username), email, ``avatar_url``."""
        ident = profile.get("id")
        if ident is None:
            ident = profile.get("sub")
        return {
            "id": require_id(ident, self.id),
            "name": text(profile.get("name")) or text(profile.get("username")),
            "email": text(profile.get("email")),
            "image": text(profile.get("avatar_url")),
        }
