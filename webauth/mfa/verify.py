"""Finishing a held sign-in once its second factor is proven: the session, as without one.

Used by the browser's route (``POST /auth/mfa``) and the app's
(``POST /auth/app/mfa``): the code is checked (:func:`webauth.mfa.factors.check_code`,
each code accepted once), the held sign-in claimed (once), the user read
again (deactivated meanwhile: refused), and the sign-in concluded by
:func:`webauth.flows.signin.conclude` with what its first half found, so the
session, the callbacks and the ``sign_in`` event are those of any sign-in.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING

from .. import ratelimit
from ..errors import AccessDenied, RateLimited, SecondFactorExpired, SecondFactorFailed
from ..flows.outcomes import Attempt, Completed, SignedIn
from ..flows.signin import conclude, refuse_inactive
from . import keys
from . import pending as held
from .changes import announce
from .factors import (
    check_code,
    confirm_enrolment,
    confirmed_factors,
    grace_left,
    new_recovery_codes,
)

if TYPE_CHECKING:
    from ..conf import Config
    from ..state import AuthState

__all__ = ["Proven", "ResumedAttempt", "finish", "key_options", "postpone", "prove"]


#: What each way of proving the second factor is called in the session's ``amr``
#: (RFC 8176's ``otp`` and ``hwk``, a proof-of-possession of a hardware-secured key).
_AMR = {"totp": "otp", "recovery_code": "recovery_code", keys.KIND: "hwk"}


@dataclass(slots=True)
class ResumedAttempt(Attempt):
    """The first half of a held sign-in, as :func:`conclude` needs it (stored already)."""

    provider_id: str
    callback_url: str
    signed_in: SignedIn
    amr: tuple[str, ...] = ()

    def sign_in_params(self) -> dict[str, object]:
        return {"user": self.signed_in.user, "account": self.signed_in.account}

    def store(self, state: AuthState) -> SignedIn:
        return self.signed_in  # stored when the first factor passed


def finish(
    state: AuthState,
    pending: held.Pending,
    code: object,
    *,
    browser: bool = True,
    enrolling: bool = False,
    credential: object = None,
) -> Completed | None:
    """The new session once *code* (or a security key's *credential*) proves the second factor of
    *pending*.

    *enrolling*: the user has none yet (``mfa.required``) and *code* confirms the key they are
    adding. *credential* is the browser's answer to the second-factor page's security-key
    options (:mod:`webauth.mfa.keys`). Raises :class:`~webauth.errors.SecondFactorFailed` for a
    code that proves nothing (the caller counts it), ``AccessDenied`` for a user who is gone or
    inactive now; ``None`` when another request finished this sign-in first.
    """
    config = state.config
    if enrolling:
        method = "otp" if confirm_enrolment(config, pending.user_id, code) else None
    elif credential is not None:
        proven = keys.check_assertion(config, pending, state.origin, credential)
        method = _AMR[keys.KIND] if proven else None
    else:
        method = _AMR.get(check_code(config, pending.user_id, code) or "")
    if method is None:
        kind = keys.KIND if credential is not None else None
        announce(config, _user_of(config, pending), "failed", request=state.request, kind=kind)
        raise SecondFactorFailed("The second-factor code was not right")
    if enrolling:
        announce(config, _user_of(config, pending), "added", request=state.request)
    elif method == "recovery_code":
        announce(config, _user_of(config, pending), "recovery_code_used", request=state.request)
    return _resume(state, pending, (*pending.amr, method, "mfa"), browser=browser)


def postpone(state: AuthState, pending: held.Pending) -> Completed | None:
    """Finish the held sign-in of a user who must add a key but may still wait
    (``mfa.grace_days``): the session, saying only how the first factor was
    proven. ``SecondFactorExpired`` when the grace is over (or never was)."""
    config = state.config
    if confirmed_factors(config, pending.user_id) or not grace_left(config, pending.user_id):
        raise SecondFactorExpired("This sign-in cannot put off its second factor")
    return _resume(state, pending, tuple(pending.amr), browser=True)


def _resume(
    state: AuthState, pending: held.Pending, amr: tuple[str, ...], *, browser: bool
) -> Completed | None:
    # Claimed once, the user read again (deactivated meanwhile: refused), then
    # concluded as any sign-in is.
    config = state.config
    if not held.claim(config, pending):
        return None
    user = config.storage.get_user(pending.user_id)
    if user is None:
        raise AccessDenied("The user of the held sign-in is gone", user_caused=True)
    refuse_inactive(user)
    signed_in = SignedIn(
        user=user,
        user_dict=pending.user_dict,
        account=pending.account,
        profile=pending.profile,
        is_new_user=pending.is_new_user,
        linked_to_session=pending.linked_to_session,
        amr=amr,
    )
    attempt = ResumedAttempt(pending.provider_id, pending.callback_url, signed_in, amr)
    return conclude(state, signed_in, attempt, browser=browser)


def _user_of(config: Config, pending: held.Pending) -> object:
    # The event's user for a refused code: the stored one, else its id.
    return config.storage.get_user(pending.user_id) or pending.user_id


@dataclass(frozen=True, slots=True)
class Proven:
    """A held sign-in finished: what was held, the session, and, for a user who has
    just added their first key, their recovery codes (to show once)."""

    pending: held.Pending
    outcome: Completed
    recovery_codes: list[str] | None = None


def prove(
    state: AuthState,
    handle: object,
    code: object,
    client: held.Client,
    *,
    credential: object = None,
) -> Proven:
    """Finish the sign-in held under *handle* for *client* with *code* (or a security
    key's *credential*, ``credential.toJSON()`` as a JSON string or object).

    For a user who has no key yet (``mfa.required``), *code* confirms the key
    being added (:func:`webauth.mfa.factors.enrolment_for`), and the first
    recovery codes come with the answer.

    The route's whole part, for a browser and an app alike. Raises
    :class:`~webauth.errors.SecondFactorFailed` for a wrong code that may be
    tried again, :class:`~webauth.errors.SecondFactorExpired` when no sign-in
    waits (none, expired, used, or this wrong code was one too many), and
    ``RateLimited`` beyond the ``mfa_failed`` limit.
    """
    config = state.config
    pending = held.load(config, handle, client) if config.mfa.enabled else None
    if pending is None:
        raise SecondFactorExpired("No sign-in waits for this second factor")
    if config.storage.get_user(pending.user_id) is None:
        # Deleted while the sign-in waited: nothing to check a code against, and
        # nothing must be stored for them (a new key to add would be).
        held.drop(config, pending)
        raise AccessDenied("The user of the held sign-in is gone", user_caused=True)
    decision = ratelimit.hit(state.request, "mfa_failed", pending.user_id, config=config)
    if not decision:
        raise RateLimited("Too many second-factor codes", retry_after=decision.retry_after)
    enrolling = not confirmed_factors(config, pending.user_id)
    try:
        outcome = finish(
            state,
            pending,
            code,
            browser=client == "browser",
            enrolling=enrolling and credential is None,
            credential=credential,
        )
    except SecondFactorFailed:
        if not held.count_failure(config, pending):
            raise SecondFactorExpired("Too many wrong second-factor codes") from None
        raise
    ratelimit.refund(decision)
    if outcome is None:
        raise SecondFactorExpired("The sign-in was finished by another request")
    codes = new_recovery_codes(config, pending.user_id) if enrolling else None
    return Proven(pending, outcome, codes)


def key_options(state: AuthState, handle: object, client: held.Client = "app") -> dict[str, object]:
    """Options for the security keys of the sign-in held under *handle* for *client*.

    Raises :class:`~webauth.errors.SecondFactorExpired` when no sign-in waits,
    :class:`~webauth.errors.SecondFactorFailed` when its user has no key (or
    the sign-in asked for too many challenges).
    """
    config = state.config
    pending = held.load(config, handle, client) if config.mfa.enabled else None
    if pending is None:
        raise SecondFactorExpired("No sign-in waits for this second factor")
    options = keys.assertion_options(config, pending, state.origin)
    if options is None:
        raise SecondFactorFailed("No security key can finish this sign-in")
    return options
