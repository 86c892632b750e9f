"""``FastPath``: webauth's three JSON reads served in front of the project's middleware.

An optional WSGI wrapper, in the way WhiteNoise serves static files before
Django's middleware::

    # myproject/wsgi.py
    from django.core.wsgi import get_wsgi_application
    from webauth.wsgi import FastPath

    application = FastPath(get_wsgi_application())

It answers ``GET {base_path}/csrf``, ``GET {base_path}/providers`` and
``GET {base_path}/session`` (the routes a browser's JavaScript calls on every
page: Auth.js's ``getCsrfToken()``, ``getProviders()``, ``getSession()``) with
Django's own request handling (``request_started`` and ``request_finished``,
exception handling, the request log) and a short middleware chain made of the
project's own ``SecurityMiddleware``, ``AuthMiddleware`` and
``XFrameOptionsMiddleware``, whichever of them ``MIDDLEWARE`` lists, in its
order. So those answers carry the same security headers as through the whole
stack, and everything else the stock middleware would add to them is nothing:
these views read no ``request.session``, no messages and no Django CSRF token,
and their paths need no slash appended. ``CommonMiddleware``'s work that could
change an answer is kept: the host is validated against ``ALLOWED_HOSTS``, a
``Content-Length`` is set, and a request ``PREPEND_WWW`` or
``DISALLOWED_USER_AGENTS`` would redirect or refuse goes through the stack.

Every other request, and these routes when the request carries an ``Origin``
header (a cross-origin call: the project's CORS middleware must see it) or an
``Authorization`` header (a bearer session), goes to the wrapped application as
before. What the fast path gives up: any other middleware of the project (its
logging, metrics, tenant or locale middleware) does not see these three routes.
docs/deployment.md says what it saves.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable
from typing import Any

from django.conf import settings
from django.core import signals
from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.core.handlers.exception import convert_exception_to_response
from django.core.handlers.wsgi import WSGIHandler, WSGIRequest, get_script_name
from django.http import HttpRequest, HttpResponseBase
from django.urls import Resolver404, resolve, set_script_prefix, set_urlconf
from django.utils.log import log_response
from django.utils.module_loading import import_string

__all__ = ["FAST_ACTIONS", "KEPT_MIDDLEWARE", "FastPath"]

#: The routes the fast path answers (``GET`` only).
FAST_ACTIONS = ("csrf", "providers", "session")

#: The middleware of ``MIDDLEWARE`` the fast path keeps (in the project's order):
#: the headers the answers need, and webauth's own.
KEPT_MIDDLEWARE = frozenset(
    {
        "django.middleware.security.SecurityMiddleware",
        "webauth.middleware.AuthMiddleware",
        "django.middleware.clickjacking.XFrameOptionsMiddleware",
    }
)
_COMMON = "django.middleware.common.CommonMiddleware"

StartResponse = Callable[..., Any]


class _Handler(WSGIHandler):
    """Django's WSGI handler with one short middleware chain per fast route."""

    def __init__(self, paths: dict[str, str]) -> None:
        self._paths = paths
        super().__init__()

    def load_middleware(self, is_async: bool = False) -> None:
        # Django's own loop, over the kept middleware only, once per route. The views
        # are imported here: wsgi.py imports this module before Django is set up, and
        # they import models, which wait for the app registry.
        from .views import auth_view

        kept = [path for path in settings.MIDDLEWARE if path in KEPT_MIDDLEWARE]
        classes = [import_string(path) for path in kept]
        self._chains: dict[str, Callable[[HttpRequest], Any]] = {}
        for action in set(self._paths.values()):

            def view(request: HttpRequest, action: str = action) -> HttpResponseBase:
                return auth_view(request, action=action)

            handler = convert_exception_to_response(view)
            for cls in reversed(classes):
                handler = convert_exception_to_response(cls(handler))
            self._chains[action] = handler
        self._middleware_chain = None

    def serve(self, request: WSGIRequest, start_response: StartResponse, action: str) -> Any:
        """``WSGIHandler.__call__`` for the route *action*, through its short chain."""
        environ = request.environ
        set_script_prefix(get_script_name(environ))
        signals.request_started.send(sender=self.__class__, environ=environ)
        set_urlconf(settings.ROOT_URLCONF)
        response: Any = self._chains[action](request)
        response._resource_closers.append(request.close)
        if response.status_code >= 400:
            log_response(
                "%s: %s", response.reason_phrase, request.path, response=response, request=request
            )
        if not response.streaming and not response.has_header("Content-Length"):
            response.headers["Content-Length"] = str(len(response.content))  # as CommonMiddleware
        response._handler_class = self.__class__
        status = f"{response.status_code} {response.reason_phrase}"
        headers = [
            *response.items(),
            *(("Set-Cookie", c.output(header="")) for c in response.cookies.values()),
        ]
        start_response(status, headers)
        return response


class FastPath:
    """Serve ``GET`` of webauth's csrf, providers and session routes before the middleware.

    *application* is the project's WSGI application (``get_wsgi_application()``);
    every other request goes to it unchanged. *actions* narrows the routes served
    here (a subset of :data:`FAST_ACTIONS`).
    """

    def __init__(
        self, application: Callable[..., Iterable[bytes]], *, actions: Iterable[str] = FAST_ACTIONS
    ) -> None:
        unknown = set(actions) - set(FAST_ACTIONS)
        if unknown:
            raise ValueError(f"FastPath serves only {FAST_ACTIONS}, not {sorted(unknown)}")
        self.application = application
        self.actions = tuple(actions)
        self._paths: dict[str, str] | None = None
        self._handler: _Handler | None = None
        self._user_agents: list[re.Pattern[str]] = []

    def _load(self) -> dict[str, str]:
        """The paths of the fast routes, as the project's URLconf routes them to webauth."""
        # Imported at the first request, not with this module: wsgi.py imports it
        # before Django is set up, and these read settings and the app registry.
        from .conf import get_config
        from .views import auth_view

        try:
            base = get_config().base_path
        except ImproperlyConfigured:
            # The stack answers (and logs) the broken configuration; asked again next time.
            return {}
        paths: dict[str, str] = {}
        for action in self.actions:
            path = f"{base}/{action}"
            try:
                match = resolve(path)
            except Resolver404:
                continue
            # Only where the URLconf really sends it to webauth's view for that route.
            if match.func is auth_view and match.kwargs.get("action") == action:
                paths[path] = action
        if _COMMON in settings.MIDDLEWARE:
            self._user_agents = list(settings.DISALLOWED_USER_AGENTS)
        self._handler = _Handler(paths)
        self._paths = paths
        return paths

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Any:
        if (
            environ.get("REQUEST_METHOD") == "GET"
            and "HTTP_ORIGIN" not in environ
            and "HTTP_AUTHORIZATION" not in environ
        ):
            paths = self._paths if self._paths is not None else self._load()
            action = paths.get(environ.get("PATH_INFO", ""))
            if action is not None:
                request = self._fast_request(environ)
                if request is not None:
                    assert self._handler is not None
                    return self._handler.serve(request, start_response, action)
        return self.application(environ, start_response)

    def _fast_request(self, environ: dict[str, Any]) -> WSGIRequest | None:
        """The request, unless ``CommonMiddleware`` would redirect or refuse it."""
        if self._user_agents:
            agent = environ.get("HTTP_USER_AGENT", "")
            if any(pattern.search(agent) for pattern in self._user_agents):
                return None
        if settings.PREPEND_WWW:
            return None
        request = WSGIRequest(environ)
        try:
            # ALLOWED_HOSTS, as CommonMiddleware checks it: a bad host gets the stack's 400.
            request.get_host()
        except DisallowedHost:
            return None
        return request
