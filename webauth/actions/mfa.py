"""``GET``/``POST /auth/mfa``: a browser proves the second factor of a held sign-in.

A webauth route (Auth.js has no second factor). ``GET`` shows the code form to
the browser that holds a pending sign-in (its ``authjs.mfa-pending`` cookie);
``POST`` (CSRF required) checks the code and, once right, makes the session
exactly as a sign-in without a second factor would have
(:func:`webauth.mfa.verify.finish`). Anything else goes back to the sign-in
page: no pending sign-in, an expired or used one, too many wrong codes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.utils.translation import gettext

from ..errors import MissingCSRF, RateLimited, SecondFactorExpired, SecondFactorFailed
from ..flows.render import for_browser, rate_limited
from ..mfa import pending as held
from ..mfa.step import forget_cookie, held_handle
from ..mfa.verify import prove
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
    return held.load(state.config, handle, "browser") if handle else None


def _start_again(state: AuthState) -> HttpResponse:
    response = redirect(state.page_url("signin", {"error": "SecondFactorExpired"}))
    forget_cookie(state, response)
    return response


def _page(state: AuthState, *, wrong: bool = False) -> HttpResponse:
    return render_page(
        state,
        "webauth/mfa.html",
        {
            "action": f"{state.base_url}/mfa",
            "csrf_token_value": state.csrf.token,
            "error": WRONG_CODE if wrong else None,
            "error_message": gettext("That code is not right. Try again.") if wrong else None,
            "signin_url": f"{state.base_url}/signin",
        },
        config=state.config,
        status=400 if wrong else 200,
    )


def mfa_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The code form, for a browser whose sign-in waits for its second factor."""
    if not state.config.mfa.enabled or _pending(state) is None:
        return _start_again(state)
    return _page(state)


def mfa_verify(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Check the code; the session and the landing page once it is right."""
    if not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action mfa")
    try:
        pending, outcome = prove(state, held_handle(state), state.body.get("code"), "browser")
    except SecondFactorFailed as exc:
        state.config.logger.error(exc)
        return _page(state, wrong=True)
    except SecondFactorExpired as exc:
        state.config.logger.error(exc)
        return _start_again(state)
    except RateLimited as exc:
        response = rate_limited(state, exc)
        forget_cookie(state, response)
        return response
    response = for_browser(state, outcome, pending.callback_url)
    forget_cookie(state, response)
    return response
