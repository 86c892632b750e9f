"""``GET /auth/session`` and ``POST /auth/session`` (update)."""

from __future__ import annotations

from django.http import HttpResponse

from ..context import AuthContext
from ..events import emit
from ..responses import json_response
from ..sessions import SessionResult, read_session

__all__ = ["session", "write_session_result"]


def write_session_result(ctx: AuthContext, response: HttpResponse, result: SessionResult) -> None:
    """Apply a :class:`SessionResult`'s cookie changes to *response*."""
    if result.clear:
        ctx.set_session_cookie(response, None)
    elif result.cookie is not None:
        ctx.set_session_cookie(response, result.cookie, result.expires)


def session(ctx: AuthContext) -> HttpResponse:
    """Return the session as JSON (``null`` without one) and refresh the cookie."""
    is_update = ctx.request.method == "POST"
    if is_update and not ctx.csrf.verified:
        # Auth.js answers a failed update with 400 and a null body.
        return json_response(None, status=400)
    config = ctx.config
    if is_update:
        result = read_session(ctx, trigger="update", new_session=ctx.body.get("data"))
    else:
        result = read_session(ctx)
    response = json_response(result.session, no_cache=not is_update)
    write_session_result(ctx, response, result)
    if result.session is not None:
        message = {"session": result.session, "request": ctx.request}
        if config.session.strategy == "jwt":
            message["token"] = result.token
        emit(config, "session", **message)
    return response
