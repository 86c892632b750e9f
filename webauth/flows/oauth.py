"""The two OAuth routes: ``POST /auth/signin/<id>`` and ``/auth/callback/<id>``.

Authlib builds the authorization URL and makes the token request (with the
provider's client authentication method); webauth adds Auth.js's check cookies,
validates ID tokens itself (:mod:`.idtoken`), maps the profile and hands the
account to :mod:`.accounts`.
"""

from __future__ import annotations

import hmac
import re
import time
import uuid
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from authlib.common.errors import AuthlibBaseError

from ..actions.callback import check_sign_in, django_logged_in, finish_sign_in
from ..adapters.base import AdapterCaller
from ..errors import (
    AuthError,
    CallbackRouteError,
    InvalidCheck,
    OAuthCallbackError,
    OAuthProfileParseError,
    OAuthSignInError,
)
from ..providers.oauth import DEFAULT_SCOPE
from ..responses import redirect
from ..types import ACCOUNT_TOKEN_FIELDS, AdapterAccount, AdapterUser, as_user
from .accounts import login_or_register
from .checks import clear_checks, decode_state, new_checks, read_check
from .client import oauth_session
from .discovery import endpoints
from .idtoken import validate_id_token

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..context import AuthContext
    from ..providers.oauth import OAuth2

__all__ = ["handle_callback", "start_sign_in"]

#: Parameters the request's query may not override in the authorization request.
_RESERVED = frozenset(
    {
        "response_type",
        "client_id",
        "redirect_uri",
        "state",
        "nonce",
        "code_challenge",
        "code_challenge_method",
        "callbackUrl",
        "csrfToken",
    }
)
MAX_PARAM_LENGTH = 8192


def _origin(url: str) -> str:
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def _proxy(ctx: AuthContext, provider: OAuth2) -> str | None:
    """The redirect proxy's base URL when this request must go through it."""
    proxy = provider.redirect_proxy_url or ctx.config.redirect_proxy_url
    if not proxy or provider.response_mode == "form_post":
        return None
    return proxy.rstrip("/")


def _redirect_uri(ctx: AuthContext, provider: OAuth2) -> tuple[str, str | None]:
    """``(redirect_uri, own callback URL if a proxy is used)``."""
    own = f"{ctx.base_url}/callback/{provider.id}"
    proxy = _proxy(ctx, provider)
    if proxy is not None and _origin(proxy) != ctx.origin.lower():
        return f"{proxy}/callback/{provider.id}", own
    return own, None


def start_sign_in(ctx: AuthContext, provider: OAuth2) -> HttpResponse:
    """Redirect the browser to the provider's authorization endpoint."""
    try:
        ep = endpoints(ctx.config, provider)
    except AuthError as exc:
        raise OAuthSignInError(str(exc.message), cause={"err": exc}) from exc
    redirect_uri, own_callback = _redirect_uri(ctx, provider)
    checks = new_checks(ctx, provider, proxy_origin=own_callback)
    extra: dict[str, Any] = dict(provider.authorization_params)
    extra.update({k: v for k, v in ctx.query.items() if k not in _RESERVED})
    scope = extra.pop("scope", DEFAULT_SCOPE if provider.scope is None else provider.scope)
    if provider.response_mode:
        extra.setdefault("response_mode", provider.response_mode)
    if checks.nonce is not None:
        extra["nonce"] = checks.nonce
    client = oauth_session(
        ctx.config,
        provider,
        redirect_uri=redirect_uri,
        scope=scope or None,
        code_challenge_method="S256" if checks.code_verifier else None,
    )
    url, _state = client.create_authorization_url(
        ep["authorization_endpoint"],
        state=checks.state,
        code_verifier=checks.code_verifier,
        **{k: str(v) for k, v in extra.items()},
    )
    response = redirect(url)
    checks.write(ctx, response, provider)
    ctx.config.logger.debug("authorization url is ready", {"provider": provider.id})
    return response


def _callback_params(ctx: AuthContext) -> dict[str, str]:
    source: Mapping[str, Any] = ctx.body if ctx.request.method == "POST" else ctx.query
    params = {}
    for key, value in source.items():
        if not isinstance(value, str):
            continue
        if len(value) > MAX_PARAM_LENGTH:
            raise OAuthCallbackError(f"The callback parameter {key[:40]!r} is too long")
        params[key] = value
    return params


def _proxy_hop(ctx: AuthContext, provider: OAuth2, params: dict[str, str]) -> HttpResponse | None:
    """On the redirect proxy: forward a callback that belongs to another deployment."""
    proxy = _proxy(ctx, provider)
    if proxy is None or _origin(proxy) != ctx.origin.lower() or "state" not in params:
        return None
    payload = decode_state(ctx, params["state"])
    if payload is None:
        raise InvalidCheck("The state parameter could not be decrypted by the redirect proxy")
    origin = payload.get("origin")
    if not isinstance(origin, str) or _origin(origin) == ctx.origin.lower():
        return None
    return redirect(f"{origin}?{urlencode(params)}")


def _issuer_matches(received: str, expected: str) -> bool:
    """RFC 9207 ``iss`` check: exact, except that a multi-tenant issuer template
    (``.../{tenantid}/v2.0``) matches any one tenant segment."""
    if "{" not in expected:
        return received == expected
    pattern = re.escape(expected)
    pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", pattern)
    return re.fullmatch(pattern, received) is not None


def _check_state(ctx: AuthContext, provider: OAuth2, params: Mapping[str, str]) -> None:
    expected = read_check(ctx, provider, "state")
    received = params.get("state", "")
    if not received or not hmac.compare_digest(received.encode(), expected.encode()):
        raise InvalidCheck(
            "The state parameter does not match the state cookie: the callback does not "
            "belong to the sign-in this browser started"
        )


def normalize_tokens(token: Mapping[str, Any]) -> dict[str, Any]:
    tokens = dict(token)
    if not isinstance(tokens.get("access_token"), str) or not tokens["access_token"]:
        raise CallbackRouteError("The token response has no access_token")
    if not isinstance(tokens.get("token_type"), str):
        raise CallbackRouteError("The token response has no token_type")
    tokens["token_type"] = tokens["token_type"].lower()
    expires_in = tokens.get("expires_in")
    if isinstance(expires_in, str) and expires_in.isdigit():
        expires_in = tokens["expires_in"] = int(expires_in)
    if isinstance(expires_in, int | float) and expires_in:
        tokens["expires_at"] = int(time.time()) + int(expires_in)
    return tokens


def _exchange(
    ctx: AuthContext,
    provider: OAuth2,
    ep: Mapping[str, Any],
    code: str,
    redirect_uri: str,
    code_verifier: str | None,
) -> Any:
    client = oauth_session(
        ctx.config, provider, redirect_uri=redirect_uri, token_endpoint=ep["token_endpoint"]
    )
    kwargs: dict[str, Any] = {"code": code, "grant_type": "authorization_code"}
    if code_verifier is not None:
        kwargs["code_verifier"] = code_verifier
    try:
        token = client.fetch_token(ep["token_endpoint"], **kwargs)
    except (AuthlibBaseError, OSError, ValueError) as exc:
        raise CallbackRouteError(
            f"The token request to provider {provider.id!r} failed", cause={"err": exc}
        ) from exc
    return client, normalize_tokens(provider.conform_token(dict(token)))


def _profile(
    ctx: AuthContext,
    provider: OAuth2,
    ep: Mapping[str, Any],
    client: Any,
    tokens: dict[str, Any],
    nonce: str | None,
) -> dict[str, Any]:
    if provider.id_token:
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise CallbackRouteError(f"Provider {provider.id!r} returned no ID token")
        return validate_id_token(
            ctx.config,
            provider,
            id_token,
            issuer=ep.get("issuer"),
            jwks_uri=ep.get("jwks_uri"),
            nonce=nonce,
        )
    try:
        return provider.get_userinfo(client, tokens, ep.get("userinfo_endpoint"))
    except AuthError:
        raise
    except Exception as exc:
        raise CallbackRouteError(
            f"Reading the profile from provider {provider.id!r} failed", cause={"err": exc}
        ) from exc


def _user_data(provider: OAuth2, profile: dict[str, Any], tokens: dict[str, Any]) -> dict[str, Any]:
    try:
        mapped = dict(provider.profile(profile, tokens))
        ident = mapped.get("id")
        if ident is None or ident == "":
            raise ValueError("the profile has no id")
    except Exception as exc:
        raise OAuthProfileParseError(
            f"Provider {provider.id!r} returned a profile webauth could not map",
            cause={"err": exc},
        ) from exc
    mapped["id"] = str(ident)
    email = mapped.get("email")
    mapped["email"] = email.lower() if isinstance(email, str) and email else None
    return mapped


def handle_callback(ctx: AuthContext, provider: OAuth2) -> HttpResponse:
    """Validate the authorization response, get tokens and profile, and sign the user in."""
    params = _callback_params(ctx)
    forwarded = _proxy_hop(ctx, provider, params)
    if forwarded is not None:
        return forwarded
    # The state is checked first, so that only the browser that started the
    # sign-in can even be shown the provider's error.
    _check_state(ctx, provider, params)
    if "error" in params:
        description = params.get("error_description", "")
        raise OAuthCallbackError(f"{params['error'][:100]}: {description[:300]}".rstrip(": "))
    ep = endpoints(ctx.config, provider)
    if "iss" in params and ep.get("issuer") and not _issuer_matches(params["iss"], ep["issuer"]):
        raise InvalidCheck(
            f"The authorization response's issuer {params['iss'][:200]!r} is not the "
            f"provider's ({ep['issuer']!r}): a mix-up attack or a misconfigured issuer"
        )
    code = params.get("code")
    if not code:
        raise OAuthCallbackError("The provider's callback carries no authorization code")
    code_verifier = read_check(ctx, provider, "pkce") if "pkce" in provider.checks else None
    nonce = read_check(ctx, provider, "nonce") if "nonce" in provider.checks else None
    redirect_uri, _own = _redirect_uri(ctx, provider)

    client, tokens = _exchange(ctx, provider, ep, code, redirect_uri, code_verifier)
    profile = _profile(ctx, provider, ep, client, tokens, nonce)
    profile.update(provider.extra_callback_profile(params))
    user_data = _user_data(provider, profile, tokens)
    account = AdapterAccount(
        user_id="",
        type=provider.type,
        provider=provider.id,
        provider_account_id=user_data["id"],
        **{name: tokens.get(name) for name in ACCOUNT_TOKEN_FIELDS},
        extra={k: v for k, v in tokens.items() if k not in ACCOUNT_TOKEN_FIELDS},
    )
    response = _sign_in(ctx, provider, user_data, account, profile)
    clear_checks(ctx, response)
    return response


def _sign_in(
    ctx: AuthContext,
    provider: OAuth2,
    user_data: dict[str, Any],
    account: AdapterAccount,
    profile: dict[str, Any],
) -> HttpResponse:
    if ctx.config.adapter is None:
        return _sign_in_without_adapter(ctx, user_data, account, profile)
    return _sign_in_with_adapter(ctx, provider, user_data, account, profile)


def _sign_in_without_adapter(
    ctx: AuthContext, user_data: dict[str, Any], account: AdapterAccount, profile: dict[str, Any]
) -> HttpResponse:
    # Without storage the provider's user is used as is, under a fresh id (as Auth.js).
    user = {**user_data, "id": str(uuid.uuid4())}
    denied = check_sign_in(ctx, user=user, account=account.to_wire(), profile=profile)
    if denied is not None:
        return denied
    return finish_sign_in(
        ctx, user=user, user_dict=user, account=account.to_wire(), profile=profile
    )


def _sign_in_with_adapter(
    ctx: AuthContext,
    provider: OAuth2,
    user_data: dict[str, Any],
    account: AdapterAccount,
    profile: dict[str, Any],
) -> HttpResponse:
    caller = AdapterCaller(ctx.config.adapter, ctx.config.logger)
    existing = as_user(caller("get_user_by_account", account.provider, account.provider_account_id))
    candidate: Any = existing if existing is not None else user_data
    denied = check_sign_in(ctx, user=candidate, account=account.to_wire(), profile=profile)
    if denied is not None:
        return denied
    result = login_or_register(
        ctx,
        user_data=user_data,
        account=account,
        allow_email_linking=provider.allow_dangerous_email_account_linking,
    )
    user: AdapterUser = result.user
    if user.instance is not None:
        django_logged_in(ctx, user.instance)
    return finish_sign_in(
        ctx,
        user=user,
        user_dict={"id": user.id, "name": user.name, "email": user.email, "image": user.image},
        account=result.account.to_wire(),
        profile=profile,
        is_new_user=result.is_new_user,
    )
