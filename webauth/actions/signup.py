"""``GET``/``POST /auth/signup`` and ``POST /auth/app/signup``: sign-up with a password.

A webauth route (Auth.js has no sign-up), served with ``WEBAUTH["passwords"]["signup"]``
and a ``DjangoCredentials`` provider (Auth.js's ``400 "Bad request."`` otherwise).
The flow is :mod:`webauth.passwords.signup`; this module reads the request and
answers it:

* ``GET``: the form (``webauth/signup.html``); with the email's link
  (``?token=...&email=...``), in the browser that signed up, a page with one
  button that finishes (``signup_confirm.html``), in any other the
  "finish where you started" page (``signup_elsewhere.html``).
* ``POST`` (CSRF required, Auth.js's double-submit token): the form; then
  ``code`` (the code from the email) or ``token`` (the confirmation page's
  button) finish. The answer to the form is "check your email"
  (``signup_sent.html``), the same whether or not the address or username is
  taken, or with ``verify_email=False`` the new session.

The app route takes the same form as JSON and answers ``{"step":
"verify_email", "signupToken", "expiresIn"}``; ``{"signupToken", "code"}``
then answers the session token as the app sign-in routes do (docs/apps.md).
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.contrib.auth import get_user_model, password_validation
from django.http import HttpResponse
from django.utils.translation import gettext as _
from django.utils.translation import ngettext

from ..challenges import page_context as challenge_context
from ..errors import AuthError, ChallengeFailed, MissingCSRF, RateLimited, Verification
from ..flows.app import InvalidRequest
from ..flows.render import for_app, for_browser
from ..pages import render_page
from ..passwords import signup as flow
from ..passwords.forms import signup_form_class
from ..ratelimit import limited_response
from ..responses import bad_request
from .app import _answer, _app_route, _error_response, _json_body, _open_post

if TYPE_CHECKING:
    from django.forms import BaseForm
    from django.http import HttpRequest, HttpResponseBase

    from ..conf import Config
    from ..state import AuthState

__all__ = ["app_signup_view", "served", "signup", "signup_page"]

#: The ``data-error`` of the page's messages.
EXPIRED = "SignupExpired"
TAKEN = "SignupTaken"
LIMITED = "RateLimited"
WRONG_CODE = "Verification"
CHALLENGE_MISSING = "ChallengeMissing"


def _messages() -> dict[str, str]:
    return {
        EXPIRED: _("This sign-up has expired or is finished already. Start again, or sign in."),
        TAKEN: _(
            "An account with this email address exists already. Sign in, or reset your "
            "password from the sign-in page."
        ),
        LIMITED: _("Too many attempts. Please wait a few minutes before you try again."),
        ChallengeFailed.type: _("The security check failed. Please try again."),
        CHALLENGE_MISSING: _("Please complete the security check, then try again."),
    }


def served(config: Config) -> bool:
    """Whether ``/auth/signup`` is served (else it is Auth.js's ``400``, as before)."""
    return flow.enabled(config)


# -- the pages ----------------------------------------------------------------------------------


def _fields(form: BaseForm) -> list[dict[str, object]]:
    """Each field of *form* as the page shows it: label, widget, hints, its error."""
    out: list[dict[str, object]] = []
    password_hints = password_validation.password_validators_help_texts()
    first = True
    for bound in form:
        if bound.is_hidden:
            continue
        hints = list(password_hints) if bound.name == "password1" else []
        if bound.help_text and bound.name != "password1":
            hints.append(str(bound.help_text))
        ids = []
        hint_id = f"{bound.auto_id}_hint"
        error_id = f"{bound.auto_id}_error"
        if hints:
            ids.append(hint_id)
        errors = list(bound.errors)
        if errors:
            ids.append(error_id)
        attrs: dict[str, Any] = {"class": "webauth-input"}
        if ids:
            attrs["aria-describedby"] = " ".join(ids)
        if errors:
            attrs["aria-invalid"] = "true"
        if first and (errors or not form.errors):
            attrs["autofocus"] = True
            first = False
        elif errors and first:
            first = False
        out.append(
            {
                "name": bound.name,
                "label": bound.label,
                "id": bound.id_for_label,
                "widget": bound.as_widget(attrs=attrs),
                "hints": hints,
                "hint_id": hint_id,
                "error": " ".join(str(e) for e in errors),
                "error_id": error_id,
            }
        )
    return out


def _form_page(
    state: AuthState,
    form: BaseForm | None = None,
    *,
    error: str | None = None,
    status: int = 200,
    callback_url: str | None = None,
) -> HttpResponse:
    if form is None:
        form = signup_form_class(state.config.passwords.signup_form)()
    message = _messages().get(error or "")
    non_field = " ".join(str(e) for e in form.non_field_errors())
    return render_page(
        state,
        "webauth/signup.html",
        {
            "action": f"{state.base_url}/signup",
            "csrf_token_value": state.form_csrf_token(),
            "callback_url": callback_url or state.callback_url,
            "fields": _fields(form),
            "error": error or ("SignupInvalid" if non_field else None),
            "message": message or non_field or None,
            "signin_url": state.page_url("signin", raw=True),
            "challenge": challenge_context(state, ["signup"]),
        },
        config=state.config,
        status=status,
    )


def _sent_page(
    state: AuthState,
    waiting: flow.Waiting,
    *,
    code_error: str | None = None,
    status: int = 200,
) -> HttpResponse:
    held = waiting.held
    response = render_page(
        state,
        "webauth/signup_sent.html",
        {
            "identifier": waiting.identifier,
            "code_form": waiting.code,
            "action": f"{state.base_url}/signup",
            "csrf_token_value": state.form_csrf_token(),
            "code_error": code_error,
            "signup_url": f"{state.base_url}/signup",
            "signin_url": state.page_url("signin", raw=True),
        },
        config=state.config,
        status=status,
    )
    if held is not None:
        flow.write_pending(state, response, held)
    _private(response)
    return response


def _private(response: HttpResponseBase) -> None:
    # The link's URL holds the token: no Referer carries it to another site.
    response["Referrer-Policy"] = "no-referrer"


def _elsewhere(state: AuthState, status: int) -> HttpResponse:
    response = render_page(
        state,
        "webauth/signup_elsewhere.html",
        {"signin_url": state.page_url("signin", raw=True)},
        config=state.config,
        status=status,
    )
    _private(response)
    return response


def _taken_page(state: AuthState, taken: flow.Taken) -> HttpResponse:
    """After the address was proven: an account has it, or the username went meanwhile."""
    if taken.field is None or taken.held is None:
        response = _form_page(state, error=TAKEN, status=409)
    else:
        form_class = signup_form_class(state.config.passwords.signup_form)
        initial = {k: v for k, v in taken.held.fields.items() if k != "password" and v}
        form = form_class(data=initial)
        form.is_valid()
        form.errors.clear()
        name = taken.field if taken.field in form.fields else None
        form.add_error(name, _("This username is taken. Choose another one."))
        response = _form_page(state, form, status=409, callback_url=taken.held.callback_url)
    flow.forget_pending(state, response)
    return response


def _redeemed(state: AuthState, redeemed: flow.Redeemed) -> HttpResponse:
    response = for_browser(state, redeemed.outcome, redeemed.callback_url)
    flow.forget_pending(state, response)
    return response


def signup_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The form; or the email's link: finish here (one button), or where it was asked."""
    if not flow.enabled(state.config):
        return bad_request()
    if "token" in state.query:
        held = flow.read_pending(state)
        if not flow.open_link(held, state.query):
            return _elsewhere(state, 200)
        assert held is not None
        response = render_page(
            state,
            "webauth/signup_confirm.html",
            {
                "action": f"{state.base_url}/signup",
                "csrf_token_value": state.form_csrf_token(),
                "token": state.query["token"],
                "identifier": held.identifier,
            },
            config=state.config,
        )
        _private(response)
        return response
    return _form_page(state)


def signup(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The form, the code or the confirmation's button (CSRF required)."""
    if not flow.enabled(state.config):
        return bad_request()
    if not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action signup")
    body = state.body
    if "token" in body or "code" in body:
        return _finish(state, body)
    try:
        submitted = flow.submit(state, body, state.callback_url)
    except RateLimited as exc:  # code_failed is not asked here; kept for a project's hooks
        return _limited(state, exc)
    except ChallengeFailed as exc:
        state.config.logger.error(exc)
        error = CHALLENGE_MISSING if exc.code == "missing" else exc.type
        return _form_page(state, _typed_form(state, body), error=error, status=400)
    if isinstance(submitted, flow.Invalid):
        if submitted.limited is not None:
            return _limited(state, submitted.limited, submitted.form)
        return _form_page(state, submitted.form, status=400)
    if isinstance(submitted, flow.Waiting):
        return _sent_page(state, submitted)
    return _redeemed(state, submitted)


def _typed_form(state: AuthState, body: Mapping[str, Any]) -> BaseForm:
    """The form again with what was typed, bar the passwords, and no errors shown."""
    form_class = signup_form_class(state.config.passwords.signup_form)
    kept = {k: v for k, v in body.items() if isinstance(v, str) and "password" not in k}
    form = form_class(data=kept)
    form.is_valid()
    form.errors.clear()
    return form


def _limited(state: AuthState, exc: RateLimited, form: BaseForm | None = None) -> HttpResponse:
    state.config.logger.error(exc)
    response = _form_page(state, form, error=LIMITED, status=429)
    response["Retry-After"] = str(max(1, exc.retry_after))
    return response


def _finish(state: AuthState, body: Mapping[str, Any]) -> HttpResponse:
    held = flow.read_pending(state)
    if held is None:
        return _form_page(state, error=EXPIRED, status=400)
    if "token" in body:
        if not flow.open_link(held, {"token": body.get("token"), "email": held.identifier}):
            return _elsewhere(state, 400)
        result = flow.redeem_link(state, held, body.get("token"))
        if result is None:
            state.config.logger.error(Verification("The sign-up link is used or expired"))
            response = _form_page(state, error=EXPIRED, status=400)
            flow.forget_pending(state, response)
            return response
    else:
        try:
            result = flow.redeem_code(state, held, body.get("code"))
        except RateLimited as exc:
            state.config.logger.error(exc)
            waiting = flow.Waiting(held.identifier, None, code=True)
            response = _sent_page(state, waiting, code_error=_messages()[LIMITED], status=429)
            response["Retry-After"] = str(max(1, exc.retry_after))
            return response
        if result is None:
            state.config.logger.error(Verification("A wrong or expired sign-up code was entered"))
            held = flow.Held(**{**_as_dict(held), "attempts": held.attempts + 1})
            waiting = flow.Waiting(held.identifier, held, code=True)
            return _sent_page(state, waiting, code_error=_wrong_code(state, held), status=400)
    if isinstance(result, flow.Taken):
        return _taken_page(state, result)
    return _redeemed(state, result)


def _as_dict(held: flow.Held) -> dict[str, Any]:
    return {name: getattr(held, name) for name in flow.Held.__dataclass_fields__}


def _wrong_code(state: AuthState, held: flow.Held) -> str:
    left = flow.code_attempts_left(state.config, held)
    if left <= 0:
        return _("This code can no longer be used. Start again.")
    return ngettext(
        "That code is not right, or it has expired. Check it and try again "
        "(%(left)d attempt left).",
        "That code is not right, or it has expired. Check it and try again "
        "(%(left)d attempts left).",
        left,
    ) % {"left": left}


# -- the app route -----------------------------------------------------------------------------


def _form_errors(form: BaseForm) -> dict[str, list[str]]:
    return {name: [str(e) for e in errors] for name, errors in form.errors.items()}


def app_signup_view(request: HttpRequest) -> HttpResponseBase:
    """``POST /auth/app/signup``: the form as JSON, then ``{"signupToken", "code"}``.

    The form answers ``200 {"step": "verify_email", "signupToken", "expiresIn"}``
    whether or not the address or username is taken (``{"step":
    "check_email"}`` with ``verify_email=False`` for a taken one; a new one gets
    the session token at once); a form with errors ``400 {"error":
    "InvalidRequest", "message", "fields": {name: [messages]}}``. The code
    answers the session token (or the second factor's step); a wrong or
    expired one ``401 {"error": "Verification"}``; an address or username
    taken meanwhile ``409 {"error": "SignupTaken", "field"}``.
    """
    state = _open_post(request, flow.enabled)
    if isinstance(state, HttpResponse):
        return state
    config = state.config
    try:
        body = _json_body(request)
        if "signupToken" in body:
            return _app_redeem(state, body)
        submitted = flow.submit(state, body, state.callback_url)
        if isinstance(submitted, flow.Invalid):
            if submitted.limited is not None:
                raise submitted.limited
            state.config.logger.error(InvalidRequest("The sign-up form has errors"))
            answer = {
                "error": InvalidRequest.type,
                "message": "the form has errors",
                "fields": _form_errors(submitted.form),
            }
            return _answer(answer, 400)
        if isinstance(submitted, flow.Waiting):
            if submitted.held is None:
                return _answer({"step": "check_email"}, 200)
            return _answer(_waiting_answer(state, submitted.held), 200)
        return _answer(for_app(state, submitted.outcome), 200)
    except Exception as exc:
        if isinstance(exc, RateLimited):
            config.logger.error(exc)
            return limited_response(max(1, exc.retry_after))
        return _error_response(config, exc)


def _waiting_answer(state: AuthState, held: flow.Held) -> dict[str, object]:
    return {
        "step": "verify_email",
        "signupToken": flow.app_token(state.config, held),
        "expiresIn": max(held.expires - int(time.time()), 0),
    }


def _app_redeem(state: AuthState, body: Mapping[str, Any]) -> HttpResponse:
    held = flow.from_app_token(state.config, body.get("signupToken"))
    if held is None:
        raise Verification("The sign-up token is unknown or has expired")
    result = flow.redeem_code(state, held, body.get("code"))
    if result is None:
        raise Verification("A wrong or expired sign-up code was entered")
    if isinstance(result, flow.Taken):
        state.config.logger.error(AuthError("The sign-up's address or username was taken"))
        field = result.field or get_user_model().get_email_field_name()  # the form's name
        return _answer({"error": "SignupTaken", "field": field}, 409)
    return _answer(for_app(state, result.outcome), 200)


_app_route(app_signup_view)
