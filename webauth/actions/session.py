"""``GET /auth/session`` and ``POST /auth/session`` (update)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ratelimit
from ..events import emit
from ..responses import json_response

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["session"]


def session(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Return the session as JSON (``null`` without one) and refresh the cookie.

    As Auth.js: the cookie is re-issued with a new expiry on every call, and a
    ``POST`` (an update, CSRF required) passes its ``data`` to the callbacks.
    Updates are rate-limited per address (``session_update``): ``429`` with
    ``Retry-After`` beyond the limit.
    """
    is_update = state.request.method == "POST"
    if is_update:
        # Counted before anything else, so that forged updates are limited too.
        decision = ratelimit.hit(state.request, "session_update", config=state.config)
        if not decision:
            return ratelimit.limited_response(decision)
    if is_update and not state.csrf_verified:
        # Auth.js answers a failed update with 400 and a null body.
        return json_response(None, status=400)
    config = state.config
    raw = state.session_token
    salt = state.cookies["session_token"].name
    trigger, data = ("update", state.body.get("data")) if is_update else (None, None)
    # A JWT's user is checked without being loaded for request.user (the adapter's
    # get_user_session_check), unless this request has loaded it already; a
    # database session comes with its user.
    result = state.sessions.read(
        config,
        raw,
        salt,
        trigger=trigger,
        new_session=data,
        known_user=state.loaded_user,
        load_user=False,
    )
    response = json_response(result.session, no_cache=not is_update)
    state.write_session(response, result)
    if result.session is not None:
        emit(config, "session", request=state.request, **state.sessions.event_fields(result))
    return response
