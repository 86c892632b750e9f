"""PKCE, state and nonce, each kept in its own short-lived encrypted cookie.

As in Auth.js, a check cookie holds a JWE (salt: the cookie's name, 15 minutes)
of ``{"value": <secret>, "provider": <provider id>}``, so a value made for one
provider cannot be replayed against another. The ``state`` parameter itself is
a JWE (salt ``encodedState``) of ``{"random": ..., "origin"?: ...}``; ``origin``
is set in redirect-proxy mode so the proxy knows where to forward the callback.
"""

from __future__ import annotations

import secrets
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from authlib.oauth2.rfc7636 import create_s256_code_challenge

from .. import cookies as ck
from .. import jwt as jose
from ..errors import InvalidCheck

if TYPE_CHECKING:
    from django.http import HttpResponseBase

    from ..context import AuthContext
    from ..providers.oauth import OAuth2

__all__ = ["CHECK_MAX_AGE", "Checks", "decode_state", "new_checks", "read_check"]

CHECK_MAX_AGE = 900
STATE_SALT = "encodedState"
_COOKIE_KEYS = {"pkce": "pkce_code_verifier", "state": "state", "nonce": "nonce"}
_CAUSES = (
    "the cookie was blocked or dropped by the browser or a proxy, the sign-in "
    "started on another host or scheme than the callback (check AUTH_URL, "
    "ALLOWED_HOSTS and SECURE_PROXY_SSL_HEADER), or more than 15 minutes passed"
)


@dataclass
class Checks:
    """The check values of one authorization request and the cookies that keep them."""

    params: dict[str, str] = field(default_factory=dict)
    cookies: list[tuple[str, str]] = field(default_factory=list)
    code_verifier: str | None = None
    nonce: str | None = None
    state: str | None = None

    def write(self, ctx: AuthContext, response: HttpResponseBase, provider: OAuth2) -> None:
        """Set the check cookies on *response*."""
        form_post = provider.response_mode == "form_post"
        expires = datetime.now(UTC) + timedelta(seconds=CHECK_MAX_AGE)
        for key, value in self.cookies:
            spec = ctx.cookies[key]
            if form_post and key in ("state", "nonce"):
                # The provider POSTs the callback cross-site: only SameSite=None cookies come along.
                from dataclasses import replace

                spec = replace(spec, same_site="None", secure=True)
            ck.set_cookie(response, spec, value, expires=expires)


def _wrap(ctx: AuthContext, key: str, value: str, provider_id: str) -> str:
    spec = ctx.cookies[key]
    return jose.encode(
        token={"value": value, "provider": provider_id},
        secret=list(ctx.config.secret),
        salt=spec.name,
        max_age=CHECK_MAX_AGE,
    )


def new_checks(ctx: AuthContext, provider: OAuth2, *, proxy_origin: str | None = None) -> Checks:
    """Fresh check values for an authorization request to *provider*.

    ``state`` is always used (Auth.js uses it only when listed or behind a
    redirect proxy): it costs nothing and binds the callback to this browser.
    """
    checks = Checks()
    if "pkce" in provider.checks:
        checks.code_verifier = secrets.token_urlsafe(32)
        checks.params["code_challenge"] = create_s256_code_challenge(checks.code_verifier)
        checks.params["code_challenge_method"] = "S256"
        checks.cookies.append(
            (
                "pkce_code_verifier",
                _wrap(ctx, "pkce_code_verifier", checks.code_verifier, provider.id),
            )
        )
    payload: dict[str, Any] = {"random": secrets.token_urlsafe(32)}
    if proxy_origin:
        payload["origin"] = proxy_origin
    checks.state = jose.encode(
        token=payload, secret=list(ctx.config.secret), salt=STATE_SALT, max_age=CHECK_MAX_AGE
    )
    checks.params["state"] = checks.state
    checks.cookies.append(("state", _wrap(ctx, "state", checks.state, provider.id)))
    if "nonce" in provider.checks:
        checks.nonce = secrets.token_urlsafe(32)
        checks.params["nonce"] = checks.nonce
        checks.cookies.append(("nonce", _wrap(ctx, "nonce", checks.nonce, provider.id)))
    return checks


def read_check(ctx: AuthContext, provider: OAuth2, check: str) -> str:
    """The value a check cookie holds for *provider*; :class:`InvalidCheck` when unusable.

    The error's message names the cookie and the likely causes.
    """
    spec = ctx.cookies[_COOKIE_KEYS[check]]
    raw = ctx.request.COOKIES.get(spec.name)
    if not raw:
        raise InvalidCheck(f"The {spec.name} cookie is missing: {_CAUSES}.")
    payload = jose.decode(token=ck.decode_value(raw), secret=ctx.config.secret, salt=spec.name)
    if payload is None or not isinstance(payload.get("value"), str) or not payload["value"]:
        raise InvalidCheck(
            f"The {spec.name} cookie could not be read (expired or tampered): {_CAUSES}."
        )
    if payload.get("provider") != provider.id:
        raise InvalidCheck(
            f"The {spec.name} cookie was made for provider {payload.get('provider')!r}, "
            f"not {provider.id!r}: two sign-ins were started in the same browser."
        )
    return str(payload["value"])


def decode_state(ctx: AuthContext, state: str) -> dict[str, Any] | None:
    """The payload inside a ``state`` parameter, or ``None`` if it is not ours."""
    return jose.decode(token=state, secret=ctx.config.secret, salt=STATE_SALT)


def clear_checks(ctx: AuthContext, response: HttpResponseBase) -> None:
    """Delete the check cookies the request carried."""
    for key in _COOKIE_KEYS.values():
        spec = ctx.cookies[key]
        if spec.name in ctx.request.COOKIES:
            ck.delete_cookie(response, spec)
