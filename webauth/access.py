"""What a request that needs a session gets when it has none.

``@auth_required``, ``AuthRequiredMixin`` and ``protected_paths`` all answer the
same way: ``401 {"error": "SessionRequired"}`` to a client that asked for JSON
or sent a bearer token, else a redirect to the sign-in page with ``callbackUrl``
set to the page that was asked for and ``error=SessionRequired``, so that the
page says why ("Please sign in to access this page.", as Auth.js v4 did).
"""

from __future__ import annotations

from typing import Any
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect, JsonResponse

from .bearer import is_bearer_request
from .bearer import session_required as bearer_session_required
from .clients import prefers_json as wants_json
from .conf import get_config
from .responses import private_no_store

__all__ = ["has_user", "session_required_response", "signin_url", "wants_json"]


def has_user(session: Any) -> bool:
    """The spec's rule: no session, or a session without a user, is not signed in."""
    return isinstance(session, dict) and session.get("user") is not None


def signin_url(
    request: HttpRequest, *, callback_url: str | None = None, error: str | None = None
) -> str:
    """URL of the sign-in page (``pages.sign_in`` if set) with ``callbackUrl``."""
    config = get_config()
    page = config.pages.sign_in or f"{config.base_path}/signin"
    params = {}
    if callback_url is not None:
        params["callbackUrl"] = callback_url
    if error is not None:
        params["error"] = error
    if not params:
        return page
    return page + ("&" if "?" in page else "?") + urlencode(params)


def session_required_response(
    request: HttpRequest, redirect_to: str | None = None
) -> HttpResponseBase:
    """The answer to a request that needs a session and has none.

    ``401 {"error": "SessionRequired"}`` for a client that asked for JSON (with
    ``WWW-Authenticate: Bearer`` for a bearer request, whatever it asked for),
    else a redirect to *redirect_to* or to the sign-in page with ``callbackUrl``
    set to the page that was asked for and ``error=SessionRequired`` (the page's
    "Please sign in to access this page."); ``Cache-Control: private, no-store``
    either way.
    """
    response: HttpResponseBase
    if is_bearer_request(request):
        # An app or API client: its token is missing, expired or revoked.
        return private_no_store(bearer_session_required())
    if wants_json(request):
        response = JsonResponse({"error": "SessionRequired"}, status=401)
    elif redirect_to is not None:
        response = HttpResponseRedirect(redirect_to)
    else:
        url = signin_url(request, callback_url=request.get_full_path(), error="SessionRequired")
        response = HttpResponseRedirect(url)
    # Never kept by a cache: served again after signing in, it would loop.
    return private_no_store(response)
