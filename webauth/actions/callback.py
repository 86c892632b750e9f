"""``GET``/``POST /auth/callback/<provider>``: finish a sign-in with the provider's flow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ratelimit
from ..clients import reads_json
from ..errors import ChallengeFailed, CredentialsSignin, InvalidProvider, MissingCSRF, RateLimited
from ..flows import flow_for
from ..flows.render import challenge_refused, rate_limited

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["callback"]


def callback(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Hand the provider's answer (the query, or the body of a POST) to its flow."""
    provider = state.config.get_provider(provider_id)
    if provider is None:
        shown = (provider_id or "")[:100]
        raise InvalidProvider(f"Unknown provider {shown!r}", user_caused=True)
    flow = flow_for(provider)
    if flow is None:
        raise InvalidProvider(f"Provider {provider.id!r} has no callback")
    method = state.request.method
    if method not in flow.callback_methods:
        raise InvalidProvider(
            f"{provider.type} sign-in does not support {method} (provider {provider.id!r})",
            user_caused=True,
        )
    if flow.callback_needs_csrf and method == "POST" and not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action callback")
    params = state.body if method == "POST" else state.query
    try:
        # The kinds whose flows do not limit their own attempts (Flow.callback_rate_limit).
        if flow.callback_rate_limit is not None:
            decision = ratelimit.hit(state.request, flow.callback_rate_limit, config=state.config)
            if not decision:
                raise RateLimited(
                    f"Too many {flow.name} callbacks", retry_after=decision.retry_after
                )
        return flow.callback(state, provider, params, state.callback_url)
    except RateLimited as exc:
        return rate_limited(state, exc)
    except ChallengeFailed as exc:
        if flow.refused_form is None or state.config.pages.sign_in or reads_json(state.request):
            return challenge_refused(state, exc)
        return flow.refused_form(state, provider, params, exc)  # keeps the username
    except CredentialsSignin as exc:
        if flow.refused_form is None or state.config.pages.sign_in or reads_json(state.request):
            raise  # Auth.js's answer, from the view
        # The built-in page's form again, as the kind shows it (Flow.refused_form).
        return flow.refused_form(state, provider, params, exc)
