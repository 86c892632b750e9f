"""Signing out: end the session, delete its cookie, send the ``sign_out`` event.

``POST /auth/signout`` calls :func:`sign_out` after checking the CSRF token;
:func:`webauth.sign_out` calls it directly.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.apps import apps

from ..errors import SignOutError
from ..events import emit
from ..responses import redirect
from ..tokens.ended import end_request_session

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["sign_out"]


def sign_out(state: AuthState, callback_url: str) -> HttpResponse:
    """A redirect to *callback_url* that ends the request's session, if it has one.

    A failure to end a database session is logged and the cookie deleted all
    the same: the browser is signed out either way. Django's own session
    (``django.contrib.sessions``), when the browser has one, is emptied as
    ``django.contrib.auth.logout()`` empties it: what a view kept in
    ``request.session`` for the signed-in person is not left for the next one
    at the same browser.
    """
    raw = state.session_token
    if raw:
        config = state.config
        end_request_session(state)  # its access tokens first: the session names them
        try:
            ended = state.sessions.end(config, raw, state.cookies["session_token"].name)
            emit(config, "sign_out", request=state.request, **ended.message)
        except Exception as exc:  # sign-out goes on: the cookie is deleted below
            config.logger.error(SignOutError(cause={"err": exc}))
    _flush_django_session(state)
    response = redirect(callback_url)
    if state.has_session_cookie:
        # Every cookie of the session, also when they hold no readable session
        # (a gap in the chunks, too many of them): the browser keeps none.
        state.set_session_cookie(response, None)
    return response


def _flush_django_session(state: AuthState) -> None:
    # As logout() does: the data goes and the key with it (a new, empty session
    # if the view stores something after this). Nothing is created for a browser
    # that had no session.
    session = getattr(state.request, "session", None)
    if session is None or not apps.is_installed("django.contrib.sessions"):
        return
    if session.session_key:
        session.flush()
