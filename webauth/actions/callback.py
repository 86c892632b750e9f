"""``GET``/``POST /auth/callback/<provider>``: finish a sign-in with the provider's flow."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidProvider, MissingCSRF
from ..flows import flow_for

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["callback"]


def callback(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Hand the provider's answer (the query, or the body of a POST) to its flow."""
    provider = state.config.get_provider(provider_id)
    if provider is None:
        raise InvalidProvider(f"Unknown provider {provider_id!r}"[:120])
    flow = flow_for(provider)
    if flow is None:
        raise InvalidProvider(f"Provider {provider.id!r} has no callback")
    method = state.request.method
    if method not in flow.callback_methods:
        raise InvalidProvider(f"{provider.type} sign-in does not support {method}")
    if flow.callback_needs_csrf and not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action callback")
    params = state.body if method == "POST" else state.query
    return flow.callback(state, provider, params, state.callback_url)
