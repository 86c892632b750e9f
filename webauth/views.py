"""The view behind ``include("webauth.urls")``: the one place every route passes.

It parses ``<action>[/<provider>]`` as Auth.js does, takes the request's
:class:`~webauth.state.AuthState`, checks what every route needs (a secret, a
trusted host), runs the route's function from
:data:`ROUTES`, adds the CSRF and callback-URL cookies, and turns errors into
Auth.js's redirects. A reader can follow any route from here into its module
under ``webauth/actions/``.
"""

from __future__ import annotations

from collections.abc import Callable
from urllib.parse import urlencode

from django.http import HttpRequest, HttpResponse, HttpResponseBase

from .actions import (
    callback,
    csrf,
    mfa,
    pages,
    providers,
    reset,
    session,
    signin,
    signout,
    signup,
    webauthn,
)
from .actions.preamble import Unconfigured, open_state
from .clients import RETURN_REDIRECT, returns_redirect
from .conf import Config
from .errors import (
    AuthError,
    CredentialsSignin,
    ErrorPageLoop,
    UnknownAction,
    error_type_for_url,
    is_sign_in_error,
)
from .pages import render_error_page
from .responses import bad_request, json_response, redirect
from .state import AuthState
from .utils import own_transactions

__all__ = ["ACTIONS", "auth_view", "parse_route"]

ACTIONS = frozenset(
    {
        "providers",
        "session",
        "csrf",
        "signin",
        "signout",
        "callback",
        "verify-request",
        "error",
        "webauthn-options",
        # webauth's own: the second factor of a held sign-in
        "mfa",
        # webauth's own: sign-up with a password (WEBAUTH["passwords"]["signup"])
        "signup",
    }
)
_WITH_PROVIDER = frozenset({"signin", "callback", "webauthn-options"})
_PAGE_ACTIONS = frozenset({"signin", "signout", "error", "verify-request"})

Handler = Callable[[AuthState, str | None], HttpResponse]

ROUTES: dict[tuple[str, str], Handler] = {
    ("GET", "session"): session.session,
    ("POST", "session"): session.session,
    ("GET", "csrf"): csrf.csrf,
    ("GET", "providers"): providers.providers,
    ("GET", "signin"): signin.signin_page,
    ("POST", "signin"): signin.signin,
    ("GET", "callback"): callback.callback,
    ("POST", "callback"): callback.callback,
    ("GET", "signout"): signout.signout_page,
    ("POST", "signout"): signout.signout,
    ("GET", "verify-request"): pages.verify_request_page,
    ("GET", "error"): pages.error_page,
    ("GET", "webauthn-options"): webauthn.webauthn_options,
    # webauth's: the second factor of a held sign-in (webauth.mfa)
    ("GET", "mfa"): mfa.mfa_page,
    ("POST", "mfa"): mfa.mfa_verify,
    # webauth's: sign-up with a password (webauth.passwords.signup)
    ("GET", "signup"): signup.signup_page,
    ("POST", "signup"): signup.signup,
    # webauth's: the password reset (webauth.passwords.reset), each with a named
    # pattern of webauth.urls; while WEBAUTH["passwords"]["reset"] is off, Auth.js's 400
    ("GET", "reset"): reset.ask_page,
    ("POST", "reset"): reset.ask,
    ("GET", "reset-sent"): reset.sent_page,
    ("GET", "reset-confirm"): reset.confirm_page,
    ("POST", "reset-confirm"): reset.confirm,
    ("GET", "reset-done"): reset.done_page,
}

#: The password reset's actions (``ROUTES``), served only while it is on.
RESET_ACTIONS = frozenset({"reset", "reset-sent", "reset-confirm", "reset-done"})

CONFIG_ERROR_MESSAGE = (
    "There was a problem with the server configuration. Check the server logs for more information."
)


def parse_route(rest: str) -> tuple[str, str | None] | None:
    """``"signin/github/"`` -> ``("signin", "github")``; ``None`` when not a route."""
    parts = [p for p in rest.split("/") if p]
    if not 1 <= len(parts) <= 2 or parts[0] not in ACTIONS:
        return None
    provider_id = parts[1] if len(parts) == 2 else None
    if provider_id is not None and parts[0] not in _WITH_PROVIDER:
        return None
    if provider_id == "undefined":
        provider_id = None
    return parts[0], provider_id


def auth_view(
    request: HttpRequest,
    rest: str = "",
    action: str | None = None,
    provider_id: str | None = None,
) -> HttpResponseBase:
    """Serve every webauth route."""
    if request.method not in ("GET", "POST"):
        return bad_request()
    if action is not None:
        # A named pattern of webauth.urls: the action is known and provider_id is a
        # single path segment, so only Auth.js's "undefined" quirk is left to apply.
        if provider_id == "undefined":
            provider_id = None
    else:
        route = parse_route(rest)
        if route is None:
            return bad_request()
        action, provider_id = route
    try:
        state = open_state(request, None, "cookie")
        # No check of the query's and the cookie's callbackUrl here, unlike Auth.js:
        # an unusable one is replaced by the origin (AuthState.callback_url), so a
        # planted cookie or a crafted link cannot make every route answer 500.
    except Unconfigured as exc:
        return _config_error_response(request, action, exc.config)

    handler = ROUTES.get((request.method, action))
    if action == "signup" and not signup.served(state.config):
        return bad_request()  # as Auth.js answers a route it does not have
    if action in RESET_ACTIONS and not reset.enabled(state.config):
        return bad_request()  # the same for the password reset's routes
    if request.method == "GET" and action == "signin" and provider_id is not None:
        handler = None  # Auth.js has no GET /signin/<provider>
    try:
        if handler is None:
            raise UnknownAction(_unsupported(state, request.method, action, provider_id))
        response: HttpResponseBase = handler(state, provider_id)
    except Exception as exc:
        return _error_response(state, action, exc)
    if action != "providers":
        state.add_standard_cookies(response)
    return _return_redirect(request, response)


# webauth checks its own double-submit token (Auth.js's), per route. Set as
# Django's csrf_exempt would, without its wrapper: one call less per request.
auth_view.csrf_exempt = True  # type: ignore[attr-defined]
# The sign-in pages must be reachable without a session when a project turns on
# Django's LoginRequiredMiddleware (what @login_not_required sets, without a wrapper).
auth_view.login_required = False  # type: ignore[attr-defined]
# Never inside ATOMIC_REQUESTS' transaction: webauth's own are outermost (utils.own_transactions).
own_transactions(auth_view)


def _unsupported(state: AuthState, method: str, action: str, provider_id: str | None) -> str:
    """The log message of a route the URL asks for and webauth does not serve.

    Names the provider id from the URL (quoted and cut: it is anyone's text)
    and whether the configuration has such a provider.
    """
    message = f"Unsupported action {method} {action}"
    if provider_id is not None:
        known = state.config.get_provider(provider_id) is not None
        message += f" with provider {provider_id[:100]!r}"
        if not known:
            message += " (no provider has this id)"
        elif method == "GET" and action == "signin":
            message += " (a sign-in with a provider starts with a POST from the sign-in page)"
    return message


def _return_redirect(request: HttpRequest, response: HttpResponseBase) -> HttpResponseBase:
    # Clients that cannot follow redirects themselves (fetch from next-auth/react and
    # friends) send X-Auth-Return-Redirect: answer 200 {"url": ...} keeping the cookies.
    if RETURN_REDIRECT in request.META and response.has_header("Location"):  # returns_redirect
        answer = json_response({"url": response["Location"]})
        answer["Location"] = response["Location"]
        answer.cookies = response.cookies
        return answer
    return response


def _error_response(state: AuthState, action: str, exc: BaseException) -> HttpResponseBase:
    """Log *exc* and send the user where Auth.js sends them (no cookies, as Auth.js)."""
    error = exc if isinstance(exc, AuthError) else AuthError(str(exc), cause={"err": exc})
    state.config.logger.error(error)
    request = state.request
    if action == "session" and request.method == "POST":
        return json_response(None, status=400)
    error_type = error_type_for_url(error)
    if is_sign_in_error(error):
        params = {"error": error_type}
        if isinstance(error, CredentialsSignin):
            params["code"] = error.code
        url = state.page_url("signin", params)
    else:
        url = state.page_url("error", {"error": error_type})
    if returns_redirect(request):
        return json_response({"url": url})
    return redirect(url)


def _config_error_response(
    request: HttpRequest, action: str, config: Config | None
) -> HttpResponseBase:
    """A failed configuration assertion: an error page for page routes, else 500 JSON."""
    if request.method == "GET" and action in _PAGE_ACTIONS:
        error_page = config.pages.error if config is not None else None
        if config is not None and error_page:
            callback_url = request.GET.get("callbackUrl", "")
            if callback_url.startswith(error_page):
                config.logger.error(
                    ErrorPageLoop(f"The error page {error_page} should not require authentication")
                )
            else:
                # As Auth.js: the configured page joined to the request's origin.
                if error_page.startswith("/"):
                    error_page = request.build_absolute_uri(error_page)
                return redirect(f"{error_page}?{urlencode({'error': 'Configuration'})}")
        return render_error_page(None, "Configuration", config=config or Config())
    return json_response({"message": CONFIG_ERROR_MESSAGE}, status=500)
