"""``GET /auth/signout`` (the confirmation page) and ``POST /auth/signout``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import MissingCSRF
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
    """End the session, delete its cookies and redirect to the callback URL."""
    if not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action signout")
    return sign_out(state, state.callback_url)
