"""Tests for webauth.jwt: byte compatibility with @auth/core/jwt, and robustness.

Plain functions, no database and no Django settings: the module under test does
not touch Django.
"""

from __future__ import annotations

import base64
import json
import random
import threading
import uuid
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import hashes, padding
from cryptography.hazmat.primitives import hmac as crypto_hmac
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from freezegun import freeze_time
from jwcrypto import jwe, jwk

from webauth import _jose, jwt

# Tokens encoded by @auth/core's own jwt.encode in Node (protocol 1.7); kept in
# the repository so the interop tests always run.
VECTORS_PATH = Path(__file__).parent / "data" / "authjs-vectors.json"
VECTORS: dict[str, Any] = json.loads(VECTORS_PATH.read_text())["session_jwe"]

SECRET = "test-secret-0123456789abcdef0123456789abcdef"
SALT = "authjs.session-token"
SECURE_SALT = "__Secure-authjs.session-token"
CLAIMS = {"name": "Alice", "email": "alice@example.com", "picture": None, "sub": "user-1"}
T0 = 1_800_000_000  # an arbitrary fixed "now" for tests that freeze the clock


# ------------------------------------------------------------------- helpers


def b64e(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64d(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def at(timestamp: float) -> Any:
    """freeze_time at a Unix timestamp."""
    return freeze_time(datetime.fromtimestamp(timestamp, tz=UTC))


def seal(
    plaintext: bytes,
    key: bytes,
    header: dict[str, Any] | bytes | None = None,
    *,
    iv: bytes | None = None,
    raw_padding: bytes | None = None,
) -> str:
    """A256CBC-HS512 ``dir`` JWE written independently of webauth.jwt.

    ``header`` defaults to Auth.js' header for ``key``; bytes are used verbatim.
    ``raw_padding`` replaces the PKCS#7 padding (to build authentic tokens with
    bad padding).
    """
    if header is None:
        header = {"alg": "dir", "enc": "A256CBC-HS512", "kid": jwt.key_id(key)}
    if isinstance(header, dict):
        header = json.dumps(header, separators=(",", ":")).encode()
    aad = b64e(header).encode("ascii")
    iv = iv if iv is not None else bytes(range(16))
    if raw_padding is None:
        padder = padding.PKCS7(128).padder()
        padded = padder.update(plaintext) + padder.finalize()
    else:
        padded = plaintext + raw_padding
    encryptor = Cipher(algorithms.AES(key[32:]), modes.CBC(iv)).encryptor()
    ciphertext = encryptor.update(padded) + encryptor.finalize()
    mac = crypto_hmac.HMAC(key[:32], hashes.SHA512())
    mac.update(aad + iv + ciphertext + (len(aad) * 8).to_bytes(8, "big"))
    tag = mac.finalize()[:32]
    return ".".join([aad.decode(), "", b64e(iv), b64e(ciphertext), b64e(tag)])


def seal_claims(claims: Any, secret: str = SECRET, salt: str = SALT, **kwargs: Any) -> str:
    return seal(json.dumps(claims).encode(), jwt.derive_key(secret, salt), **kwargs)


def oct_jwk(key: bytes) -> jwk.JWK:
    return jwk.JWK(kty="oct", k=b64e(key))


def jwcrypto_decrypt(token: str, key: bytes) -> bytes:
    obj = jwe.JWE()
    obj.deserialize(token, key=oct_jwk(key))
    payload: bytes = obj.payload
    return payload


def jwcrypto_encrypt(plaintext: bytes, key: bytes, header: dict[str, Any]) -> str:
    obj = jwe.JWE(plaintext, protected=header)
    obj.add_recipient(oct_jwk(key))
    token: str = obj.serialize(compact=True)
    return token


def peek(token: str, secret: str | list[str], salt: str) -> dict[str, Any] | None:
    """Claims of a token without any claim checks (jwcrypto, every secret tried)."""
    header = json.loads(b64d(token.split(".")[0]))
    length = {"A256CBC-HS512": 64, "A256GCM": 32}[header["enc"]]
    for candidate in [secret] if isinstance(secret, str) else secret:
        try:
            claims: dict[str, Any] = json.loads(
                jwcrypto_decrypt(token, jwt.derive_key(candidate, salt, length))
            )
            return claims
        except Exception:
            continue
    return None


def flip(segment: str, index: int = 0) -> str:
    """The segment with one bit of its decoded bytes flipped."""
    data = bytearray(b64d(segment))
    data[index] ^= 0x01
    return b64e(bytes(data))


def replace_part(token: str, index: int, value: str) -> str:
    parts = token.split(".")
    parts[index] = value
    return ".".join(parts)


# ------------------------------------------------------------ Auth.js vectors


@pytest.mark.parametrize(
    "vector",
    VECTORS.get("node_encoded", []),
    ids=lambda v: f"{v['salt']}-{v['secret'][:6]}",
)
def test_node_encoded_vectors(vector: dict[str, Any]) -> None:
    key = jwt.derive_key(vector["secret"], vector["salt"])
    assert key.hex() == vector["derived_key_hex"]
    assert jwt.key_id(key) == vector["kid"]
    header = json.loads(b64d(vector["token"].split(".")[0]))
    assert header == {"alg": "dir", "enc": "A256CBC-HS512", "kid": vector["kid"]}
    with at(vector["claims"]["iat"] + 60):
        claims = jwt.decode(token=vector["token"], secret=vector["secret"], salt=vector["salt"])
    assert claims is not None and claims == vector["claims"]
    assert list(claims) == list(vector["claims"])


def test_node_encoded_vectors_also_decode_today() -> None:
    # They were made with a ten-year lifetime, so they are valid without freezing.
    for vector in VECTORS["node_encoded"]:
        claims = jwt.decode(token=vector["token"], secret=vector["secret"], salt=vector["salt"])
        assert claims == vector["claims"]


@pytest.mark.parametrize("vector", VECTORS.get("node_encoded", []), ids=lambda v: v["salt"])
def test_node_encoded_vectors_need_their_secret_and_salt(vector: dict[str, Any]) -> None:
    other_salt = SALT if vector["salt"] == SECURE_SALT else SECURE_SALT
    assert jwt.decode(token=vector["token"], secret=vector["secret"], salt=other_salt) is None
    assert jwt.decode(token=vector["token"], secret="other", salt=vector["salt"]) is None
    # With rotation the kid picks the right secret wherever it is in the list.
    rotated = ["new-secret", "newer-secret", vector["secret"]]
    assert jwt.decode(token=vector["token"], secret=rotated, salt=vector["salt"]) is not None


def test_protocol_key_vectors() -> None:
    key = jwt.derive_key("secret", SALT)
    assert key.hex() == (
        "b1ef6cdd915c44c0a71232574a6a70546a5e16d12bb38df4638e3b96bdd32025"
        "131e90695ff072a9d148f1511c7a4981a85b63a628311da1fa7ccfc49c47c2bb"
    )
    assert jwt.key_id(key) == (
        "7x9DUMVaEU6giab0l0OWDt4e4SsRH_cbwMof2EzEyy6onK5o8xSPPB799RVoqm2v6z674kQCv9jom2T8S-a1dQ"
    )
    secure_key = jwt.derive_key("secret", SECURE_SALT)
    assert secure_key.hex() == (
        "0d8bf2d720367891eda6b7cc8f1960cf3fac4c0e5972e05c0ea71f835d01d69a"
        "60b8d258a71a473d46b0eec5ed3dfe45a7bcfbe54ccfa14f50206f3af0f777f5"
    )
    assert jwt.key_id(secure_key) == (
        "7E3YIGAxRtn6djTGy1UjZrFvXELHKzM9vfWl0nQ4b88EsnrmmX0grN0VKis7G3fjgB626TXm_lEtBG1N0E7Xyg"
    )
    assert jwt.key_id(jwt.derive_key("secret", "encodedState")) == (
        "ze1rGMPGVDubcXDnXo8NkdIqeDyuSSG3mI5gRPgxRiRlgDu9MMjrpKw4-pNomgcTqiQZlith1dCysR6uVPfKfg"
    )
    assert jwt.key_id(jwt.derive_key("secret", "authjs.state")) == (
        "5NnTu-yvMmyE9DpEbrak1hjPYyt-SK41UlQmABcuupdxQj0szIDfbr08zqibdmVSMFdIC4_NqIvpFQs4kUs0pA"
    )


def test_gcm_key_is_the_first_half_with_a_sha256_kid() -> None:
    short = jwt.derive_key("secret", SALT, 32)
    assert short == jwt.derive_key("secret", SALT)[:32]
    assert jwt.key_id(short) == "tgdt-VLOTRviBTc4vwSS-WjOhg14Bq0M6tGDvSzfdgs"
    assert len(jwt.key_id(short)) == 43
    assert len(jwt.key_id(jwt.derive_key("secret", SALT))) == 86


def test_key_id_rejects_sizes_without_a_thumbprint_hash() -> None:
    with pytest.raises(ValueError):
        jwt.key_id(b"x" * 16)
    assert len(jwt.key_id(b"x" * 48)) == 64  # sha384


def test_derive_key_is_cached() -> None:
    jwt.derive_key.cache_clear()
    jwt.derive_key("cache-me", SALT)
    jwt.derive_key("cache-me", SALT)
    info = jwt.derive_key.cache_info()
    assert (info.hits, info.misses) == (1, 1)


def test_derive_key_refuses_what_auth_js_hkdf_refuses() -> None:
    with pytest.raises(ValueError):
        jwt.derive_key("", SALT)
    prefix_and_suffix = len("Auth.js Generated Encryption Key ()")
    with pytest.raises(ValueError):
        jwt.derive_key(SECRET, "s" * (1025 - prefix_and_suffix))
    jwt.derive_key(SECRET, "s" * (1024 - prefix_and_suffix))  # info of exactly 1024 bytes


def test_lone_surrogates_in_a_secret_derive_like_text_encoder() -> None:
    # TextEncoder turns a lone surrogate into U+FFFD; a surrogate pair held as
    # two code points is the astral character it encodes.
    assert jwt.derive_key("a\ud800b", SALT) == jwt.derive_key("a\ufffdb", SALT)
    assert jwt.derive_key("key-\ud83d\udd11", SALT) == jwt.derive_key("key-🔑", SALT)


def node_reference_time(cases: list[dict[str, Any]]) -> int:
    # The Python-made tokens were all issued at the same instant and checked by
    # Node right away: their iat is Node's "now" (the case descriptions say
    # "exp = now-60" and "exp = now-5" relative to it).
    for case in cases:
        claims = peek(case["token"], case["secret"], case["salt"])
        if claims is not None:
            return int(claims["iat"])
    raise AssertionError("no readable vector")


def test_python_encoded_vectors_agree_with_node() -> None:
    cases = VECTORS["python_encoded_checked_by_node"]
    now = node_reference_time(cases)
    seen_within_tolerance = seen_expired = False
    for case in cases:
        peeked = peek(case["token"], case["secret"], case["salt"])
        if peeked is not None and "now-60" in case["case"]:
            assert peeked["exp"] == now - 60
            seen_expired = True
        if peeked is not None and "now-5" in case["case"]:
            assert peeked["exp"] == now - 5
            seen_within_tolerance = True
        with at(now):
            claims = jwt.decode(token=case["token"], secret=case["secret"], salt=case["salt"])
        assert (claims is not None) == case["node_accepts"], case["case"]
        if claims is not None:
            assert claims == peeked
    assert seen_expired and seen_within_tolerance


def test_python_encoded_vectors_expire() -> None:
    cases = [c for c in VECTORS["python_encoded_checked_by_node"] if c["node_accepts"]]
    for case in cases:
        exp = peek(case["token"], case["secret"], case["salt"])["exp"]  # type: ignore[index]
        with at(exp + 14):
            assert jwt.decode(token=case["token"], secret=case["secret"], salt=case["salt"])
        with at(exp + 15):
            assert not jwt.decode(token=case["token"], secret=case["secret"], salt=case["salt"])


# --------------------------------------------------------------------- encode


def test_round_trip() -> None:
    token = jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)
    claims = jwt.decode(token=token, secret=SECRET, salt=SALT)
    assert claims is not None
    assert {k: claims[k] for k in CLAIMS} == CLAIMS


def test_token_shape_and_header_bytes() -> None:
    token = jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)
    header_segment, encrypted_key, iv, ciphertext, tag = token.split(".")
    kid = jwt.key_id(jwt.derive_key(SECRET, SALT))
    assert (
        b64d(header_segment) == b'{"alg":"dir","enc":"A256CBC-HS512","kid":"' + kid.encode() + b'"}'
    )
    assert encrypted_key == ""
    assert len(b64d(iv)) == 16
    assert len(b64d(ciphertext)) % 16 == 0
    assert len(b64d(tag)) == 32
    assert "=" not in token and "+" not in token and "/" not in token


def test_payload_is_compact_utf8_json_in_javascript_key_order() -> None:
    token = jwt.encode(token={"name": "Zoë", "sub": "1"}, secret=SECRET, salt=SALT)
    plaintext = jwcrypto_decrypt(token, jwt.derive_key(SECRET, SALT))
    assert plaintext.startswith('{"name":"Zoë","sub":"1","iat":'.encode())
    assert b" " not in plaintext
    assert list(json.loads(plaintext)) == ["name", "sub", "iat", "exp", "jti"]


def test_iat_exp_jti_are_set_and_overwritten_in_place() -> None:
    old = {"iat": 1, "sub": "1", "exp": 2, "jti": "old", "name": "A"}
    with at(T0 + 0.7):
        token = jwt.encode(token=old, secret=SECRET, salt=SALT, max_age=3600)
        claims = jwt.decode(token=token, secret=SECRET, salt=SALT)
    assert claims is not None
    assert claims["iat"] == T0 and type(claims["iat"]) is int
    assert claims["exp"] == T0 + 3600
    assert claims["jti"] != "old"
    assert uuid.UUID(claims["jti"]).version == 4
    # Existing keys keep their place, as when JavaScript assigns to them.
    assert list(claims) == ["iat", "sub", "exp", "jti", "name"]
    assert old["jti"] == "old"  # the caller's mapping is not modified


def test_default_max_age_is_thirty_days() -> None:
    assert jwt.DEFAULT_MAX_AGE == 2_592_000
    with at(T0):
        claims = jwt.decode(
            token=jwt.encode(token={}, secret=SECRET, salt=SALT), secret=SECRET, salt=SALT
        )
    assert claims is not None
    assert claims["exp"] - claims["iat"] == jwt.DEFAULT_MAX_AGE


def test_every_token_is_fresh() -> None:
    first = jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)
    second = jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)
    assert first.split(".")[2] != second.split(".")[2]  # random IV
    one = jwt.decode(token=first, secret=SECRET, salt=SALT)
    two = jwt.decode(token=second, secret=SECRET, salt=SALT)
    assert one is not None and two is not None and one["jti"] != two["jti"]


def test_salt_separates_cookies() -> None:
    token = jwt.encode(token=CLAIMS, secret=SECRET, salt=SECURE_SALT)
    assert jwt.decode(token=token, secret=SECRET, salt=SECURE_SALT) is not None
    assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None


def test_encode_accepts_any_mapping() -> None:
    from types import MappingProxyType

    token = jwt.encode(token=MappingProxyType({"sub": "1"}), secret=(SECRET,), salt=SALT)
    assert jwt.decode(token=token, secret=SECRET, salt=SALT)["sub"] == "1"  # type: ignore[index]


def test_encode_refuses_what_javascript_could_not_read() -> None:
    with pytest.raises(ValueError):
        jwt.encode(token={"x": float("nan")}, secret=SECRET, salt=SALT)
    with pytest.raises(ValueError):
        jwt.encode(token={"x": float("inf")}, secret=SECRET, salt=SALT)
    with pytest.raises(TypeError):
        jwt.encode(token={"x": object()}, secret=SECRET, salt=SALT)
    with pytest.raises(ValueError):
        jwt.encode(token={}, secret=[], salt=SALT)
    with pytest.raises(ValueError):
        jwt.encode(token={}, secret="", salt=SALT)


def test_lone_surrogate_claims_are_escaped() -> None:
    token = jwt.encode(token={"x": "a\ud800b", "y": "é"}, secret=SECRET, salt=SALT)
    plaintext = jwcrypto_decrypt(token, jwt.derive_key(SECRET, SALT))
    assert b'"a\\ud800b"' in plaintext
    claims = jwt.decode(token=token, secret=SECRET, salt=SALT)
    assert claims is not None and claims["x"] == "a\ud800b" and claims["y"] == "é"


# ------------------------------------------------------------------- rotation


def test_rotation_encodes_with_the_first_secret() -> None:
    token = jwt.encode(token=CLAIMS, secret=["new", "old"], salt=SALT)
    header = json.loads(b64d(token.split(".")[0]))
    assert header["kid"] == jwt.key_id(jwt.derive_key("new", SALT))
    assert jwt.decode(token=token, secret="new", salt=SALT) is not None
    assert jwt.decode(token=token, secret="old", salt=SALT) is None


def test_rotation_decodes_tokens_of_older_secrets() -> None:
    old_token = jwt.encode(token=CLAIMS, secret="old", salt=SALT)
    assert jwt.decode(token=old_token, secret=["new", "old"], salt=SALT) is not None
    assert jwt.decode(token=old_token, secret=("newest", "new", "old"), salt=SALT) is not None
    assert jwt.decode(token=old_token, secret=["new", "newer"], salt=SALT) is None
    assert jwt.decode(token=old_token, secret=[], salt=SALT) is None


def test_kidless_token_only_tries_the_first_secret() -> None:
    # Auth.js quirk: without a kid the first secret's key is used and no other.
    header = {"alg": "dir", "enc": "A256CBC-HS512"}
    made_with_old = seal_claims(CLAIMS, secret="old", header=header)
    made_with_new = seal_claims(CLAIMS, secret="new", header=header)
    assert jwt.decode(token=made_with_old, secret="old", salt=SALT) == CLAIMS
    assert jwt.decode(token=made_with_old, secret=["new", "old"], salt=SALT) is None
    assert jwt.decode(token=made_with_new, secret=["new", "old"], salt=SALT) == CLAIMS


def test_kid_must_match_exactly() -> None:
    kid = jwt.key_id(jwt.derive_key(SECRET, SALT))
    for bad_kid in [kid[:-1], kid + "A", kid.upper(), None, 1, [kid], ""]:
        header = {"alg": "dir", "enc": "A256CBC-HS512", "kid": bad_kid}
        assert (
            jwt.decode(token=seal_claims(CLAIMS, header=header), secret=SECRET, salt=SALT) is None
        )


# --------------------------------------------------------------- claim checks


def token_expiring_at(exp: int) -> str:
    with at(exp - 100):
        return jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT, max_age=100)


@pytest.mark.parametrize(
    ("seconds_past_exp", "accepted"),
    [(-100, True), (0, True), (10, True), (14, True), (14.99, True), (15, False), (16, False)],
)
def test_expiry_has_fifteen_seconds_of_tolerance(seconds_past_exp: float, accepted: bool) -> None:
    token = token_expiring_at(T0)
    with at(T0 + seconds_past_exp):
        assert (jwt.decode(token=token, secret=SECRET, salt=SALT) is not None) is accepted


@pytest.mark.parametrize(
    ("nbf_ahead", "accepted"), [(-1000, True), (0, True), (15, True), (16, False), (3600, False)]
)
def test_nbf_in_the_future_is_rejected(nbf_ahead: int, accepted: bool) -> None:
    token = seal_claims({"sub": "1", "nbf": T0 + nbf_ahead})
    with at(T0):
        assert (jwt.decode(token=token, secret=SECRET, salt=SALT) is not None) is accepted


@pytest.mark.parametrize(
    "claims",
    [
        {"iat": "1800000000"},
        {"iat": None},
        {"iat": True},
        {"iat": [T0]},
        {"exp": "2000000000"},
        {"exp": True},
        {"exp": None},
        {"nbf": "0"},
        {"nbf": False},
    ],
    ids=repr,
)
def test_time_claims_must_be_numbers(claims: dict[str, Any]) -> None:
    with at(T0):
        assert jwt.decode(token=seal_claims(claims), secret=SECRET, salt=SALT) is None


def test_time_claims_may_be_floats_and_may_be_absent() -> None:
    with at(T0):
        assert jwt.decode(token=seal_claims({"sub": "1"}), secret=SECRET, salt=SALT) == {"sub": "1"}
        floats = {"iat": T0 + 0.5, "exp": T0 + 10.5, "nbf": T0 - 0.5}
        assert jwt.decode(token=seal_claims(floats), secret=SECRET, salt=SALT) == floats
        # No age limit: an iat in the future is accepted, as in Auth.js.
        future = {"iat": T0 + 10**6}
        assert jwt.decode(token=seal_claims(future), secret=SECRET, salt=SALT) == future


def test_replicated_header_claims_must_match() -> None:
    kid = jwt.key_id(jwt.derive_key(SECRET, SALT))
    base = {"alg": "dir", "enc": "A256CBC-HS512", "kid": kid}
    claims = {"iss": "https://a.example", "sub": "1", "aud": ["x", "y"]}
    good: list[dict[str, Any]] = [{"iss": "https://a.example"}, {"sub": "1"}, {"aud": ["x", "y"]}]
    bad: list[dict[str, Any]] = [
        {"iss": "https://b.example"},
        {"sub": 1},
        {"aud": ["y", "x"]},
        {"jti": 1, "sub": None},
    ]
    for extra in good:
        token = seal_claims(claims, header={**base, **extra})
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) == claims
    for extra in bad:
        token = seal_claims(claims, header={**base, **extra})
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None
    token = seal_claims({"sub": "1"}, header={**base, "iss": "x"})  # header only
    assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None


def test_payload_json_is_read_like_javascript() -> None:
    key = jwt.derive_key(SECRET, SALT)

    def decode_plaintext(plaintext: bytes) -> Any:
        return jwt.decode(token=seal(plaintext, key), secret=SECRET, salt=SALT)

    assert decode_plaintext(b' \n{"a":1}\t ') == {"a": 1}
    assert decode_plaintext(b'\xef\xbb\xbf{"a":1}') == {"a": 1}  # BOM dropped
    assert decode_plaintext(b'{"a":"\xff"}') == {"a": "\ufffd"}  # bad UTF-8 replaced
    assert decode_plaintext(b'{"a":1,"a":2}') == {"a": 2}  # last duplicate wins
    assert decode_plaintext(b'{"a":NaN}') is None  # not JSON to JavaScript
    assert decode_plaintext(b'{"a":Infinity}') is None
    assert decode_plaintext(b'{"a":1}}') is None
    assert decode_plaintext(b'{"a":1} {}') is None
    assert decode_plaintext(b"{") is None


def test_long_headers_are_honoured_but_not_cached() -> None:
    key = jwt.derive_key(SECRET, SALT)
    header = {"alg": "dir", "enc": "A256CBC-HS512", "kid": jwt.key_id(key), "x": "y" * 2000}
    token = seal(b'{"sub":"1"}', key, header)
    misses = _jose._route.cache_info().misses
    assert jwt.decode(token=token, secret=SECRET, salt=SALT) == {"sub": "1"}
    assert _jose._route.cache_info().misses == misses


def test_str_subclasses_are_tokens_too(good_token: str) -> None:
    class Marked(str):
        pass

    assert jwt.decode(token=Marked(good_token), secret=SECRET, salt=SALT) is not None


# -------------------------------------------------------------- broken tokens


@pytest.fixture(scope="module")
def good_token() -> str:
    return jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)


def broken_tokens(good: str) -> Iterator[tuple[str, Any]]:
    header, _, iv, ciphertext, tag = good.split(".")
    key = jwt.derive_key(SECRET, SALT)
    kid = jwt.key_id(key)

    def with_header(**fields: Any) -> str:
        return seal(
            b'{"sub":"1"}', key, {"alg": "dir", "enc": "A256CBC-HS512", "kid": kid, **fields}
        )

    yield "empty", ""
    yield "none", None
    yield "bytes", good.encode()
    yield "int", 12345
    yield "garbage", "garbage"
    yield "dots", "...."
    yield "five empty segments", "." * 4
    yield "five junk segments", "a.b.c.d.e"
    yield "non-ascii", good[:-1] + "é"
    yield "nul", "\x00" * 10
    yield "four segments", good.rsplit(".", 1)[0]
    yield "six segments", good + "." + tag
    yield "trailing dot", good + "."
    yield "leading whitespace", " " + good
    yield "trailing newline", good + "\n"
    yield "bad base64 header", replace_part(good, 0, header[:-1] + "!")
    yield "padded header", replace_part(good, 0, header + "=" * (-len(header) % 4 or 4))
    yield "standard alphabet", good.replace("-", "+").replace("_", "/")
    yield "bad base64 iv", replace_part(good, 2, iv[:-1] + "*")
    yield "bad base64 ciphertext", replace_part(good, 3, ciphertext[:5] + " " + ciphertext[5:])
    yield "bad base64 tag", replace_part(good, 4, tag + "=")
    yield "impossible base64 length", replace_part(good, 3, ciphertext + "A")
    yield "header not json", replace_part(good, 0, b64e(b'{"alg":"dir",'))
    yield "header a list", replace_part(good, 0, b64e(b'["dir"]'))
    yield "header a string", replace_part(good, 0, b64e(b'"dir"'))
    yield "header null", replace_part(good, 0, b64e(b"null"))
    yield "alg none", with_header(alg="none")
    yield "alg A256KW", with_header(alg="A256KW")
    yield "alg missing", seal(b"{}", key, {"enc": "A256CBC-HS512", "kid": kid})
    yield "alg not a string", with_header(alg=["dir"])
    yield "alg DIR", with_header(alg="DIR")
    yield "enc A128CBC-HS256", with_header(enc="A128CBC-HS256")
    yield "enc A128GCM", with_header(enc="A128GCM")
    yield "enc missing", seal(b"{}", key, {"alg": "dir", "kid": kid})
    yield "enc not a string", with_header(enc=64)
    yield "crit", with_header(crit=["exp"])
    yield "empty crit", with_header(crit=[])
    yield "zip", with_header(zip="DEF")
    yield (
        "tampered header kid",
        replace_part(good, 0, b64e(b64d(header).replace(b'"kid":"', b'"kid":"x'))),
    )
    yield "tampered header bytes", replace_part(good, 0, b64e(b64d(header).replace(b",", b", ", 1)))
    yield (
        "header without kid (aad changed)",
        replace_part(good, 0, b64e(b'{"alg":"dir","enc":"A256CBC-HS512"}')),
    )
    yield "encrypted key present", replace_part(good, 1, b64e(b"k" * 64))
    yield "tampered iv", replace_part(good, 2, flip(iv))
    yield "tampered iv last byte", replace_part(good, 2, flip(iv, 15))
    yield "tampered ciphertext", replace_part(good, 3, flip(ciphertext))
    yield "tampered ciphertext end", replace_part(good, 3, flip(ciphertext, -1))
    yield "tampered tag", replace_part(good, 4, flip(tag))
    yield "tampered tag end", replace_part(good, 4, flip(tag, 31))
    yield "truncated tag", replace_part(good, 4, b64e(b64d(tag)[:16]))
    yield "full 64-byte tag", replace_part(good, 4, b64e(b64d(tag) + bytes(32)))
    yield "empty tag", replace_part(good, 4, "")
    yield "empty iv", replace_part(good, 2, "")
    yield "short iv", replace_part(good, 2, b64e(b64d(iv)[:12]))
    yield "empty ciphertext", replace_part(good, 3, "")
    yield "ciphertext cut by a block", replace_part(good, 3, b64e(b64d(ciphertext)[:-16]))
    yield "ciphertext not whole blocks", replace_part(good, 3, b64e(b64d(ciphertext)[:-1]))
    yield "swapped iv and tag", ".".join([header, "", tag, ciphertext, iv])
    yield "authentic non-object: list", seal(b'["sub", 1]', key)
    yield "authentic non-object: string", seal(b'"sub"', key)
    yield "authentic non-object: number", seal(b"1800000000", key)
    yield "authentic non-object: null", seal(b"null", key)
    yield "authentic non-object: true", seal(b"true", key)
    yield "authentic non-json", seal(b"not json", key)
    yield "authentic empty plaintext", seal(b"", key)
    yield "authentic bad padding value", seal(b'{"a":1}', key, raw_padding=b"\x00" * 9)
    yield "authentic padding too large", seal(b'{"a":1}', key, raw_padding=b"\x11" * 9)
    yield "authentic inconsistent padding", seal(b'{"a":1}', key, raw_padding=b"\x01" * 8 + b"\x09")
    yield "authentic no padding", seal(b'{"a":1}xxxxxxxxx', key, raw_padding=b"")
    yield "huge garbage", "A" * 5_000_000
    yield "huge ciphertext", replace_part(good, 3, "A" * 4_000_000)
    yield "many dots", "." * 1_000_000


def test_broken_tokens_decode_to_none(good_token: str) -> None:
    assert jwt.decode(token=good_token, secret=SECRET, salt=SALT) is not None
    for name, token in broken_tokens(good_token):
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None, name
        assert jwt.decode(token=token, secret=[SECRET, "other"], salt=SALT) is None, name
    # And the good token still decodes afterwards (no state was disturbed).
    assert jwt.decode(token=good_token, secret=SECRET, salt=SALT) is not None


def test_wrong_secret_or_salt_decode_to_none(good_token: str) -> None:
    assert jwt.decode(token=good_token, secret="not-the-secret", salt=SALT) is None
    assert jwt.decode(token=good_token, secret=SECRET, salt=SECURE_SALT) is None
    assert jwt.decode(token=good_token, secret=SECRET, salt="") is None
    assert jwt.decode(token=good_token, secret=SECRET.upper(), salt=SALT) is None


def test_unusable_secrets_decode_to_none(good_token: str) -> None:
    assert jwt.decode(token=good_token, secret="", salt=SALT) is None
    assert jwt.decode(token=good_token, secret=[], salt=SALT) is None
    # As in Auth.js, deriving from an empty secret before the right one fails.
    assert jwt.decode(token=good_token, secret=["", SECRET], salt=SALT) is None
    assert jwt.decode(token=good_token, secret=[SECRET, ""], salt=SALT) is not None
    assert jwt.decode(token=good_token, secret=[None], salt=SALT) is None  # type: ignore[list-item]
    assert jwt.decode(token=good_token, secret=SECRET, salt="s" * 2000) is None


# ------------------------------------------- fast path agrees with jwcrypto


def random_text(rng: random.Random) -> str:
    # Any code point but lone surrogates, which UTF-8 cannot carry.
    alphabets = [(0x20, 0x7E), (0xA0, 0x2FF), (0x400, 0x4FF), (0x4E00, 0x4FFF), (0x1F300, 0x1F6FF)]
    chars = []
    for _ in range(rng.randint(0, 40)):
        low, high = rng.choice(alphabets)
        chars.append(chr(rng.randint(low, high)))
    if rng.random() < 0.2:
        chars.append(rng.choice(['"', "\\", "\n", "\x00", "\u2028", "\ufeff", "\U0010ffff"]))
    return "".join(chars)


def random_value(rng: random.Random, depth: int = 0) -> Any:
    kind = rng.randint(0, 7 if depth < 3 else 4)
    if kind == 0:
        return None
    if kind == 1:
        return rng.random() < 0.5
    if kind == 2:
        return rng.randint(-(2**53), 2**53)
    if kind == 3:
        return rng.uniform(-1e6, 1e6)
    if kind == 4:
        return random_text(rng)
    if kind == 5:
        return [random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))]
    return {random_text(rng): random_value(rng, depth + 1) for _ in range(rng.randint(0, 4))}


def random_claims(rng: random.Random) -> dict[str, Any]:
    claims = {random_text(rng): random_value(rng) for _ in range(rng.randint(0, 8))}
    for name in ("iat", "exp", "nbf", "iss", "sub", "aud"):
        claims.pop(name, None)
    return claims


def test_encode_agrees_with_jwcrypto() -> None:
    rng = random.Random(20261123)
    key = jwt.derive_key(SECRET, SALT)
    for _ in range(200):
        claims = random_claims(rng)
        secret_list = [SECRET] if rng.random() < 0.5 else [SECRET, "old"]
        token = jwt.encode(token=claims, secret=secret_list, salt=SALT)
        by_jwcrypto = json.loads(jwcrypto_decrypt(token, key))
        by_webauth = jwt.decode(token=token, secret=secret_list[::-1], salt=SALT)
        assert by_webauth is not None and by_webauth == by_jwcrypto
        assert {k: v for k, v in by_webauth.items() if k not in ("iat", "exp", "jti")} == claims


def test_jwcrypto_tokens_decode() -> None:
    rng = random.Random(7)
    key = jwt.derive_key(SECRET, SALT)
    kid = jwt.key_id(key)
    for i in range(200):
        claims = random_claims(rng)
        header: dict[str, Any] = {"alg": "dir", "enc": "A256CBC-HS512"}
        if i % 4:
            header["kid"] = kid
        token = jwcrypto_encrypt(json.dumps(claims).encode(), key, header)
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) == claims


def test_jwcrypto_gcm_tokens_decode() -> None:
    rng = random.Random(11)
    key = jwt.derive_key(SECRET, SALT, 32)
    kid = jwt.key_id(key)
    for i in range(50):
        claims = random_claims(rng)
        header: dict[str, Any] = {"alg": "dir", "enc": "A256GCM"}
        if i % 2:
            header["kid"] = kid
        token = jwcrypto_encrypt(json.dumps(claims).encode(), key, header)
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) == claims
        # Rotation works the same way for GCM tokens with a kid.
        rotated = jwt.decode(token=token, secret=["new", SECRET], salt=SALT)
        assert rotated == (claims if "kid" in header else None)


def test_gcm_tokens_are_checked_too() -> None:
    key = jwt.derive_key(SECRET, SALT, 32)
    header = {"alg": "dir", "enc": "A256GCM", "kid": jwt.key_id(key)}
    good = jwcrypto_encrypt(b'{"sub":"1","exp":1}', key, header)
    with at(T0):
        assert jwt.decode(token=good, secret=SECRET, salt=SALT) is None  # expired
    good = jwcrypto_encrypt(b'{"sub":"1"}', key, header)
    assert jwt.decode(token=good, secret=SECRET, salt=SALT) == {"sub": "1"}
    header_segment, _, iv, ciphertext, tag = good.split(".")
    assert (
        jwt.decode(token=replace_part(good, 3, flip(ciphertext)), secret=SECRET, salt=SALT) is None
    )
    assert jwt.decode(token=replace_part(good, 4, flip(tag)), secret=SECRET, salt=SALT) is None
    assert jwt.decode(token=replace_part(good, 2, flip(iv)), secret=SECRET, salt=SALT) is None
    truncated = replace_part(good, 4, b64e(b64d(tag)[:12]))
    assert jwt.decode(token=truncated, secret=SECRET, salt=SALT) is None
    assert jwt.decode(token=good, secret=SECRET, salt=SECURE_SALT) is None
    assert jwt.decode(token=replace_part(good, 1, b64e(key)), secret=SECRET, salt=SALT) is None

    # A 128-bit IV is valid GCM, but jose only accepts 96 bits.
    aad = header_segment.encode()
    long_iv = bytes(16)
    sealed = AESGCM(key).encrypt(long_iv, b'{"sub":"1"}', aad)
    token = ".".join([header_segment, "", b64e(long_iv), b64e(sealed[:-16]), b64e(sealed[-16:])])
    assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None
    # The same token shape with a 96-bit IV, made without jwcrypto, is fine.
    iv12 = bytes(12)
    sealed = AESGCM(key).encrypt(iv12, b'{"sub":"1"}', aad)
    token = ".".join([header_segment, "", b64e(iv12), b64e(sealed[:-16]), b64e(sealed[-16:])])
    assert jwt.decode(token=token, secret=SECRET, salt=SALT) == {"sub": "1"}
    # A GCM token with the 64-byte key's kid does not match any 32-byte key.
    wrong_kid = {"alg": "dir", "enc": "A256GCM", "kid": jwt.key_id(jwt.derive_key(SECRET, SALT))}
    token = jwcrypto_encrypt(b'{"sub":"1"}', key, wrong_kid)
    assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None


def test_decoding_interleaved_keys_and_lengths() -> None:
    # decode() reuses one AES context per key; tokens of different keys and
    # lengths in any order must all come out right.
    rng = random.Random(3)
    pairs = []
    for i in range(120):
        secret, salt = rng.choice([(SECRET, SALT), ("other", SALT), (SECRET, SECURE_SALT)])
        claims = {"i": i, "pad": "x" * rng.randint(0, 100)}
        pairs.append((jwt.encode(token=claims, secret=secret, salt=salt), secret, salt, claims))
    for _ in range(3):
        rng.shuffle(pairs)
        for token, secret, salt, claims in pairs:
            decoded = jwt.decode(token=token, secret=[SECRET, "other"], salt=salt)
            assert decoded is not None and decoded["i"] == claims["i"]
            assert decoded["pad"] == claims["pad"]


def test_decode_from_many_threads() -> None:
    tokens = [
        (jwt.encode(token={"i": i, "pad": "y" * i}, secret=secret, salt=SALT), i)
        for i, secret in enumerate([SECRET, "other"] * 20)
    ]
    failures: list[Any] = []

    def work() -> None:
        for _ in range(50):
            for token, i in tokens:
                claims = jwt.decode(token=token, secret=[SECRET, "other"], salt=SALT)
                if claims is None or claims["i"] != i:
                    failures.append((i, claims))

    threads = [threading.Thread(target=work) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


def test_jti_is_a_version_4_uuid() -> None:
    seen = set()
    for _ in range(200):
        claims = jwt.decode(
            token=jwt.encode(token={}, secret=SECRET, salt=SALT), secret=SECRET, salt=SALT
        )
        assert claims is not None
        parsed = uuid.UUID(claims["jti"])
        assert str(parsed) == claims["jti"]  # lowercase, dashed: as crypto.randomUUID()
        assert parsed.version == 4 and parsed.variant == uuid.RFC_4122
        seen.add(claims["jti"])
    assert len(seen) == 200


def test_ivs_never_repeat_and_each_token_decrypts_alone() -> None:
    # encode() reuses one CBC context per key and thread and takes a block of its
    # output as the IV: every token must still be a self-contained CBC encryption
    # under its own IV, which jwcrypto (a fresh context per token) checks here.
    key = jwt.derive_key(SECRET, SALT)
    tokens = [jwt.encode(token={"i": i}, secret=SECRET, salt=SALT) for i in range(300)]
    ivs = [token.split(".")[2] for token in tokens]
    assert len(set(ivs)) == len(ivs)
    for i, token in reversed(list(enumerate(tokens))):  # out of order on purpose
        assert json.loads(jwcrypto_decrypt(token, key))["i"] == i


def test_encode_from_many_threads() -> None:
    key = jwt.derive_key(SECRET, SALT)
    made: list[tuple[int, str]] = []
    lock = threading.Lock()

    def work(n: int) -> None:
        for i in range(100):
            token = jwt.encode(token={"n": n, "i": i, "pad": "x" * i}, secret=SECRET, salt=SALT)
            with lock:
                made.append((n * 1000 + i, token))

    threads = [threading.Thread(target=work, args=(n,)) for n in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(made) == 800
    for number, token in made:
        claims = json.loads(jwcrypto_decrypt(token, key))
        assert claims["n"] * 1000 + claims["i"] == number


def test_only_strict_base64url_segments_are_read(good_token: str) -> None:
    # Each variant decodes to the same bytes under lenient base64 (junk skipped,
    # padding accepted), so only strict decoding refuses it; jose (Auth.js)
    # refuses all of them. Junk comes in fours so that the length modulo 4 (which
    # decides the padding added) stays the same.
    parts = good_token.split(".")
    for index in (0, 2, 3, 4):
        segment = parts[index]
        variants = {
            "spaces inside": segment[:4] + "    " + segment[4:],
            "newlines inside": segment[:4] + "\n\n\n\n" + segment[4:],
            "junk characters": segment[:4] + "!*@$" + segment[4:],
            "padding inside": segment[:4] + "====" + segment[4:],
            "padding at the end": segment + "====",
            "standard alphabet": segment.replace("-", "+").replace("_", "/"),
        }
        for name, variant in variants.items():
            if variant == segment:
                continue  # e.g. no "-" or "_" in this segment
            token = ".".join([*parts[:index], variant, *parts[index + 1 :]])
            assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None, (index, name)


def test_whitespace_on_one_side_of_the_payload_is_json_too() -> None:
    # JSON.parse allows whitespace around the value, on either side alone as well.
    key = jwt.derive_key(SECRET, SALT)
    for plaintext in (b' {"a":1}', b'{"a":1} ', b'\n{"a":1}', b'{"a":1}\r\n'):
        assert jwt.decode(token=seal(plaintext, key), secret=SECRET, salt=SALT) == {"a": 1}


@pytest.mark.parametrize(
    ("in_header", "in_claims", "accepted"),
    [
        ("1", "1", True),
        (1, 1, True),
        (1, 1.0, True),  # one number type in JavaScript
        (True, True, True),
        (False, False, True),
        (None, None, True),
        ("1", 1, False),
        (1, "1", False),
        (True, 1, False),  # === does not convert
        (1, True, False),
        (False, 0, False),
        (0, False, False),
        (None, False, False),
        (True, False, False),
        ("a", "b", False),
        ([1], [1], False),  # arrays and objects are never === to another one
        ({"a": 1}, {"a": 1}, False),
        ("[1]", [1], False),
        ([1], "[1]", False),
    ],
)
def test_replicated_sub_and_iss_compare_like_javascript(
    in_header: Any, in_claims: Any, accepted: bool
) -> None:
    kid = jwt.key_id(jwt.derive_key(SECRET, SALT))
    for name in ("sub", "iss"):
        header = {"alg": "dir", "enc": "A256CBC-HS512", "kid": kid, name: in_header}
        token = seal_claims({name: in_claims}, header=header)
        decoded = jwt.decode(token=token, secret=SECRET, salt=SALT)
        assert (decoded is not None) is accepted, name


@pytest.mark.parametrize(
    ("in_header", "in_claims", "accepted"),
    [
        (["x", "y"], ["x", "y"], True),  # aud compares by its JSON form
        ({"a": 1}, {"a": 1}, True),
        ("x", "x", True),
        ("x", ["x"], False),
        (["x"], "x", False),
        (1, 1.0, False),  # JSON.stringify: "1" and "1" in JavaScript; Python writes 1.0
    ],
)
def test_replicated_aud_compares_by_json(in_header: Any, in_claims: Any, accepted: bool) -> None:
    kid = jwt.key_id(jwt.derive_key(SECRET, SALT))
    header = {"alg": "dir", "enc": "A256CBC-HS512", "kid": kid, "aud": in_header}
    decoded = jwt.decode(
        token=seal_claims({"aud": in_claims}, header=header), secret=SECRET, salt=SALT
    )
    assert (decoded is not None) is accepted


def _resplit(token: str, iv: bytes, ciphertext: bytes, *, retag: bool = False) -> str:
    """The token with other IV and ciphertext segments (and, with retag, a fresh valid tag)."""
    header, _, _, _, tag = token.split(".")
    if retag:
        key = jwt.derive_key(SECRET, SALT)
        aad = header.encode("ascii")
        mac = crypto_hmac.HMAC(key[:32], hashes.SHA512())
        mac.update(aad + iv + ciphertext + (len(aad) * 8).to_bytes(8, "big"))
        tag = b64e(mac.finalize()[:32])
    return ".".join([header, "", b64e(iv), b64e(ciphertext), tag])


def test_moving_bytes_between_iv_and_ciphertext_is_refused(good_token: str) -> None:
    # The tag covers IV || ciphertext as one run of bytes, so the same bytes split
    # elsewhere keep a valid tag and would even decrypt: only the 16-byte IV rule
    # (as in jose) stops a second valid spelling of one token.
    _, _, iv_segment, ciphertext_segment, _ = good_token.split(".")
    iv, ciphertext = b64d(iv_segment), b64d(ciphertext_segment)
    for new_iv, new_ciphertext in [
        (b"", iv + ciphertext),
        (iv + ciphertext[:16], ciphertext[16:]),
        (iv[:8], iv[8:] + ciphertext),
    ]:
        token = _resplit(good_token, new_iv, new_ciphertext)
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None
    assert jwt.decode(token=good_token, secret=SECRET, salt=SALT) is not None


def test_ciphertext_of_partial_blocks_is_refused_and_leaves_no_trace(good_token: str) -> None:
    # An authentic (correctly tagged) ciphertext that is not whole blocks must be
    # refused before decryption: the per-thread AES context would otherwise keep
    # the partial block and garble the next token decrypted on this thread.
    _, _, iv_segment, ciphertext_segment, _ = good_token.split(".")
    iv, ciphertext = b64d(iv_segment), b64d(ciphertext_segment)
    for extra in (b"\x00" * 4, b"\x10" * 15):
        token = _resplit(good_token, iv, ciphertext + extra, retag=True)
        assert jwt.decode(token=token, secret=SECRET, salt=SALT) is None
        assert jwt.decode(token=good_token, secret=SECRET, salt=SALT) is not None
