"""``GET``/``POST /auth/mfa``: a browser proves the second factor of a held sign-in.

A webauth route (Auth.js has no second factor). ``GET`` shows the code form to
the browser that holds a pending sign-in (its ``authjs.mfa-pending`` cookie),
and for a user with a security key a button that asks for it (its answer is
posted as ``credential``); ``POST`` (CSRF required) checks the code or the
key's answer and, once right, makes the session
exactly as a sign-in without a second factor would have
(:func:`webauth.mfa.verify.finish`). Anything else goes back to the sign-in
page: no pending sign-in, an expired or used one, too many wrong codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.translation import gettext

from ..errors import MissingCSRF, RateLimited, SecondFactorExpired, SecondFactorFailed
from ..flows.render import for_browser, rate_limited
from ..mfa import keys, totp
from ..mfa import pending as held
from ..mfa.factors import confirmed_factors, enrolment_for, grace_left, issuer_for
from ..mfa.step import forget_cookie, held_handle
from ..mfa.trust import forget_fresh, offered, remember
from ..mfa.verify import postpone, prove
from ..pages import render_page
from ..responses import redirect

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["mfa_page", "mfa_verify"]

#: The error of a wrong code, as the page's ``data-error`` names it.
WRONG_CODE = "SecondFactor"


def _pending(state: AuthState) -> held.Pending | None:
    handle = held_handle(state)
    pending = held.load(state.config, handle, "browser") if handle else None
    if pending is not None and state.config.storage.get_user(pending.user_id) is None:
        return None  # the user was deleted while the sign-in waited
    return pending


def _start_again(state: AuthState) -> HttpResponse:
    response = redirect(state.page_url("signin", {"error": "SecondFactorExpired"}))
    forget_cookie(state, response)
    return response


def _enrolment(state: AuthState, pending: held.Pending) -> dict[str, object] | None:
    """The key a user who must add one is adding (``mfa.required``); ``None`` if they have one."""
    config = state.config
    if confirmed_factors(config, pending.user_id):
        return None
    account = str(pending.user_dict.get("email") or pending.user_dict.get("name") or "")
    enrolment = enrolment_for(
        config,
        pending.user_id,
        account=account or pending.user_id,
        issuer=issuer_for(config, state.request.get_host()),
    )
    key = enrolment.key
    left = grace_left(config, pending.user_id)
    return {
        "key": " ".join(key[i : i + 4] for i in range(0, len(key), 4)),
        "qr": totp.qr_svg(enrolment.uri, title=gettext("QR code for your authenticator app")),
        # mfa.grace_days: whole days left to put it off (a part of one counts as one).
        "grace_days": left.days + (1 if left.seconds else 0) if left else 0,
    }


def _page(state: AuthState, pending: held.Pending, *, wrong: str | None = None) -> HttpResponse:
    # wrong: "code" or "key", what the last attempt sent that did not prove it.
    messages = {
        "code": gettext("That code is not right. Try again."),
        "key": gettext("The security key could not be verified. Try again, or enter a code."),
    }
    kinds = {f.kind for f in confirmed_factors(state.config, pending.user_id)}
    return render_page(
        state,
        "webauth/mfa.html",
        {
            "action": f"{state.base_url}/mfa",
            "csrf_token_value": state.csrf.token,
            "enrolment": _enrolment(state, pending),
            # The user's security keys, for navigator.credentials.get() (a
            # single-use challenge bound to this sign-in); None without any.
            "key_options": keys.assertion_options(state.config, pending, state.origin),
            "trust_days": state.config.mfa.trust_days if offered(state.config) else 0,
            "has_app": "totp" in kinds,
            "error": WRONG_CODE if wrong else None,
            # Beside what was wrong: the code field, or the security key's button.
            "error_message": messages[wrong] if wrong == "code" else None,
            "key_error": messages[wrong] if wrong == "key" else None,
            "signin_url": f"{state.base_url}/signin",
        },
        config=state.config,
        status=400 if wrong is not None else 200,
    )


def _put_off(state: AuthState) -> HttpResponse:
    """ "Not now", within ``mfa.grace_days``: the session of the first factor alone."""
    pending = _pending(state) if state.config.mfa.enabled else None
    try:
        outcome = postpone(state, pending) if pending is not None else None
    except SecondFactorExpired as exc:
        state.config.logger.error(exc)
        outcome = None
    if pending is None or outcome is None:
        return _start_again(state)
    response = for_browser(state, outcome, pending.callback_url)
    forget_cookie(state, response)
    return response


def mfa_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The code form (or, for a user who must add a key first, the key and its form)."""
    pending = _pending(state) if state.config.mfa.enabled else None
    if pending is None:
        return _start_again(state)
    return _page(state, pending)


def mfa_verify(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Check the code; the session and the landing page once it is right.

    A user who has just added their first key gets their recovery codes on a
    page of their own (with the new session's cookie), and goes on from there.
    """
    if not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action mfa")
    if state.body.get("later"):
        return _put_off(state)
    credential = state.body.get("credential") or None
    try:
        proven = prove(
            state, held_handle(state), state.body.get("code"), "browser", credential=credential
        )
    except SecondFactorFailed as exc:
        state.config.logger.error(exc)
        pending = _pending(state)
        wrong = "key" if credential is not None else "code"
        return _page(state, pending, wrong=wrong) if pending else _start_again(state)
    except SecondFactorExpired as exc:
        state.config.logger.error(exc)
        return _start_again(state)
    except RateLimited as exc:
        response = rate_limited(state, exc)
        forget_cookie(state, response)
        return response
    if state.body.get("trust") and offered(state.config):
        # Set on the answer below: the browser skips the code for mfa.trust_days.
        trust_user: object | None = proven.outcome.signed_in.user
    else:
        trust_user = None
    if proven.recovery_codes is not None:
        response = render_page(
            state,
            "webauth/mfa_codes.html",
            {"codes": proven.recovery_codes, "continue_url": proven.pending.callback_url},
            config=state.config,
        )
        state.write_session(response, proven.outcome.session)
    else:
        response = for_browser(state, proven.outcome, proven.pending.callback_url)
    forget_cookie(state, response)
    forget_fresh(state, response)
    if trust_user is not None:
        remember(state, response, trust_user, proven.pending.user_id)
    return response
