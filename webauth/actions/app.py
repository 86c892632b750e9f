"""The app sign-in routes under ``/auth/app/``: JSON in and out, no cookies (docs/apps.md).

Served only with ``WEBAUTH["bearer"]`` on (``404`` otherwise), since the
session token they answer is only usable as a bearer token:

============================================  =============================================
route                                         flow (:mod:`webauth.flows.app`)
============================================  =============================================
``POST /auth/app/signin/<credentials id>``    ``credentials_sign_in``
``POST /auth/app/signin/<email id>``          ``email_request``
``POST /auth/app/callback/<email id>``        ``email_redeem``
``GET /auth/app/webauthn-options/<id>``       ``passkey_options``
``POST /auth/app/callback/<webauthn id>``     ``passkey_verify``
``POST /auth/app/idtoken/<oauth id>``         ``id_token_sign_in``
``POST /auth/app/authorize/<oauth id>``       ``authorize``
``POST /auth/app/token/<oauth id>``           ``token``
``POST /auth/app/mfa``                        the second factor (:func:`app_mfa_view`)
============================================  =============================================

:func:`app_view` reads the request without its cookies (a single-page app on
the site's own origin sends them along): the only session it knows is the one
in an ``Authorization: Bearer`` header, which lets a signed-in app add a
passkey or link a provider as a signed-in browser does. A ``POST`` must carry
a JSON object. Every failure is ``{"error": <type>}``: ``400`` for a malformed
request, ``401`` for a refused sign-in, ``404`` for an unknown provider or
route, ``405`` for another method, ``429`` (with ``Retry-After``) beyond a rate
limit, ``500`` ``{"error": "Configuration"}`` for the server's own problems only.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from typing import Any

from django.conf import settings
from django.core.exceptions import RequestDataTooBig
from django.http import HttpRequest, HttpResponse, HttpResponseBase

from .. import ratelimit
from ..conf import Config
from ..errors import (
    AuthError,
    ChallengeFailed,
    CredentialsSignin,
    InvalidProvider,
    RateLimited,
    UnknownAction,
)
from ..flows import AppFlowFunction, app, app_routes
from ..flows.email import InvalidEmail
from ..flows.render import for_app
from ..flows.webauthn import UnknownCredential
from ..mfa.verify import key_options, prove
from ..responses import json_response
from ..state import AuthState
from ..utils import own_transactions
from .preamble import Unconfigured, load_config, open_state

__all__ = ["APP_ROUTES", "app_mfa_view", "app_view"]

#: ``(method, action)`` -> provider type -> the flow that answers it: made once
#: from each kind's ``app_routes`` (:data:`webauth.flows.FLOWS`).
APP_ROUTES: Mapping[tuple[str, str], Mapping[str, AppFlowFunction]] = app_routes()

#: The status of each error type an app may get; any other is the server's (500).
_STATUS = {
    app.InvalidRequest.type: 400,
    "CredentialsSignin": 401,
    "AccessDenied": 401,
    "Verification": 401,
    "WebAuthnVerificationError": 401,
    "InvalidCheck": 401,
    "CallbackRouteError": 401,
    "OAuthCallbackError": 401,
    "OAuthAccountNotLinked": 401,
    "AccountNotLinked": 401,
    "OAuthProfileParseError": 401,
    "SecondFactorFailed": 401,
    "SecondFactorExpired": 401,
    "ChallengeFailed": 400,
    "InvalidProvider": 404,
    "UnknownAction": 404,
    "ExperimentalFeatureNotEnabled": 404,
}


def app_view(request: HttpRequest, action: str, provider_id: str) -> HttpResponseBase:
    """Serve the app sign-in routes (``webauth.urls`` names them ``app-<action>``)."""
    try:
        config = load_config()
    except Unconfigured:
        return _answer({"error": "Configuration"}, 500)
    if not config.bearer:
        return _answer({"error": UnknownAction.type}, 404)
    flows = APP_ROUTES.get((request.method or "", action))
    if flows is None:
        # As the bearer session's routes answer another method.
        return _wrong_method(", ".join(method for method, name in APP_ROUTES if name == action))
    try:
        state = open_state(request, config, "app")
    except Unconfigured:
        return _answer({"error": "Configuration"}, 500)
    try:
        provider = config.get_provider(provider_id)
        flow = flows.get(provider.type) if provider is not None else None
        if provider is None or flow is None:
            raise InvalidProvider(f"No app {action} for provider {provider_id[:100]!r}")
        params = _json_body(request) if request.method == "POST" else state.query
        answer = flow(state, provider, params)
    except Exception as exc:
        return _error_response(config, exc)
    return _answer(answer, 200)


def _app_route(view: Any) -> None:
    # webauth's app routes are called with a JSON body and no cookie, so no CSRF
    # token: a browser cannot send a cross-site JSON POST without a CORS preflight,
    # and nothing here acts on a cookie or sets one (as Django's csrf_exempt).
    view.csrf_exempt = True
    # Reachable without a session when a project turns on LoginRequiredMiddleware.
    view.login_required = False
    # Never inside ATOMIC_REQUESTS' transaction: webauth's own are outermost
    # (utils.own_transactions).
    own_transactions(view)


_app_route(app_view)


def _open_post(request: HttpRequest, enabled: Callable[[Config], bool]) -> AuthState | HttpResponse:
    """The start of an app route that takes a JSON ``POST``: its state, or the answer.

    Refused: a site that cannot be configured (500), without ``bearer`` or
    where *enabled* says the route is off (404 ``UnknownAction``), another method (405).
    """
    try:
        config = load_config()
    except Unconfigured:
        return _answer({"error": "Configuration"}, 500)
    if not config.bearer or not enabled(config):
        return _answer({"error": UnknownAction.type}, 404)
    if request.method != "POST":
        return _wrong_method("POST")
    try:
        return open_state(request, config, "app")
    except Unconfigured:
        return _answer({"error": "Configuration"}, 500)


def app_mfa_view(request: HttpRequest) -> HttpResponseBase:
    """``POST /auth/app/mfa``: ``{"mfaToken", "code"}`` -> the session token, once the code fits.

    ``mfaToken`` is what a sign-in route answered for a user with a second
    factor (``{"step": "second_factor", "mfaToken", "methods", "expiresIn"}``).
    With ``"webauthn"`` among the methods, ``{"mfaToken", "action":
    "webauthn-options"}`` answers ``{"options": ...}`` for the platform's
    WebAuthn API, and ``{"mfaToken", "credential"}`` (its answer as JSON) takes
    the place of the code.
    A wrong code: ``401 {"error": "SecondFactorFailed"}`` (try again); no
    sign-in waits any more (expired, used, too many wrong codes):
    ``401 {"error": "SecondFactorExpired"}`` (sign in again).
    """
    state = _open_post(request, lambda config: config.mfa.enabled)
    if isinstance(state, HttpResponse):
        return state
    config = state.config
    try:
        body = _json_body(request)
        if body.get("action") == "webauthn-options":
            return _answer({"options": key_options(state, body.get("mfaToken"))}, 200)
        credential = body.get("credential") or None
        proven = prove(state, body.get("mfaToken"), body.get("code"), "app", credential=credential)
        answer = for_app(state, proven.outcome)
        if proven.recovery_codes is not None:  # the first key, added under mfa.required
            answer = {**answer, "recoveryCodes": proven.recovery_codes}
    except Exception as exc:
        return _error_response(config, exc)
    return _answer(answer, 200)


_app_route(app_mfa_view)


def _json_body(request: HttpRequest) -> dict[str, object]:
    """The body as a JSON object; :class:`~webauth.flows.app.InvalidRequest` otherwise."""
    content_type = request.content_type or ""
    if content_type != "application/json" and not content_type.endswith("+json"):
        raise app.InvalidRequest("the body must be JSON (Content-Type: application/json)")
    try:
        data = json.loads(request.body or b"null")
    except RequestDataTooBig:
        raise app.InvalidRequest("the body is too large") from None
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise app.InvalidRequest("the body is not valid JSON") from None
    if not isinstance(data, dict):
        raise app.InvalidRequest("the body must be a JSON object")
    # The limit Django puts on a form's fields, for the same reason.
    most = settings.DATA_UPLOAD_MAX_NUMBER_FIELDS
    if most is not None and len(data) > most:
        raise app.InvalidRequest("the body has too many fields")
    return data


def _wrong_method(allowed: str) -> HttpResponse:
    """``405 {"error": "UnknownAction"}`` with ``Allow``."""
    response = _answer({"error": UnknownAction.type}, 405)
    response["Allow"] = allowed
    return response


def _answer(data: Any, status: int) -> HttpResponse:
    # Token answers and errors alike: never stored by a cache (RFC 6749 5.1).
    return json_response(data, status=status, no_cache=True)


def _error_response(config: Config, exc: BaseException) -> HttpResponse:
    """Log *exc* and answer its type with its status (the server's own errors: 500)."""
    error = exc if isinstance(exc, AuthError) else AuthError(str(exc), cause={"err": exc})
    config.logger.error(error)
    if isinstance(error, RateLimited):
        return ratelimit.limited_response(max(1, error.retry_after))
    status = _STATUS.get(error.type)
    body: dict[str, object] = {"error": error.type}
    if isinstance(error, InvalidEmail):
        status = 400
        body["code"] = error.code
    elif isinstance(error, app.InvalidRequest):
        body["message"] = error.message
    elif isinstance(error, CredentialsSignin):
        body["code"] = error.code
    elif isinstance(error, ChallengeFailed):
        body["code"] = error.code
        body["challenge"] = dict(error.challenge)
    elif isinstance(error, app.SignInRedirected):
        body["url"] = error.url
    elif isinstance(error, UnknownCredential):
        body["unknownCredential"] = {"rpId": error.rp_id, "credentialId": error.credential_id}
    if status is None:
        # The email could not be sent, discovery failed, a misconfiguration: say
        # which of Auth.js's types it is only when the client can act on it.
        kind = error.type if error.type == "EmailSignInError" else "Configuration"
        return _answer({"error": kind}, 500)
    return _answer(body, status)
