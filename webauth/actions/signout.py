"""``GET /auth/signout`` (the confirmation page) and ``POST /auth/signout``."""

from __future__ import annotations

from django.http import HttpResponse

from ..context import AuthContext
from ..errors import MissingCSRF, SignOutError
from ..events import emit
from ..pages import render_signout_page
from ..responses import redirect
from ..sessions import end_session

__all__ = ["signout", "signout_page"]


def signout_page(ctx: AuthContext) -> HttpResponse:
    """The confirmation page, or a redirect to ``pages.sign_out``."""
    if ctx.config.pages.sign_out:
        return redirect(ctx.page_url("signout", raw=True))
    return render_signout_page(ctx)


def signout(ctx: AuthContext) -> HttpResponse:
    """End the session, delete its cookies and redirect to the callback URL."""
    if not ctx.csrf.verified:
        raise MissingCSRF("CSRF token was missing during an action signout")
    response = redirect(ctx.callback_url)
    if ctx.session_cookie_value:
        try:
            message = end_session(ctx)
            emit(ctx.config, "sign_out", request=ctx.request, **message)
        except Exception as exc:  # sign-out goes on: the cookie is deleted below
            ctx.config.logger.error(SignOutError(cause={"err": exc}))
        ctx.set_session_cookie(response, None)
    return response
