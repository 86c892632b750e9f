"""The OAuth 2 / OpenID Connect flow: ``POST /auth/signin/<id>`` and ``/auth/callback/<id>``.

:func:`start` sends the browser to the provider's authorization endpoint.
:func:`callback` checks the authorization response (state, issuer, PKCE, nonce),
exchanges the code for tokens, reads the profile (a validated ID token or the
userinfo endpoint), maps it with the provider's hooks, and hands the result to
:func:`webauth.flows.signin.finish` as an :class:`OAuthAttempt`, whose storage
rules are :mod:`webauth.flows.accounts`.

Authlib builds the authorization URL and makes the token request (with the
provider's client authentication method); the protocol helpers are in
:mod:`webauth.oauth`.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, cast

from ..errors import (
    AuthError,
    OAuthCallbackError,
    OAuthProfileParseError,
    OAuthSignInError,
)
from ..identity import canonical_email_or_none
from ..oauth.checks import clear_checks, new_checks
from ..oauth.client import oauth_session
from ..oauth.discovery import endpoints
from ..oauth.response import Forward, issuer_matches, origin_of, read_response
from ..providers.oauth import DEFAULT_SCOPE, OAuth2
from ..responses import redirect
from ..types import ACCOUNT_TOKEN_FIELDS, AdapterAccount, AdapterUser
from .accounts import login_or_register
from .signin import Attempt, SignedIn, finish

if TYPE_CHECKING:
    from django.http import HttpResponse

    from ..providers.base import Provider
    from ..state import AuthState

__all__ = [
    "MAX_PARAM_LENGTH",
    "OAuthAttempt",
    "callback",
    "issuer_matches",
    "profile_attempt",
    "start",
]

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


def _proxy(state: AuthState, provider: OAuth2) -> str | None:
    """The redirect proxy's base URL when this request must go through it."""
    proxy = provider.redirect_proxy_url or state.config.redirect_proxy_url
    if not proxy or provider.response_mode == "form_post":
        return None
    return proxy.rstrip("/")


#: Its earlier names (tests/test_linked_accounts.py); the check is the protocol's.
_issuer_matches = issuer_matches


def _redirect_uri(state: AuthState, provider: OAuth2) -> tuple[str, str | None]:
    """``(redirect_uri, own callback URL if a proxy is used)``."""
    own = f"{state.base_url}/callback/{provider.id}"
    proxy = _proxy(state, provider)
    if proxy is not None and origin_of(proxy) != state.origin.lower():
        return f"{proxy}/callback/{provider.id}", own
    return own, None


def start(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """Redirect the browser to the provider's authorization endpoint.

    *params* are extra authorization parameters (the sign-in request's query, as
    in Auth.js, or ``authorization_params`` of :func:`webauth.sign_in`); the
    protocol's own parameters cannot be overridden. The callback URL is
    remembered in its cookie by the caller.
    """
    oauth = cast(OAuth2, provider)
    try:
        ep = endpoints(state.config, oauth)
    except AuthError as exc:
        raise OAuthSignInError(str(exc.message), cause={"err": exc}) from exc
    redirect_uri, own_callback = _redirect_uri(state, oauth)
    checks = new_checks(state, oauth, proxy_origin=own_callback)
    extra: dict[str, object] = dict(oauth.authorization_params)
    extra.update({k: v for k, v in params.items() if k not in _RESERVED})
    scope = extra.pop("scope", DEFAULT_SCOPE if oauth.scope is None else oauth.scope)
    if oauth.response_mode:
        extra.setdefault("response_mode", oauth.response_mode)
    if checks.nonce is not None:
        extra["nonce"] = checks.nonce
    client = oauth_session(
        state.config,
        oauth,
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
    checks.write(state, response, oauth)
    state.config.logger.debug("authorization url is ready", {"provider": oauth.id})
    return response


def _callback_params(source: Mapping[str, object]) -> dict[str, str]:
    params = {}
    for key, value in source.items():
        if not isinstance(value, str):
            continue
        if len(value) > MAX_PARAM_LENGTH:
            raise OAuthCallbackError(
                f"The callback parameter {key[:40]!r} is too long", user_caused=True
            )
        params[key] = value
    return params


def _user_data(
    provider: OAuth2, profile: dict[str, object], tokens: dict[str, object]
) -> dict[str, Any]:
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
    if "email" in mapped:  # a mapping that leaves the email out keeps it out (Auth.js)
        # webauth's canonical form (Auth.js lower-cases it): the one the user is
        # stored and looked up under. What is no address webauth accepts counts
        # as none: it could neither be mailed nor compared.
        mapped["email"] = canonical_email_or_none(mapped["email"])
    return mapped


@dataclass(slots=True)
class OAuthAttempt(Attempt):
    """A provider account whose tokens and profile the callback has verified."""

    provider_id: str
    callback_url: str
    provider: OAuth2
    user_data: dict[str, Any]
    account: AdapterAccount
    profile: dict[str, object]
    #: With an adapter: the user it already links to this account, if any.
    known: AdapterUser | None = None
    #: Without an adapter: the provider's user under a fresh id (as Auth.js).
    unstored: dict[str, object] | None = None

    @property
    def amr(self) -> tuple[str, ...]:  # type: ignore[override]
        """``fed``, and ``mfa`` when the verified ID token says the provider asked for
        a second factor that the provider's ``mfa_amr`` accepts."""
        accepted = self.provider.mfa_amr
        said = self.profile.get("amr") if self.provider.id_token and accepted else None
        if isinstance(said, list) and any(value in accepted for value in said):
            return ("fed", "mfa")
        return ("fed",)

    def sign_in_params(self) -> dict[str, object]:
        user = self.unstored if self.unstored is not None else (self.known or self.user_data)
        return {"user": user, "account": self.account.to_wire(), "profile": self.profile}

    def store(self, state: AuthState) -> SignedIn:
        if self.unstored is not None:
            return SignedIn(
                user=self.unstored,
                user_dict=self.unstored,
                account=self.account.to_wire(),
                profile=self.profile,
            )
        result = login_or_register(
            state,
            user_data=self.user_data,
            account=self.account,
            allow_email_linking=self.provider.allow_dangerous_email_account_linking,
            known=self.known,
        )
        user = result.user
        return SignedIn(
            user=user,
            user_dict={"id": user.id, "name": user.name, "email": user.email, "image": user.image},
            account=result.account.to_wire(),
            profile=self.profile,
            is_new_user=result.is_new_user,
            linked_to_session=result.linked_to_session,
        )


def callback(
    state: AuthState, provider: Provider, params: Mapping[str, object], callback_url: str
) -> HttpResponse:
    """Validate the authorization response (*params*), get tokens and profile, sign in."""
    oauth = cast(OAuth2, provider)
    received = _callback_params(params)
    redirect_uri, _own = _redirect_uri(state, oauth)
    answer = read_response(
        state, oauth, received, proxy=_proxy(state, oauth), redirect_uri=redirect_uri
    )
    if isinstance(answer, Forward):
        return redirect(answer.url)
    attempt = profile_attempt(state, oauth, answer.profile, answer.tokens, callback_url)
    response = finish(state, attempt)
    clear_checks(state, response)
    return response


def profile_attempt(
    state: AuthState,
    provider: OAuth2,
    profile: dict[str, object],
    tokens: dict[str, Any],
    callback_url: str,
) -> OAuthAttempt:
    """The attempt for a verified *profile* (and the *tokens* its account stores).

    Mapped with the provider's hooks; with an adapter, the user already linked
    to the account is looked up; without one, the user gets a fresh id (as Auth.js).
    """
    user_data = _user_data(provider, profile, tokens)
    account = AdapterAccount(
        user_id="",
        type=provider.type,
        provider=provider.id,
        provider_account_id=user_data["id"],
        **{name: tokens.get(name) for name in ACCOUNT_TOKEN_FIELDS},
        extra={k: v for k, v in tokens.items() if k not in ACCOUNT_TOKEN_FIELDS},
    )
    attempt = OAuthAttempt(
        provider_id=provider.id,
        callback_url=callback_url,
        provider=provider,
        user_data=user_data,
        account=account,
        profile=profile,
    )
    storage = state.config.storage
    if not storage.configured:  # Auth.js without an adapter: nothing is stored
        attempt.unstored = {**user_data, "id": str(uuid.uuid4())}
    else:
        attempt.known = storage.get_user_by_account(account.provider, account.provider_account_id)
    return attempt
