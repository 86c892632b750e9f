"""``GET /auth/webauthn-options/<provider>``: a WebAuthn ceremony's options."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidProvider
from ..flows import flow_for

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["webauthn_options"]


def webauthn_options(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Hand the query (``action``, ``email``) to the provider's flow (protocol 8.1)."""
    provider = state.config.get_provider(provider_id)
    if provider is None:
        raise InvalidProvider(f"Unknown provider {(provider_id or '')[:100]!r}", user_caused=True)
    flow = flow_for(provider)
    if flow is None or flow.options is None:
        raise InvalidProvider(f"Provider {provider.id!r} has no WebAuthn options", user_caused=True)
    return flow.options(state, provider, state.query, state.callback_url)
