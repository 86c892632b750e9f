"""Sign in with LINE (OpenID Connect).

LINE signs web-login ID tokens with HS256, keyed with the channel secret. The
email claim needs the "Email address permission" applied for in the LINE
Developers Console.

Environment: ``AUTH_LINE_ID`` (the channel id), ``AUTH_LINE_SECRET``.
"""

from __future__ import annotations

from ..oauth import OIDC

__all__ = ["Line"]


class Line(OIDC):
    """LINE. Checks state; HS256 ID tokens with ``sub``, ``name``, ``picture``, ``email``."""

    default_id = "line"
    default_name = "LINE"
    issuer = "https://access.line.me"
    id_token_signing_algs = ("HS256",)
    checks = ("state",)
    style = {"logo": "webauth/providers/line.svg", "bg": "#06c755", "text": "#000"}
