"""When a request must pass the bot challenge, and the check itself.

``WEBAUTH["challenge"]["on"]`` names the actions a challenge guards (the keys
of :data:`~webauth.conf.options.CHALLENGE_ACTIONS`: ``signin``, ``signup``,
``reset``, ``email``); ``when`` says when:

* ``"always"``: every such request carries the widget's answer;
* ``"abuse"``: only once the client's address has used ``share`` (0.5 by
  default) of a per-address rule of the action's rate limit in that rule's
  current window: ``signin`` reads ``signin_failed`` (failed passwords),
  ``email`` ``email_send``, ``signup`` ``signup``, ``reset``
  ``password_reset``. With the defaults, after 5 failed passwords from one
  address in a minute (``10/m/ip``) the next sign-in from there needs the
  challenge until that minute is over. The counts are the limiter's own, in
  its cache (:func:`webauth.ratelimit.usage`: one read, nothing counted), so
  the decision holds across processes wherever the limits do. A cache that
  cannot be read asks for no challenge, as the limiter lets requests through.

The check comes before anything else the request does (no password checked,
no email sent, nothing counted against the rate limits), and a request that
carries no answer is refused without asking the service.

With the challenge off (the default) the flows test ``config.challenge is
None`` and call nothing here.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping
from typing import TYPE_CHECKING, Any

from django.http import HttpRequest

from .. import ratelimit
from ..client_ip import client_ip
from ..conf import get_config
from ..conf.options import CHALLENGE_ACTIONS
from ..errors import ChallengeFailed
from .base import token_problem

if TYPE_CHECKING:
    from ..conf import ChallengeOptions, Config
    from ..state import AuthState

__all__ = ["describe", "is_required", "page_context", "require"]


def _request_and_config(state_or_request: AuthState | HttpRequest) -> tuple[HttpRequest, Config]:
    if isinstance(state_or_request, HttpRequest):
        return state_or_request, get_config()
    return state_or_request.request, state_or_request.config


def _known(actions: Iterable[str]) -> list[str]:
    wanted = list(actions)
    for action in wanted:
        if action not in CHALLENGE_ACTIONS:
            raise ValueError(
                f"{action!r} is not a challenge action (known: {', '.join(CHALLENGE_ACTIONS)})"
            )
    return wanted


def _needed(
    request: HttpRequest, config: Config, challenge: ChallengeOptions, actions: list[str]
) -> list[str]:
    """Those of *actions* that need the challenge for *request* now."""
    guarded = [action for action in actions if action in challenge.on]
    if challenge.when == "always" or not guarded:
        return guarded
    limits = sorted({CHALLENGE_ACTIONS[action] for action in guarded})
    used = ratelimit.usage(request, limits, config=config)
    return [
        action
        for action in guarded
        if any(
            count >= max(1, math.ceil(challenge.share * rule.limit))
            for rule, count in used[CHALLENGE_ACTIONS[action]]
        )
    ]


def describe(challenge: ChallengeOptions) -> dict[str, str]:
    """What a client needs to show the widget: ``{"service", "siteKey", "field"}`` (public)."""
    service = challenge.service
    return {"service": service.name, "siteKey": service.site_key, "field": service.field}


def is_required(state_or_request: AuthState | HttpRequest, action: str) -> bool:
    """Whether *action* (``"signin"``, ``"signup"``, ``"reset"``, ``"email"``) needs the
    challenge for this request now. At most one cache read (``when: "abuse"``)."""
    (action,) = _known((action,))
    request, config = _request_and_config(state_or_request)
    challenge = config.challenge
    if challenge is None:
        return False
    return bool(_needed(request, config, challenge, [action]))


def require(
    state_or_request: AuthState | HttpRequest, action: str, params: Mapping[str, Any]
) -> None:
    """Refuse the request unless it passed the challenge, when *action* needs one.

    Call it first, before the request checks or sends anything::

        from webauth import challenges

        def signup(state, params):
            challenges.require(state, "signup", params)  # raises ChallengeFailed
            ...

    *state_or_request*: the request's :class:`~webauth.state.AuthState`, or the
    ``HttpRequest`` (its configuration is then :func:`~webauth.conf.get_config`'s).
    *action*: one of ``"signin"``, ``"signup"``, ``"reset"``, ``"email"``
    (``ValueError`` otherwise). *params*: the request's fields (the form, or a
    JSON object), where the widget's answer is under the service's field
    (``cf-turnstile-response``, ``h-captcha-response``, ``g-recaptcha-response``).

    Returns when the challenge is off, does not guard *action*, is not needed
    now (``when: "abuse"``), or the service accepted the answer. Raises
    :class:`~webauth.errors.ChallengeFailed` otherwise: ``code="missing"``
    without an answer (the service is not asked), ``code="refused"`` when the
    answer is malformed (too long, not a string: not sent either) or the
    service did not accept it or could not be reached. Answer it as the route
    answers its other refusals: :func:`webauth.flows.render.challenge_refused`
    does for the sign-in routes (the sign-in page's message, or ``400`` JSON).
    """
    (action,) = _known((action,))
    request, config = _request_and_config(state_or_request)
    challenge = config.challenge
    if challenge is None or not _needed(request, config, challenge, [action]):
        return
    service = challenge.service
    token = params.get(service.field)
    if token is None or token == "":
        raise ChallengeFailed(
            f"No {service.name} answer came with the request ({action})",
            code="missing",
            challenge=describe(challenge),
        )
    problem = token_problem(token, service.max_token_length)
    if problem is not None:
        raise ChallengeFailed(
            f"The {service.name} answer was refused unsent ({action}): {problem}",
            challenge=describe(challenge),
        )
    address = client_ip(request.META, config.trusted_proxies)
    if not service.verify(token, str(address) if address is not None else None):
        raise ChallengeFailed(
            f"The {service.name} challenge was not passed ({action})",
            challenge=describe(challenge),
        )


def page_context(
    state_or_request: AuthState | HttpRequest, actions: Iterable[str]
) -> dict[str, object] | None:
    """What a page needs to show the widget in its forms of *actions*, or ``None``.

    ``None`` when the challenge is off or none of *actions* needs it now; else
    ``{"service", "field", "site_key", "script_url", "widget", "needed"}``:
    ``widget`` the element to put inside each such form (safe HTML, in the
    page's colour scheme), ``script_url`` the script to load once per page,
    ``needed`` the set of *actions* that need it. The templates
    ``webauth/includes/challenge.html`` (in a form) and
    ``webauth/includes/challenge_script.html`` (once) render it.
    """
    wanted = _known(actions)
    request, config = _request_and_config(state_or_request)
    challenge = config.challenge
    if challenge is None:
        return None
    needed = _needed(request, config, challenge, wanted)
    if not needed:
        return None
    service = challenge.service
    return {
        "service": service.name,
        "field": service.field,
        "site_key": service.site_key,
        "script_url": service.script_url,
        "widget": service.widget(theme=config.theme.color_scheme),
        "needed": frozenset(needed),
    }
