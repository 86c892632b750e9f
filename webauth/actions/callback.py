"""``GET``/``POST /auth/callback/<provider>``: finish a sign-in with the provider's flow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .. import ratelimit
from ..clients import reads_json
from ..errors import CredentialsSignin, InvalidProvider, MissingCSRF, RateLimited
from ..flows import flow_for
from ..flows.credentials import remember_form
from ..responses import redirect

if TYPE_CHECKING:
    from collections.abc import Mapping

    from django.http import HttpResponse

    from ..providers.base import Provider
    from ..state import AuthState

__all__ = ["callback", "rate_limited", "refused_credentials"]


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
    except CredentialsSignin as exc:
        if not flow.has_password_form or state.config.pages.sign_in or reads_json(state.request):
            raise  # Auth.js's answer, from the view
        return refused_credentials(state, provider, params, exc)


def refused_credentials(
    state: AuthState, provider: Provider, params: Mapping[str, object], exc: CredentialsSignin
) -> HttpResponse:
    """A refused credentials form of the built-in sign-in page.

    Auth.js's answer (the redirect to the sign-in page with
    ``error=CredentialsSignin&code=<code>``), plus the cookie that lets the page
    show the username again (:func:`~webauth.flows.credentials.remember_form`).
    """
    state.config.logger.error(exc)
    response = redirect(state.page_url("signin", {"error": exc.type, "code": exc.code}))
    remember_form(state, response, provider, params)
    return response


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
        return ratelimit.limited_response(retry_after, {"url": url})
    response = redirect(url)
    response["Retry-After"] = str(retry_after)
    return response
