"""The bearer session's own routes, for apps: ``POST /auth/app/session``,
``/auth/app/signout`` and ``/auth/app/signout-everywhere``.

They exist only with ``WEBAUTH["bearer"]`` on (``404`` otherwise), take ``POST``
only, and read the session from the ``Authorization: Bearer`` header alone: a
session cookie is never accepted in their place, so they need no CSRF token
(see :mod:`webauth.bearer`). They answer JSON and set no cookie.

* ``session``: the session as ``GET /auth/session`` shows it, plus a refreshed
  ``sessionToken`` and its ``expires``. Under ``jwt`` the token is encoded anew
  with a new expiry (never past ``session.absolute_max_age``); under
  ``database`` it is the same token, its stored expiry moved as reading the
  session moves it (once per ``session.update_age``). A body
  ``{"data": ...}`` is an update, as ``POST /auth/session``: the ``jwt`` and
  ``session`` callbacks run with ``trigger="update"``, and it is rate-limited as
  that route is (``session_update``).
* ``signout``: ``database``: the session is deleted, ``{"revoked": true}``;
  ``jwt``: nothing on the server can end a JWT, ``{"revoked": false}``, and the
  app forgets its token.
* ``signout-everywhere``: ``database``: every session of the user is deleted,
  ``{"revoked": true, "sessions": <count>}``; ``jwt``: ``{"revoked": false}``
  (a JWT ends when the user's password changes, the user is deactivated, or at
  ``session.absolute_max_age``).

Errors: ``401 {"error": "SessionRequired"}`` with ``WWW-Authenticate`` without a
usable token, ``400 {"error": "InvalidRequest"}`` for a body beyond Django's
``DATA_UPLOAD_MAX_*`` limits, ``404``/``405 {"error": "UnknownAction"}``,
``429`` past the limit, ``500 {"error": <type>}`` when the server fails (logged).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from django.core.exceptions import (
    RequestDataTooBig,
    TooManyFieldsSent,
    TooManyFilesSent,
)

from .. import ratelimit
from ..bearer import session_required, token_answer
from ..errors import AuthError
from ..events import emit
from ..responses import json_response
from ..tokens.ended import end_request_session, end_user_sessions
from ..utils import own_transactions
from .preamble import Unconfigured, load_config, open_state
from .token import app_access_token

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponse

    from ..state import AuthState

__all__ = ["ROUTES", "app_session_view", "session", "signout", "signout_everywhere"]


def session(state: AuthState) -> HttpResponse:
    """``POST /auth/app/session``: the session and a refreshed token (an update with ``data``)."""
    config = state.config
    try:
        body = state.body
    except (RequestDataTooBig, TooManyFieldsSent, TooManyFilesSent):
        # Django's limits on what it reads (DATA_UPLOAD_MAX_MEMORY_SIZE, ..._NUMBER_FIELDS,
        # ..._NUMBER_FILES): the request's fault, as the app sign-in routes answer it.
        return json_response(
            {"error": "InvalidRequest", "message": "the body is too large or has too many fields"},
            status=400,
            no_cache=True,
        )
    is_update = "data" in body
    if is_update:
        # Counted before the token is read, so that forged updates are limited too.
        decision = ratelimit.hit(state.request, "session_update", config=config)
        if not decision:
            return ratelimit.limited_response(decision)
    raw = state.session_token
    if raw is None:
        return session_required()
    trigger, data = ("update", body.get("data")) if is_update else (None, None)
    result = state.sessions.read(
        config,
        raw,
        state.cookies["session_token"].name,
        trigger=trigger,
        new_session=data,
        known_user=state.loaded_user,
        load_user=False,
    )
    if result.session is None or result.cookie is None or result.valid_until is None:
        return session_required()
    emit(config, "session", request=state.request, **state.sessions.event_fields(result))
    return json_response(
        token_answer(result.session, result.cookie, result.valid_until), no_cache=True
    )


def signout(state: AuthState) -> HttpResponse:
    """``POST /auth/app/signout``: end the token's session where the server can.

    Idempotent: a token that no longer works (expired, revoked) is signed out
    already, and the answer says nothing was revoked. The ``sign_out`` event is
    sent when there was a session to end.
    """
    raw = state.session_token
    if raw is None:
        return session_required()
    config = state.config
    end_request_session(state)  # its access tokens first: the session names them
    ended = state.sessions.end(config, raw, state.cookies["session_token"].name)
    if ended.ended:
        emit(config, "sign_out", request=state.request, **ended.message)
    return json_response({"revoked": ended.revoked}, no_cache=True)


def signout_everywhere(state: AuthState) -> HttpResponse:
    """``POST /auth/app/signout-everywhere``: end every session of the token's user.

    Needs a live session (it says whose sessions end). Under ``database`` this
    one is deleted first (its ``sign_out`` event), then all the others.
    """
    result, token = state.session_result, state.session_token
    if result.session is None or result.user_id is None or token is None:
        return session_required()
    config = state.config
    # Every session's access tokens, this one's too (under jwt the sessions live
    # on, but no token is minted for them again).
    end_user_sessions(config, result.user_id, "signout_everywhere")
    if not state.sessions.stored:  # a JWT cannot be revoked
        return json_response({"revoked": False}, no_cache=True)
    storage = config.storage.require("delete_sessions_by_user_id")
    deleted = storage.delete_session(token)
    count = 1 if deleted is not None else 0
    if deleted is not None:
        emit(config, "sign_out", request=state.request, session=deleted)
    count += storage.delete_sessions_by_user_id(result.user_id, None)
    return json_response({"revoked": True, "sessions": count}, no_cache=True)


#: action (the URL's last segment) -> its handler
ROUTES: dict[str, Callable[[AuthState], HttpResponse]] = {
    "session": session,
    "signout": signout,
    "signout-everywhere": signout_everywhere,
    # An access token for another service (WEBAUTH["tokens"], docs/tokens.md).
    "access-token": app_access_token,
}


def _error(error_type: str, status: int) -> HttpResponse:
    return json_response({"error": error_type}, status=status, no_cache=True)


def app_session_view(request: HttpRequest, action: str) -> HttpResponse:
    """Serve ``POST /auth/app/<action>`` for the actions of :data:`ROUTES`."""
    try:
        config = load_config()
    except Unconfigured:
        return _error("Configuration", 500)
    handler = ROUTES.get(action)
    if not config.bearer or handler is None:
        return _error("UnknownAction", 404)
    if request.method != "POST":
        response = _error("UnknownAction", 405)
        response["Allow"] = "POST"
        return response
    try:
        # The bearer token is the session here; the origin matters to no answer.
        state = open_state(request, config, "request", origin=False)
    except Unconfigured:
        return _error("Configuration", 500)
    if not state.bearer:
        # No header: a cookie never stands in for it here (no CSRF on these routes).
        return session_required()
    try:
        return handler(state)
    except Exception as exc:  # a failing adapter or callback: logged, never the token
        error = exc if isinstance(exc, AuthError) else AuthError(cause={"err": exc})
        config.logger.error(error)
        return _error(error.type, 500)


# Only the Authorization header authenticates here, which no other site can make a
# browser send: Django's CSRF check has nothing to protect (webauth.bearer).
app_session_view.csrf_exempt = True  # type: ignore[attr-defined]
# These routes answer 401 themselves; Django's LoginRequiredMiddleware must not redirect.
app_session_view.login_required = False  # type: ignore[attr-defined]
# Never inside ATOMIC_REQUESTS' transaction: webauth's own are outermost (utils.own_transactions).
own_transactions(app_session_view)
