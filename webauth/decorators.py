"""``@auth_required``, ``@reauth_required`` and their mixins: views only for signed-in users.

Built like ``login_required`` on one primitive, :func:`session_passes_test`::

    from webauth.decorators import auth_required

    @auth_required
    def dashboard(request):
        return render(request, "dashboard.html", {"session": request.auth_session})

A request without a session is redirected to the sign-in page with
``callbackUrl`` set to the page it asked for, or gets ``401`` JSON when it asked
for JSON (``Accept: application/json``). Works on sync and async views.

Every answer, the view's own included, goes out with ``Cache-Control: private,
no-store`` (merged with what the view set): a page for one signed-in user is
kept by no shared cache, and the browser's Back button after signing out fetches
it anew instead of showing it from its cache.

``@reauth_required`` (and ``ReauthRequiredMixin``) is for views that make
sensitive changes: it requires a session that signed in at most
``WEBAUTH["reauth_max_age"]`` seconds ago (300 by default), and sends an older
one to the re-authentication page, which brings the user back once they have
signed in again (:mod:`webauth.reauth`)::

    from webauth.decorators import reauth_required

    @reauth_required
    def delete_account(request):
        ...

    @reauth_required(max_age=60)
    def show_recovery_codes(request):
        ...
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar, cast

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.http import HttpRequest, HttpResponseBase

from .access import has_user, session_required_response
from .api_keys import authenticate
from .errors import RateLimited
from .helpers import get_session
from .mfa.access import require_mfa
from .ratelimit import limited_response
from .reauth import require_fresh
from .responses import json_response, private_no_store

__all__ = [
    "AuthRequiredMixin",
    "ReauthRequiredMixin",
    "api_key_required",
    "auth_required",
    "mfa_required",
    "reauth_required",
    "session_passes_test",
]

V = TypeVar("V", bound=Callable[..., Any])


def session_passes_test(
    test: Callable[[Any], bool], *, redirect_to: str | None = None
) -> Callable[[V], V]:
    """Decorate a view so it runs only when ``test(session)`` is true."""

    def decorator(view: V) -> V:
        if iscoroutinefunction(view):

            @wraps(view)
            async def _async_view(request: HttpRequest, *args: object, **kwargs: object) -> Any:
                session = await sync_to_async(get_session)(request)
                if test(session):
                    return private_no_store(await view(request, *args, **kwargs))
                return session_required_response(request, redirect_to)

            return _async_view  # type: ignore[return-value]

        @wraps(view)
        def _view(request: HttpRequest, *args: object, **kwargs: object) -> Any:
            if test(get_session(request)):
                return private_no_store(view(request, *args, **kwargs))
            return session_required_response(request, redirect_to)

        return _view  # type: ignore[return-value]

    return decorator


def auth_required(function: V | None = None, *, redirect_to: str | None = None) -> Any:
    """Require a webauth session.

    Use as ``@auth_required`` or ``@auth_required(redirect_to=...)``.
    """
    decorator = session_passes_test(has_user, redirect_to=redirect_to)
    if function is not None:
        return decorator(function)
    return decorator


class AuthRequiredMixin:
    """Class-based-view twin of :func:`auth_required`; set ``redirect_to`` to customise."""

    redirect_to: str | None = None

    def dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> Any:
        if getattr(self, "view_is_async", False):
            # An async view's dispatch must return an awaitable, denial included.
            return self._async_dispatch(request, *args, **kwargs)
        if not has_user(get_session(request)):
            return session_required_response(request, self.redirect_to)
        return private_no_store(super().dispatch(request, *args, **kwargs))  # type: ignore[misc]

    async def _async_dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> Any:
        if not has_user(await sync_to_async(get_session)(request)):
            return session_required_response(request, self.redirect_to)
        return private_no_store(await super().dispatch(request, *args, **kwargs))  # type: ignore[misc]


def reauth_required(
    function: V | None = None,
    *,
    max_age: int | None = None,
    redirect_to: str | None = None,
) -> Any:
    """Require a session that signed in at most *max_age* seconds ago.

    *max_age* defaults to ``WEBAUTH["reauth_max_age"]``. Use as
    ``@reauth_required`` or ``@reauth_required(max_age=..., redirect_to=...)``.
    Without a session the view answers as ``@auth_required`` does; with an
    older one the browser goes to the re-authentication page (or
    *redirect_to*) and comes back to this URL once the user has signed in
    again. A JSON client gets ``401 {"error": "ReauthenticationRequired"}``.
    Every method is checked; for a view that shows a form freely and protects
    only its ``POST``, call :func:`webauth.reauth.require_fresh` in the view.
    """

    def refuse(request: HttpRequest) -> HttpResponseBase | None:
        return require_fresh(request, max_age=max_age, redirect_to=redirect_to)

    return _guarded(refuse, function)


def mfa_required(function: V | None = None, *, max_age: int | None = None) -> Any:
    """Require a session that proved two factors (at most *max_age* seconds ago when given).

    Use as ``@mfa_required`` or ``@mfa_required(max_age=600)`` (step-up).
    Without a session the view answers as ``@auth_required`` does; a user with
    a second factor goes to the re-authentication page, signs in again with it
    and comes back; one without goes to the account center to add one
    (:func:`webauth.mfa.access.require_mfa`). A passkey sign-in counts as two
    factors.
    """

    def refuse(request: HttpRequest) -> HttpResponseBase | None:
        return require_mfa(request, max_age=max_age)

    return _guarded(refuse, function)


def _guarded(refuse: Callable[[HttpRequest], HttpResponseBase | None], function: V | None) -> Any:
    """A view decorator that answers with *refuse*'s response when it has one.

    Sync and ``async`` views alike (*refuse* runs in a thread for the latter).
    *function* given: the decorated view (``@decorator``); else the decorator
    (``@decorator(...)``).
    """

    def decorator(view: V) -> V:
        if iscoroutinefunction(view):

            @wraps(view)
            async def _async_view(request: HttpRequest, *args: object, **kwargs: object) -> Any:
                refused = await sync_to_async(refuse)(request)
                if refused is not None:
                    return refused
                return await view(request, *args, **kwargs)

            return _async_view  # type: ignore[return-value]

        @wraps(view)
        def _view(request: HttpRequest, *args: object, **kwargs: object) -> Any:
            refused = refuse(request)
            if refused is not None:
                return refused
            return view(request, *args, **kwargs)

        return _view  # type: ignore[return-value]

    if function is not None:
        return decorator(function)
    return decorator


class ReauthRequiredMixin:
    """Class-based-view twin of :func:`reauth_required`.

    Set ``reauth_max_age`` (seconds; default ``WEBAUTH["reauth_max_age"]``) and
    ``reauth_redirect_to`` to customise.
    """

    reauth_max_age: int | None = None
    reauth_redirect_to: str | None = None

    def dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> Any:
        if getattr(self, "view_is_async", False):
            # An async view's dispatch must return an awaitable, refusal included.
            return self._async_dispatch(request, *args, **kwargs)
        refused = require_fresh(
            request, max_age=self.reauth_max_age, redirect_to=self.reauth_redirect_to
        )
        if refused is not None:
            return refused
        return super().dispatch(request, *args, **kwargs)  # type: ignore[misc]

    async def _async_dispatch(self, request: HttpRequest, *args: object, **kwargs: object) -> Any:
        refused = await sync_to_async(require_fresh)(
            request, max_age=self.reauth_max_age, redirect_to=self.reauth_redirect_to
        )
        if refused is not None:
            return refused
        return await super().dispatch(request, *args, **kwargs)  # type: ignore[misc]


def api_key_required(*scopes: str) -> Callable[[V], V]:
    """Only requests with an API key (``WEBAUTH["api_keys"]``) that carries *scopes*.

    ::

        @api_key_required("orders:read")
        def orders(request):
            return JsonResponse({"user": request.user.pk, "key": request.api_key.record.name})

    ``401 {"error": "InvalidApiKey"}`` (with ``WWW-Authenticate: Bearer``) without
    a key that holds, ``403 {"error": "InsufficientScope"}`` for a key without one
    of *scopes*, ``429`` past the key's limit. A key that holds sets
    ``request.user`` (its user; ``AnonymousUser`` for the key of a project-defined
    owner, which ``request.api_key.owner`` then is) and ``request.api_key`` (a
    :class:`webauth.api_keys.KeyMatch`) for this request only: no session is made.
    The view is exempt from Django's CSRF check, which guards cookies: only the
    key's header can pass this decorator, and no browser sends it by itself.
    """
    wanted = frozenset(scopes)

    def refuse(request: HttpRequest) -> HttpResponseBase | None:
        try:
            match = authenticate(request)
        except RateLimited as exc:
            return limited_response(max(1, exc.retry_after))
        if match is None:
            response = json_response({"error": "InvalidApiKey"}, status=401, no_cache=True)
            response["WWW-Authenticate"] = 'Bearer realm="api"'
            return response
        if not wanted <= match.scopes:
            return json_response({"error": "InsufficientScope"}, status=403, no_cache=True)
        if match.user is None:  # an owner's key acts as no user
            from django.contrib.auth.models import AnonymousUser  # needs the app registry

            request.user = AnonymousUser()
        else:
            request.user = match.user
        request.api_key = match  # type: ignore[attr-defined]
        return None

    def decorator(view: V) -> V:
        guarded = _guarded(refuse, view)
        guarded.csrf_exempt = True
        return cast(V, guarded)

    return decorator
