"""The OpenAPI 3.1 description of webauth's HTTP surface, and the route that serves it.

``webauth/openapi.json`` ships inside the package and describes Auth.js's
routes as webauth answers them (``/session``, ``/csrf``, ``/providers``, the
sign-in, callback and sign-out routes, with their redirects, their
``X-Auth-Return-Redirect`` JSON and their errors) and the app routes under
``/app/`` (docs/apps.md, docs/bearer.md). Read it with :func:`load_description`,
or point a client generator at the file (docs/openapi.md).

With ``WEBAUTH["openapi"]`` on, ``GET <base path>/openapi.json`` (URL name
``webauth:openapi``) serves it, fitted to the site by :func:`description`:
``servers`` names the absolute URL of webauth's routes (the trusted origin and
``base_path``, as the URLs of ``GET /providers`` do), each ``{provider_id}``
lists the configured providers its route serves, and with ``WEBAUTH["bearer"]``
off the app routes, which then answer ``404``, are left out with the bearer
scheme.

It is off by default. The description is no secret (the routes are Auth.js's
and webauth's documented ones), but serving it tells anyone which
authentication software a site runs and whether its app routes are on, and
with it off ``/auth/openapi.json`` stays the ``400 "Bad request."`` Auth.js
answers for any path it does not serve. A project that wants the file without
the route reads it with :func:`load_description`.
"""

from __future__ import annotations

import json
from functools import lru_cache
from importlib.resources import files
from typing import TYPE_CHECKING, Any

from django.core.exceptions import DisallowedHost, ImproperlyConfigured
from django.http import HttpResponseNotAllowed

from .actions import reset as reset_routes
from .actions import signup as signup_routes
from .conf import Config, get_config
from .errors import AuthError
from .flows import flow_for
from .logger import AuthLogger
from .responses import bad_request, encoded_json_response, json_bytes, json_response
from .state import get_state
from .views import CONFIG_ERROR_MESSAGE

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase

    from .providers.base import Provider

__all__ = ["DESCRIPTION_FILE", "description", "load_description", "openapi_view"]

#: The description's file name, inside the ``webauth`` package and under the base path.
DESCRIPTION_FILE = "openapi.json"

#: What the app routes' paths start with: served only with ``WEBAUTH["bearer"]`` on.
_APP_PREFIX = "/app/"

_CONFIG_ERROR = {"message": CONFIG_ERROR_MESSAGE}

#: The access tokens' routes: served only with ``WEBAUTH["tokens"]``.
_TOKEN_ROUTES = frozenset(
    {
        "/token",
        "/token/ended",
        "/.well-known/jwks.json",
        "/.well-known/openid-configuration",
        "/app/access-token",
    }
)


@lru_cache(maxsize=1)
def _shipped() -> bytes:
    return files("webauth").joinpath(DESCRIPTION_FILE).read_bytes()


def load_description() -> dict[str, Any]:
    """The description as shipped (``webauth/openapi.json``): a new dict on each call.

    Its ``servers`` entry is the relative ``/auth`` of the default mount; the
    served description (:func:`description`) names the site's own address.
    """
    data: dict[str, Any] = json.loads(_shipped())
    return data


def description(config: Config, server_url: str) -> dict[str, Any]:
    """The description fitted to a site: *config*'s routes and providers, at *server_url*.

    *server_url* is the absolute URL of webauth's routes
    (``https://example.com/auth``). Each ``{provider_id}`` names the configured
    providers the route serves (an ``enum``; a route that serves none of them is
    left out), and without ``WEBAUTH["bearer"]`` the ``/app/`` paths and the
    ``bearerAuth`` scheme are left out: those routes answer ``404`` then. So are
    sign-up's and the reset's routes while ``WEBAUTH["passwords"]`` leaves them
    off, the access tokens' routes without ``WEBAUTH["tokens"]``, and a tag no
    path left uses.
    """
    doc = load_description()
    doc["servers"] = [{"url": server_url, "description": "This site's webauth routes."}]
    paths: dict[str, Any] = {}
    for path, item in doc["paths"].items():
        if path.startswith(_APP_PREFIX) and not config.bearer:
            continue
        if not _feature_on(config, path):
            continue
        if "{provider_id}" in path:
            ids = [p.id for p in config.providers if _serves(path, p)]
            if not ids:
                continue
            item = _with_provider_ids(doc, item, ids)
        paths[path] = item
    doc["paths"] = paths
    used = {tag for item in paths.values() for op in item.values() for tag in _tags_of(op)}
    doc["tags"] = [tag for tag in doc["tags"] if tag["name"] in used]
    if not config.bearer:
        doc["components"]["securitySchemes"].pop("bearerAuth", None)
    return doc


def _tags_of(operation: object) -> list[str]:
    return list(operation.get("tags", ())) if isinstance(operation, dict) else []


def _feature_on(config: Config, path: str) -> bool:
    """Whether the webauth feature *path* belongs to is on: sign-up's and the reset's
    routes answer Auth.js's ``400 "Bad request."`` (the app ones ``404``) while off,
    the access tokens' ``404``."""
    name = path.removeprefix(_APP_PREFIX).strip("/").split("/", 1)[0]
    if name == "signup":
        return signup_routes.served(config)
    if name == "reset":
        return reset_routes.enabled(config)
    if path in _TOKEN_ROUTES:
        if path == "/token/ended":
            return config.tokens is not None and config.tokens.feed
        return config.tokens is not None
    return True


def _serves(path: str, provider: Provider) -> bool:
    """Whether the route of *path* serves *provider* (as its view and flow decide)."""
    if path.startswith(_APP_PREFIX):
        action = path[len(_APP_PREFIX) :].split("/", 1)[0]
        flow = flow_for(provider)
        if flow is None or not any(name == action for _, name, _ in flow.app_routes):
            return False
        if flow.app_needs_code:
            return getattr(provider, "code", None) is not None  # links only: no app sign-in
        if action == "idtoken":
            return bool(getattr(provider, "id_token", False))  # plain OAuth 2 has no ID token
        return True
    if path.startswith("/webauthn-options/"):
        flow = flow_for(provider)
        return flow is not None and flow.options is not None
    return True  # /signin/<id> and /callback/<id>: every provider has a flow


def _with_provider_ids(doc: dict[str, Any], item: dict[str, Any], ids: list[str]) -> dict[str, Any]:
    """*item* with its ``provider_id`` parameter (a component) inlined as an ``enum`` of *ids*."""
    prefix = "#/components/parameters/"
    for operation in item.values():
        parameters = []
        for parameter in operation.get("parameters", []):
            ref = parameter.get("$ref", "")
            if ref.startswith(prefix):
                shared = doc["components"]["parameters"][ref[len(prefix) :]]
                if shared["in"] == "path" and shared["name"] == "provider_id":
                    parameter = {k: v for k, v in shared.items() if k != "examples"}
                    parameter["schema"] = {"type": "string", "enum": ids}
            parameters.append(parameter)
        operation["parameters"] = parameters
    return item


@lru_cache(maxsize=32)
def _encoded(config: Config, server_url: str) -> bytes:
    # One encoding per configuration and site address, as GET /providers keeps
    # its answer: the address is a trusted origin (ALLOWED_HOSTS, or url/AUTH_URL),
    # and a rebuilt configuration is another key.
    return json_bytes(description(config, server_url))


def openapi_view(request: HttpRequest) -> HttpResponseBase:
    """``GET <base path>/openapi.json``: the description, with ``WEBAUTH["openapi"]`` on.

    Off, the path is answered as before, Auth.js's ``400 "Bad request."``. A
    method other than ``GET`` (or ``HEAD``) is ``405``; a misconfigured server
    (an untrusted host, invalid settings) the ``500`` JSON of the other routes.
    """
    try:
        config = get_config()
    except ImproperlyConfigured as exc:
        AuthLogger().error(exc)
        return json_response(_CONFIG_ERROR, status=500)
    if not config.openapi:
        return bad_request()
    if request.method not in ("GET", "HEAD"):
        return HttpResponseNotAllowed(["GET", "HEAD"])
    try:
        base_url = get_state(request, config).base_url
    except DisallowedHost:
        raise
    except Exception as exc:  # UntrustedHost: trust_host off without url
        config.logger.error(exc if isinstance(exc, AuthError) else AuthError(cause={"err": exc}))
        return json_response(_CONFIG_ERROR, status=500)
    return encoded_json_response(_encoded(config, base_url))


# Nothing here reads a cookie or changes anything: no CSRF check to make.
openapi_view.csrf_exempt = True  # type: ignore[attr-defined]
# A description of the sign-in routes must be readable without a session when a
# project turns on Django's LoginRequiredMiddleware.
openapi_view.login_required = False  # type: ignore[attr-defined]
