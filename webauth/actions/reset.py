"""The password reset's routes (``WEBAUTH["passwords"]["reset"]``).

The flow is :mod:`webauth.passwords.reset`.

A webauth addition (Auth.js has none). Off, every path answers as any path
Auth.js does not know: ``400 "Bad request."`` (:mod:`webauth.views` asks :func:`enabled`).

=================================  ================================================================
route                              what it does
=================================  ================================================================
``GET /auth/reset``                the form, one "Email or username" field (``webauth:reset``)
``POST /auth/reset``               mail a link and a code; ``302`` to ``/auth/reset/sent``
``GET /auth/reset/sent``           "check your email", with the code and new-password form
``GET /auth/reset/confirm``        the link: the new-password form in the browser that asked,
                                   elsewhere a page that says where to finish (nothing redeemed)
``POST /auth/reset/confirm``       the token or the code and the new password twice;
                                   ``302`` to ``/auth/reset/done``
``GET /auth/reset/done``           "your password has been changed", with a link to sign in
``POST /auth/app/reset``           an app asks: ``{"identifier"}`` -> ``{"sent", "resetToken"}``
``POST /auth/app/reset/confirm``   ``{"resetToken", "code" or "token", "password"}``
=================================  ================================================================

Each browser route is ``(state, provider_id) -> HttpResponse`` behind
:func:`webauth.views.auth_view` (Auth.js's double-submit CSRF token on every
``POST``); the app routes have their own view, :func:`app_reset_view`, which
answers as the other app routes do (docs/apps.md).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode

from django.contrib.auth.password_validation import password_validators_help_texts
from django.http import HttpResponse
from django.utils.translation import gettext as _

from ..challenges import page_context as challenge_context
from ..errors import ChallengeFailed, RateLimited
from ..flows import app
from ..flows.email import wrong_code_message
from ..pages import render_page
from ..passwords import reset
from ..passwords.reset import InvalidIdentifier, PasswordRefused, ResetExpired, Ticket, WrongCode
from ..responses import redirect
from .app import _answer, _app_route, _error_response, _json_body, _open_post

if TYPE_CHECKING:
    from django.http import HttpRequest, HttpResponseBase

    from ..state import AuthState

__all__ = [
    "app_reset_view",
    "ask",
    "ask_page",
    "confirm",
    "confirm_page",
    "done_page",
    "enabled",
    "sent_page",
]

#: Whether the routes exist (:mod:`webauth.views` and the app route ask).
enabled = reset.enabled


def _expired_form() -> str:
    return _("This form has expired. Please try again.")


def _page(
    state: AuthState, template: str, context: dict[str, object], status: int = 200
) -> HttpResponse:
    """One of the reset's pages (``private, no-store``; no ``Referer`` may carry a link)."""
    response = render_page(state, template, context, config=state.config, status=status)
    response["Referrer-Policy"] = "no-referrer"
    return response


def _signin_url(state: AuthState, callback_url: str) -> str:
    return state.page_url("signin", {"callbackUrl": callback_url}, raw=True)


def _ask_url(state: AuthState, callback_url: str = "") -> str:
    url = f"{state.base_url}/reset"
    if callback_url:
        url += "?" + urlencode({"callbackUrl": callback_url})
    return url


def _challenge(exc: ChallengeFailed) -> str:
    if exc.code == "missing":
        return _("Please complete the security check, then try again.")
    return _("The security check failed. Please try again.")


def _rate_limited(response: HttpResponse, exc: RateLimited) -> HttpResponse:
    response["Retry-After"] = str(max(1, exc.retry_after))
    return response


# -- asking ---------------------------------------------------------------------------------------


def _ask_form(
    state: AuthState,
    callback_url: str,
    *,
    value: str = "",
    error: str = "",
    message: str = "",
    status: int = 200,
) -> HttpResponse:
    return _page(
        state,
        "webauth/reset_request.html",
        {
            "action": f"{state.base_url}/reset",
            "csrf_token_value": state.csrf.token,
            "callback_url": callback_url,
            "value": value,
            "error": error,
            "message": message,
            "signin_url": _signin_url(state, callback_url),
            "challenge": challenge_context(state, ["reset"]),
        },
        status,
    )


def ask_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """``GET /auth/reset``: the form."""
    return _ask_form(state, state.callback_url)


def ask(state: AuthState, provider_id: str | None) -> HttpResponse:
    """``POST /auth/reset``: the same redirect (and cookie) whoever was asked for."""
    callback_url = state.callback_url
    typed = state.body.get("identifier")
    value = typed[: reset.MAX_IDENTIFIER_LENGTH] if isinstance(typed, str) else ""
    if not state.csrf_verified:
        return _ask_form(state, callback_url, value=value, message=_expired_form(), status=400)
    try:
        ticket = reset.ask(state, typed, callback_url, earlier=reset.earlier_links(state))
    except InvalidIdentifier as exc:
        state.config.logger.error(exc)
        return _ask_form(state, callback_url, value=value, error=exc.field_message, status=400)
    except RateLimited as exc:
        state.config.logger.error(exc)
        message = _("Too many attempts. Please wait a few minutes before you try again.")
        page = _ask_form(state, callback_url, value=value, message=message, status=429)
        return _rate_limited(page, exc)
    except ChallengeFailed as exc:
        state.config.logger.error(exc)
        return _ask_form(state, callback_url, value=value, message=_challenge(exc), status=400)
    response = redirect(f"{state.base_url}/reset/sent")
    reset.write_ticket(state, response, ticket)
    return response


# -- the code form --------------------------------------------------------------------------------


def _password_context(errors: dict[str, list[str]] | None = None) -> dict[str, object]:
    errors = errors or {}
    return {
        "password_help": password_validators_help_texts(),
        "password1_errors": errors.get("new_password1", []),
        "password2_errors": errors.get("new_password2", []),
        "password_max_length": reset.MAX_PASSWORD_LENGTH,
    }


def _sent(
    state: AuthState,
    ticket: Ticket | None,
    *,
    code_error: str = "",
    errors: dict[str, list[str]] | None = None,
    message: str = "",
    status: int = 200,
) -> HttpResponse:
    context: dict[str, object] = {"ask_url": _ask_url(state), "message": message}
    if ticket is not None:
        email = reset.grant_email(state.config)
        context.update(
            {
                "identifier": ticket.identifier,
                "action": f"{state.base_url}/reset/confirm",
                "csrf_token_value": state.csrf.token,
                "inputmode": "numeric" if email.code == "digits" else "text",
                "placeholder": "1234-5678" if email.code == "digits" else "ABCD-EFGH",
                "code_error": code_error,
                "signin_url": _signin_url(state, ticket.callback_url),
                **_password_context(errors),
            }
        )
    return _page(state, "webauth/reset_sent.html", context, status)


def sent_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """``GET /auth/reset/sent``: "check your email"; the form in the browser that asked."""
    return _sent(state, reset.read_ticket(state))


# -- the link -------------------------------------------------------------------------------------


def _choose(
    state: AuthState,
    token: str,
    *,
    errors: dict[str, list[str]] | None = None,
    message: str = "",
    status: int = 200,
) -> HttpResponse:
    """The form to choose the new password with the link's token (or a token of its own)."""
    return _page(
        state,
        "webauth/reset_confirm.html",
        {
            "action": f"{state.base_url}/reset/confirm",
            "csrf_token_value": state.csrf.token,
            "token": token,
            "message": message,
            **_password_context(errors),
        },
        status,
    )


def _not_redeemable(state: AuthState, token: object, *, status: int) -> HttpResponse:
    """A link this browser cannot use: no longer valid (it asked for it), or another browser's."""
    if reset.asked_for(state, token):
        return _page(state, "webauth/reset_invalid.html", {"ask_url": _ask_url(state)}, status)
    return _elsewhere(state, status=status)


def _elsewhere(state: AuthState, *, status: int) -> HttpResponse:
    return _page(state, "webauth/reset_elsewhere.html", {"ask_url": _ask_url(state)}, status)


def confirm_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """``GET /auth/reset/confirm?token=``: nothing looked up, nothing used.

    The pending cookie alone decides, which a mail scanner does not have.
    """
    token = state.query.get("token")
    ticket = reset.read_ticket(state)
    if ticket is not None and isinstance(token, str) and reset.is_current_link(ticket, token):
        return _choose(state, token)
    return _not_redeemable(state, token, status=200)


def confirm(state: AuthState, provider_id: str | None) -> HttpResponse:
    """``POST /auth/reset/confirm``: the token (or the code) and the new password twice."""
    body = state.body
    token = body.get("token")
    by_code = "code" in body and "token" not in body
    ticket = reset.read_ticket(state)
    if ticket is None:  # checked before anything is looked up or used
        if by_code:
            if reset.is_over(state):
                return _page(state, "webauth/reset_invalid.html", {"ask_url": _ask_url(state)}, 400)
            return _elsewhere(state, status=400)
        return _not_redeemable(state, token, status=400)
    if not by_code and not (isinstance(token, str) and reset.is_current_link(ticket, token)):
        return _not_redeemable(state, token, status=400)
    if not state.csrf_verified:
        if by_code:
            return _sent(state, ticket, message=_expired_form(), status=400)
        return _choose(state, str(token), message=_expired_form(), status=400)
    password1, password2 = body.get("new_password1"), body.get("new_password2")
    config = state.config
    try:
        if by_code:
            reset.redeem_code(state, ticket, body.get("code"), password1, password2)
        else:
            reset.redeem_link(state, ticket, str(token), password1, password2)
    except WrongCode as exc:
        config.logger.error(exc)
        response = _sent(state, exc.ticket, code_error=wrong_code_message(exc.left), status=400)
        reset.write_ticket(state, response, exc.ticket)
        return response
    except PasswordRefused as exc:
        config.logger.error(exc)
        if exc.token is not None and exc.ticket is not None:
            # The code was right and is used up: a token of this browser's own instead.
            response = _choose(state, exc.token, errors=exc.errors, status=400)
            reset.write_ticket(state, response, exc.ticket)
            return response
        if by_code:
            return _sent(state, ticket, errors=exc.errors, status=400)
        return _choose(state, str(token), errors=exc.errors, status=400)
    except ResetExpired as exc:
        config.logger.error(exc)
        response = _page(state, "webauth/reset_invalid.html", {"ask_url": _ask_url(state)}, 400)
        reset.write_used(state, response, ticket.callback_url, done=False)
        return response
    except RateLimited as exc:
        config.logger.error(exc)
        message = _("Too many attempts. Please wait a few minutes before you try again.")
        return _rate_limited(_sent(state, ticket, message=message, status=429), exc)
    response = redirect(f"{state.base_url}/reset/done")
    reset.write_used(state, response, ticket.callback_url, done=True)
    return response


def done_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """``GET /auth/reset/done``: in the browser that has just reset, the way to sign in."""
    callback_url = reset.read_used(state)
    if callback_url is None:
        return redirect(_ask_url(state))
    signin = _signin_url(state, state.redirect(callback_url) if callback_url else state.origin)
    return _page(state, "webauth/reset_done.html", {"signin_url": signin})


# -- the app routes -------------------------------------------------------------------------------


def _text(body: dict[str, object], name: str, max_length: int) -> str:
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise app.InvalidRequest(f"{name} must be a non-empty string")
    if len(value) > max_length:
        raise app.InvalidRequest(f"{name} is too long")
    return value


def _app_ask(state: AuthState, body: dict[str, object]) -> dict[str, object]:
    typed = _text(body, "identifier", 4 * reset.MAX_IDENTIFIER_LENGTH)
    try:
        ticket = reset.ask(state, typed, state.origin, params=body)
    except InvalidIdentifier as exc:
        raise app.InvalidRequest("identifier is not an email address or a username") from exc
    return {"sent": True, "resetToken": reset.seal(state.config, ticket)}


def _app_confirm(state: AuthState, body: dict[str, object]) -> dict[str, object]:
    sealed = _text(body, "resetToken", 8192)
    password = _text(body, "password", reset.MAX_PASSWORD_LENGTH)
    has_code, has_token = "code" in body, "token" in body
    if has_code == has_token:
        raise app.InvalidRequest("send either code or token")
    secret = _text(body, "code" if has_code else "token", 512)
    ticket = reset.unseal(state.config, sealed)
    if ticket is None:
        raise ResetExpired("The resetToken is unknown, used or expired")
    if has_code:
        reset.redeem_code(state, ticket, secret, password, password)
    elif reset.is_current_link(ticket, secret):
        reset.redeem_link(state, ticket, secret, password, password)
    else:
        raise ResetExpired("The token is not this resetToken's")
    return {"reset": True}


def app_reset_view(request: HttpRequest, action: str) -> HttpResponseBase:
    """``POST /auth/app/reset`` and ``/auth/app/reset/confirm`` (``webauth.urls``: ``app-reset``,
    ``app-reset-confirm``): JSON in and out, no cookies, with ``bearer`` and the reset on.

    A refused password: ``400 {"error": "InvalidPassword", "messages": [...]}``;
    when the code was right and is used up, with ``token`` and a new
    ``resetToken`` to send the next password with.
    """
    state = _open_post(request, reset.enabled)
    if isinstance(state, HttpResponse):
        return state
    config = state.config
    try:
        body = _json_body(request)
        answer = _app_ask(state, body) if action == "reset" else _app_confirm(state, body)
    except PasswordRefused as exc:
        config.logger.error(exc)
        refused: dict[str, Any] = {"error": "InvalidPassword", "messages": exc.messages}
        if exc.token is not None and exc.ticket is not None:
            refused.update({"token": exc.token, "resetToken": reset.seal(config, exc.ticket)})
        return _answer(refused, 400)
    except Exception as exc:  # a wrong code and a void grant alike: 401 Verification
        return _error_response(config, exc)
    return _answer(answer, 200)


_app_route(app_reset_view)  # as the other app routes: no CSRF token, no session needed
