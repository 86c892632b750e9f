"""``@auth_required`` and ``AuthRequiredMixin``: views only for signed-in users.

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
"""

from __future__ import annotations

from collections.abc import Callable
from functools import wraps
from typing import Any, TypeVar

from asgiref.sync import iscoroutinefunction, sync_to_async
from django.http import HttpRequest

from .access import has_user, session_required_response
from .helpers import get_session
from .responses import private_no_store

__all__ = ["AuthRequiredMixin", "auth_required", "session_passes_test"]

V = TypeVar("V", bound=Callable[..., Any])


def session_passes_test(
    test: Callable[[Any], bool], *, redirect_to: str | None = None
) -> Callable[[V], V]:
    """Decorate a view so it runs only when ``test(session)`` is true."""

    def decorator(view: V) -> V:
        if iscoroutinefunction(view):

            @wraps(view)
            async def _async_view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
                session = await sync_to_async(get_session)(request)
                if test(session):
                    return private_no_store(await view(request, *args, **kwargs))
                return session_required_response(request, redirect_to)

            return _async_view  # type: ignore[return-value]

        @wraps(view)
        def _view(request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
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

    def dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if getattr(self, "view_is_async", False):
            # An async view's dispatch must return an awaitable, denial included.
            return self._async_dispatch(request, *args, **kwargs)
        if not has_user(get_session(request)):
            return session_required_response(request, self.redirect_to)
        return private_no_store(super().dispatch(request, *args, **kwargs))  # type: ignore[misc]

    async def _async_dispatch(self, request: HttpRequest, *args: Any, **kwargs: Any) -> Any:
        if not has_user(await sync_to_async(get_session)(request)):
            return session_required_response(request, self.redirect_to)
        return private_no_store(await super().dispatch(request, *args, **kwargs))  # type: ignore[misc]
