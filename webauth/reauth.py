"""Re-authentication: has the session signed in recently enough for a sensitive change?

A session that has been open for days may be used by someone other than the
person who signed in (a shared computer, a stolen cookie). Before a change that
would lock the owner out or let someone in for good (disconnecting a provider,
removing a passkey, signing out everywhere, changing the email address), the
person proves who they are again: they sign in again, by any way they have,
and come back.

A session is *fresh* while its sign-in is at most ``WEBAUTH["reauth_max_age"]``
seconds old (300 by default). The sign-in time is the one the session records
(:func:`webauth.sessions.signed_in_at`): the JWT's ``webauth_auth_time`` claim,
or the database session's ``created_at``. Signing in again makes a new
session with a new time; linking a new account or passkey while signed in does
not (see :mod:`webauth.flows.signin`).

Most views use the decorator or the mixin in :mod:`webauth.decorators`
(``@reauth_required``, ``ReauthRequiredMixin``). :func:`require_fresh` is the
same check for a view that protects only some of what it does (its ``POST``,
say)::

    from webauth.reauth import require_fresh

    def settings_page(request):
        if request.method == "POST":
            refused = require_fresh(request)
            if refused is not None:
                return refused  # to the re-authentication page, and back here
            ...

The re-authentication page is the account center's
(``webauth_account:reauthenticate``, :mod:`webauth.account`) when the project
routes it; otherwise the sign-in page, which signs the user in again just as
well. Each function has an ``a``-prefixed twin for async views.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect, JsonResponse
from django.urls import NoReverseMatch, reverse
from django.utils.http import url_has_allowed_host_and_scheme

from .access import has_user, session_required_response, signin_url, wants_json
from .responses import json_response
from .sessions import signed_in_at as session_signed_in_at
from .state import get_state

__all__ = [
    "REAUTH_PAGE",
    "ais_fresh",
    "arequire_fresh",
    "asigned_in_at",
    "is_fresh",
    "reauth_url",
    "require_fresh",
    "safe_next",
    "signed_in_at",
    "step_up_challenge",
]

#: The URL name of the account center's re-authentication page.
REAUTH_PAGE = "webauth_account:reauthenticate"

#: How far in the future a recorded sign-in may lie (clocks of several servers
#: disagree a little) and still count; anything later is not believed.
_CLOCK_SKEW = 60


def signed_in_at(request: HttpRequest) -> datetime | None:
    """When the request's session signed in; ``None`` without a (usable) session or time."""
    state = get_state(request)
    if not has_user(state.session):
        return None
    ts = session_signed_in_at(
        state.config, state.session_token, state.cookies["session_token"].name
    )
    return datetime.fromtimestamp(ts, UTC) if ts is not None else None


def is_fresh(request: HttpRequest, max_age: int | None = None) -> bool:
    """Whether the session signed in at most *max_age* seconds ago (``reauth_max_age``).

    ``False`` without a session, and for a session that does not record when it
    signed in (a token an Auth.js app made): such a session proves itself
    again once, and then records it.
    """
    at = signed_in_at(request)
    if at is None:
        return False
    limit = get_state(request).config.reauth_max_age if max_age is None else max_age
    age = (datetime.now(UTC) - at).total_seconds()
    return -_CLOCK_SKEW <= age <= limit


def safe_next(request: HttpRequest, url: Any, default: str) -> str:
    """*url* if it is a page of this site (a path, or an absolute URL of this host), else *default*.

    For the ``next`` parameters of the account center and the re-authentication
    page: they only ever send the browser back into this site.
    """
    if (
        isinstance(url, str)
        and len(url) <= 2048
        # A path or an absolute URL: "../x" would be read against the current page.
        and url.startswith(("/", "http://", "https://"))
        and url_has_allowed_host_and_scheme(
            url, allowed_hosts={request.get_host()}, require_https=request.is_secure()
        )
    ):
        return url
    return default


def reauth_url(request: HttpRequest, next_url: str | None = None, *, mfa: bool = False) -> str:
    """Where the user proves who they are again, then returns to *next_url* (this page).

    The account center's page when it is routed, else the sign-in page. With
    *mfa* the page asks for a new sign-in even of a fresh session (one that
    did not prove two factors: :mod:`webauth.mfa.access`).
    """
    target = safe_next(request, next_url, "") or request.get_full_path()
    try:
        page = reverse(REAUTH_PAGE)
    except NoReverseMatch:
        return signin_url(request, callback_url=target)
    query = {"next": target, **({"mfa": "1"} if mfa else {})}
    return f"{page}?{urlencode(query)}"


def step_up_challenge(error: str, max_age: int | None = None) -> HttpResponseBase:
    """A bearer request's answer when its token proves too little (RFC 9470).

    ``401 {"error": error}`` with ``WWW-Authenticate: Bearer
    error="insufficient_user_authentication"`` (and ``max_age`` when the
    sign-in must be that recent): the app signs in again for a new token.
    """
    challenge = 'Bearer error="insufficient_user_authentication"'
    if max_age is not None:
        challenge += f', max_age="{max_age}"'
    response = json_response({"error": error}, status=401, no_cache=True)
    response["WWW-Authenticate"] = challenge
    return response


def require_fresh(
    request: HttpRequest,
    *,
    max_age: int | None = None,
    redirect_to: str | None = None,
    next_url: str | None = None,
) -> HttpResponseBase | None:
    """``None`` when the session is fresh, else the answer that asks to prove it again.

    No session: what ``auth_required`` answers (the sign-in page, or ``401``
    JSON). A stale one: a redirect to *redirect_to*, or to :func:`reauth_url`
    with *next_url* (default: this page) to come back to; a client that asked
    for JSON gets ``401 {"error": "ReauthenticationRequired", "url": ...}``,
    and a bearer request (:mod:`webauth.bearer`) ``401
    {"error": "ReauthenticationRequired"}`` with ``WWW-Authenticate: Bearer
    error="insufficient_user_authentication", max_age="<seconds>"`` (RFC 9470):
    the app signs in again for a new token.
    """
    state = get_state(request)
    if not has_user(state.session):
        return session_required_response(request)
    if is_fresh(request, max_age):
        return None
    if state.bearer:
        # An app signs in again through its own routes, for a new token: RFC 9470's
        # step-up challenge says so, and how recent the sign-in must be.
        limit = state.config.reauth_max_age if max_age is None else max_age
        return step_up_challenge("ReauthenticationRequired", limit)
    url = redirect_to or reauth_url(request, next_url)
    if wants_json(request):
        return JsonResponse({"error": "ReauthenticationRequired", "url": url}, status=401)
    return HttpResponseRedirect(url)


async def asigned_in_at(request: HttpRequest) -> datetime | None:
    """Async :func:`signed_in_at`."""
    return await sync_to_async(signed_in_at)(request)


async def ais_fresh(request: HttpRequest, max_age: int | None = None) -> bool:
    """Async :func:`is_fresh`."""
    return await sync_to_async(is_fresh)(request, max_age)


async def arequire_fresh(
    request: HttpRequest,
    *,
    max_age: int | None = None,
    redirect_to: str | None = None,
    next_url: str | None = None,
) -> HttpResponseBase | None:
    """Async :func:`require_fresh`."""
    return await sync_to_async(require_fresh)(
        request, max_age=max_age, redirect_to=redirect_to, next_url=next_url
    )
