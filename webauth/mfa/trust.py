""" "Trust this browser": its sign-ins skip the code for ``mfa.trust_days`` days.

Offered on the code page when ``mfa.trust_days`` is set (off by default). A
trusted browser holds, in the encrypted ``authjs.mfa-trusted`` cookie, its
user's id, a random token and the user's session auth hash (an HMAC of the
password hash); the adapter keeps the token's SHA-256
(``create_trusted_browser``). A sign-in from it skips the code only when all
three still match: a password change voids every trusted browser at once, as
do "sign out everywhere" and an admin's reset (which forget them), and the
user forgets any of them in the account center.

Skipping the code is not proving it: such a session says ``trusted_browser``
in its ``amr``, never ``mfa``, so ``@mfa_required`` asks for the code all the
same. The re-authentication it sends the user to sets ``authjs.mfa-fresh``,
which makes the next sign-in of this browser ignore the trust.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .. import cookies as ck
from .. import jwt as jose
from ..adapters.base import FLOW_METHODS
from ..sessions.binding import session_auth_hash
from ..types import TrustedBrowser

if TYPE_CHECKING:
    from django.http import HttpResponseBase

    from ..conf import Config
    from ..state import AuthState

__all__ = ["FRESH_COOKIE", "TRUSTED_COOKIE", "ask_fresh", "offered", "remember", "trusted"]

#: The keys in ``AuthState.cookies`` of the trust and of the "prove it again" mark.
TRUSTED_COOKIE = "mfa_trusted"
FRESH_COOKIE = "mfa_fresh"


def offered(config: Config) -> bool:
    """Whether the code page offers to trust the browser (``trust_days``, the adapter's methods)."""
    storage = config.storage
    return (
        config.mfa.trust_days > 0
        and storage.configured
        and all(storage.has(method) for method in FLOW_METHODS["trusted_browsers"])
    )


def _token_hash(token: str) -> str:
    return hashlib.sha256(token.encode("ascii", "replace")).hexdigest()


def remember(state: AuthState, response: HttpResponseBase, user: object, user_id: str) -> None:
    """Trust this browser for *user* (just signed in with a second factor) on *response*."""
    config = state.config
    days = config.mfa.trust_days
    token = secrets.token_urlsafe(32)
    config.storage.create_trusted_browser(
        TrustedBrowser(
            id="",
            user_id=str(user_id),
            token_hash=_token_hash(token),
            expires=datetime.now(UTC) + timedelta(days=days),
            user_agent=(state.request.META.get("HTTP_USER_AGENT") or "")[:512],
        )
    )
    spec = state.cookies[TRUSTED_COOKIE]
    if spec.max_age is None:
        spec = replace(spec, max_age=days * 86400)
    value = jose.encode(
        token={"sub": str(user_id), "token": token, "hash": session_auth_hash(user) or ""},
        secret=list(config.secret),
        salt=spec.name,
        max_age=days * 86400,
    )
    ck.set_cookie(response, spec, value)


def trusted(state: AuthState, user: object, user_id: str) -> bool:
    """Whether this browser may skip the code for *user*: its trust matches, and it was
    not sent to prove the second factor again (``authjs.mfa-fresh``)."""
    config = state.config
    if not offered(config) or state.cookies[FRESH_COOKIE].name in state.request_cookies:
        return False
    spec = state.cookies[TRUSTED_COOKIE]
    raw = state.request_cookies.get(spec.name)
    if not raw:
        return False
    payload = jose.decode(token=ck.decode_value(raw), secret=config.secret, salt=spec.name)
    if payload is None or payload.get("sub") != str(user_id):
        return False
    token, kept = payload.get("token"), payload.get("hash")
    if not isinstance(token, str) or not isinstance(kept, str):
        return False
    # The password it was trusted under: another one (changed since) voids it.
    if not hmac.compare_digest(kept, session_auth_hash(user) or ""):
        return False
    return config.storage.use_trusted_browser(str(user_id), _token_hash(token)) is not None


def ask_fresh(state: AuthState, response: HttpResponseBase) -> None:
    """Mark the browser: its next sign-in proves the second factor even if trusted."""
    ck.set_cookie(response, state.cookies[FRESH_COOKIE], "1")


def forget_fresh(state: AuthState, response: HttpResponseBase) -> None:
    """Clear the mark once the second factor was proven."""
    spec = state.cookies[FRESH_COOKIE]
    if spec.name in state.request_cookies:
        ck.delete_cookie(response, spec)
