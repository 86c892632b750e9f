"""The keys that sign access tokens, read from ``WEBAUTH["tokens"]["keys"]``.

A key is given as a JWK (a JSON string or a dict) or a PEM string, private for
the key that signs and public or private for the others. The first key signs
every new token; the later ones are only published in the JWKS, so that tokens
they signed still verify until they expire (rotation: put the new key first,
remove the old one once ``max_age`` has passed). Every key has a ``kid`` (its
own, or its RFC 7638 thumbprint) and one algorithm (its own ``alg``, or the one
its type implies).

Only asymmetric signing keys are accepted: a shared secret (``kty: oct``) would
let every service that verifies also mint, RSA keys need 2048 bits, and an
elliptic curve must be P-256 or P-384, or Ed25519 for EdDSA.

This module knows nothing of Django or webauth's configuration: the settings
builder and the system checks call it, and so does :mod:`webauth.tokens.verify`.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any

from jwcrypto import jwk

__all__ = [
    "ALGORITHMS",
    "KeyProblem",
    "SigningKey",
    "generate",
    "public_jwks",
    "read_key",
    "read_keys",
]

#: The signing algorithms a key may name, each with the key type (and curve) it needs.
ALGORITHMS: Mapping[str, tuple[str, str | None]] = MappingProxyType(
    {
        "ES256": ("EC", "P-256"),
        "ES384": ("EC", "P-384"),
        "EdDSA": ("OKP", "Ed25519"),
        "RS256": ("RSA", None),
        "PS256": ("RSA", None),
    }
)
#: The algorithm a key of this type (and curve) signs with when it names none.
_DEFAULT_ALG: Mapping[tuple[str, str | None], str] = {
    ("EC", "P-256"): "ES256",
    ("EC", "P-384"): "ES384",
    ("OKP", "Ed25519"): "EdDSA",
}
#: The smallest RSA modulus accepted (NIST SP 800-131A, OWASP ASVS 6.2).
MIN_RSA_BITS = 2048
#: The longest key text read (a 4096-bit RSA private JWK is about 3.3 KB).
MAX_KEY_LENGTH = 16_000


class KeyProblem(ValueError):
    """A configured key that cannot sign or be published; the message says why."""


@dataclass(frozen=True, slots=True)
class SigningKey:
    """One key of the set: its ``kid``, its algorithm and the jwcrypto key."""

    kid: str
    alg: str
    key: jwk.JWK

    @property
    def can_sign(self) -> bool:
        """Whether the private half is here (the first key must have it)."""
        return bool(self.key.has_private)

    def public(self) -> dict[str, Any]:
        """The public JWK as the JWKS publishes it: ``kid``, ``alg`` and ``use``."""
        # export_public drops every private member; kid, alg and use are set here
        # so that a key's own "use": "enc" or a stale "alg" is never published.
        published = dict(self.key.export_public(as_dict=True))
        published.update(kid=self.kid, alg=self.alg, use="sig")
        for member in ("key_ops", "x5c", "x5t", "x5u", "x5t#S256"):
            published.pop(member, None)
        return published


def _load(value: object) -> jwk.JWK:
    if isinstance(value, jwk.JWK):
        return value
    if isinstance(value, Mapping):
        try:
            return jwk.JWK(**dict(value))
        except Exception as exc:  # jwcrypto raises several types for a malformed JWK
            raise KeyProblem(f"is not a usable JWK ({type(exc).__name__})") from None
    if not isinstance(value, str | bytes):
        raise KeyProblem(f"must be a JWK (a JSON string or a dict) or a PEM string, got {value!r}")
    text = value.decode() if isinstance(value, bytes) else value
    if len(text) > MAX_KEY_LENGTH:
        raise KeyProblem(f"is longer than {MAX_KEY_LENGTH} characters")
    text = text.strip()
    try:
        if text.startswith("{"):
            return jwk.JWK(**json.loads(text))
        if text.startswith("-----BEGIN"):
            return jwk.JWK.from_pem(text.encode())
    except Exception as exc:  # as above; the key's text is never put in a message
        raise KeyProblem(f"could not be read ({type(exc).__name__})") from None
    raise KeyProblem("is neither a JWK (JSON) nor a PEM block")


def _curve(key: jwk.JWK) -> str | None:
    crv = key.get("crv")
    return str(crv) if crv is not None else None


def read_key(value: object, *, alg: str | None = None) -> SigningKey:
    """One configured key as a :class:`SigningKey`; :class:`KeyProblem` says what is wrong.

    *alg* (or the key's own ``alg``) must be one of :data:`ALGORITHMS` and fit
    the key; without one, EC and OKP keys take the one their curve implies and
    RSA keys ``RS256``.
    """
    key = _load(value)
    kty = key.get("kty")
    if not kty:
        raise KeyProblem("has no 'kty' (is it a JWK?)")
    if kty == "oct":
        raise KeyProblem(
            "is a shared secret (kty 'oct'): every service that verifies could also mint; "
            "use an asymmetric key (python manage.py webauth_tokenkey)"
        )
    curve = _curve(key)
    named = alg or key.get("alg")
    if named is None:
        named = "RS256" if kty == "RSA" else _DEFAULT_ALG.get((str(kty), curve))
    if not isinstance(named, str) or named not in ALGORITHMS:
        raise KeyProblem(
            f"names the algorithm {named!r}; use one of {', '.join(ALGORITHMS)}"
            if named
            else f"is a {kty} key on curve {curve!r}, which signs with none of "
            f"{', '.join(ALGORITHMS)}"
        )
    want_kty, want_curve = ALGORITHMS[named]
    # An RSA key has no crv, and RSA algorithms want none.
    if kty != want_kty or curve != want_curve:
        raise KeyProblem(
            f"is a {kty} key{f' on {curve}' if curve else ''}, which cannot sign {named} "
            f"(it needs {want_kty}{f' on {want_curve}' if want_curve else ''})"
        )
    if kty == "RSA":
        bits = key.get_op_key("verify").key_size
        if bits < MIN_RSA_BITS:
            raise KeyProblem(f"is an RSA key of {bits} bits; use at least {MIN_RSA_BITS}")
    use = key.get("use")
    if use not in (None, "sig"):
        raise KeyProblem(f"is marked for use {use!r}; a signing key's use is 'sig'")
    kid = key.get("kid") or key.thumbprint()
    return SigningKey(kid=str(kid), alg=str(named), key=key)


def read_keys(values: Sequence[object]) -> tuple[SigningKey, ...]:
    """The configured key set: the first signs (it must be private), ``kid``\\ s distinct.

    Each entry is a key (see :func:`read_key`) or ``{"key": <key>, "alg": ...}``.
    A problem is raised as :class:`KeyProblem` with the entry's index.
    """
    keys: list[SigningKey] = []
    for index, value in enumerate(values):
        alg = None
        if isinstance(value, Mapping) and "key" in value:
            alg = value.get("alg")
            if alg is not None and not isinstance(alg, str):
                raise KeyProblem(f"keys[{index}]: 'alg' must be a string, got {alg!r}")
            value = value["key"]
        try:
            key = read_key(value, alg=alg)
        except KeyProblem as exc:
            raise KeyProblem(f"keys[{index}] {exc}") from None
        if any(k.kid == key.kid for k in keys):
            raise KeyProblem(f"keys[{index}] has the kid {key.kid!r} of an earlier key")
        keys.append(key)
    if not keys:
        raise KeyProblem("keys is empty; give at least the key that signs")
    if not keys[0].can_sign:
        raise KeyProblem(
            "keys[0] is a public key; the first key signs new tokens and must be private "
            "(put the new private key first, the old ones after it)"
        )
    return tuple(keys)


def public_jwks(keys: Sequence[SigningKey]) -> dict[str, list[dict[str, Any]]]:
    """The JWKS document (RFC 7517 section 5) of *keys*: public halves only."""
    return {"keys": [k.public() for k in keys]}


def generate(alg: str = "ES256", kid: str | None = None) -> jwk.JWK:
    """A new private key for *alg* (with ``kid`` and ``alg`` set), as the command prints it."""
    if alg not in ALGORITHMS:
        raise KeyProblem(f"{alg!r} is not one of {', '.join(ALGORITHMS)}")
    kty, curve = ALGORITHMS[alg]
    params: dict[str, Any] = {"kty": kty}
    if kty == "RSA":
        params["size"] = 3072
    else:
        params["crv"] = curve
    key = jwk.JWK.generate(**params)
    key.update(kid=kid or key.thumbprint(), alg=alg, use="sig")
    return key
