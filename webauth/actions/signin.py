"""``GET /auth/signin`` (the page) and ``POST /auth/signin/<provider>``."""

from __future__ import annotations

from django.http import HttpResponse

from ..context import AuthContext
from ..errors import InvalidProvider, MissingCSRF
from ..pages import render_signin_page
from ..responses import redirect

__all__ = ["signin", "signin_page"]


def signin_page(ctx: AuthContext) -> HttpResponse:
    """The built-in sign-in page, or a redirect to ``pages.sign_in``."""
    if ctx.config.pages.sign_in:
        params = {"callbackUrl": ctx.callback_url}
        if "error" in ctx.query:
            params["error"] = ctx.query["error"]
        return redirect(ctx.page_url("signin", params, raw=True))
    return render_signin_page(ctx)


def signin(ctx: AuthContext) -> HttpResponse:
    """Start a sign-in with a provider (CSRF required)."""
    if not ctx.csrf.verified:
        raise MissingCSRF("CSRF token was missing during an action signin")
    provider = ctx.provider
    if ctx.provider_id is not None and provider is None:
        raise InvalidProvider(f"Unknown provider {ctx.provider_id[:100]!r}")
    start = getattr(provider, "start_sign_in", None)
    if provider is None or start is None:
        # Credentials and WebAuthn sign in through their own forms and the callback route.
        return redirect(f"{ctx.base_url}/signin")
    return start(ctx)
