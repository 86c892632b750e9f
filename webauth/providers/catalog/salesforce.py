"""Sign in with Salesforce (OpenID Connect, profile from the userinfo endpoint).

The default issuer is ``https://login.salesforce.com``; use
``https://test.salesforce.com`` for sandboxes or your My Domain URL, with
``issuer=`` or ``AUTH_SALESFORCE_ISSUER``. As in Auth.js the profile comes
from the userinfo endpoint, and the account id is its ``sub`` (a URL naming
the org and the user).

Environment: ``AUTH_SALESFORCE_ID``, ``AUTH_SALESFORCE_SECRET``, ``AUTH_SALESFORCE_ISSUER``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from ..oauth import OIDC

__all__ = ["Salesforce"]

DEFAULT_ISSUER = "https://login.salesforce.com"


class Salesforce(OIDC):
    """Salesforce. Checks PKCE, state and nonce; reads the userinfo endpoint."""

    default_id = "salesforce"
    default_name = "Salesforce"
    id_token = False
    checks = ("pkce", "state", "nonce")
    style = {"logo": "webauth/providers/salesforce.svg", "bg": "#00a1e0", "text": "#000"}

    def __init__(self, **options: Any) -> None:
        super().__init__(**options)
        # Whether the issuer is our default, which the environment may replace.
        self._default_issuer = not self.issuer
        if self._default_issuer:
            self.issuer = DEFAULT_ISSUER

    def apply_env(self, env: Callable[[str], str | None]) -> None:
        """As the base class, except that ``AUTH_SALESFORCE_ISSUER`` replaces the default."""
        if self._default_issuer:
            issuer = env(f"{self.env_prefix}_ISSUER")
            if issuer:
                self.issuer = issuer
                self._default_issuer = False
        super().apply_env(env)
