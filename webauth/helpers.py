"""Python helpers for views: read the session, sign in, sign out.

Each has an ``a``-prefixed twin for async views, as ``django.contrib.auth`` does.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode

from asgiref.sync import sync_to_async
from django.http import HttpRequest, HttpResponseBase, HttpResponseRedirect, JsonResponse

from . import cookies as ck
from .conf import get_config
from .errors import AuthError, CredentialsSignin
from .forms import FormResult, SignInForm, SignOutForm

__all__ = [
    "aget_session",
    "asign_in",
    "asign_out",
    "get_session",
    "get_token",
    "session_required_response",
    "sign_in",
    "sign_out",
    "signin_url",
    "wants_json",
]


def get_session(request: HttpRequest) -> Any:
    """The session (as ``GET /auth/session`` returns it) or ``None``."""
    from .middleware import get_request_auth

    return get_request_auth(request).session


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
    from urllib.parse import unquote

    from .sessions import decode_token

    config = get_config()
    if secure_cookie is None:
        # The cookie webauth itself set: use_secure_cookies / AUTH_URL / the request's scheme.
        from .middleware import get_request_auth

        secure = get_request_auth(request).secure
    else:
        secure = secure_cookie
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


def signin_url(
    request: HttpRequest, *, callback_url: str | None = None, error: str | None = None
) -> str:
    """URL of the sign-in page (``pages.sign_in`` if set) with ``callbackUrl``."""
    config = get_config()
    page = config.pages.sign_in or f"{config.base_path}/signin"
    params = {}
    if callback_url is not None:
        params["callbackUrl"] = callback_url
    if error is not None:
        params["error"] = error
    if not params:
        return page
    return page + ("&" if "?" in page else "?") + urlencode(params)


def wants_json(request: HttpRequest) -> bool:
    """Whether the client asked for JSON (``Accept`` prefers it, or an XHR) rather than a page."""
    if request.headers.get("X-Requested-With") == "XMLHttpRequest":
        return True
    accept = request.headers.get("Accept", "")
    if "application/json" not in accept:
        return False
    return request.get_preferred_type(["text/html", "application/json"]) == "application/json"


def session_required_response(
    request: HttpRequest, redirect_to: str | None = None
) -> HttpResponseBase:
    """The answer to a request that needs a session and has none.

    ``401 {"error": "SessionRequired"}`` for a client that asked for JSON, else a
    redirect to *redirect_to* or to the sign-in page with ``callbackUrl`` set to
    the page that was asked for. ``@auth_required`` and ``protected_paths`` use it.
    """
    if wants_json(request):
        return JsonResponse({"error": "SessionRequired"}, status=401)
    if redirect_to is not None:
        return HttpResponseRedirect(redirect_to)
    return HttpResponseRedirect(signin_url(request, callback_url=request.get_full_path()))


def _context(request: HttpRequest, body: Mapping[str, Any]) -> Any:
    from .context import AuthContext

    return AuthContext(request, get_config(), body=body)


def sign_in(
    request: HttpRequest,
    provider_id: str,
    redirect_to: str | None = None,
    options: Mapping[str, Any] | None = None,
    authorization_params: str | Mapping[str, str] | None = None,
) -> HttpResponseBase | FormResult:
    """Sign in from a view: returns a redirect response, or a failed :class:`FormResult`.

    For a credentials provider, ``options`` holds the submitted fields and the user is
    signed in at once (the response carries the session cookie). For redirect-based
    providers the response goes to the provider. CSRF is the calling view's job here
    (Django's ``CsrfViewMiddleware`` protects it), as for Auth.js's server actions.
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
    body = {**opts, "callbackUrl": target}
    config = get_config()
    provider = config.get_provider(data["provider_id"])
    try:
        ctx = _context(request, body)
        from .actions.callback import credentials_callback
        from .providers.credentials import Credentials

        if isinstance(provider, Credentials):
            return credentials_callback(ctx, provider, body)
        start = getattr(provider, "start_sign_in", None)
        if start is None:
            return FormResult.failure(str(_("This provider cannot be started from a view.")))
        # Only these reach the provider, never the calling page's own query string.
        ctx.query = dict(data["authorization_params"])
        response = start(ctx)
        # Where to land after the provider's round trip, as the sign-in route remembers it.
        callback_url = ctx.callback_url
        if callback_url != ctx.callback_url_cookie:
            ck.set_cookie(response, ctx.cookies["callback_url"], callback_url)
        return response
    except CredentialsSignin as exc:
        config.logger.error(exc)
        from .pages import SIGNIN_ERRORS

        return FormResult.failure(str(SIGNIN_ERRORS["CredentialsSignin"]), exc)
    except AuthError as exc:
        config.logger.error(exc)
        from .pages import SIGNIN_ERRORS

        return FormResult.failure(str(SIGNIN_ERRORS["default"]), exc)


def sign_out(request: HttpRequest, redirect_to: str | None = None) -> HttpResponseBase | FormResult:
    """Sign out from a view: a redirect that deletes the session cookie, or a failure."""
    form = SignOutForm({"redirect_to": redirect_to or ""})
    if not form.is_valid():
        return FormResult.from_form(form)
    from .actions.signout import signout
    from .csrf import CsrfState

    ctx = _context(request, {"callbackUrl": form.cleaned_data["redirect_to"] or "/"})
    ctx.__dict__["csrf"] = CsrfState(token="", cookie=None, verified=True)
    try:
        return signout(ctx)
    except AuthError as exc:
        get_config().logger.error(exc)
        return FormResult.failure(str(exc), exc)


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


def _(message: str) -> str:
    from django.utils.translation import gettext

    return gettext(message)
