"""``GET /auth/error`` and ``GET /auth/verify-request``."""

from __future__ import annotations

from urllib.parse import quote

from django.http import HttpResponse

from ..context import AuthContext
from ..pages import render_error_page, render_verify_request_page
from ..responses import redirect

__all__ = ["error_page", "verify_request_page"]


def error_page(ctx: AuthContext) -> HttpResponse:
    """The error page (status by type), or a redirect to ``pages.error``."""
    error = ctx.query.get("error")
    if ctx.config.pages.error:
        url = ctx.page_url("error", raw=True)
        if error is not None:
            url += ("&" if "?" in url else "?") + "error=" + quote(error, safe="")
        return redirect(url)
    return render_error_page(ctx, error, config=ctx.config)


def verify_request_page(ctx: AuthContext) -> HttpResponse:
    """The "check your email" page, or a redirect to ``pages.verify_request``."""
    if ctx.config.pages.verify_request:
        url = ctx.page_url("verify-request", raw=True)
        query = ctx.request.META.get("QUERY_STRING", "")
        if query:
            url += ("&" if "?" in url else "?") + query
        return redirect(url)
    return render_verify_request_page(ctx)
