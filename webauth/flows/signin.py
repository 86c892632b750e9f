"""Where every sign-in ends, whatever proved who the user is.

A flow's first half (``credentials``: the ``authorize`` function; ``oauth``: the
provider's callback) describes what it found as an :class:`Attempt`. Then
:func:`finish` does what is the same for every kind of provider, in Auth.js's
order (its ``handleAuthorized``, ``handleLoginOrRegister`` and session step):

1. an inactive Django user is refused (``AccessDenied``), as contrib.auth does;
   then the ``sign_in`` callback: ``False`` or an exception refuses
   (``AccessDenied``), a string redirects there instead;
2. :meth:`Attempt.store`: the flow's own rules for what is stored (users and
   linked accounts, through the adapter); the user it found is checked again;
   then the registered steps (:mod:`webauth.flows.steps`): one that is needed
   ends here with :class:`~webauth.flows.outcomes.NeedsStep`, and continues
   with :func:`conclude` once it is passed;
3. a ``django.contrib.sessions`` session the browser had gets a new key (no
   session fixation) and Django's CSRF token a new value, as ``login()`` does,
   and ``django.contrib.auth``'s ``user_logged_in`` signal is sent for a
   Django user;
4. a new session, JWT or database (a database session replaces the one the
   request had, so a sign-in never keeps a planted session). Its sign-in time
   is now, unless the sign-in only linked a new way in (an OAuth account, a
   passkey) to the user already signed in: proving an account of one's own
   is no proof of being that user, so the session keeps the time of the sign-in
   it continues (``reauth_required`` and ``session.absolute_max_age`` count
   from it);
5. the ``sign_in`` event; then the session cookie and the redirect to the
   callback URL (or to ``pages.new_user`` for a new user).

Steps 1 to 4 and the event are :func:`complete` (3 on are :func:`conclude`),
which returns an outcome (:mod:`webauth.flows.outcomes`) and never a response;
the client's renderer (:mod:`webauth.flows.render`) answers it. The app sign-in
(:mod:`webauth.flows.app`) shares it: it answers the new session's token as
JSON instead of step 5, and skips the browser's own part of step 3 (the Django
session and CSRF cookies, which an app's request neither reads nor gets).

A new kind of provider adds its first half and an :class:`Attempt` subclass;
this module does not change.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

from django.apps import apps
from django.conf import settings
from django.contrib.auth import SESSION_KEY, get_user_model
from django.contrib.auth.signals import user_logged_in
from django.middleware.csrf import rotate_token

from ..callbacks import run_sign_in
from ..errors import AccessDenied, AuthError
from ..events import emit
from ..responses import redirect
from ..sessions import NewSession, SessionResult
from ..types import AdapterUser
from .outcomes import Attempt, Completed, Elsewhere, NeedsStep, Outcome, SignedIn
from .render import for_browser
from .steps import STEPS, next_step

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = [
    "Attempt",
    "Completed",
    "SignedIn",
    "check_sign_in",
    "complete",
    "conclude",
    "finish",
    "refuse_inactive",
    "sign_in_redirect",
]


def sign_in_redirect(state: AuthState, **params: object) -> str | None:
    """Run the ``sign_in`` callback: ``None`` to continue, or the URL it asked to go to.

    ``False`` or an exception refuses with ``AccessDenied``.
    """
    try:
        allowed = run_sign_in(state.config, **params)
    except AuthError:
        raise
    except Exception as exc:
        raise AccessDenied(str(exc), cause={"err": exc}) from exc
    if allowed is False:
        raise AccessDenied("The sign_in callback refused the sign-in", user_caused=True)
    if isinstance(allowed, str):
        return state.redirect(allowed)
    return None


def check_sign_in(state: AuthState, **params: object) -> HttpResponse | None:
    """Run the ``sign_in`` callback: ``None`` to continue, or the redirect it asked for."""
    url = sign_in_redirect(state, **params)
    return redirect(url) if url is not None else None


def complete(state: AuthState, attempt: Attempt, *, browser: bool = True) -> Outcome:
    """Sign *attempt* in: callback, storage, steps, session, event; the answer is the caller's.

    :class:`~webauth.flows.outcomes.Elsewhere` when the ``sign_in`` callback
    asked to go to a URL instead, :class:`~webauth.flows.outcomes.NeedsStep`
    when a registered step (:mod:`webauth.flows.steps`) must be passed first,
    else :class:`~webauth.flows.outcomes.Completed` (:func:`conclude`). A
    refusal raises. *browser* is false for a client that holds no cookies (the
    app sign-in): the Django session and CSRF token it does not have are left
    alone.
    """
    params = attempt.sign_in_params()
    refuse_inactive(params.get("user"))
    elsewhere = sign_in_redirect(state, **params)
    if elsewhere is not None:
        return Elsewhere(elsewhere)
    signed_in = attempt.store(state)
    refuse_inactive(signed_in.user)  # the user the flow's rules found (an email match...)
    signed_in.amr = attempt.amr
    step = next_step(state, signed_in) if STEPS else None
    if step is not None:
        return NeedsStep(step=step, signed_in=signed_in, attempt=attempt)
    return conclude(state, signed_in, attempt, browser=browser)


def conclude(
    state: AuthState, signed_in: SignedIn, attempt: Attempt, *, browser: bool = True
) -> Completed:
    """The end of every sign-in once who it is is settled: the session and the event.

    What :func:`complete` does when no step is needed, and what a step calls
    once it is passed (with the ``signed_in`` and ``attempt`` of its
    :class:`~webauth.flows.outcomes.NeedsStep`).
    """
    if browser:
        _cycle_django_session(state, signed_in.user)
        _rotate_django_csrf(state)
    _django_logged_in(state, signed_in.user)
    result = _new_session(state, signed_in, signed_in.amr or attempt.amr)
    message: dict[str, object] = {
        "user": signed_in.user,
        "account": signed_in.account,
        "request": state.request,
    }
    if signed_in.profile is not None:
        message["profile"] = signed_in.profile
        message["is_new_user"] = signed_in.is_new_user
    emit(state.config, "sign_in", sender=attempt.provider_id, **message)
    return Completed(signed_in=signed_in, session=result)


def finish(state: AuthState, attempt: Attempt) -> HttpResponse:
    """Complete *attempt* (:func:`complete`) and answer a browser (:func:`render.for_browser`)."""
    outcome = complete(state, attempt)
    return for_browser(state, outcome, attempt.callback_url)


def _django_user(user: object) -> Any:
    """The ``AUTH_USER_MODEL`` instance behind *user*, else ``None``."""
    instance = user.instance if isinstance(user, AdapterUser) else user
    return instance if isinstance(instance, get_user_model()) else None


def refuse_inactive(user: object) -> None:
    """Raise ``AccessDenied`` for a Django user whose ``is_active`` is false.

    As ``django.contrib.auth`` refuses them; users that are not Django users
    (what a custom ``authorize`` returns, a provider's profile) have no such flag.
    """
    instance = _django_user(user)
    if instance is not None and not getattr(instance, "is_active", True):
        raise AccessDenied("The user is inactive", user_caused=True)


def _cycle_django_session(state: AuthState, user: object) -> None:
    # Session fixation: a django.contrib.sessions session that existed before the
    # sign-in (one an attacker planted, say) gets a new key, as login() does;
    # one of another contrib.auth user is emptied. Nothing is created for a
    # browser that had no session.
    session = getattr(state.request, "session", None)
    if session is None or not apps.is_installed("django.contrib.sessions"):
        return
    if not session.session_key:
        return
    owner = session.get(SESSION_KEY)
    instance = _django_user(user)
    if owner is not None and (instance is None or str(owner) != str(instance.pk)):
        session.flush()
    else:
        session.cycle_key()


def _rotate_django_csrf(state: AuthState) -> None:
    # Django's CSRF token, when the browser has one, is renewed as login() renews
    # it: a token planted or read before the sign-in is worthless after it.
    request = state.request
    if settings.CSRF_USE_SESSIONS:
        planted = getattr(request, "session", None) is not None
    else:
        planted = settings.CSRF_COOKIE_NAME in request.COOKIES
    if planted:
        rotate_token(request)


def _django_logged_in(state: AuthState, user: object) -> None:
    # A Django user signing in through webauth should look like a contrib.auth login
    # to the rest of the project: this updates last_login and reaches user_logged_in
    # receivers.
    instance = _django_user(user)
    if instance is not None:
        user_logged_in.send(sender=type(instance), request=state.request, user=instance)


def _new_session(state: AuthState, signed_in: SignedIn, amr: tuple[str, ...]) -> SessionResult:
    config = state.config
    salt = state.cookies["session_token"].name
    sessions = state.sessions
    since = None
    # Two factors proven now (a passkey, or a second factor just passed).
    mfa_at = time.time() if "mfa" in amr else None
    if signed_in.linked_to_session:
        # Linking proved an account of the person's own, not that they are the
        # user: the session carries on from its sign-in (else anyone holding a
        # stale session would make it fresh by linking an account of theirs),
        # and with the assurance it had.
        since = sessions.signed_in_at(config, state.session_token, salt)
        kept = sessions.assurance(config, state.session_token, salt)
        amr, mfa_at = kept.amr, kept.mfa_at
    meta = state.request.META
    new = NewSession(
        user=signed_in.user,
        user_dict=signed_in.user_dict,
        account=signed_in.account,
        profile=signed_in.profile,
        is_new_user=signed_in.is_new_user,
        user_agent=meta.get("HTTP_USER_AGENT"),
        ip_address=meta.get("REMOTE_ADDR") or None,
        replaces=state.session_token,
        since=since,
        amr=amr,
        mfa_at=mfa_at,
    )
    return sessions.create(config, salt, new)
