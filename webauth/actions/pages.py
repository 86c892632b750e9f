"""``GET /auth/error`` and ``GET /auth/verify-request``."""

from __future__ import annotations

from typing import TYPE_CHECKING
from urllib.parse import quote

from ..pages import render_error_page, render_verify_request_page
from ..responses import redirect

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["error_page", "verify_request_page"]


def error_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The error page (status by type), or a redirect to ``pages.error``."""
    error = state.query.get("error")
    if state.config.pages.error:
        url = state.page_url("error", raw=True)
        if error is not None:
            url += ("&" if "?" in url else "?") + "error=" + quote(error, safe="")
        return redirect(url)
    return render_error_page(state, error, config=state.config)


def verify_request_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The "check your email" page, or a redirect to ``pages.verify_request``."""
    if state.config.pages.verify_request:
        url = state.page_url("verify-request", raw=True)
        query = state.request.META.get("QUERY_STRING", "")
        if query:
            url += ("&" if "?" in url else "?") + query
        return redirect(url)
    return render_verify_request_page(state)
