"""PKCE, state and nonce, each kept in its own short-lived encrypted cookie.

As in Auth.js, a check cookie holds a JWE (salt: the cookie's name, 15 minutes)
of ``{"value": <secret>, "provider": <provider id>}``, so a value made for one
provider cannot be replayed against another. The ``state`` parameter itself is
a JWE (salt ``encodedState``) of ``{"random": ..., "origin"?: ...}``; ``origin``
is set in redirect-proxy mode so the proxy knows where to forward the callback.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from .. import cookies as ck
from .. import jwt as jose
from ..cookies import CHECK_MAX_AGE
from ..errors import InvalidCheck

if TYPE_CHECKING:
    from django.http import HttpResponseBase

    from ..conf import Config
    from ..providers.oauth import OAuth2
    from ..state import AuthState

__all__ = ["Checks", "clear_checks", "decode_state", "new_checks", "read_check"]

STATE_SALT = "encodedState"
_COOKIE_KEYS = {"pkce": "pkce_code_verifier", "state": "state", "nonce": "nonce"}
#: Why the state cookie is usually missing: a callback that is not (or no longer)
#: a sign-in under way in this browser.
_STALE = (
    "the callback URL was opened again after the sign-in or after 15 minutes, "
    "or not in the browser that started the sign-in; or "
)
_CAUSES = (
    "the cookie was blocked or dropped by the browser or a proxy, the sign-in "
    "started on another host or scheme than the callback (check AUTH_URL, "
    "ALLOWED_HOSTS and SECURE_PROXY_SSL_HEADER), or more than 15 minutes passed"
)


@dataclass
class Checks:
    """The check values of one authorization request and the cookies that keep them."""

    cookies: list[tuple[str, str]] = field(default_factory=list)
    code_verifier: str | None = None
    nonce: str | None = None
    state: str | None = None

    def write(self, state: AuthState, response: HttpResponseBase, provider: OAuth2) -> None:
        """Set the check cookies on *response*."""
        form_post = provider.response_mode == "form_post"
        expires = datetime.now(UTC) + timedelta(seconds=CHECK_MAX_AGE)
        for key, value in self.cookies:
            spec = state.cookies[key]
            if form_post and key in ("state", "nonce"):
                # The provider POSTs the callback cross-site: only SameSite=None cookies come along.
                spec = replace(spec, same_site="None", secure=True)
            ck.set_cookie(response, spec, value, expires=expires)


def _wrap(state: AuthState, key: str, value: str, provider_id: str) -> str:
    spec = state.cookies[key]
    return jose.encode(
        token={"value": value, "provider": provider_id},
        secret=list(state.config.secret),
        salt=spec.name,
        max_age=CHECK_MAX_AGE,
    )


def new_checks(state: AuthState, provider: OAuth2, *, proxy_origin: str | None = None) -> Checks:
    """Fresh check values for an authorization request to *provider*.

    ``state`` is always used (Auth.js uses it only when listed or behind a
    redirect proxy): it costs nothing and binds the callback to this browser.
    """
    checks = Checks()
    if "pkce" in provider.checks:
        # Authlib derives the S256 challenge from the verifier when it builds the URL.
        checks.code_verifier = secrets.token_urlsafe(32)
        checks.cookies.append(
            (
                "pkce_code_verifier",
                _wrap(state, "pkce_code_verifier", checks.code_verifier, provider.id),
            )
        )
    payload: dict[str, object] = {"random": secrets.token_urlsafe(32)}
    if proxy_origin:
        payload["origin"] = proxy_origin
    checks.state = jose.encode(
        token=payload, secret=list(state.config.secret), salt=STATE_SALT, max_age=CHECK_MAX_AGE
    )
    checks.cookies.append(("state", _wrap(state, "state", checks.state, provider.id)))
    if "nonce" in provider.checks:
        checks.nonce = secrets.token_urlsafe(32)
        checks.cookies.append(("nonce", _wrap(state, "nonce", checks.nonce, provider.id)))
    return checks


def read_check(state: AuthState, provider: OAuth2, check: str) -> str:
    """The value a check cookie holds for *provider*; :class:`InvalidCheck` when unusable.

    The error's message names the cookie and the likely causes. The state is
    checked first: when its cookie is unusable, the visitor opened a callback
    URL that does not belong to a sign-in this browser has under way (opened it
    again after signing in or after 15 minutes, replayed or forged it), so the
    error is ``user_caused`` ("sign-in expired" for the visitor, a warning in
    the log). A PKCE or nonce cookie missing beside a good state cookie is not.
    """
    spec = state.cookies[_COOKIE_KEYS[check]]
    user_caused = check == "state"
    causes = _STALE + _CAUSES if user_caused else _CAUSES
    raw = state.request_cookies.get(spec.name)
    if not raw:
        raise InvalidCheck(f"The {spec.name} cookie is missing: {causes}.", user_caused=user_caused)
    payload = jose.decode(token=ck.decode_value(raw), secret=state.config.secret, salt=spec.name)
    if payload is None or not isinstance(payload.get("value"), str) or not payload["value"]:
        raise InvalidCheck(
            f"The {spec.name} cookie could not be read (expired or tampered): {causes}.",
            user_caused=user_caused,
        )
    if payload.get("provider") != provider.id:
        raise InvalidCheck(
            f"The {spec.name} cookie was made for provider {payload.get('provider')!r}, "
            f"not {provider.id!r}: two sign-ins were started in the same browser.",
            user_caused=user_caused,
        )
    return str(payload["value"])


def decode_state(config: Config, value: str) -> dict[str, object] | None:
    """The payload inside a ``state`` parameter, or ``None`` if it is not ours."""
    return jose.decode(token=value, secret=config.secret, salt=STATE_SALT)


def clear_checks(state: AuthState, response: HttpResponseBase) -> None:
    """Delete the check cookies the request carried."""
    for key in _COOKIE_KEYS.values():
        spec = state.cookies[key]
        if spec.name in state.request_cookies:
            ck.delete_cookie(response, spec)
