"""Sign in with Microsoft Entra ID (formerly Azure AD), OpenID Connect.

``tenant_id`` picks who may sign in: ``"common"`` (the default: work, school and
personal Microsoft accounts), ``"organizations"``, ``"consumers"``, or your
directory's tenant id or domain for your organisation only. It sets the issuer
``https://login.microsoftonline.com/<tenant>/v2.0``; ``issuer=`` or
``AUTH_MICROSOFT_ENTRA_ID_ISSUER`` replaces it.

The multi-tenant endpoints publish the issuer ``.../{tenantid}/v2.0``: each ID
token is checked against that template filled with the token's own ``tid``.

Unlike Auth.js, the profile photo is not fetched from Microsoft Graph (it made
an extra request on every sign-in and bloated cookie sessions); fetch it with
the stored access token (scope ``User.Read``) if you need it.

Environment: ``AUTH_MICROSOFT_ENTRA_ID_ID``, ``AUTH_MICROSOFT_ENTRA_ID_SECRET``,
``AUTH_MICROSOFT_ENTRA_ID_ISSUER``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

from ..oauth import OIDC
from ..profile import Profile, require_id, text

__all__ = ["MicrosoftEntraID"]

_TENANT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9.-]*")
# The tenant segment of a multi-tenant issuer, filled from the token's ``tid``.
_MULTI_TENANT_RE = re.compile(
    r"(?<=login\.microsoftonline\.com/)(\{tenantid\}|common|organizations|consumers)(?=/)"
)


def tenant_issuer(tenant_id: str) -> str:
    """The v2.0 issuer URL of *tenant_id*."""
    return f"https://login.microsoftonline.com/{tenant_id}/v2.0"


class MicrosoftEntraID(OIDC):
    """Microsoft Entra ID; ``tenant_id=`` (default ``"common"``) chooses the directory."""

    default_id = "microsoft-entra-id"
    default_name = "Microsoft Entra ID"
    scope = "openid profile email User.Read"
    tenant_id: str = "common"
    style = {"logo": "webauth/providers/microsoft-entra-id.svg", "bg": "#0072c6", "text": "#fff"}

    def __init__(self, *, tenant_id: str | None = None, **options: Any) -> None:
        super().__init__(**options)
        if tenant_id:
            self.tenant_id = tenant_id
        # Whether the issuer is our default, which the environment may replace.
        self._issuer_from_tenant = not self.issuer
        if self._issuer_from_tenant:
            self.issuer = tenant_issuer(self.tenant_id)

    def apply_env(self, env: Callable[[str], str | None]) -> None:
        """As the base class, except that ``..._ISSUER`` also replaces the tenant default."""
        if self._issuer_from_tenant:
            issuer = env(f"{self.env_prefix}_ISSUER")
            if issuer:
                self.issuer = issuer
                self._issuer_from_tenant = False
        super().apply_env(env)

    def validate(self) -> list[str]:
        """The base checks plus a well-formed ``tenant_id``."""
        problems = super().validate()
        if not isinstance(self.tenant_id, str) or not _TENANT_RE.fullmatch(self.tenant_id):
            problems.append(
                f"provider {self.id!r}: tenant_id must be a tenant id, a domain, "
                "'common', 'organizations' or 'consumers'"
            )
        return problems

    def expected_issuer(self, claims: Mapping[str, object], issuer: str | None) -> str | None:
        """Fill a multi-tenant issuer with the token's ``tid``; a tenant issuer stays as is."""
        tid = claims.get("tid")
        if issuer is None or not isinstance(tid, str) or not _TENANT_RE.fullmatch(tid):
            return issuer
        return _MULTI_TENANT_RE.sub(tid, issuer, count=1)

    def map_profile(self, profile: Profile, tokens: Profile) -> Profile:
        """id = ``sub``, ``name``, ``email`` (an optional claim: often absent), no image."""
        return {
            "id": require_id(profile.get("sub"), self.id),
            "name": text(profile.get("name")),
            "email": text(profile.get("email")),
            "image": None,
        }
