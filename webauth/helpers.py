"""Python helpers for views: read and update the session, sign in, sign out.

Each has an ``a``-prefixed twin for async views, as ``django.contrib.auth`` does.
They work on the request's :class:`~webauth.state.AuthState` and call the same
flows as webauth's routes.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import unquote

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponseBase
from django.utils.translation import gettext

from . import cookies as ck
from .access import session_required_response, signin_url, wants_json
from .bearer import token_answer
from .conf import get_config
from .errors import AuthError, ChallengeFailed, CredentialsSignin, EmailSignInError, RateLimited
from .events import emit
from .flows import flow_for
from .flows.email import InvalidEmail
from .flows.signout import sign_out as sign_out_flow
from .forms import FormResult, SignInForm, SignOutForm
from .pages import SIGNIN_ERRORS
from .sessions import decode_token, read_session
from .state import get_state

__all__ = [
    "aget_session",
    "asign_in",
    "asign_out",
    "aupdate_session",
    "aupdate_session_auth_hash",
    "get_session",
    "get_token",
    "session_required_response",
    "sign_in",
    "sign_out",
    "signin_url",
    "update_session",
    "update_session_auth_hash",
    "wants_json",
]


def get_session(request: HttpRequest) -> Any:
    """The session (as ``GET /auth/session`` returns it) or ``None``."""
    return get_state(request).session


async def aget_session(request: HttpRequest) -> Any:
    """Async :func:`get_session`; safe with ``async def`` callbacks."""
    return await sync_to_async(get_session)(request)


def get_token(
    request: HttpRequest,
    *,
    secure_cookie: bool | None = None,
    cookie_name: str | None = None,
    salt: str | None = None,
    raw: bool = False,
) -> Any:
    """The decoded session JWT from the cookie or an ``Authorization: Bearer`` header.

    Like Auth.js's ``getToken``: the cookie (chunks reassembled) is read first; a
    bearer token is URL-decoded; anything invalid gives ``None``. With ``raw`` the
    encoded token is returned instead of its claims.
    """
    config = get_config()
    # By default the cookie webauth itself set: use_secure_cookies / AUTH_URL / the scheme.
    secure = get_state(request).secure if secure_cookie is None else secure_cookie
    name = cookie_name or ck.cookie_specs(config, secure)["session_token"].name
    token = ck.read_chunked(request.COOKIES, name)
    if not token:
        header = request.META.get("HTTP_AUTHORIZATION", "")
        if header.startswith("Bearer "):
            try:
                token = unquote(header[7:], errors="strict")
            except UnicodeDecodeError:
                return None
    if not token:
        return None
    if raw:
        return token
    try:
        return decode_token(config, token, salt or name)
    except Exception:
        return None


def sign_in(
    request: HttpRequest,
    provider_id: str,
    redirect_to: str | None = None,
    options: Mapping[str, object] | None = None,
    authorization_params: str | Mapping[str, str] | None = None,
    *,
    email: str | None = None,
) -> HttpResponseBase | FormResult:
    """Sign in from a view: returns a redirect response, or a failed :class:`FormResult`.

    For a credentials provider, ``options`` holds the submitted fields and the user is
    signed in at once (the response carries the session cookie). For redirect-based
    providers the response goes to the provider. For an email provider, ``email``
    (or ``options["email"]``) is the address to send the link and code to; the
    response goes to the "check your email" page, and an address webauth cannot
    use is a failed result with a field error for ``email``. CSRF is the calling
    view's job here (Django's ``CsrfViewMiddleware`` protects it), as for
    Auth.js's server actions.
    """
    form = SignInForm(
        {
            "provider_id": provider_id,
            "redirect_to": redirect_to or "",
            "options": options,
            "authorization_params": authorization_params,
        }
    )
    if not form.is_valid():
        return FormResult.from_form(form)
    data = form.cleaned_data
    opts = dict(data["options"])
    target = data["redirect_to"] or opts.pop("redirect_to", None) or request.get_full_path()
    state = get_state(request)
    config = state.config
    provider = config.get_provider(data["provider_id"])
    flow = flow_for(provider) if provider is not None else None
    try:
        callback_url = state.redirect(target)
        if provider is None or flow is None:
            return FormResult.failure(gettext("This provider cannot be started from a view."))
        if flow.posts_to_callback:
            # The fields go to the callback, as Auth.js's signIn() posts them there.
            return flow.callback(state, provider, {**opts, "callbackUrl": target}, callback_url)
        if flow.start is None:
            return FormResult.failure(gettext("This provider cannot be started from a view."))
        if flow.start_reads_body:
            # What a form would have posted: the address, as an argument or an option.
            params = {**opts, **({"email": email} if email is not None else {})}
        else:
            # Only these reach the provider, never the calling page's own query string.
            params = data["authorization_params"]
        response = flow.start(state, provider, params, callback_url)
        # Where to land after the provider's round trip, as the sign-in route remembers it.
        state.remember_callback_url(response, callback_url)
        return response
    except InvalidEmail as exc:
        config.logger.error(exc)
        return FormResult(
            failed=True, field_errors={"email": [exc.field_message]}, form_errors=[], error=exc
        )
    except AuthError as exc:
        config.logger.error(exc)
        return FormResult.failure(str(SIGNIN_ERRORS[_page_error(exc)]), exc)


#: The sign-in page's message for a refused :func:`sign_in`, by the error's class.
_PAGE_ERRORS: tuple[tuple[type[AuthError], str], ...] = (
    (EmailSignInError, "EmailSignin"),
    (CredentialsSignin, "CredentialsSignin"),
    (RateLimited, "RateLimited"),
    (ChallengeFailed, "ChallengeFailed"),
)


def _page_error(exc: AuthError) -> str:
    return next((key for kind, key in _PAGE_ERRORS if isinstance(exc, kind)), "default")


def sign_out(request: HttpRequest, redirect_to: str | None = None) -> HttpResponseBase | FormResult:
    """Sign out from a view: a redirect that deletes the session cookie, or a failure."""
    form = SignOutForm({"redirect_to": redirect_to or ""})
    if not form.is_valid():
        return FormResult.from_form(form)
    state = get_state(request)
    try:
        return sign_out_flow(state, state.redirect(form.cleaned_data["redirect_to"] or "/"))
    except AuthError as exc:
        state.config.logger.error(exc)
        return FormResult.failure(str(exc), exc)


def update_session(request: HttpRequest, data: Any) -> Any:
    """Update the request's session from the server: the twin of ``POST /auth/session``.

    Auth.js's ``unstable_update``: the ``jwt`` and ``session`` callbacks run with
    ``trigger="update"`` and *data* (``session=data`` for ``jwt``,
    ``new_session=data`` for ``session``), exactly as when the browser posts
    ``{"data": ...}`` to the session route, and the ``session`` event is sent.
    Returns the updated session (as ``GET /auth/session`` would now show it),
    or ``None`` when the request has no session. ``request.auth_session`` shows
    it from now on.

    Under ``jwt`` the callbacks' token is the new session: ``AuthMiddleware``
    sets it as the session cookie on this request's response. On a bearer
    request no cookie is set; the answer then also carries the new
    ``sessionToken``, ``tokenType`` and ``expires`` (as ``POST
    /auth/app/session`` answers) for the view to hand to the app. Under
    ``database`` the callbacks see the stored session (what they change, they
    store themselves), and the token stays the same.

    CSRF is the calling view's job (Django's ``CsrfViewMiddleware``), as for
    the other helpers.
    """
    state = get_state(request)
    if not state.has_session_cookie:
        return None
    config = state.config
    result = read_session(
        config,
        state.session_token,
        state.cookies["session_token"].name,
        trigger="update",
        new_session=data,
        known_user=state.loaded_user,
    )
    # The response's cookie (AuthState.finish) and request.auth_session follow it.
    state.use_result(result)
    if result.session is None:
        return None
    emit(config, "session", request=request, **state.sessions.event_fields(result))
    if state.bearer and result.cookie is not None and result.valid_until is not None:
        return token_answer(result.session, result.cookie, result.valid_until)
    return result.session


async def aupdate_session(request: HttpRequest, data: Any) -> Any:
    """Async :func:`update_session`; safe with ``async def`` callbacks."""
    return await sync_to_async(update_session)(request, data)


def update_session_auth_hash(request: HttpRequest, user: Any) -> str | None:
    """Keep the request's session valid after *user*'s password changed.

    A password change ends every session made before it, under both
    strategies, as ``django.contrib.auth`` does. Call this in the view that
    changed the password (next to Django's own ``update_session_auth_hash``
    if you use ``django.contrib.sessions`` too) so that the browser that made
    the change stays signed in: a JWT session is re-issued with the new hash
    on this response, a database session stores it. Nothing happens when the
    request's session is not *user*'s.

    On a bearer request no cookie is set: the return value is then the token
    the app must use from now on (a new JWT; the same database token), to hand
    to it in the view's answer. Otherwise ``None``.
    """
    state = get_state(request)
    if not state.has_session_cookie:
        return None
    config = state.config
    raw = state.session_token
    value: str | None
    try:
        value = state.sessions.rebind(config, raw, state.cookies["session_token"].name, user)
    except AuthError as exc:  # a failing adapter: the session ends as any other would
        config.logger.error(exc)
        return None
    if value is None:
        return None
    state.use_session_token(value)
    return value if state.bearer else None


async def aupdate_session_auth_hash(request: HttpRequest, user: Any) -> str | None:
    """Async :func:`update_session_auth_hash`."""
    return await sync_to_async(update_session_auth_hash)(request, user)


async def asign_in(
    request: HttpRequest, *args: Any, **kwargs: Any
) -> HttpResponseBase | FormResult:
    """Async :func:`sign_in`."""
    return await sync_to_async(sign_in)(request, *args, **kwargs)


async def asign_out(
    request: HttpRequest, *args: Any, **kwargs: Any
) -> HttpResponseBase | FormResult:
    """Async :func:`sign_out`."""
    return await sync_to_async(sign_out)(request, *args, **kwargs)
