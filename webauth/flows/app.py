"""Sign-in for clients that hold no cookies: native apps and single-page apps.

Each sign-in method has a JSON twin under ``/auth/app/`` (docs/apps.md); this
module holds their flows, built on the same first halves as the browser's
(``credentials.attempt_for``, ``email.send``, ``webauthn.prepare``...), and the
one place their sign-in ends, :func:`issue_app_session`: the same
:func:`~webauth.flows.signin.complete` as a browser's sign-in (the ``sign_in``
and ``jwt`` callbacks, storage, ``user_logged_in``, the session, the
``sign_in`` event), answered with the session's token instead of a cookie. The
token is what the session cookie would hold (the encrypted JWT, or the
database session's token), for the client to send as
``Authorization: Bearer <token>``.

What replaces the browser's cookies:

* **Passkeys**: the challenge's *binding* (kept in the ``authjs.challenge``
  cookie for a browser) is returned with the options, and the client sends it
  back with the credential; the challenge is still single-use and stored
  hashed.
* **OAuth, authorization code with PKCE** (RFC 8252): the app makes the PKCE
  pair and keeps the verifier; webauth keeps the ``state`` (with the app's
  redirect URI, its code challenge and the nonce) server-side in the rate
  limits' cache for 15 minutes, and uses it once. The redirect URI must be one
  of ``WEBAUTH["app_redirect_uris"]``.
* **OAuth, ID token from the platform's SDK** (Google, Apple): validated as the
  OIDC callback validates one (signature through the issuer's JWKS, ``iss``,
  ``aud``/``azp`` among the provider's ``client_id`` and ``app_client_ids``,
  ``exp``, ``iat``), with a nonce the app chose: the token must carry the
  SHA-256 (hex) of the raw nonce the app sends here, so that an ID token
  caught elsewhere (a log, another app of the same client) is useless
  without it; each nonce signs in once.
* **Email codes**: the address comes with the code (the browser's pending
  cookie names it), and so does the grant's *binding*, which the request
  answered (a browser keeps it in the pending cookie): a code read out of the
  message redeems nothing without it. The grant's attempt limit and
  ``code_failed`` still apply.

Nothing here reads or writes a cookie, or logs a token, code, nonce or binding.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import re
import secrets
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, ClassVar
from urllib.parse import urlsplit

from django.core.cache import caches

from .. import challenges, ratelimit
from ..conf.sections import LOOPBACK_HOSTS
from ..cookies import CHECK_MAX_AGE
from ..errors import (
    AuthError,
    InvalidCheck,
    InvalidProvider,
    OAuthSignInError,
    RateLimited,
    Verification,
)
from ..identity import MAX_EMAIL_LENGTH
from ..oauth.client import oauth_session
from ..oauth.discovery import endpoints
from ..oauth.idtoken import CLOCK_TOLERANCE, validate_id_token
from ..oauth.response import exchange_code
from ..providers.credentials import Credentials
from ..providers.email import Email
from ..providers.oauth import DEFAULT_SCOPE, OAuth2
from ..providers.webauthn import WebAuthn
from . import credentials, email, oauth, webauthn
from .render import SignInRedirected, for_app
from .signin import Attempt, complete

if TYPE_CHECKING:
    from ..conf import Config
    from ..state import AuthState

__all__ = [
    "InvalidRequest",
    "SignInRedirected",
    "authorize",
    "credentials_sign_in",
    "email_redeem",
    "email_request",
    "id_token_sign_in",
    "issue_app_session",
    "passkey_options",
    "passkey_verify",
    "redirect_uri_allowed",
    "token",
]

#: The longest string field an app's request may carry (an ID token is a few KB).
MAX_FIELD_LENGTH = 16 * 1024
#: The longest redirect URI webauth compares (no provider accepts more).
MAX_REDIRECT_URI_LENGTH = 2048
#: A raw nonce: long enough to be unguessable, short enough for any SDK.
NONCE_LENGTHS = range(16, 513)
#: RFC 7636 4.1: 43 to 128 of these characters.
_VERIFIER = re.compile(r"[A-Za-z0-9._~-]{43,128}")
#: An S256 challenge: base64url of 32 bytes, no padding.
_S256_CHALLENGE = re.compile(r"[A-Za-z0-9_-]{43}")
#: An email grant's binding, as ``email_request`` answered it.
_BINDING = re.compile(rf"[A-Za-z0-9_-]{{{email.BINDING_LENGTH}}}")
#: The key prefix of the single-use records in the cache.
_CACHE_PREFIX = "webauth:app"


class InvalidRequest(AuthError):
    """The app's request is malformed: a field missing, of the wrong type, too long.

    Answered ``400 {"error": "InvalidRequest", "message": ...}``; the message
    is webauth's own text, never the client's.
    """

    type: ClassVar[str] = "InvalidRequest"


# -- reading the app's request -------------------------------------------------------------------


def _text(
    body: Mapping[str, object],
    name: str,
    *,
    max_length: int = MAX_FIELD_LENGTH,
    pattern: re.Pattern[str] | None = None,
) -> str:
    """The string field *name* of *body*; :class:`InvalidRequest` when it is not one."""
    value = body.get(name)
    if not isinstance(value, str) or not value:
        raise InvalidRequest(f"{name} must be a non-empty string")
    if len(value) > max_length:
        raise InvalidRequest(f"{name} is too long")
    if pattern is not None and not pattern.fullmatch(value):
        raise InvalidRequest(f"{name} is not in the expected format")
    return value


def _scalars(body: Mapping[str, object]) -> dict[str, object]:
    """*body* for ``authorize``: strings, numbers, booleans and nulls, as a form would send.

    A nested object or list, or a string longer than :data:`MAX_FIELD_LENGTH`,
    is refused (``InvalidRequest``): no ``authorize`` expects one, and the
    rate limits' identifier must be a plain string.
    """
    for value in body.values():
        if isinstance(value, str):
            if len(value) > MAX_FIELD_LENGTH:
                raise InvalidRequest("a field is too long")
        elif value is not None and not isinstance(value, bool | int | float):
            raise InvalidRequest("credentials must be strings, numbers or booleans")
    return dict(body)


def _landing(state: AuthState) -> str:
    # What a sign-in's callback URL is when nobody asked for one: the site.
    # An app goes nowhere; the email's link carries it for a browser that opens it.
    return state.origin


# -- the shared end -------------------------------------------------------------------------------


def issue_app_session(state: AuthState, attempt: Attempt) -> dict[str, object]:
    """Sign *attempt* in and answer the new session's bearer token.

    The sign-in is :func:`~webauth.flows.signin.complete`, the same as a
    browser's (the ``sign_in`` callback, storage, the steps, ``user_logged_in``,
    a JWT through the ``jwt`` callback or a database session, the ``sign_in``
    event), without its cookies; the answer is :func:`~webauth.flows.render.for_app`'s.
    """
    return for_app(state, complete(state, attempt, browser=False))


# -- credentials ----------------------------------------------------------------------------------


def credentials_sign_in(
    state: AuthState, provider: Credentials, body: Mapping[str, object]
) -> dict[str, object]:
    """``POST /auth/app/signin/<credentials id>``: the fields ``authorize`` reads, as JSON.

    The same limits as the browser's form (``signin``, ``signin_failed``).
    """
    attempt = credentials.attempt_for(state, provider, _scalars(body), _landing(state))
    return issue_app_session(state, attempt)


# -- email codes ----------------------------------------------------------------------------------


def _email_address(body: Mapping[str, object]) -> str:
    # normalize() bounds the address too; this keeps a huge value from reaching it.
    return _text(body, "email", max_length=4 * MAX_EMAIL_LENGTH)


def email_request(
    state: AuthState, provider: Email, body: Mapping[str, object]
) -> dict[str, object]:
    """``POST /auth/app/signin/<email id>`` ``{"email"}``: mail a code, answer its binding.

    The answer is ``{"sent": true, "binding": "..."}``.

    The same work and answer whether or not the address has an account, as
    the browser's form (``email_send``). ``binding`` is the grant's binding
    (:func:`webauth.flows.email.grant_hash`): the app keeps it and sends it
    back with the code, which redeems nothing without it. The person reads
    the code out of the message; the message's link is for a browser that
    asked, so it does not sign in an app's request.
    """
    if provider.code is None:
        raise InvalidProvider(f"Provider {provider.id!r} sends links only, no codes")
    if state.config.challenge is not None:  # before the address is read or mailed
        challenges.require(state, "email", body)
    sent = email.send(state, provider, _email_address(body), _landing(state))
    if isinstance(sent, str):
        raise SignInRedirected(sent)
    return {"sent": True, "binding": sent.binding}


def email_redeem(
    state: AuthState, provider: Email, body: Mapping[str, object]
) -> dict[str, object]:
    """``POST /auth/app/callback/<email id>`` ``{"email", "code", "binding"}``: the code signs in.

    ``binding`` is what the app's request answered. A wrong or expired code,
    or another request's binding, answers ``Verification``; it counts against
    the grant (void after ``code_max_attempts``) and ``code_failed``.
    """
    if provider.code is None:
        raise InvalidProvider(f"Provider {provider.id!r} sends links only, no codes")
    storage = state.config.storage.require(*email.EMAIL_METHODS, feature="Email login")
    typed = _email_address(body)
    code = _text(body, "code", max_length=64)
    binding = _text(body, "binding", pattern=_BINDING)
    try:
        identifier = provider.normalize(typed)
    except ValueError as exc:
        raise email.InvalidEmail(str(exc), value=typed) from None
    if not email.redeem_code(state, storage, provider, identifier, code, binding):
        raise Verification("A wrong or expired sign-in code was entered")
    return issue_app_session(
        state, email.attempt_for(storage, provider, identifier, _landing(state))
    )


# -- passkeys -------------------------------------------------------------------------------------


#: What an app is told when the browser's route would answer Auth.js's 400.
_UNDECIDED = {
    webauthn.INVALID_ACTION: "action must be 'register' or 'authenticate'",
    webauthn.INVALID_REQUEST: (
        "the ceremony cannot be decided: register needs an email without an account, "
        "or a signed-in user (docs/passkeys.md)"
    ),
}


def passkey_options(
    state: AuthState, provider: WebAuthn, query: Mapping[str, object]
) -> dict[str, object]:
    """``GET /auth/app/webauthn-options/<id>``: ``{"action", "options", "binding"}``.

    The browser's route with the binding in the answer instead of a cookie:
    the client sends it back with the credential. The same decision
    (``action``, ``email``, a signed-in user) and the same ``passkey_options`` limit.
    """
    prepared = webauthn.prepare(state, provider, query, None)
    if not isinstance(prepared, webauthn.Prepared):
        raise InvalidRequest(_UNDECIDED.get(prepared, prepared))
    return {"action": prepared.action, "options": prepared.options, "binding": prepared.binding}


def passkey_verify(
    state: AuthState, provider: WebAuthn, body: Mapping[str, object]
) -> dict[str, object]:
    """``POST /auth/app/callback/<webauthn id>`` ``{"action", "data", "binding"}``.

    As the browser's callback, with the binding from the body: the challenge is
    used up before any signature is checked, whatever the outcome.
    """
    action = body.get("action")
    if action not in ("register", "authenticate"):
        raise InvalidRequest("action must be 'register' or 'authenticate'")
    binding = body.get("binding")
    if not isinstance(binding, str) or len(binding) not in webauthn.BINDING_LENGTHS:
        binding = None  # refused by the verification, as a missing cookie is, and counted
    attempt, decision = webauthn.verify(state, provider, body, binding, _landing(state))
    answer = issue_app_session(state, attempt)
    ratelimit.refund(decision)
    return answer


# -- OAuth: the single-use store -------------------------------------------------------------------


def _cache(config: Config) -> Any:
    # The rate limits' cache: shared by every process when the limits are
    # (docs/rate-limits.md#the-cache), which the code flow needs as they do.
    return caches[config.rate_limits.cache]


def _cache_key(kind: str, value: str) -> str:
    # Hashed: no secret becomes a cache key, and any value gives a valid key.
    return f"{_CACHE_PREFIX}:{kind}:{hashlib.sha256(value.encode()).hexdigest()}"


def _take(config: Config, key: str) -> Any:
    """The record under *key*, removed: ``None`` if absent or another request took it first.

    ``delete`` says whether this call removed it (every Django cache backend
    answers so), so of two concurrent takers exactly one gets the record.
    """
    cache = _cache(config)
    record = cache.get(key)
    if record is None or not cache.delete(key):
        return None
    return record


def _s256(verifier: str) -> str:
    digest = hashlib.sha256(verifier.encode("ascii")).digest()
    return base64.urlsafe_b64encode(digest).rstrip(b"=").decode("ascii")


def _count_oauth(state: AuthState) -> None:
    """Count one OAuth request against ``oauth_callback`` (each may cost a code exchange)."""
    decision = ratelimit.hit(state.request, "oauth_callback", config=state.config)
    if not decision:
        raise RateLimited("Too many OAuth requests", retry_after=decision.retry_after)


# -- OAuth: authorization code with PKCE ----------------------------------------------------------


def redirect_uri_allowed(allowed: tuple[str, ...], uri: str) -> bool:
    """Whether *uri* is one of ``app_redirect_uris``.

    Exactly, except that a loopback ``http://`` entry without a port allows
    any port: a desktop app listens on whatever port is free (RFC 8252 7.3).
    """
    if uri in allowed:
        return True
    try:
        parts = urlsplit(uri)
        port = parts.port
    except ValueError:
        return False
    if parts.scheme != "http" or parts.hostname not in LOOPBACK_HOSTS or port is None:
        return False
    if "@" in parts.netloc:
        return False  # a user name before the host: not an address to compare
    host = f"[{parts.hostname}]" if ":" in (parts.hostname or "") else parts.hostname
    portless = parts._replace(netloc=f"{host}").geturl()
    return portless in allowed


def authorize(state: AuthState, provider: OAuth2, body: Mapping[str, object]) -> dict[str, object]:
    """``POST /auth/app/authorize/<id>``: the URL the app opens, and its ``state``.

    *body*: ``redirect_uri`` (one of ``app_redirect_uris``), ``code_challenge``
    and ``code_challenge_method`` (``"S256"``; ``plain`` is refused). The
    state is kept server-side with all three and the nonce, for 15 minutes.
    """
    config = state.config
    redirect_uri = _text(body, "redirect_uri", max_length=MAX_REDIRECT_URI_LENGTH)
    if not redirect_uri_allowed(config.app_redirect_uris, redirect_uri):
        raise InvalidRequest("redirect_uri is not one of WEBAUTH['app_redirect_uris']")
    if body.get("code_challenge_method") != "S256":
        raise InvalidRequest("code_challenge_method must be 'S256'")
    challenge = _text(body, "code_challenge", pattern=_S256_CHALLENGE)
    _count_oauth(state)
    try:
        ep = endpoints(config, provider)
    except AuthError as exc:
        raise OAuthSignInError(str(exc.message), cause={"err": exc}) from exc
    app_state = secrets.token_urlsafe(32)
    nonce = secrets.token_urlsafe(32) if "nonce" in provider.checks else None
    record = {
        "provider": provider.id,
        "redirect_uri": redirect_uri,
        "code_challenge": challenge,
        "nonce": nonce,
    }
    if not _cache(config).add(_cache_key("state", app_state), record, CHECK_MAX_AGE):
        raise AuthError("The app's OAuth state could not be stored")
    extra: dict[str, object] = dict(provider.authorization_params)
    scope = extra.pop("scope", DEFAULT_SCOPE if provider.scope is None else provider.scope)
    if provider.response_mode:
        extra.setdefault("response_mode", provider.response_mode)
    if nonce is not None:
        extra["nonce"] = nonce
    client = oauth_session(config, provider, redirect_uri=redirect_uri, scope=scope or None)
    url, _state = client.create_authorization_url(
        ep["authorization_endpoint"],
        state=app_state,
        code_challenge=challenge,
        code_challenge_method="S256",
        **{k: str(v) for k, v in extra.items()},
    )
    return {"url": url, "state": app_state}


def token(state: AuthState, provider: OAuth2, body: Mapping[str, object]) -> dict[str, object]:
    """``POST /auth/app/token/<id>``: the code the app's redirect URI got, exchanged by webauth.

    *body*: ``code``, ``state``, ``code_verifier``, ``redirect_uri`` and
    optionally ``iss`` (the authorization response's, RFC 9207). The state is
    used up first, then its redirect URI and code challenge are compared; the
    code is exchanged with the app's redirect URI and verifier (the provider
    checks them again), the ID token (with the state's nonce) or userinfo read,
    and the account signed in by the OAuth flow's rules.
    """
    config = state.config
    code = _text(body, "code", max_length=oauth.MAX_PARAM_LENGTH)
    app_state = _text(body, "state", max_length=512)
    verifier = _text(body, "code_verifier", pattern=_VERIFIER)
    redirect_uri = _text(body, "redirect_uri", max_length=MAX_REDIRECT_URI_LENGTH)
    issuer = body.get("iss")
    if issuer is not None and (not isinstance(issuer, str) or len(issuer) > 2048):
        raise InvalidRequest("iss must be a string")
    _count_oauth(state)
    # Used up before anything is compared: a wrong verifier or redirect URI
    # costs the state, so nobody can try several against one.
    record = _take(config, _cache_key("state", app_state))
    if not isinstance(record, Mapping) or record.get("provider") != provider.id:
        raise InvalidCheck("The state is unknown, used, expired or another provider's")
    if not hmac.compare_digest(redirect_uri.encode(), str(record["redirect_uri"]).encode()):
        raise InvalidCheck("The redirect_uri is not the one the authorization used")
    if not hmac.compare_digest(_s256(verifier).encode(), str(record["code_challenge"]).encode()):
        raise InvalidCheck("The code_verifier does not match the code_challenge")
    ep = endpoints(config, provider)
    if issuer is not None and ep.get("issuer") and not oauth.issuer_matches(issuer, ep["issuer"]):
        raise InvalidCheck("The authorization response's issuer is not the provider's")
    verified = exchange_code(
        state,
        provider,
        ep,
        code=code,
        redirect_uri=str(record["redirect_uri"]),
        code_verifier=verifier,
        nonce=record.get("nonce"),
        params={},
    )
    attempt = oauth.profile_attempt(
        state, provider, verified.profile, verified.tokens, _landing(state)
    )
    return issue_app_session(state, attempt)


# -- OAuth: an ID token from the platform's SDK ---------------------------------------------------


def _apple_user(body: Mapping[str, object]) -> dict[str, str]:
    # Apple tells an app the person's name once, outside the ID token, as it
    # tells a web client in the callback's "user" parameter: the app may pass
    # it along, as that JSON string or as the object itself.
    user = body.get("user")
    if isinstance(user, Mapping):
        try:
            user = json.dumps(user)
        except (TypeError, ValueError):
            return {}
    return {"user": user} if isinstance(user, str) else {}


def id_token_sign_in(
    state: AuthState, provider: OAuth2, body: Mapping[str, object]
) -> dict[str, object]:
    """``POST /auth/app/idtoken/<id>`` ``{"id_token", "nonce"}``: sign in with the SDK's token.

    The token is validated by :func:`~webauth.oauth.idtoken.validate_id_token`,
    the OIDC callback's own check, with the provider's ``app_client_ids``
    accepted as audiences besides its ``client_id``, and with SHA-256 (hex) of
    the raw ``nonce`` as the nonce it must carry. A nonce signs in once.
    """
    if not provider.id_token:
        raise InvalidProvider(f"Provider {provider.id!r} issues no ID tokens")
    config = state.config
    id_token = _text(body, "id_token")
    raw_nonce = body.get("nonce")
    if not isinstance(raw_nonce, str) or len(raw_nonce) not in NONCE_LENGTHS:
        raise InvalidRequest("nonce must be a string of 16 to 512 characters")
    _count_oauth(state)
    nonce = hashlib.sha256(raw_nonce.encode("utf-8", "surrogatepass")).hexdigest()
    ep = endpoints(config, provider)
    claims = validate_id_token(
        config,
        provider,
        id_token,
        issuer=ep.get("issuer"),
        jwks_uri=ep.get("jwks_uri"),
        nonce=nonce,
        audiences=provider.app_client_ids,
    )
    # Once per nonce, for as long as the token could be accepted.
    lifetime = int(float(claims["exp"]) - time.time()) + CLOCK_TOLERANCE
    if not _cache(config).add(_cache_key("nonce", f"{provider.id}\0{nonce}"), 1, max(1, lifetime)):
        raise InvalidCheck("This ID token's nonce has signed in already")
    profile = dict(claims)
    profile.update(provider.extra_callback_profile(_apple_user(body)))
    attempt = oauth.profile_attempt(
        state, provider, profile, {"id_token": id_token}, _landing(state)
    )
    return issue_app_session(state, attempt)
