"""Minting a signed access token for a session (docs/tokens.md).

The token is a compact JWS (RFC 7515) with the header ``{"alg", "kid", "typ":
"at+jwt"}`` (RFC 9068's media type: a verifier can tell it from an ID token
signed by the same keys) and these claims:

* ``iss``: ``tokens.issuer``, or the site's origin and ``base_path``;
* ``sub``: the user's id, as the session's ``sub``;
* ``aud``: the one audience asked for, from ``tokens.audiences``;
* ``iat``, ``exp`` (``iat`` + ``tokens.max_age``), ``jti`` (128 random bits);
* ``sid``: the session's id (:func:`webauth.sessions.base.session_id`), never
  its token;
* ``amr`` and ``auth_time`` where the session records them;
* whatever the ``token`` callback adds. It receives ``token`` (the claims
  above), ``user``, ``session`` (what ``GET /auth/session`` shows) and
  ``audience``, and returns the claims to sign; the registered claims above
  cannot be changed by it (they are set again after it), so a callback cannot
  lengthen a token's life or move it to another audience.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from jwcrypto import jws

from ..utils import call

if TYPE_CHECKING:
    from ..conf import Config
    from ..sessions.base import SessionFacts

__all__ = ["REGISTERED_CLAIMS", "TOKEN_TYPE", "Minted", "TokenCallbackError", "mint"]

#: The header's ``typ`` (RFC 9068 section 2.1).
TOKEN_TYPE = "at+jwt"
#: The claims webauth sets, which the ``token`` callback cannot change.
REGISTERED_CLAIMS = ("iss", "sub", "aud", "exp", "iat", "nbf", "jti", "sid")


class TokenCallbackError(TypeError):
    """The ``token`` callback returned something other than a JSON object of claims."""


@dataclass(frozen=True, slots=True)
class Minted:
    """A minted token, its claims and when it expires (a POSIX time)."""

    token: str
    claims: Mapping[str, Any]
    expires_at: int


def _claims(
    config: Config, *, issuer: str, user_id: str, audience: str, facts: SessionFacts, now: int
) -> dict[str, Any]:
    assert config.tokens is not None
    claims: dict[str, Any] = {
        "iss": issuer,
        "sub": user_id,
        "aud": audience,
        "iat": now,
        "exp": now + config.tokens.max_age,
        "jti": secrets.token_urlsafe(16),
        "sid": facts.sid,
    }
    if facts.assurance.amr:
        claims["amr"] = list(facts.assurance.amr)
    if facts.signed_in_at is not None:
        claims["auth_time"] = int(facts.signed_in_at)
    return claims


def mint(
    config: Config,
    *,
    issuer: str,
    user_id: str,
    audience: str,
    facts: SessionFacts,
    user: object = None,
    session: object = None,
    now: float | None = None,
) -> Minted:
    """Sign an access token for *user_id*'s session (*facts*) and *audience*.

    *audience* must be one of ``tokens.audiences`` (the route checks it);
    *user* and *session* are what the ``token`` callback receives.
    """
    options = config.tokens
    assert options is not None, "tokens are off (WEBAUTH['tokens'])"
    issued = int(time.time() if now is None else now)
    claims = _claims(
        config, issuer=issuer, user_id=user_id, audience=audience, facts=facts, now=issued
    )
    callback = config.callbacks.token
    if callback is not None:
        given = dict(claims)
        added = call(callback, token=given, user=user, session=session, audience=audience)
        if not isinstance(added, Mapping):
            raise TokenCallbackError(
                f"the token callback must return a dict of claims, got {type(added).__name__}"
            )
        # Its own claims on top, then webauth's again: the life, audience and
        # subject are never the callback's to change.
        merged = {**added, **{k: claims[k] for k in REGISTERED_CLAIMS if k in claims}}
        for name in REGISTERED_CLAIMS:
            if name not in claims:
                merged.pop(name, None)
        claims = merged
    try:
        payload = json.dumps(claims, separators=(",", ":"), ensure_ascii=False, allow_nan=False)
    except (TypeError, ValueError) as exc:
        raise TokenCallbackError(f"the token's claims are not JSON ({exc})") from None
    key = options.keys[0]
    signed = jws.JWS(payload.encode())
    signed.add_signature(
        key.key,
        alg=key.alg,
        protected=json.dumps({"alg": key.alg, "kid": key.kid, "typ": TOKEN_TYPE}),
    )
    return Minted(token=signed.serialize(compact=True), claims=claims, expires_at=claims["exp"])
