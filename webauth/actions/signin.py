"""``GET /auth/signin`` (the page) and ``POST /auth/signin/<provider>``."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..clients import returns_redirect
from ..errors import ChallengeFailed, EmailSignInError, InvalidProvider, MissingCSRF, RateLimited
from ..flows import flow_for
from ..flows.email import InvalidEmail
from ..flows.render import challenge_refused, rate_limited
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
        raise InvalidProvider(f"Unknown provider {provider_id[:100]!r}", user_caused=True)
    flow = flow_for(provider) if provider is not None else None
    if provider is None or flow is None or flow.start is None:
        # Credentials (and WebAuthn) sign in through their own forms and the callback route.
        return redirect(f"{state.base_url}/signin")
    params = state.body if flow.start_reads_body else state.query
    try:
        return flow.start(state, provider, params, state.callback_url)
    except RateLimited as exc:
        return rate_limited(state, exc)
    except ChallengeFailed as exc:
        return challenge_refused(state, exc)
    except InvalidEmail as exc:
        state.config.logger.error(exc)
        if state.config.pages.sign_in or returns_redirect(state.request):
            return redirect(state.page_url("signin", {"error": "EmailSignin", "code": exc.code}))
        # The built-in page again, with the field's error and what was typed.
        return render_signin_page(
            state,
            status=400,
            field_errors={provider.id: {"email": exc.field_message}},
            values={provider.id: {"email": exc.value[:320]}},
        )
    except EmailSignInError as exc:
        # The message could not be sent (Auth.js v4's ?error=EmailSignin).
        state.config.logger.error(exc)
        return redirect(state.page_url("signin", {"error": "EmailSignin"}))
