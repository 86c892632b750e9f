"""django-ninja: webauth sessions as a Ninja auth class.

::

    from ninja import NinjaAPI
    from webauth.contrib.ninja import WebAuth

    api = NinjaAPI(auth=WebAuth())

    @api.get("/me")
    def me(request):
        # request.auth: the AUTH_USER_MODEL user; request.auth_session: the session
        return {"email": request.auth.email}

A request is signed in by the webauth session it carries:

* a **bearer request** (``WEBAUTH["bearer"]`` on and an ``Authorization: Bearer``
  header) by its token alone, without a CSRF check, its cookies ignored; a token
  that does not work is no session (never a fall back to a cookie);
* any other request by its session cookie, with Django's CSRF check for unsafe
  methods (``403 "CSRF check Failed"`` without Django's CSRF token), as Ninja's
  own cookie auth classes do; ``csrf=False`` turns the check off (only for
  routes no browser can be made to call), and ``csrf_exempt`` operations skip it.

Without a session Ninja answers ``401``. The OpenAPI description shows the auth
as an HTTP bearer scheme.
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from ninja.errors import HttpError
from ninja.security.base import AuthBase
from ninja.utils import check_csrf

from ..access import has_user
from ..api_keys import authenticate
from ..errors import RateLimited
from ..mfa.access import has_mfa
from ..state import get_state

__all__ = ["ApiKey", "WebAuth"]


class WebAuth(AuthBase):
    """Ninja auth: the webauth session's ``AUTH_USER_MODEL`` user, or ``None``."""

    openapi_type: str = "http"
    openapi_scheme: str = "bearer"

    def __init__(
        self, *, csrf: bool = True, mfa: bool = False, mfa_max_age: int | None = None
    ) -> None:
        self.csrf = csrf
        #: Only sessions that proved two factors (``@mfa_required``'s twin):
        #: others are ``403``; *mfa_max_age* for step-up.
        self.mfa = mfa
        self.mfa_max_age = mfa_max_age
        super().__init__()

    def __call__(self, request: HttpRequest) -> Any:
        """The signed-in user (becomes ``request.auth``), or ``None`` (then ``401``)."""
        state = get_state(request)
        if not state.has_session_cookie:
            return None
        session = state.session
        user = state.session_user if has_user(session) else None
        if user is not None and self.mfa and not has_mfa(request, self.mfa_max_age):
            raise HttpError(403, "A second factor is required")
        if user is None or state.bearer:
            return user
        # A cookie session: the browser sends it with requests other sites make it
        # send too, so an unsafe method needs Django's CSRF token.
        if (
            self.csrf
            and not getattr(request, "_ninja_csrf_exempt", False)
            and check_csrf(request) is not None
        ):
            raise HttpError(403, "CSRF check Failed")
        return user


class ApiKey(AuthBase):
    """Ninja auth by API key (``WEBAUTH["api_keys"]``, docs/api-keys.md).

    ``api = NinjaAPI(auth=ApiKey())`` or ``auth=ApiKey(scopes=["orders:read"])``
    per operation: ``request.auth`` is the key's user (for the key of a
    project-defined owner, that owner) and ``request.api_key`` the
    :class:`webauth.api_keys.KeyMatch`. Without a key that holds Ninja answers
    ``401``; a key without one of *scopes* is ``403``, past its limit ``429``.
    No CSRF check and no session: the header is the proof.
    """

    openapi_type: str = "http"
    openapi_scheme: str = "bearer"

    def __init__(self, *, scopes: tuple[str, ...] | list[str] = ()) -> None:
        self.scopes = frozenset(scopes)
        super().__init__()

    def __call__(self, request: HttpRequest) -> Any:
        """The key's user or owner (becomes ``request.auth``), or ``None`` (then ``401``)."""
        try:
            match = authenticate(request)
        except RateLimited:
            raise HttpError(429, "Too many requests with this API key") from None
        if match is None:
            return None
        if not self.scopes <= match.scopes:
            raise HttpError(403, "This API key lacks a scope this operation needs")
        request.api_key = match  # type: ignore[attr-defined]
        return match.owner
