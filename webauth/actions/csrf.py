"""``GET /auth/csrf``."""

from __future__ import annotations

from django.http import HttpResponse

from .. import cookies as ck
from ..context import AuthContext
from ..responses import json_response

__all__ = ["csrf"]


def csrf(ctx: AuthContext) -> HttpResponse:
    """The CSRF token for the client to send back; 404 when CSRF checks are off."""
    if ctx.config.skip_csrf_check:
        ctx.config.logger.warn("csrf-disabled")
        response = HttpResponse(status=404)
        ck.delete_cookie(response, ctx.cookies["csrf_token"])
        return response
    return json_response({"csrfToken": ctx.csrf.token}, no_cache=True)
