"""The engine behind :mod:`webauth.jwt`: compact JWE exactly as Auth.js makes it.

Private: import :mod:`webauth.jwt` instead. This module holds the fast path of
the one composite Auth.js emits (``dir`` + ``A256CBC-HS512``) on
``cryptography`` primitives, with everything that depends only on the secret,
the salt or the protected header computed once and cached; the rarer
``A256GCM`` tokens go through jwcrypto. ``tests/test_jwt.py`` cross-checks it
against jwcrypto and against tokens made by Auth.js itself.
"""

from __future__ import annotations

import binascii
import functools
import hashlib
import hmac
import json
import os
import struct
import threading
import time
from collections.abc import Mapping, Sequence
from typing import Any, Final, NamedTuple, NoReturn

from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.ciphers import Cipher, CipherContext, algorithms, modes
from cryptography.hazmat.primitives.kdf.hkdf import HKDF
from jwcrypto import jwe as jwcrypto_jwe
from jwcrypto import jwk as jwcrypto_jwk

__all__ = ["DEFAULT_MAX_AGE", "decode", "derive_key", "encode", "key_id"]

#: Lifetime of a session token in seconds: Auth.js' ``session.maxAge`` default (30 days).
DEFAULT_MAX_AGE: Final = 30 * 24 * 60 * 60

# Auth.js decodes with jose's ``clockTolerance: 15``: a token stays valid 15 s past
# its ``exp`` and is accepted 15 s before its ``nbf``, so servers whose clocks
# disagree slightly still accept each other's tokens.
_CLOCK_TOLERANCE: Final = 15

_CBC_HS512: Final = "A256CBC-HS512"
_GCM: Final = "A256GCM"
# HKDF output length per content encryption. The 32-byte key for A256GCM is the
# first half of the 64-byte one (HKDF-Expand is a prefix stream), as in Auth.js.
_KEY_LENGTHS: Final = {_CBC_HS512: 64, _GCM: 32}
# RFC 7638 thumbprint hash per key size: Auth.js uses ``sha${key.byteLength << 3}``.
_THUMBPRINT_HASHES: Final = {32: "sha256", 48: "sha384", 64: "sha512"}

_MISSING: Final[object] = object()
_MAX_CACHED_HEADER: Final = 512

# Strict base64url decoding. ``base64.urlsafe_b64decode`` silently drops any byte
# outside the alphabet, which would let many different strings stand for one
# token. Instead the URL-safe letters become the standard ones, the standard
# ``+ / =`` (never valid in base64url) become ``!``, and binascii's strict mode
# rejects everything that is not plain base64.
_FROM_B64URL: Final = bytes.maketrans(b"-_+/=", b"+/!!!")
_TO_B64URL: Final = bytes.maketrans(b"+/", b"-_")
# Padding to restore per ``len % 4``; a remainder of 1 can never be valid base64.
_B64_PADDING: Final = (b"", b"=", b"==", b"=")
# PKCS#7 padding blocks by pad length, so that padding and unpadding never allocate.
_PKCS7: Final = tuple(bytes((n,)) * n for n in range(17))


def _reject_constant(name: str) -> NoReturn:
    # Python's json accepts NaN and Infinity; JavaScript's JSON.parse does not. A
    # token that Auth.js would reject must not be accepted here.
    raise ValueError(f"invalid JSON constant {name}")


_JSON_DECODER: Final = json.JSONDecoder(parse_constant=_reject_constant)
# JSON.stringify's output: no whitespace, non-ASCII kept as UTF-8. NaN/Infinity
# raise rather than being written as tokens that JavaScript cannot parse.
_JSON_ENCODER: Final = json.JSONEncoder(separators=(",", ":"), ensure_ascii=False, allow_nan=False)
_JSON_ENCODER_ASCII: Final = json.JSONEncoder(separators=(",", ":"), allow_nan=False)


def _b64url_encode(data: bytes) -> bytes:
    return binascii.b2a_base64(data, newline=False).translate(_TO_B64URL).rstrip(b"=")


def _b64url_decode(segment: bytes) -> bytes:
    padded = segment.translate(_FROM_B64URL) + _B64_PADDING[len(segment) % 4]
    return binascii.a2b_base64(padded, strict_mode=True)


def _utf8(value: str) -> bytes:
    # JavaScript's TextEncoder, which Auth.js' HKDF applies to the secret and the
    # salt: a lone surrogate (possible in a Python str, not encodable as UTF-8)
    # becomes U+FFFD instead of raising, so such a secret derives the same key.
    try:
        return value.encode("utf-8")
    except UnicodeEncodeError:
        return value.encode("utf-16", "surrogatepass").decode("utf-16", "replace").encode("utf-8")


def _parse_json(data: bytes) -> Any:
    # JSON.parse(new TextDecoder().decode(data)), as jose does it: invalid UTF-8
    # becomes U+FFFD and a leading byte order mark is dropped, so the same bytes
    # give the same value.
    text = data.decode("utf-8", "replace")
    if text[:1] == "\ufeff":
        text = text[1:]
    if text[:1] == "{" and text[-1:] == "}":
        # Shortcut for the usual object with no surrounding whitespace: decode()
        # would spend a third of its time on two whitespace regexes. The text
        # ends in "}", so stopping short of the end means non-whitespace extra
        # data, which decode() would refuse as well.
        value, end = _JSON_DECODER.raw_decode(text)
        if end != len(text):
            raise ValueError("extra data after the JSON value")
        return value
    return _JSON_DECODER.decode(text)


# --------------------------------------------------------------------------- keys


@functools.lru_cache(maxsize=256)
def derive_key(secret: str, salt: str, length: int = 64) -> bytes:
    """Derive the encryption key Auth.js uses for ``secret`` and ``salt``.

    HKDF-SHA256 with the secret as input keying material, the salt as salt and
    ``"Auth.js Generated Encryption Key (<salt>)"`` as info. ``length`` is 64 for
    A256CBC-HS512 (the session token) and 32 for A256GCM. Results are cached:
    the derivation would otherwise run on every request.

    Raises ``ValueError`` for an empty secret or a salt longer than HKDF's info
    limit allows, exactly where Auth.js' HKDF (``@panva/hkdf``) throws.
    """
    ikm = _utf8(secret)
    if not ikm:
        # @panva/hkdf refuses empty keying material; an empty secret would give a
        # key anyone can compute.
        raise ValueError("the secret must not be empty")
    info = _utf8(f"Auth.js Generated Encryption Key ({salt})")
    if len(info) > 1024:
        # @panva/hkdf's limit; a longer salt cannot produce an Auth.js-readable key.
        raise ValueError("the salt is too long (HKDF info is limited to 1024 bytes)")
    hkdf = HKDF(algorithm=hashes.SHA256(), length=length, salt=_utf8(salt), info=info)
    return hkdf.derive(ikm)


def key_id(key: bytes) -> str:
    """Return the ``kid`` Auth.js puts in the header of a token made with ``key``.

    That is the RFC 7638 thumbprint of ``{"k": <base64url key>, "kty": "oct"}``,
    hashed with SHA-512 for a 64-byte key and SHA-256 for a 32-byte key (SHA-384
    for 48 bytes), base64url-encoded without padding.
    """
    hash_name = _THUMBPRINT_HASHES.get(len(key))
    if hash_name is None:
        raise ValueError(f"no thumbprint hash for a {len(key)}-byte key")
    # The canonical JWK of RFC 7638: required members only, sorted, no whitespace.
    canonical = b'{"k":"' + _b64url_encode(key) + b'","kty":"oct"}'
    return _b64url_encode(hashlib.new(hash_name, canonical).digest()).decode("ascii")


class _Key(NamedTuple):
    """One derived key and its ``kid``."""

    key: bytes
    kid: str


@functools.lru_cache(maxsize=256)
def _derived(secret: str, salt: str, length: int) -> _Key:
    key = derive_key(secret, salt, length)
    return _Key(key, key_id(key))


def _al(aad: bytes) -> bytes:
    # RFC 7518 5.2.2.1: AL is the bit length of the AAD as a 64-bit big-endian integer.
    return struct.pack(">Q", len(aad) * 8)


class _CBCKey(NamedTuple):
    """Everything A256CBC-HS512 needs for one derived key, prepared once."""

    kid: str
    # RFC 7518 5.2.2.1: the first half of the key authenticates, the second half
    # encrypts. The HMAC is kept keyed: every tag starts from a copy of it, which
    # skips re-hashing the padded key on each call.
    mac: hmac.HMAC
    aes: algorithms.AES
    header: bytes  # the protected header segment encode() emits for this key
    header_al: bytes


@functools.lru_cache(maxsize=256)
def _cbc_key(secret: str, salt: str) -> _CBCKey:
    key, kid = _derived(secret, salt, 64)
    # Auth.js' header, byte for byte: these members, this order, no whitespace. It
    # only depends on the key, so it is serialized once rather than per token.
    header = _b64url_encode(
        b'{"alg":"dir","enc":"A256CBC-HS512","kid":' + json.dumps(kid).encode("ascii") + b"}"
    )
    mac = hmac.new(key[:32], digestmod=hashlib.sha512)
    return _CBCKey(kid, mac, algorithms.AES(key[32:]), header, _al(header))


def _tag(key: _CBCKey, mac_input: bytes) -> bytes:
    # RFC 7518 5.2.2.1: HMAC-SHA-512 over AAD || IV || ciphertext || AL, truncated
    # to its first 256 bits. copy() leaves the shared keyed object untouched, so
    # this is safe from any number of threads.
    mac = key.mac.copy()
    mac.update(mac_input)
    return mac.digest()[:32]


class _Contexts(threading.local):
    """Per-thread AES-256-CBC contexts (one kind: encryption or decryption), one per key."""

    def __init__(self) -> None:
        self.by_kid: dict[str, CipherContext] = {}


_decryptors: Final = _Contexts()
_encryptors: Final = _Contexts()


def _cbc_encrypt(key: _CBCKey, padded: bytes, random_block: bytes) -> tuple[bytes, bytes]:
    """``(iv, ciphertext)`` of whole-block *padded* under a fresh, unpredictable IV.

    As with decryption, the OpenSSL context (its key schedule) is kept per key and
    thread. Such a context carries one thing between calls: the last ciphertext
    block L it produced. Feeding it one random block R first yields
    E(R XOR L): since R is fresh from ``os.urandom`` and E is a permutation, that
    block is uniformly random and unpredictable, and the rest of the output is
    exactly CBC encryption of *padded* with it as the IV. So it is the IV (R is
    *random_block*: 16 bytes from ``os.urandom``, never used for anything else). This is
    NIST SP 800-38A's "forward cipher applied to a nonce" way of making CBC IVs,
    with a random nonce. Nothing is ever buffered (whole blocks only), and the
    context is never finalized.
    """
    contexts = _encryptors.by_kid
    context = contexts.get(key.kid)
    if context is None:
        if len(contexts) >= 64:
            contexts.clear()
        context = Cipher(key.aes, modes.CBC(os.urandom(16))).encryptor()
        contexts[key.kid] = context
    out: bytes = context.update(random_block + padded)
    return out[:16], out[16:]


def _random_uuid(random_bytes: bytes) -> str:
    """``str(uuid.uuid4())`` of 16 bytes from ``os.urandom``: 122 random bits, RFC 9562 layout."""
    b = bytearray(random_bytes)
    b[6] = (b[6] & 0x0F) | 0x40  # version 4
    b[8] = (b[8] & 0x3F) | 0x80  # variant 10xx
    h = b.hex()
    return f"{h[:8]}-{h[8:12]}-{h[12:16]}-{h[16:20]}-{h[20:]}"


def _cbc_decrypt(key: _CBCKey, iv_and_ciphertext: bytes) -> bytes:
    # Setting up a fresh OpenSSL context per token (the key schedule) costs more
    # than the decryption itself, so one context per key is kept and reused. CBC
    # decryption is P[i] = AES-1(C[i]) XOR C[i-1], and the only state a context
    # carries between calls is the last ciphertext block it saw. Feeding the IV
    # as an extra leading block therefore makes the IV the "previous block" of
    # C[0]: every block after the first comes out exactly as a fresh context
    # initialised with that IV would produce it, and the first output block
    # (AES-1(IV) XOR whatever came before) is discarded. This holds because the
    # input is always whole blocks (checked by the caller), so nothing is ever
    # left buffered in the context. The context is per thread, so no two calls
    # interleave on it. And this runs only after the tag has been verified: the
    # worst a mistake here could do is reject an authentic token, never accept
    # a forged one.
    contexts = _decryptors.by_kid
    context = contexts.get(key.kid)
    if context is None:
        if len(contexts) >= 64:  # secrets x cookie names is small; bound it anyway
            contexts.clear()
        context = Cipher(key.aes, modes.CBC(bytes(16))).decryptor()
        contexts[key.kid] = context
    plaintext: bytes = context.update(iv_and_ciphertext)[16:]
    return plaintext


@functools.lru_cache(maxsize=256)
def _gcm_jwk(secret: str, salt: str) -> jwcrypto_jwk.JWK:
    key = derive_key(secret, salt, 32)
    return jwcrypto_jwk.JWK(kty="oct", k=_b64url_encode(key).decode("ascii"))


def _secrets(secret: str | Sequence[str]) -> tuple[str, ...]:
    # A lone string is a one-element list, as in Auth.js. A tuple is hashable, so
    # it can key the header cache below.
    return (secret,) if isinstance(secret, str) else tuple(secret)


# ------------------------------------------------------------------------- encode


def encode(
    *,
    token: Mapping[str, object],
    secret: str | Sequence[str],
    salt: str,
    max_age: int = DEFAULT_MAX_AGE,
) -> str:
    """Encrypt ``token`` into a session JWT that Auth.js' ``decode`` accepts.

    The payload is ``token`` with ``iat`` (now), ``exp`` (now + ``max_age``) and
    ``jti`` (a random UUID) set, overwriting any earlier values. As in JavaScript,
    a claim that ``token`` already has keeps its position and new ones are
    appended, so a fresh token ends with ``iat, exp, jti``.

    ``secret`` is a string or a list whose first element is used (rotation: put
    the new secret first). ``salt`` is the name of the cookie the token goes in.

    Raises ``ValueError`` without a usable secret, ``TypeError`` or ``ValueError``
    when ``token`` is not JSON-serializable (including NaN and infinities, which
    JavaScript could not read back).
    """
    secrets = _secrets(secret)
    if not secrets:
        raise ValueError("encode() needs at least one secret")
    # Rotation: the first secret always signs, the others only still decode.
    key = _cbc_key(secrets[0], salt)

    payload = dict(token)
    now = int(time.time())
    # Overwritten on every encode, like jose's setIssuedAt/setExpirationTime/setJti
    # in Auth.js: a re-issued session gets a new lifetime and a new identity.
    payload["iat"] = now
    payload["exp"] = now + max_age
    # One call for all the randomness a token needs: the jti and the IV's block.
    randomness = os.urandom(32)
    payload["jti"] = _random_uuid(randomness[:16])
    try:
        plaintext = _JSON_ENCODER.encode(payload).encode("utf-8")
    except UnicodeEncodeError:
        # A lone surrogate cannot be written as UTF-8; JSON.stringify escapes it.
        # The all-ASCII form is the same JSON value.
        plaintext = _JSON_ENCODER_ASCII.encode(payload).encode("ascii")

    # A fresh unpredictable IV per token (RFC 7518 5.2.2.1), made by _cbc_encrypt.
    iv, ciphertext = _cbc_encrypt(
        key, plaintext + _PKCS7[16 - len(plaintext) % 16], randomness[16:]
    )
    # Encrypt-then-MAC over AAD || IV || ciphertext || AL, truncated to 256 bits.
    tag = _tag(key, key.header + iv + ciphertext + key.header_al)
    # "dir" has no encrypted key: its segment stays empty (the ".." in the token).
    parts = (key.header, b"", _b64url_encode(iv), _b64url_encode(ciphertext), _b64url_encode(tag))
    return b".".join(parts).decode("ascii")


# ------------------------------------------------------------------------- decode


class _Route(NamedTuple):
    """What a protected header resolves to: which key and which decryption."""

    cbc: _CBCKey | None  # A256CBC-HS512, done here
    gcm: jwcrypto_jwk.JWK | None  # A256GCM, done by jwcrypto
    al: bytes  # AL of the header segment as sent (it is the AAD)
    replicated: tuple[tuple[str, object], ...]  # iss/sub/aud copied into the header


@functools.lru_cache(maxsize=256)
def _route(header_segment: bytes, secrets: tuple[str, ...], salt: str) -> _Route | None:
    # Pure function of its arguments, so cached: a site has a handful of distinct
    # headers (one per secret and cookie name), and parsing the header and
    # comparing thumbprints would otherwise be a large share of decode()'s cost.
    # Nothing here is trusted yet; the tag check comes later and covers the
    # header, because the header segment is the AAD.
    header = _parse_json(_b64url_decode(header_segment))
    if type(header) is not dict:
        return None
    # jose knows no critical extensions for JWE, so any "crit" is rejected, and
    # compression is refused: Auth.js never compresses, and decompressing
    # attacker-chosen data before anything else is a needless risk.
    if "crit" in header or "zip" in header:
        return None
    # Only direct encryption with the shared key, as Auth.js' keyManagementAlgorithms.
    # Anything else (a key wrapped for some other recipient, "none"-style tricks)
    # is refused before any key is touched.
    if header.get("alg") != "dir":
        return None
    enc = header.get("enc")
    length = _KEY_LENGTHS.get(enc) if type(enc) is str else None
    if length is None:
        return None

    # Auth.js' key resolver, quirks included: without a "kid" the first secret's
    # key is used and no other is tried (a kid-less token made with an older
    # secret fails). With a "kid" the secret whose key has that thumbprint is
    # used. The kid is a hash of a key that never leaves the server and is
    # printed in every token, so a plain comparison leaks nothing.
    chosen = None
    for secret in secrets:
        candidate = _derived(secret, salt, length)
        if "kid" not in header or header["kid"] == candidate.kid:
            chosen = secret
            break
    if chosen is None:
        return None

    # jwtDecrypt rejects a token whose header repeats iss, sub or aud with a value
    # other than the claim's. Kept so that a token means the same to both sides.
    replicated = tuple((name, header[name]) for name in ("iss", "sub", "aud") if name in header)
    if enc == _CBC_HS512:
        return _Route(_cbc_key(chosen, salt), None, _al(header_segment), replicated)
    return _Route(None, _gcm_jwk(chosen, salt), b"", replicated)


def _decrypt_cbc_hs512(key: _CBCKey, route: _Route, aad: bytes, parts: list[bytes]) -> bytes | None:
    iv = _b64url_decode(parts[2])
    ciphertext = _b64url_decode(parts[3])
    tag = _b64url_decode(parts[4])
    # Shape checks first; they depend only on public lengths. A CBC ciphertext is
    # a non-empty run of whole 16-byte blocks.
    if len(iv) != 16 or not ciphertext or len(ciphertext) % 16:
        return None
    # Encrypt-then-MAC: the tag is verified before a single byte is decrypted, so
    # nothing about the plaintext or its padding (no padding oracle) is ever
    # revealed for a forged token. compare_digest takes the same time wherever
    # the first difference is, and is simply false for a truncated tag.
    iv_and_ciphertext = iv + ciphertext
    if not hmac.compare_digest(_tag(key, aad + iv_and_ciphertext + route.al), tag):
        return None
    padded = _cbc_decrypt(key, iv_and_ciphertext)
    # The plaintext is authentic at this point, so checking the PKCS#7 padding
    # needs no constant-time care; bad padding can only come from the key holder.
    pad = padded[-1]
    if not 1 <= pad <= 16 or not padded.endswith(_PKCS7[pad]):
        return None
    return padded[:-pad]


def _decrypt_gcm(jwk: jwcrypto_jwk.JWK, token: str, parts: list[bytes]) -> bytes | None:
    # jose insists on a 96-bit IV and jwcrypto does not check it; a full 128-bit
    # tag is enforced by cryptography's GCM either way.
    if len(_b64url_decode(parts[2])) != 12:
        return None
    # Rare path (Auth.js never emits A256GCM), so it goes through jwcrypto rather
    # than a second hand-written AEAD. Only "dir" + A256GCM are allowed, and the
    # header has already been vetted by _route().
    jwe = jwcrypto_jwe.JWE(algs=["dir", _GCM])
    jwe.deserialize(token, key=jwk)
    payload: bytes = jwe.payload
    return payload


def _is_number(value: object) -> bool:
    # JavaScript's typeof value === "number": JSON true/false are not numbers
    # (Python's bool is an int subclass, hence the exact type test).
    return type(value) is int or type(value) is float


def _js_equal(left: object, right: object) -> bool:
    # JavaScript's === for JSON values: arrays and objects are never equal (they are
    # compared by identity), and booleans equal only booleans.
    if isinstance(left, list | dict) or isinstance(right, list | dict):
        return False
    if isinstance(left, bool) or isinstance(right, bool):
        return type(left) is type(right) and left == right
    same_type = type(left) is type(right) or (_is_number(left) and _is_number(right))
    return same_type and left == right


def _replicated_claims_match(
    replicated: tuple[tuple[str, object], ...], claims: dict[str, object]
) -> bool:
    for name, value in replicated:
        claim = claims.get(name, _MISSING)
        if name == "aud":
            # jose compares "aud" by its JSON.stringify form.
            if claim is _MISSING or _JSON_ENCODER.encode(value) != _JSON_ENCODER.encode(claim):
                return False
        elif claim is _MISSING or not _js_equal(value, claim):
            return False
    return True


def _decode(token: str, secrets: tuple[str, ...], salt: str) -> dict[str, Any] | None:
    # A JWE is ASCII; anything else cannot be base64url and is refused outright.
    parts = token.encode("ascii").split(b".")
    if len(parts) != 5:
        return None
    # Real headers are ~150 bytes. Longer ones are still honoured but not cached,
    # so that junk sent by a client cannot make the cache hold megabytes.
    if len(parts[0]) <= _MAX_CACHED_HEADER:
        route = _route(parts[0], secrets, salt)
    else:
        route = _route.__wrapped__(parts[0], secrets, salt)
    if route is None:
        return None
    # "dir" means the shared key is the content key: there is no encrypted key.
    if parts[1]:
        return None
    if route.cbc is not None:
        # The AAD is the protected header segment exactly as received.
        plaintext = _decrypt_cbc_hs512(route.cbc, route, parts[0], parts)
    elif route.gcm is not None:
        plaintext = _decrypt_gcm(route.gcm, token, parts)
    else:  # pragma: no cover - _route() always sets one of the two
        return None
    if plaintext is None:
        return None

    claims = _parse_json(plaintext)
    # A JWT claims set is a JSON object; a list, string or number is not one.
    if type(claims) is not dict:
        return None

    # jose's jwtDecrypt checks, with Auth.js' 15 s tolerance. ``now`` is whole
    # seconds, as in jose. time.time() is looked up on each call so that tests can
    # move the clock.
    now = int(time.time())
    iat = claims.get("iat", _MISSING)
    # No age limit applies to iat (Auth.js sets no maxTokenAge), only its type.
    if iat is not _MISSING and not _is_number(iat):
        return None
    nbf = claims.get("nbf", _MISSING)
    if nbf is not _MISSING and (not _is_number(nbf) or nbf > now + _CLOCK_TOLERANCE):
        return None
    exp = claims.get("exp", _MISSING)
    if exp is not _MISSING and (not _is_number(exp) or exp <= now - _CLOCK_TOLERANCE):
        return None
    if route.replicated and not _replicated_claims_match(route.replicated, claims):
        return None
    return claims


def decode(
    *,
    token: str | None,
    secret: str | Sequence[str],
    salt: str,
) -> dict[str, Any] | None:
    """Decrypt and validate a session JWT made by Auth.js or by :func:`encode`.

    Returns the claims, or ``None`` when the token is missing, malformed,
    tampered with, made with another secret or salt, expired (more than 15 s past
    ``exp``), not yet valid (``nbf`` more than 15 s ahead), or otherwise not what
    Auth.js' ``decode`` would accept. It never raises: a bad cookie is just no
    session.

    ``secret`` is a string or a list (rotation). A token with a ``kid`` opens
    with whichever secret's key has that thumbprint; a token without one only
    with the first secret, as in Auth.js. Both ``A256CBC-HS512`` and ``A256GCM``
    content encryption are accepted, with ``alg: "dir"`` only.
    """
    if not token or not isinstance(token, str):
        return None
    try:
        return _decode(token, _secrets(secret), salt)
    except Exception:
        # Every failure - bad base64, bad JSON, a wrong key, a jwcrypto error, an
        # unusable secret - means the same thing to the caller: no valid token.
        # Raising would let a crafted cookie turn into a server error.
        return None
