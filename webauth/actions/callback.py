"""``GET``/``POST /auth/callback/<provider>``: finish a sign-in.

The credentials flow lives here in full; OAuth, email and WebAuthn providers
verify their own response and then call :func:`finish_sign_in` too.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from django.http import HttpResponse

from ..callbacks import run_sign_in
from ..context import AuthContext
from ..errors import (
    AccessDenied,
    AuthError,
    CallbackRouteError,
    CredentialsSignin,
    InvalidProvider,
    MissingCSRF,
)
from ..events import emit
from ..providers.credentials import Credentials
from ..responses import redirect
from ..sessions import new_database_session, new_jwt_session
from ..utils import user_to_dict
from .session import write_session_result

__all__ = [
    "authorize_credentials",
    "callback",
    "check_sign_in",
    "django_logged_in",
    "finish_sign_in",
]


def callback(ctx: AuthContext) -> HttpResponse:
    """Dispatch the callback to the provider's flow."""
    provider = ctx.provider
    if provider is None:
        raise InvalidProvider(f"Unknown provider {ctx.provider_id!r}"[:120])
    if isinstance(provider, Credentials):
        if ctx.request.method != "POST":
            raise InvalidProvider("Credentials sign-in only supports POST")
        if not ctx.csrf.verified:
            raise MissingCSRF("CSRF token was missing during an action callback")
        return credentials_callback(ctx, provider, ctx.body)
    handle = getattr(provider, "handle_callback", None)
    if handle is None:
        raise InvalidProvider(f"Provider {provider.id!r} has no callback")
    return handle(ctx)


def authorize_credentials(
    ctx: AuthContext, provider: Credentials, credentials: Mapping[str, Any]
) -> tuple[Any, dict[str, Any], dict[str, Any]]:
    """Run ``authorize``; returns ``(raw user, user dict, account)`` or raises."""
    try:
        user = provider.authorize(credentials, ctx.request)
    except AuthError:
        raise
    except Exception as exc:
        raise CallbackRouteError(cause={"err": exc, "provider": provider.id}) from exc
    if not user:
        raise CredentialsSignin()
    user_dict = user_to_dict(user)
    if not user_dict.get("id"):
        user_dict["id"] = str(uuid.uuid4())
    account = {
        "providerAccountId": user_dict["id"],
        "type": "credentials",
        "provider": provider.id,
    }
    return user, user_dict, account


def credentials_callback(
    ctx: AuthContext, provider: Credentials, credentials: Mapping[str, Any]
) -> HttpResponse:
    """Check the submitted credentials and start a session."""
    user, user_dict, account = authorize_credentials(ctx, provider, credentials)
    denied = check_sign_in(ctx, user=user, account=account, credentials=credentials)
    if denied is not None:
        return denied
    django_logged_in(ctx, user)
    return finish_sign_in(ctx, user=user, user_dict=user_dict, account=account)


def check_sign_in(ctx: AuthContext, **params: Any) -> HttpResponse | None:
    """Run the ``sign_in`` callback: ``None`` to continue, or the redirect it asked for."""
    try:
        allowed = run_sign_in(ctx.config, **params)
    except AuthError:
        raise
    except Exception as exc:
        raise AccessDenied(str(exc), cause={"err": exc}) from exc
    if allowed is False:
        raise AccessDenied("AccessDenied")
    if isinstance(allowed, str):
        return redirect(ctx.redirect(allowed))
    return None


def finish_sign_in(
    ctx: AuthContext,
    *,
    user: Any,
    user_dict: Mapping[str, Any],
    account: Mapping[str, Any] | None,
    profile: Any = None,
    is_new_user: bool = False,
) -> HttpResponse:
    """Create the session, set its cookie, emit ``sign_in`` and redirect."""
    if ctx.config.session.strategy == "database":
        # Unlike Auth.js, credentials sign-ins get database sessions too.
        meta = ctx.request.META
        result = new_database_session(
            ctx.config,
            user_id=str(user_dict["id"]),
            user_agent=meta.get("HTTP_USER_AGENT"),
            ip_address=meta.get("REMOTE_ADDR") or None,
            replaces=ctx.session_cookie_value,
        )
    else:
        result = new_jwt_session(
            ctx.config,
            ctx.cookies["session_token"].name,
            user=user,
            user_dict=user_dict,
            account=account,
            profile=profile,
            is_new_user=is_new_user,
        )
    url = ctx.callback_url
    new_user_page = ctx.config.pages.new_user
    if is_new_user and new_user_page:
        from urllib.parse import quote

        # The configured path as it is, as in Auth.js (not joined to the origin).
        sep = "&" if "?" in new_user_page else "?"
        url = f"{new_user_page}{sep}callbackUrl={quote(url, safe='')}"
    response = redirect(url)
    write_session_result(ctx, response, result)
    message: dict[str, Any] = {"user": user, "account": account, "request": ctx.request}
    if profile is not None:
        message["profile"] = profile
        message["is_new_user"] = is_new_user
    emit(ctx.config, "sign_in", sender=account.get("provider") if account else None, **message)
    return response


def django_logged_in(ctx: AuthContext, user: Any) -> None:
    # A Django user signing in through webauth should look like a contrib.auth login to the
    # rest of the project: this updates last_login and reaches user_logged_in receivers.
    from django.contrib.auth import get_user_model
    from django.contrib.auth.signals import user_logged_in

    if isinstance(user, get_user_model()):
        user_logged_in.send(sender=type(user), request=ctx.request, user=user)
