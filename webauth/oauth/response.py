"""The authorization response: from the provider's redirect back to a verified profile.

:func:`read_response` does, in order, everything the protocol asks of a
callback before anyone is signed in: forward a callback that belongs to
another deployment (the redirect proxy), check the ``state`` against this
browser's cookie (first, so that only the browser that started the sign-in is
shown the provider's error), the provider's error, the issuer (RFC 9207), the
code; then :func:`exchange_code`: the token request with the PKCE verifier,
and the profile (a validated ID token with the nonce, or the userinfo
endpoint). The flow (:mod:`webauth.flows.oauth`) turns the result into a
sign-in; the app sign-in's code flow calls :func:`exchange_code` with the
app's redirect URI and verifier.
"""

from __future__ import annotations

import hmac
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any
from urllib.parse import urlencode, urlsplit

from authlib.common.errors import AuthlibBaseError

from ..errors import AuthError, CallbackRouteError, InvalidCheck, OAuthCallbackError
from .checks import decode_state, read_check
from .client import oauth_session
from .discovery import endpoints
from .idtoken import validate_id_token
from .tokens import normalize_tokens

if TYPE_CHECKING:
    from ..providers.oauth import OAuth2
    from ..state import AuthState

__all__ = [
    "PERSON_ERRORS",
    "Forward",
    "Verified",
    "exchange_code",
    "issuer_matches",
    "origin_of",
    "read_response",
]

#: Authorization error codes that are the person's answer, not the provider
#: refusing the client (RFC 6749 4.1.2.1, OpenID Connect Core 3.1.2.6): logged
#: as warnings. ``invalid_scope``, ``unauthorized_client`` and the like are the
#: site's set-up and stay errors.
PERSON_ERRORS = frozenset(
    {
        "access_denied",
        "login_required",
        "consent_required",
        "interaction_required",
        "account_selection_required",
    }
)


@dataclass(frozen=True, slots=True)
class Forward:
    """On the redirect proxy: the callback belongs to the deployment at ``url``."""

    url: str


@dataclass(frozen=True, slots=True)
class Verified:
    """The tokens the code was exchanged for, and the profile they vouch for."""

    tokens: dict[str, object]
    profile: dict[str, object]


def origin_of(url: str) -> str:
    """``scheme://host[:port]`` of *url*, lower-cased."""
    parts = urlsplit(url)
    return f"{parts.scheme}://{parts.netloc}".lower()


def issuer_matches(received: str, expected: str) -> bool:
    """RFC 9207 ``iss`` check: exact, except that a multi-tenant issuer template
    (``.../{tenantid}/v2.0``) matches any one tenant segment."""
    if "{" not in expected:
        return received == expected
    pattern = re.escape(expected)
    pattern = re.sub(r"\\\{[^}]*\\\}", "[^/]+", pattern)
    return re.fullmatch(pattern, received) is not None


def read_response(
    state: AuthState,
    provider: OAuth2,
    received: Mapping[str, str],
    *,
    proxy: str | None,
    redirect_uri: str,
) -> Forward | Verified:
    """Check the authorization response *received*, exchange its code, verify the profile.

    *proxy* is the redirect proxy's base URL when this deployment uses one,
    *redirect_uri* the one the authorization request sent. Raises the error
    the callback answers (``InvalidCheck``, ``OAuthCallbackError``,
    ``CallbackRouteError``...).
    """
    forward = _proxy_hop(state, proxy, received)
    if forward is not None:
        return forward
    _check_state(state, provider, received)
    if "error" in received:
        description = received.get("error_description", "")
        raise OAuthCallbackError(
            f"{received['error'][:100]}: {description[:300]}".rstrip(": "),
            user_caused=received["error"] in PERSON_ERRORS,
        )
    ep = endpoints(state.config, provider)
    issuer = received.get("iss")
    if issuer is not None and ep.get("issuer") and not issuer_matches(issuer, ep["issuer"]):
        raise InvalidCheck(
            f"The authorization response's issuer {issuer[:200]!r} is not the "
            f"provider's ({ep['issuer']!r}): a mix-up attack or a misconfigured issuer"
        )
    code = received.get("code")
    if not code:
        raise OAuthCallbackError(
            "The provider's callback carries no authorization code", user_caused=True
        )
    code_verifier = read_check(state, provider, "pkce") if "pkce" in provider.checks else None
    nonce = read_check(state, provider, "nonce") if "nonce" in provider.checks else None
    return exchange_code(
        state,
        provider,
        ep,
        code=code,
        redirect_uri=redirect_uri,
        code_verifier=code_verifier,
        nonce=nonce,
        params=received,
    )


def _proxy_hop(state: AuthState, proxy: str | None, params: Mapping[str, str]) -> Forward | None:
    """On the redirect proxy: where a callback that belongs to another deployment goes."""
    if proxy is None or origin_of(proxy) != state.origin.lower() or "state" not in params:
        return None
    payload = decode_state(state.config, params["state"])
    if payload is None:
        raise InvalidCheck(
            "The state parameter could not be decrypted by the redirect proxy", user_caused=True
        )
    origin = payload.get("origin")
    if not isinstance(origin, str) or origin_of(origin) == state.origin.lower():
        return None
    return Forward(f"{origin}?{urlencode(params)}")


def _check_state(state: AuthState, provider: OAuth2, params: Mapping[str, str]) -> None:
    expected = read_check(state, provider, "state")
    received = params.get("state", "")
    if not received or not hmac.compare_digest(received.encode(), expected.encode()):
        raise InvalidCheck(
            "The state parameter does not match the state cookie: the callback does not "
            "belong to the sign-in this browser started",
            user_caused=True,
        )


def exchange_code(
    state: AuthState,
    provider: OAuth2,
    ep: Mapping[str, Any],
    *,
    code: str,
    redirect_uri: str,
    code_verifier: str | None,
    nonce: str | None,
    params: Mapping[str, str],
) -> Verified:
    """Exchange *code* for tokens and read the profile (ID token or userinfo).

    *params* are the authorization response's (Apple's ``user`` joins the profile).
    """
    client = oauth_session(
        state.config, provider, redirect_uri=redirect_uri, token_endpoint=ep["token_endpoint"]
    )
    kwargs: dict[str, object] = {"code": code, "grant_type": "authorization_code"}
    if code_verifier is not None:
        kwargs["code_verifier"] = code_verifier
    try:
        token = client.fetch_token(ep["token_endpoint"], **kwargs)
    except (AuthlibBaseError, OSError, ValueError) as exc:
        # invalid_grant: the code was used already or expired (a callback opened
        # twice, a double click); invalid_client and the rest are the site's set-up.
        used_code = getattr(exc, "error", None) == "invalid_grant"
        raise CallbackRouteError(
            f"The token request to provider {provider.id!r} failed",
            cause={"err": exc},
            user_caused=used_code,
        ) from exc
    tokens = normalize_tokens(provider.conform_token(dict(token)))
    profile = _profile(state, provider, ep, client, tokens, nonce)
    profile.update(provider.extra_callback_profile(params))
    return Verified(tokens=tokens, profile=profile)


def _profile(
    state: AuthState,
    provider: OAuth2,
    ep: Mapping[str, Any],
    client: Any,
    tokens: dict[str, object],
    nonce: str | None,
) -> dict[str, object]:
    if provider.id_token:
        id_token = tokens.get("id_token")
        if not isinstance(id_token, str):
            raise CallbackRouteError(f"Provider {provider.id!r} returned no ID token")
        return validate_id_token(
            state.config,
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
