"""ID token validation (OpenID Connect Core 3.1.3.7), stricter than Auth.js.

The signature is checked against the issuer's JWKS (fetched again once when the
token names an unknown key, so key rotation works) or, for providers that sign
with HMAC (``HS256``), the client secret. Then ``iss``, ``aud``, ``azp``,
``exp``, ``iat`` and ``nonce``.
"""

from __future__ import annotations

import base64
import json
import time
from collections.abc import Sequence
from typing import Any

from jwcrypto import jwk, jws
from jwcrypto.common import JWException

from ..conf import Config
from ..errors import AuthError
from ..providers.oauth import OAuth2
from .discovery import jwks

__all__ = ["CLOCK_TOLERANCE", "InvalidIDToken", "validate_id_token"]

CLOCK_TOLERANCE = 60  # seconds of clock skew accepted on exp and iat
MAX_AGE_OF_IAT = 3600  # an ID token issued more than an hour ago is not fresh


class InvalidIDToken(AuthError):
    """The ID token failed validation (logged; the user sees error=Configuration)."""

    type = "CallbackRouteError"


def _keys(config: Config, uri: str | None, kid: str | None, refresh: bool) -> list[jwk.JWK]:
    if not uri:
        raise InvalidIDToken("the provider has no jwks_uri to verify ID tokens with")
    keyset = jwk.JWKSet()
    keyset.import_keyset(json.dumps(jwks(config, uri, refresh=refresh)))
    keys = list(keyset)
    if kid is not None:
        keys = [k for k in keys if k.get("kid") == kid]
    return keys


def _verify(
    config: Config, provider: OAuth2, token: jws.JWS, alg: str, kid: str | None, uri: str | None
) -> None:
    if alg.startswith("HS"):
        secret = (provider.client_secret or "").encode()
        key = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(secret).rstrip(b"=").decode())
        token.verify(key, alg=alg)
        return
    for refresh in (False, True):
        for key in _keys(config, uri, kid, refresh):
            try:
                token.verify(key, alg=alg)
                return
            except JWException:
                continue
    raise InvalidIDToken(f"no key of the issuer verifies the ID token (kid {kid!r})")


def validate_id_token(
    config: Config,
    provider: OAuth2,
    id_token: str,
    *,
    issuer: str | None,
    jwks_uri: str | None,
    nonce: str | None,
    audiences: Sequence[str] = (),
) -> dict[str, Any]:
    """Verify *id_token* and return its claims; raises :class:`InvalidIDToken`.

    *audiences* are client ids accepted besides the provider's own as ``aud``
    and ``azp``: the project's native apps, whose platform SDKs get ID tokens
    issued to their own client ids (``POST /auth/app/idtoken``).
    """
    token = jws.JWS()
    try:
        token.deserialize(id_token)
        header = token.jose_header
    except (JWException, ValueError, TypeError) as exc:
        raise InvalidIDToken("the ID token is not a JWS", cause={"err": exc}) from exc
    if isinstance(header, list):
        raise InvalidIDToken("ID tokens with several signatures are not accepted")
    alg = header.get("alg")
    if alg not in provider.id_token_signing_algs:
        raise InvalidIDToken(
            f"ID token algorithm {alg!r} is not one of {list(provider.id_token_signing_algs)}"
        )
    try:
        _verify(config, provider, token, alg, header.get("kid"), jwks_uri)
    except JWException as exc:
        raise InvalidIDToken("the ID token's signature is invalid", cause={"err": exc}) from exc
    try:
        claims = json.loads(token.payload)
    except (ValueError, TypeError) as exc:
        raise InvalidIDToken("the ID token's payload is not JSON", cause={"err": exc}) from exc
    if not isinstance(claims, dict):
        raise InvalidIDToken("the ID token's payload is not an object")
    _check_claims(
        provider,
        claims,
        issuer=provider.expected_issuer(claims, issuer),
        nonce=nonce,
        clients=(provider.client_id, *audiences),
    )
    return claims


def _check_claims(
    provider: OAuth2,
    claims: dict[str, object],
    *,
    issuer: str | None,
    nonce: str | None,
    clients: Sequence[str | None],
) -> None:
    now = time.time()
    if issuer is not None and claims.get("iss") != issuer:
        raise InvalidIDToken(
            f"unexpected ID token issuer {claims.get('iss')!r}, expected {issuer!r}"
        )
    aud = claims.get("aud")
    audiences = aud if isinstance(aud, list) else [aud]
    accepted = [client for client in clients if client]
    if not any(client in audiences for client in accepted):
        raise InvalidIDToken("the ID token is not meant for this client (aud)")
    azp = claims.get("azp")
    if (len(audiences) > 1 or azp is not None) and azp not in accepted:
        raise InvalidIDToken("the ID token's authorized party (azp) is not this client")
    exp, iat = claims.get("exp"), claims.get("iat")
    if not isinstance(exp, int | float) or exp + CLOCK_TOLERANCE < now:
        raise InvalidIDToken("the ID token has expired")
    if not isinstance(iat, int | float) or iat - CLOCK_TOLERANCE > now:
        raise InvalidIDToken("the ID token was issued in the future (iat)")
    if iat + MAX_AGE_OF_IAT < now:
        raise InvalidIDToken("the ID token is too old (iat)")
    if not isinstance(claims.get("sub"), str) or not claims["sub"]:
        raise InvalidIDToken("the ID token has no subject (sub)")
    if nonce is not None:
        if claims.get("nonce") != nonce:
            raise InvalidIDToken("the ID token's nonce does not match this sign-in")
    elif "nonce" in claims:
        raise InvalidIDToken("the ID token carries a nonce this sign-in did not send")
