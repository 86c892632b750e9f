"""``GET /auth/signin`` (the page) and ``POST /auth/signin/<provider>``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..errors import InvalidProvider, MissingCSRF
from ..flows import flow_for
from ..pages import render_signin_page
from ..responses import redirect

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..state import AuthState

__all__ = ["signin", "signin_page"]


def signin_page(state: AuthState, provider_id: str | None) -> HttpResponse:
    """The built-in sign-in page, or a redirect to ``pages.sign_in``."""
    if state.config.pages.sign_in:
        params = {"callbackUrl": state.callback_url}
        if "error" in state.query:
            params["error"] = state.query["error"]
        return redirect(state.page_url("signin", params, raw=True))
    return render_signin_page(state)


def signin(state: AuthState, provider_id: str | None) -> HttpResponse:
    """Start a sign-in with a provider (CSRF required): its flow's first step."""
    if not state.csrf_verified:
        raise MissingCSRF("CSRF token was missing during an action signin")
    provider = state.config.get_provider(provider_id)
    if provider_id is not None and provider is None:
        raise InvalidProvider(f"Unknown provider {provider_id[:100]!r}")
    flow = flow_for(provider) if provider is not None else None
    if provider is None or flow is None or flow.start is None:
        # Credentials (and WebAuthn) sign in through their own forms and the callback route.
        return redirect(f"{state.base_url}/signin")
    return flow.start(state, provider, state.query, state.callback_url)
