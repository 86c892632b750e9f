"""One renderer per kind of client: what a sign-in's outcome becomes as an answer.

:func:`for_browser` (the Auth.js routes and :func:`webauth.sign_in`): the
session cookie and a redirect. :func:`for_app` (the app sign-in routes under
``/auth/app/``): the session's token as JSON, no cookie. A
:class:`~webauth.flows.outcomes.NeedsStep` is answered by its step, in the
client's form. Refusals are raised errors, answered by each client's error
renderer (``webauth.views`` for the Auth.js routes, ``webauth.actions.app``
for apps); a refused attempt (the rate limits) by :func:`rate_limited`, and
a refused password form by its kind (``Flow.refused_form``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING
from urllib.parse import quote

from ..bearer import token_answer
from ..clients import reads_json
from ..errors import AccessDenied, ChallengeFailed, JWTSessionError, RateLimited
from ..ratelimit import limited_response
from ..responses import json_response, redirect
from ..types import AdapterUser
from .outcomes import Completed, Elsewhere, NeedsStep, Outcome

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["SignInRedirected", "challenge_refused", "for_app", "for_browser", "rate_limited"]


class SignInRedirected(AccessDenied):
    """The ``sign_in`` callback answered a URL instead of ``True``.

    A browser would be sent there; an app gets ``401 {"error": "AccessDenied",
    "url": ...}`` and may open it.
    """

    def __init__(self, url: str) -> None:
        super().__init__("The sign_in callback redirected the sign-in")
        self.url = url


def for_browser(state: AuthState, outcome: Outcome, callback_url: str) -> HttpResponse:
    """A browser's answer: the new session's cookie and a redirect to *callback_url*.

    To ``pages.new_user`` for a new user; to where the ``sign_in`` callback
    said instead, with no session.
    """
    if isinstance(outcome, Elsewhere):
        return redirect(outcome.url)
    if isinstance(outcome, NeedsStep):
        return outcome.step.browser_answer(state, outcome)
    response = redirect(_landing(state, callback_url, outcome.signed_in.is_new_user))
    state.write_session(response, outcome.session)
    return response


def for_app(state: AuthState, outcome: Outcome) -> dict[str, object]:
    """An app's answer: :func:`~webauth.bearer.token_answer`'s, as JSON::

        {"user": {...}, "sessionToken": "<the session cookie's value>",
         "tokenType": "Bearer", "expires": "2026-01-01T00:00:00.000Z"}

    with the session as ``GET /auth/session`` shows it (after the ``session``
    callback), as ``POST /auth/app/session`` answers it later; ``expires`` is
    when the token stops being accepted. Raises :class:`SignInRedirected` when
    the ``sign_in`` callback answered a URL, ``AccessDenied`` when the ``jwt``
    callback returned no token.
    """
    if isinstance(outcome, Elsewhere):
        raise SignInRedirected(outcome.url)
    if isinstance(outcome, NeedsStep):
        return outcome.step.app_answer(state, outcome)
    return _session_answer(state, outcome)


def _session_answer(state: AuthState, done: Completed) -> dict[str, object]:
    result = done.session
    token = result.cookie
    if not token or result.valid_until is None:
        raise AccessDenied("The jwt callback returned no token: no session was made")
    user = done.signed_in.user
    # Read back as the session route reads it, so the answer's user is the one
    # the app will see there (the session callback's, if any).
    read = state.sessions.read(
        state.config,
        token,
        state.cookies["session_token"].name,
        reissue=False,
        known_user=user if isinstance(user, AdapterUser) else None,
    )
    if not isinstance(read.session, Mapping):
        raise JWTSessionError("The new session could not be read back")
    return token_answer(read.session, token, result.valid_until)


def _landing(state: AuthState, callback_url: str, is_new_user: bool) -> str:
    new_user_page = state.config.pages.new_user
    if is_new_user and new_user_page:
        # The configured path as it is, as in Auth.js (not joined to the origin).
        sep = "&" if "?" in new_user_page else "?"
        return f"{new_user_page}{sep}callbackUrl={quote(callback_url, safe='')}"
    return callback_url


def rate_limited(state: AuthState, exc: RateLimited) -> HttpResponse:
    """What a refused sign-in attempt gets: the sign-in page's message, or 429 for JSON clients.

    A browser is sent back to the sign-in page with ``error=RateLimited`` (which
    explains it and asks to wait); a client that reads JSON gets ``429`` with
    ``Retry-After`` and, as Auth.js's clients expect, the sign-in page's ``url``
    carrying the error.
    """
    state.config.logger.error(exc)
    retry_after = max(1, exc.retry_after)
    url = state.page_url("signin", {"error": "RateLimited"})
    if reads_json(state.request):
        return limited_response(retry_after, {"url": url})
    response = redirect(url)
    response["Retry-After"] = str(retry_after)
    return response


def challenge_refused(state: AuthState, exc: ChallengeFailed) -> HttpResponse:
    """What a request the bot challenge refused gets (``WEBAUTH["challenge"]``).

    A browser is sent back to the sign-in page with ``error=ChallengeFailed``
    and ``code`` (``missing`` or ``refused``), where the page shows the widget
    and says why; a client that reads JSON gets ``400`` with ``{"error":
    "ChallengeFailed", "code", "challenge": {"service", "siteKey", "field"},
    "url"}``: what it needs to show the widget and try again, and, as Auth.js's
    clients expect, the sign-in page's ``url`` carrying the error.
    """
    state.config.logger.error(exc)
    url = state.page_url("signin", {"error": exc.type, "code": exc.code})
    if reads_json(state.request):
        body = {"error": exc.type, "code": exc.code, "challenge": dict(exc.challenge), "url": url}
        return json_response(body, status=400, no_cache=True)
    return redirect(url)
