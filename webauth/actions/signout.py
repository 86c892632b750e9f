"""``GET /auth/signout`` (the confirmation page) and ``POST /auth/signout``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..clients import reads_json
from ..errors import AuthError, InvalidCallbackUrl, MissingCSRF
from ..flows.signout import sign_out
from ..pages import render_signout_page
from ..responses import redirect

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["signout", "signout_page"]


def signout_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The confirmation page, or a redirect to ``pages.sign_out``."""
    if state.config.pages.sign_out:
        return redirect(state.page_url("signout", raw=True))
    return render_signout_page(state)


def signout(state: AuthState, provider_id: str | None) -> HttpResponse:
    """End the session, delete its cookies and redirect to the callback URL.

    The session ends whatever the callback URL: an unusable one is already the
    origin (``AuthState.callback_url``), and a ``redirect`` callback that fails
    sends the user to the origin too, signed out.

    Without a valid CSRF token nothing is done. A browser is sent back to the
    sign-out page with ``error=MissingCSRF`` ("Your sign-out form expired"),
    where a new form has the current token; Auth.js sends it to the sign-in page,
    which says the *sign-in* form expired to a visitor still signed in. A JSON
    client (``X-Auth-Return-Redirect``, ``Accept: application/json``) gets
    Auth.js's answer, the sign-in page's URL with ``error=MissingCSRF``.
    """
    if not state.csrf_verified:
        error = MissingCSRF("CSRF token was missing during an action signout")
        if reads_json(state.request):
            raise error
        state.config.logger.error(error)
        return redirect(state.page_url("signout", {"error": "MissingCSRF"}))
    try:
        callback_url = state.callback_url
    except Exception as exc:  # the project's redirect callback: log it, sign out all the same
        state.config.logger.error(
            exc if isinstance(exc, AuthError) else InvalidCallbackUrl(cause={"err": exc})
        )
        callback_url = state.origin
    return sign_out(state, callback_url)
