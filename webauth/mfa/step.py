"""The second factor as a step of every sign-in (:data:`webauth.flows.steps.STEPS`).

Registered by the app's ``ready()``; asked after every sign-in's first half
whatever the flow, so no flow knows about it. A user with a confirmed second
factor is not given a session: the sign-in is held (:mod:`webauth.mfa.pending`)
and the client is told to prove the second factor (``/auth/mfa`` for a
browser, ``mfaToken`` for an app). A user who has none but whom
``mfa.required`` names (:mod:`webauth.mfa.policy`) is held the same way and
adds one there first. A passkey sign-in already is two factors
(possession, and user verification, which webauth requires unless a provider
says ``require_user_verification=False``) and is never asked.
"""

from __future__ import annotations

from dataclasses import replace
from typing import TYPE_CHECKING

from .. import cookies as ck
from .. import jwt as jose
from ..adapters.base import FLOW_METHODS
from ..responses import redirect
from . import keys
from . import pending as held
from .factors import confirmed_factors, enrolment_for, issuer_for
from .policy import django_user
from .trust import trusted

if TYPE_CHECKING:
    from django.http import HttpResponse, HttpResponseBase

    from ..conf import Config
    from ..flows.outcomes import NeedsStep, SignedIn
    from ..state import AuthState

__all__ = ["PENDING_COOKIE", "SECOND_FACTOR", "SecondFactorStep", "forget_cookie", "held_handle"]

#: The key in ``AuthState.cookies`` of the browser's handle (``authjs.mfa-pending``).
PENDING_COOKIE = "mfa_pending"
#: The methods a pending sign-in may be finished with, as the app's answer names them
#: (a security key's is its factor kind, ``"webauthn"``: not a provider's kind).
METHODS = ("totp", keys.KIND, "recovery_code")


def methods_of(config: Config, user_id: str) -> list[str]:
    """The methods the user can finish a held sign-in with: their kinds of key, then
    recovery codes (``totp`` alone for a user who must add their first key)."""
    kinds = {factor.kind for factor in confirmed_factors(config, user_id)}
    if not kinds:
        return ["totp"]
    if not keys.usable(config):
        kinds.discard(keys.KIND)
    return [m for m in METHODS if m in kinds or m == "recovery_code"]


class SecondFactorStep:
    """Asks a user who has a second factor for it before the session is made."""

    name = "second_factor"

    def needed(self, state: AuthState, signed_in: SignedIn) -> bool:
        config = state.config
        if not config.mfa.enabled:
            return False
        if "mfa" in signed_in.amr:
            # Two factors already: a passkey with user verification, or an OpenID
            # provider's own second factor (its mfa_amr).
            return False
        user_id = signed_in.user_dict.get("id")
        storage = config.storage
        if not user_id or not storage.configured:
            return False
        if not all(storage.has(method) for method in FLOW_METHODS["mfa"]):
            return False  # an adapter without the second factor's methods: nobody has one
        if confirmed_factors(config, str(user_id)):
            if trusted(state, django_user(signed_in.user), str(user_id)):
                # Skipped, not proven: the session says so (and never "mfa").
                signed_in.amr = (*signed_in.amr, "trusted_browser")
                return False
            return True
        # Nobody to ask yet: the policy may still require one (then it is added now).
        required = config.mfa.required
        return required is not None and bool(required(django_user(signed_in.user)))

    def browser_answer(self, state: AuthState, pending: NeedsStep) -> HttpResponse:
        record = held.hold(state.config, pending, "browser")
        response = redirect(f"{state.base_url}/mfa")
        spec = state.cookies[PENDING_COOKIE]
        if spec.max_age is None:  # unless the project set one in WEBAUTH["cookies"]
            spec = replace(spec, max_age=state.config.mfa.pending_max_age)
        token = jose.encode(
            token={"handle": record.handle},
            secret=list(state.config.secret),
            salt=spec.name,
            max_age=state.config.mfa.pending_max_age,
        )
        ck.set_cookie(response, spec, token)
        return response

    def app_answer(self, state: AuthState, pending: NeedsStep) -> dict[str, object]:
        config = state.config
        record = held.hold(config, pending, "app")
        answer: dict[str, object] = {
            "step": self.name,
            "mfaToken": record.handle,
            "methods": methods_of(config, record.user_id),
            "expiresIn": config.mfa.pending_max_age,
        }
        if not confirmed_factors(config, record.user_id):
            # mfa.required and no key yet: the key to add, confirmed by its first code.
            account = str(record.user_dict.get("email") or record.user_dict.get("name") or "")
            host = state.request.get_host()
            enrolment = enrolment_for(
                config,
                record.user_id,
                account=account or record.user_id,
                issuer=issuer_for(config, host),
            )
            answer["enrolment"] = {"key": enrolment.key, "uri": enrolment.uri}
        return answer


#: The step the app registers.
SECOND_FACTOR = SecondFactorStep()


def held_handle(state: AuthState) -> str | None:
    """The handle in the browser's ``authjs.mfa-pending`` cookie, if it holds a valid one."""
    spec = state.cookies[PENDING_COOKIE]
    raw = state.request_cookies.get(spec.name)
    if not raw:
        return None
    payload = jose.decode(token=ck.decode_value(raw), secret=state.config.secret, salt=spec.name)
    handle = payload.get("handle") if payload is not None else None
    return handle if isinstance(handle, str) else None


def forget_cookie(state: AuthState, response: HttpResponseBase) -> None:
    """Delete the browser's handle cookie, when it sent one."""
    spec = state.cookies[PENDING_COOKIE]
    if spec.name in state.request_cookies:
        ck.delete_cookie(response, spec)
