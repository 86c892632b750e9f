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
``protected_paths`` without a session are redirected to the sign-in page.
"""

from __future__ import annotations

import contextlib
import time
import weakref
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.contrib.auth.models import AnonymousUser
from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import SimpleLazyObject

from . import cookies as ck
from .adapters.base import AdapterCaller
from .conf import Config, get_config
from .errors import AuthError
from .fastquery import user_by_pk
from .sessions import SessionResult, encode_token, read_database_session, read_jwt_session
from .types import as_user

__all__ = ["AuthMiddleware", "RequestAuth", "get_request_auth"]


class RequestAuth:
    """The per-request session state behind ``request.auth_session`` and ``request.user``."""

    __slots__ = ("_cookies", "_request", "_result", "_secure", "_spec", "_user", "config")

    def __init__(self, request: HttpRequest, config: Config) -> None:
        # A weak reference: the request holds this object (request._webauth), and a
        # strong one back would make every request cyclic garbage for the GC.
        self._request = weakref.ref(request)
        self._cookies: dict[str, str] | None = None
        self.config = config
        self._secure: bool | None = None
        self._spec: ck.CookieSpec | None = None
        self._result: SessionResult | None = None
        self._user: Any = None

    @property
    def cookies(self) -> dict[str, str]:
        """The request's cookies (parsed on first use, as Django does)."""
        if self._cookies is None:
            self._cookies = self.request.COOKIES
        return self._cookies

    @property
    def secure(self) -> bool:
        """Whether cookies get the ``__Secure-`` prefix (decided once, on first use)."""
        if self._secure is None:
            config = self.config
            if config.use_secure_cookies is not None:
                self._secure = config.use_secure_cookies
            elif config.url:
                self._secure = config.url.startswith("https://")
            else:
                self._secure = self.request.is_secure()
        return self._secure

    @property
    def spec(self) -> ck.CookieSpec:
        """The session cookie's name and attributes."""
        if self._spec is None:
            self._spec = ck.cookie_specs(self.config, self.secure)["session_token"]
        return self._spec

    @property
    def request(self) -> HttpRequest:
        """The request this state belongs to."""
        request = self._request()
        if request is None:  # only after the request itself is gone
            raise ReferenceError("the request of this RequestAuth no longer exists")
        return request

    @property
    def has_cookie(self) -> bool:
        """Whether the request carries a session cookie at all (no decryption)."""
        cookies = self.cookies
        if not cookies:
            return False
        name = self.spec.name
        if name in cookies:
            return True
        dotted = name + "."
        return any(k.startswith(dotted) for k in cookies)

    @property
    def evaluated(self) -> bool:
        return self._result is not None

    @property
    def raw_token(self) -> str | None:
        """The session cookie's value (chunks joined), without decoding it."""
        if not self.has_cookie:
            return None
        return ck.read_chunked(self.cookies, self.spec.name)

    @property
    def result(self) -> SessionResult:
        """The session, read once per request."""
        if self._result is None:
            if not self.has_cookie:
                self._result = SessionResult()
            elif self.config.session.strategy == "database":
                self._result = read_database_session(self.config, self.raw_token)
            else:
                self._result = read_jwt_session(
                    self.config, self.raw_token, self.spec.name, reissue=False
                )
        return self._result

    @property
    def session(self) -> Any:
        return self.result.session

    def session_user(self) -> Any:
        """The user whose id is the session's ``sub``, or ``None`` (loaded once)."""
        if self._user is None:
            result = self.result if self.has_cookie else None
            user = None
            if result is not None and result.user is not None and result.user.instance is not None:
                user = _active(result.user.instance)  # came with the session: no query
            elif result is not None and result.user_id is not None:
                user = _load_user(self.config, result.user_id)
            self._user = user or False
        return self._user or None

    def get_user(self, fallback: Any = None) -> Any:
        """The user of the webauth session, else *fallback*, else ``AnonymousUser``."""
        user = self.session_user()
        if user is not None:
            return user
        return fallback if fallback is not None else AnonymousUser()

    def finish(self, response: HttpResponseBase) -> None:
        """Slide the session's expiry or delete an unusable cookie; issue a pending CSRF cookie."""
        request = self._request()
        pending = request.__dict__.get("_webauth_pending_csrf") if request is not None else None
        if pending is not None and pending.cookie is not None:
            spec = ck.cookie_specs(self.config, self.secure)["csrf_token"]
            if spec.name not in response.cookies:
                ck.set_cookie(response, spec, pending.cookie)
        result = self._result
        if result is None or not self.has_cookie:
            return
        if self.spec.name in response.cookies or f"{self.spec.name}.0" in response.cookies:
            return  # the view (sign-in, sign-out, the session route) already wrote it
        if result.clear:
            ck.set_chunked(response, self.spec, None, self.cookies)
            return
        if self.config.session.strategy == "database":
            if result.extended and result.cookie is not None:
                ck.set_chunked(
                    response, self.spec, result.cookie, self.cookies, expires=result.expires
                )
            return
        token = result.token
        if token is None:
            return
        iat = token.get("iat")
        age = time.time() - iat if isinstance(iat, int | float) else float("inf")
        if age < self.config.session.update_age:
            return
        value = encode_token(self.config, token, self.spec.name, self.config.jwt.max_age)
        expires = _expiry(self.config.session.max_age)
        ck.set_chunked(response, self.spec, value, self.cookies, expires=expires)


def _expiry(max_age: int) -> Any:
    from datetime import UTC, datetime

    return datetime.fromtimestamp(int(time.time()) + max_age, UTC)


def _active(user: Any) -> Any:
    # Like ModelBackend: an inactive user is not signed in.
    return user if getattr(user, "is_active", True) else None


def _load_user(config: Config, user_id: str) -> Any:
    """The ``AUTH_USER_MODEL`` instance for *user_id* (through the adapter when there is one)."""
    if config.adapter is not None and callable(getattr(config.adapter, "get_user", None)):
        try:
            record = as_user(AdapterCaller(config.adapter, config.logger)("get_user", user_id))
        except AuthError:
            return None
        if record is None:
            return None
        if record.instance is not None:
            return _active(record.instance)
        user_id = record.id
    return _active(user_by_pk(user_id))


_lazy_request_classes: dict[type, type] = {}
_UNSET: Any = object()


def _auth_session(request: Any) -> Any:
    return get_request_auth(request).session


def _set_auth_session(request: Any, value: Any) -> None:
    # Assigning replaces the lazy value (for tests and custom middleware).
    get_request_auth(request)._result = SessionResult(session=value)


# request.user / request.auser values live in the request's own __dict__ (under
# private keys), never on RequestAuth: the lazy user's closure holds the state,
# and the state holding it back would make a reference cycle per request.
_USER_KEY = "_webauth_user"
_AUSER_KEY = "_webauth_auser"


def _get_user(request: Any) -> Any:
    attrs = request.__dict__
    value = attrs.get(_USER_KEY, _UNSET)
    if value is _UNSET:
        state = get_request_auth(request)
        fallback = attrs.get("user")  # contrib.auth's lazy user, if any
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
    state = get_request_auth(request)
    previous = attrs.get("auser")

    async def auser() -> Any:
        if state.has_cookie:
            user = await sync_to_async(state.session_user)()
            if user is not None:
                return user
        if previous is not None:
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


def get_request_auth(request: HttpRequest) -> RequestAuth:
    """The request's :class:`RequestAuth`, creating it when the middleware did not."""
    state: RequestAuth | None = request.__dict__.get("_webauth")
    if state is None:
        state = RequestAuth(request, get_config())
        request._webauth = state  # type: ignore[attr-defined]
    return state


class AuthMiddleware:
    """Attach the webauth session and user to each request (sync and async)."""

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        self.get_response = get_response
        self._async = iscoroutinefunction(get_response)
        if self._async:
            markcoroutinefunction(self)

    # The per-request state (RequestAuth) is made on first use: a request that
    # reads neither the session nor the user costs a class swap and two dict lookups.

    def _protected_redirect(self, request: HttpRequest) -> HttpResponseBase | None:
        paths = get_config().protected_paths
        if not paths or not request.path.startswith(tuple(paths)):
            return None
        state = get_request_auth(request)
        if state.session is not None:
            return None
        from .helpers import session_required_response

        redirect = session_required_response(request)
        state.finish(redirect)  # deletes an unusable cookie, as Auth.js's middleware does
        return redirect

    def __call__(self, request: HttpRequest) -> Any:
        if self._async:
            return self.__acall__(request)
        _with_lazy_session(request)
        if get_config().protected_paths:
            redirect = self._protected_redirect(request)
            if redirect is not None:
                return redirect
        response = self.get_response(request)
        attrs = request.__dict__
        state: RequestAuth | None = attrs.get("_webauth")
        if state is None and "_webauth_pending_csrf" in attrs:
            state = get_request_auth(request)
        if state is not None:
            state.finish(response)
        return response

    async def __acall__(self, request: HttpRequest) -> Any:
        _with_lazy_session(request)
        if get_config().protected_paths:
            redirect = await sync_to_async(self._protected_redirect)(request)
            if redirect is not None:
                return redirect
        get_response: Callable[[HttpRequest], Awaitable[Any]] = self.get_response
        response = await get_response(request)
        attrs = request.__dict__
        state: RequestAuth | None = attrs.get("_webauth")
        if state is not None and state.evaluated:
            await sync_to_async(state.finish)(response)
        elif state is not None or "_webauth_pending_csrf" in attrs:
            # Only the CSRF cookie: no I/O, no user code.
            get_request_auth(request).finish(response)
        return response


def end_on_django_logout(sender: Any, request: HttpRequest | None = None, **kwargs: Any) -> None:
    """``user_logged_out`` receiver: ``django.contrib.auth.logout()`` ends the webauth session too.

    So the admin's "Log out" (and any view calling ``logout()``) signs the user
    out of webauth: the database session is deleted and the middleware deletes
    the session cookie on the way out.
    """
    if request is None:
        return
    state: RequestAuth | None = request.__dict__.get("_webauth")
    if state is None and getattr(request, "_webauth_middleware", False):
        state = get_request_auth(request)  # made on first use: this is the first
    if state is None or not state.has_cookie:
        return
    config = state.config
    if config.session.strategy == "database" and state.raw_token:
        # A failure is already logged; the cookie is deleted below all the same.
        with contextlib.suppress(AuthError):
            AdapterCaller(config.adapter, config.logger)("delete_session", state.raw_token)
    state._result = SessionResult(clear=True)
    state._user = False
