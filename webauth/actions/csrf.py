"""``GET /auth/csrf``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.http import HttpResponse

from .. import cookies as ck
from ..responses import json_response

if TYPE_CHECKING:
    from ..state import AuthState

__all__ = ["csrf"]


def csrf(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The CSRF token for the client to send back; 404 when CSRF checks are off."""
    if state.config.skip_csrf_check:
        state.config.logger.warn("csrf-disabled")
        response = HttpResponse(status=404)
        ck.delete_cookie(response, state.cookies["csrf_token"])
        return response
    return json_response({"csrfToken": state.csrf.token}, no_cache=True)
