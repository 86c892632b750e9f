"""``AuthMiddleware``: ``request.auth_session`` and ``request.user`` on every request.

Add it after Django's ``AuthenticationMiddleware`` (if you use it)::

    MIDDLEWARE = [
        ...,
        "django.contrib.sessions.middleware.SessionMiddleware",
        "django.contrib.auth.middleware.AuthenticationMiddleware",
        "webauth.middleware.AuthMiddleware",
        ...,
    ]

Both attributes are lazy: a request whose view never reads them costs a dict
lookup, and a request without a session cookie never decrypts anything.

* ``request.auth_session`` is the session dict (as ``GET /auth/session`` returns
  it) or ``None``.
* ``request.user`` is the ``AUTH_USER_MODEL`` instance whose primary key is the
  session's ``sub``; without a webauth session it is whatever
  ``django.contrib.auth`` found (or ``AnonymousUser``). ``await request.auser()``
  is its async twin.

When a view has read the session, the middleware slides its expiry as the
session endpoint does, re-issuing the JWT cookie at most once per
``session.update_age`` (every request with ``update_age=0``). Requests under
``protected_paths`` without a session are redirected to the sign-in page, and
every answer under them goes out with ``Cache-Control: private, no-store``
(merged with what the view set), as ``@auth_required`` views do.

With ``WEBAUTH["bearer"]`` on, a request with an ``Authorization: Bearer`` header
takes its session (and ``request.user``) from that header alone, never from a
cookie, gets ``401`` JSON where others are redirected, and its response sets
no session cookie (see :mod:`webauth.bearer`).

The per-request work lives in the request's :class:`~webauth.state.AuthState`;
this module only attaches it lazily and lets it finish the response.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import SimpleLazyObject

from .access import session_required_response
from .conf import get_config
from .errors import AuthError
from .responses import private_no_store
from .state import STATE_KEY, AuthState, get_state
from .tokens.ended import end_request_session
from .utils import require_installed

__all__ = ["AuthMiddleware", "end_on_django_logout"]

_lazy_request_classes: dict[type, type] = {}
_UNSET: Any = object()


def _auth_session(request: Any) -> Any:
    return get_state(request).session


def _set_auth_session(request: Any, value: Any) -> None:
    # Assigning replaces the lazy value (for tests and custom middleware).
    get_state(request).replace_session(value)


# request.user / request.auser values live in the request's own __dict__ (under
# private keys), never on the state: the lazy user's closure holds the state, and
# the state holding it back would make a reference cycle per request.
_USER_KEY = "_webauth_user"
_AUSER_KEY = "_webauth_auser"


def _get_user(request: Any) -> Any:
    attrs = request.__dict__
    value = attrs.get(_USER_KEY, _UNSET)
    if value is _UNSET:
        state = get_state(request)
        # contrib.auth's lazy user, if any; never on a bearer request, whose session
        # is its header's alone (contrib.auth's comes from a cookie).
        fallback = None if state.bearer else attrs.get("user")
        value = attrs[_USER_KEY] = SimpleLazyObject(lambda: state.get_user(fallback))
    return value


def _set_user(request: Any, value: Any) -> None:
    # contrib.auth's login() and logout() assign request.user: that wins.
    request.__dict__[_USER_KEY] = value


def _get_auser(request: Any) -> Any:
    attrs = request.__dict__
    override = attrs.get(_AUSER_KEY, _UNSET)
    if override is not _UNSET:
        return override
    state = get_state(request)
    previous = attrs.get("auser")

    async def auser() -> Any:
        if state.has_session_cookie:
            user = await sync_to_async(lambda: state.session_user)()
            if user is not None:
                return user
        if previous is not None and not state.bearer:
            return await previous()
        return AnonymousUser()

    return auser


def _set_auser(request: Any, value: Any) -> None:
    request.__dict__[_AUSER_KEY] = value


def _with_lazy_session(request: HttpRequest) -> None:
    # ``request.auth_session`` must be None (not a proxy) when there is no session,
    # yet computed only on first read; ``request.user`` and ``request.auser`` are
    # made only when read too. Properties on a per-class subclass give all three
    # without allocating anything for requests that never read them.
    cls = type(request)
    sub = _lazy_request_classes.get(cls)
    if sub is None:
        sub = type(
            cls.__name__,
            (cls,),
            {
                "auth_session": property(_auth_session, _set_auth_session),
                "user": property(_get_user, _set_user),
                "auser": property(_get_auser, _set_auser),
                "_webauth_middleware": True,  # AuthMiddleware has seen this request
                "__module__": cls.__module__,
            },
        )
        _lazy_request_classes[cls] = sub
    request.__class__ = sub


def _is_protected(request: HttpRequest) -> bool:
    paths = get_config().protected_paths
    return bool(paths) and request.path.startswith(paths)


def _protected_redirect(request: HttpRequest) -> HttpResponseBase | None:
    """The answer to a request under ``protected_paths`` without a session, else ``None``."""
    state = get_state(request)
    if state.session is not None:
        return None
    redirect = session_required_response(request)
    state.finish(redirect)  # deletes an unusable cookie, as Auth.js's middleware does
    return redirect


class AuthMiddleware:
    """Attach the webauth session and user to each request (sync and async)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        require_installed("webauth.middleware.AuthMiddleware")
        self.get_response = get_response
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    # The request's state is made on first use: a request that reads neither the
    # session nor the user costs a class swap and two dict lookups.

    def __call__(self, request: HttpRequest) -> Any:
        if self._async:
            return self.__acall__(request)
        _with_lazy_session(request)
        protected = _is_protected(request)
        if protected:
            redirect = _protected_redirect(request)
            if redirect is not None:
                return redirect
        response = self.get_response(request)
        if protected:
            private_no_store(response)
        state: AuthState | None = request.__dict__.get(STATE_KEY)
        if state is not None:
            state.finish(response)
        return response

    async def __acall__(self, request: HttpRequest) -> Any:
        _with_lazy_session(request)
        protected = _is_protected(request)
        if protected:
            redirect = await sync_to_async(_protected_redirect)(request)
            if redirect is not None:
                return redirect
        get_response: Callable[[HttpRequest], Awaitable[Any]] = self.get_response
        response = await get_response(request)
        if protected:
            private_no_store(response)
        state: AuthState | None = request.__dict__.get(STATE_KEY)
        if state is not None:
            if "session_result" in state.__dict__:
                await sync_to_async(state.finish)(response)
            else:
                state.finish(response)  # at most a CSRF cookie: no I/O, no user code
        return response


def end_on_django_logout(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """``user_logged_out`` receiver: ``django.contrib.auth.logout()`` ends the webauth session too.

    So the admin's "Log out" (and any view calling ``logout()``) signs the user
    out of webauth: the database session is deleted and the middleware deletes
    the session cookie on the way out.
    """
    if request is None:
        return
    if STATE_KEY not in request.__dict__ and not getattr(request, "_webauth_middleware", False):
        return
    state = get_state(request)
    if not state.has_session_cookie:
        return
    config = state.config
    end_request_session(state)  # its access tokens first: the session names them
    # A failure is already logged; the cookie is deleted below all the same.
    with contextlib.suppress(AuthError):
        state.sessions.revoke(config, state.session_token)
    state.forget_session()
