"""Django REST framework: webauth sessions as DRF authentication.

::

    REST_FRAMEWORK = {
        "DEFAULT_AUTHENTICATION_CLASSES": [
            "webauth.contrib.rest_framework.WebAuthAuthentication",
        ],
        "DEFAULT_PERMISSION_CLASSES": [
            "webauth.contrib.rest_framework.IsSignedIn",
        ],
    }

or per view::

    from rest_framework.views import APIView
    from webauth.contrib.rest_framework import IsSignedIn, WebAuthAuthentication

    class Profile(APIView):
        authentication_classes = [WebAuthAuthentication]
        permission_classes = [IsSignedIn]

        def get(self, request):
            # request.user: the AUTH_USER_MODEL user; request.auth: the session dict
            return Response({"email": request.user.email, "session": request.auth})

A request is authenticated by the webauth session it carries:

* a **bearer request** (``WEBAUTH["bearer"]`` on and an ``Authorization: Bearer``
  header) by its token alone: no CSRF check (no other site can make a browser
  send that header), its cookies ignored; a token that is malformed, expired or
  revoked is ``401`` (``WWW-Authenticate: Bearer error="invalid_token"``), never
  a fall back to a cookie;
* any other request by its session cookie, with Django's CSRF check for it
  exactly as DRF's ``SessionAuthentication`` makes it (``403 CSRF Failed`` for
  an unsafe method without Django's CSRF token, the ``csrftoken`` cookie and the
  ``X-CSRFToken`` header); without a session, the next authentication class
  is tried.

Not signed in: ``401`` with ``WWW-Authenticate: Bearer`` when ``bearer`` is on,
else ``403`` as with ``SessionAuthentication`` (a cookie is no HTTP
authentication scheme).
"""

from __future__ import annotations

from typing import Any

from django.http import HttpRequest
from django.utils.translation import gettext_lazy as _
from rest_framework import exceptions
from rest_framework.authentication import BaseAuthentication, CSRFCheck
from rest_framework.permissions import BasePermission

from ..access import has_user
from ..api_keys import KeyMatch, authenticate, key_from_request
from ..conf import get_config
from ..errors import RateLimited
from ..mfa.access import has_mfa
from ..state import get_state

__all__ = [
    "ApiKeyAuthentication",
    "HasApiKeyScopes",
    "HasSecondFactor",
    "HasSession",
    "IsSignedIn",
    "WebAuthAuthentication",
]


def _django_request(request: Any) -> HttpRequest:
    # DRF's Request wraps Django's; webauth's per-request state lives on Django's.
    inner = getattr(request, "_request", request)
    return inner if isinstance(inner, HttpRequest) else request


class WebAuthAuthentication(BaseAuthentication):
    """Authenticate with the webauth session: ``(user, session)``, or ``None``.

    ``request.user`` is the ``AUTH_USER_MODEL`` user of the session and
    ``request.auth`` the session as ``GET /auth/session`` shows it.
    """

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        """The session's user and the session; raises for a bearer token that does not work."""
        state = get_state(_django_request(request))
        if state.bearer:
            session = state.session
            user = state.session_user if has_user(session) else None
            if user is None:
                raise exceptions.AuthenticationFailed(_("Invalid or expired session token."))
            return user, session
        if not state.has_session_cookie:
            return None  # nothing of webauth's here: the next class may know the request
        session = state.session
        user = state.session_user if has_user(session) else None
        if user is None:
            return None
        # The cookie rides along with any request a browser sends, also one that
        # another site made it send: an unsafe method needs Django's CSRF token.
        self.enforce_csrf(request)
        return user, session

    def enforce_csrf(self, request: Any) -> None:
        """Django's CSRF check for a cookie session, as DRF's ``SessionAuthentication`` runs it."""
        check = CSRFCheck(lambda _request: None)
        check.process_request(request)  # reads the csrftoken cookie into META
        reason = check.process_view(request, None, (), {})
        if reason:
            raise exceptions.PermissionDenied(f"CSRF Failed: {reason}")

    def authenticate_header(self, request: Any) -> str | None:
        """``Bearer`` (so that DRF answers ``401``) when bearer sessions are on, else ``None``.

        With ``error="invalid_token"`` for a bearer request whose token did not work.
        """
        if not get_config().bearer:
            return None
        if get_state(_django_request(request)).bearer:
            return 'Bearer error="invalid_token"'
        return "Bearer"


class IsSignedIn(BasePermission):
    """Allow only requests that :class:`WebAuthAuthentication` signed in.

    Checked through the authentication, not the session alone: a cookie
    session counts only once its CSRF check has passed.
    """

    def has_permission(self, request: Any, view: Any) -> bool:
        """Whether the request's authenticator is webauth's and found a signed-in session."""
        return isinstance(request.successful_authenticator, WebAuthAuthentication) and has_user(
            request.auth
        )


#: Another name for :class:`IsSignedIn`.
HasSession = IsSignedIn


class HasSecondFactor(IsSignedIn):
    """:class:`IsSignedIn`, and the session proved two factors (``@mfa_required``'s twin).

    Set ``max_age`` on a subclass for step-up: two factors at most that many
    seconds ago. A refused request is ``403``; a client signs in again with its
    second factor for a session that has them (docs/mfa.md).
    """

    max_age: int | None = None
    message = "This needs a session that proved a second factor."

    def has_permission(self, request: Any, view: Any) -> bool:
        """Whether the session is signed in and proved two factors, recently enough."""
        return super().has_permission(request, view) and has_mfa(
            _django_request(request), self.max_age
        )


class ApiKeyAuthentication(BaseAuthentication):
    """Authenticate with an API key (``WEBAUTH["api_keys"]``, docs/api-keys.md).

    ``Authorization: Bearer <key>`` or ``X-API-Key: <key>``: ``(user, match)``,
    ``request.auth`` a :class:`webauth.api_keys.KeyMatch` (its ``record``,
    ``scopes`` and ``owner``). The key of a project-defined owner acts as no
    user: ``request.user`` is ``AnonymousUser`` (so ``IsAuthenticated`` refuses
    it; ``HasApiKeyScopes`` lets it in) and ``request.auth.owner`` the owner.
    A header that is no key of this site (a session token, another scheme) is
    left to the next class; a key that does not hold (wrong, revoked, expired,
    its user inactive, its owner gone) is ``401``. No CSRF check: a browser never adds
    the header by itself. Nothing is kept: no session, no cookie.
    """

    def authenticate(self, request: Any) -> tuple[Any, Any] | None:
        """The key's user and the key, ``None`` without one, ``401`` for one that fails."""
        django_request = _django_request(request)
        config = get_config()
        key = key_from_request(django_request)
        if key is None or config.api_keys is None:
            return None
        if not key.startswith(f"{config.api_keys.prefix}_"):
            return None  # a session token or another scheme's: not ours to judge
        try:
            match = authenticate(django_request, key, config=config)
        except RateLimited as exc:
            raise exceptions.Throttled(wait=exc.retry_after) from None
        if match is None:
            raise exceptions.AuthenticationFailed(_("Invalid, expired or revoked API key."))
        if match.user is None:  # an owner's key acts as no user
            from django.contrib.auth.models import AnonymousUser  # needs the app registry

            return AnonymousUser(), match
        return match.user, match

    def authenticate_header(self, request: Any) -> str:
        """``Bearer``, so that DRF answers ``401``."""
        return 'Bearer realm="api"'


class HasApiKeyScopes(BasePermission):
    """Allow requests authenticated by an API key that carries the view's ``required_scopes``.

    ``required_scopes = ["orders:read"]`` on the view; a key without one of them
    is ``403``. Requests authenticated otherwise (a session) are refused too:
    combine with ``IsSignedIn`` by ``|`` to let both in.
    """

    message = "This API key lacks a scope this endpoint needs."

    def has_permission(self, request: Any, view: Any) -> bool:
        """Whether the request's API key carries every scope the view requires."""
        match = request.auth
        if not isinstance(match, KeyMatch):
            return False
        return set(getattr(view, "required_scopes", ())) <= match.scopes
