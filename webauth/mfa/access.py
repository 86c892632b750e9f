"""What a session proved, and requiring two factors of it (``@mfa_required``).

:func:`assurance` reads how the request's session signed in (the JWT's
``amr`` and ``webauth_mfa_time`` claims, the database session's columns);
:func:`has_mfa` says whether two factors were proven, recently enough;
:func:`require_mfa` answers a request that needs them and lacks them:

- no session: what ``@auth_required`` answers;
- a user with a second factor: the re-authentication page (``?mfa=1``: it
  asks for a new sign-in even of a fresh session), whose sign-in asks for the
  code, then back here; a client that reads JSON gets ``401 {"error":
  "SecondFactorRequired", "url"}``, a bearer request ``401`` with
  ``WWW-Authenticate: Bearer error="insufficient_user_authentication"``
  (RFC 9470);
- a user without one: the account center's Security section to add one (or
  ``403`` when it is not routed).
"""

from __future__ import annotations

import time

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect, JsonResponse
from django.urls import NoReverseMatch, reverse

from ..access import has_user, session_required_response, wants_json
from ..reauth import reauth_url, step_up_challenge
from ..sessions import Assurance
from ..sessions import assurance as session_assurance
from ..state import get_state
from ..utils import user_id
from .factors import confirmed_factors

__all__ = ["ahas_mfa", "arequire_mfa", "assurance", "has_mfa", "require_mfa"]

#: The account center's Security section (``webauth.account.urls``).
SECURITY_PAGE = "webauth_account:security"


def assurance(request: HttpRequest) -> Assurance:
    """How the request's session signed in; nothing without a session."""
    state = get_state(request)
    if not has_user(state.session):
        return Assurance()
    return session_assurance(state.config, state.session_token, state.cookies["session_token"].name)


def has_mfa(request: HttpRequest, max_age: int | None = None) -> bool:
    """Whether the session proved two factors, at most *max_age* seconds ago when given."""
    at = assurance(request).mfa_at
    if at is None:
        return False
    return max_age is None or time.time() - at <= max_age


def require_mfa(
    request: HttpRequest, *, max_age: int | None = None, next_url: str | None = None
) -> HttpResponseBase | None:
    """``None`` when :func:`has_mfa`; otherwise the answer that asks for two factors."""
    state = get_state(request)
    if not has_user(state.session):
        return session_required_response(request)
    if has_mfa(request, max_age):
        return None
    if state.bearer:
        return step_up_challenge("SecondFactorRequired")
    if confirmed_factors(state.config, user_id(request.user)):
        url = reauth_url(request, next_url, mfa=True)
    else:
        try:
            url = reverse(SECURITY_PAGE)
        except NoReverseMatch:
            return JsonResponse({"error": "SecondFactorRequired"}, status=403)
    if wants_json(request):
        return JsonResponse({"error": "SecondFactorRequired", "url": url}, status=401)
    return HttpResponseRedirect(url)


async def ahas_mfa(request: HttpRequest, max_age: int | None = None) -> bool:
    """Async :func:`has_mfa`."""
    return await sync_to_async(has_mfa)(request, max_age)


async def arequire_mfa(
    request: HttpRequest, *, max_age: int | None = None, next_url: str | None = None
) -> HttpResponseBase | None:
    """Async :func:`require_mfa`."""
    return await sync_to_async(require_mfa)(request, max_age=max_age, next_url=next_url)
