"""Micro-benchmark: the cost of ``webauth.jwt.decode`` against the bare crypto it needs.

Run from anywhere (no Django settings needed)::

    python benchmarks/bench_jwt_decode.py

For one typical session token (name, email, picture, sub, iat, exp, jti) it times:

(a) ``webauth.jwt.decode``;
(b) the bare crypto of A256CBC-HS512 on ``cryptography`` primitives, given
    already-decoded bytes and an already-derived key: HMAC-SHA-512 over
    AAD || IV || ciphertext || AL, a constant-time tag comparison, AES-256-CBC
    decryption and PKCS#7 unpadding;
(c) jwcrypto's JWE deserialize + decrypt of the same token;
(d) ``webauth.jwt.encode`` of the same claims.

For information it also times (b'): the same crypto done the way ``decode`` does
it (a pre-keyed HMAC that is copied per token and a reused AES context), so that
(a) - (b') is what parsing and validation cost on top of decode's own crypto.

The target is (a) <= 1.5 x (b). Each figure is the best of several ``timeit``
repeats (the least disturbed run); the median is printed beside it.
"""

from __future__ import annotations

import base64
import hmac as std_hmac
import statistics
import struct
import sys
import timeit
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO_ROOT = Path(__file__).resolve().parent.parent
if str(REPO_ROOT) not in sys.path:
    sys.path.insert(0, str(REPO_ROOT))

from cryptography.hazmat.primitives import hashes, padding  # noqa: E402
from cryptography.hazmat.primitives import hmac as crypto_hmac  # noqa: E402
from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes  # noqa: E402
from jwcrypto import jwe, jwk  # noqa: E402

from webauth import _jose, jwt  # noqa: E402

SECRET = "bench-secret-0123456789abcdef0123456789abcdef"
SALT = "authjs.session-token"
CLAIMS: dict[str, Any] = {
    "name": "Alice Example",
    "email": "alice@example.com",
    "picture": "https://avatars.example.com/u/123456?v=4",
    "sub": "8d3f1c2e-5b7a-4e9d-a1c3-0f6e2b9d4c71",
}
TARGET = 1.5
REPEAT = 7


def b64url_decode(segment: str) -> bytes:
    return base64.urlsafe_b64decode(segment + "=" * (-len(segment) % 4))


def measure(func: Callable[[], object]) -> tuple[float, float]:
    """Best and median microseconds per call over REPEAT runs of an auto-sized loop."""
    timer = timeit.Timer(func)
    number, _ = timer.autorange()  # enough calls for one run to last >= 0.2 s
    number = max(number, 1000) * 2
    runs = [t / number * 1e6 for t in timer.repeat(repeat=REPEAT, number=number)]
    return min(runs), statistics.median(runs)


def main() -> int:
    token = jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)
    claims = jwt.decode(token=token, secret=SECRET, salt=SALT)
    assert claims is not None and claims["email"] == CLAIMS["email"], "round trip failed"

    # (b) inputs: everything decoded and derived up front, so that only the crypto
    # itself is timed.
    header_segment, _, iv_segment, ct_segment, tag_segment = token.split(".")
    aad = header_segment.encode("ascii")
    iv, ciphertext, tag = map(b64url_decode, (iv_segment, ct_segment, tag_segment))
    al = struct.pack(">Q", len(aad) * 8)
    key = jwt.derive_key(SECRET, SALT)
    mac_key, enc_key = key[:32], key[32:]

    def bare_crypto() -> bytes:
        mac = crypto_hmac.HMAC(mac_key, hashes.SHA512())
        mac.update(aad + iv + ciphertext + al)
        if not std_hmac.compare_digest(mac.finalize()[:32], tag):
            raise AssertionError("tag mismatch")
        decryptor = Cipher(algorithms.AES(enc_key), modes.CBC(iv)).decryptor()
        padded = decryptor.update(ciphertext) + decryptor.finalize()
        unpadder = padding.PKCS7(128).unpadder()
        return unpadder.update(padded) + unpadder.finalize()

    json_plaintext = bare_crypto()
    assert json_plaintext.startswith(b'{"name":'), "bare crypto check failed"

    jwcrypto_key = jwk.JWK(kty="oct", k=base64.urlsafe_b64encode(key).rstrip(b"=").decode())

    def jwcrypto_decrypt() -> bytes:
        obj = jwe.JWE()
        obj.deserialize(token, key=jwcrypto_key)
        payload: bytes = obj.payload
        return payload

    assert jwcrypto_decrypt() == json_plaintext, "jwcrypto disagrees"

    cbc_key = _jose._cbc_key(SECRET, SALT)

    def reused_crypto() -> bytes:
        if not std_hmac.compare_digest(_jose._tag(cbc_key, aad + iv + ciphertext + al), tag):
            raise AssertionError("tag mismatch")
        padded = _jose._cbc_decrypt(cbc_key, iv + ciphertext)
        return padded[: -padded[-1]]

    assert reused_crypto() == json_plaintext, "reused crypto check failed"

    def webauth_decode() -> object:
        return jwt.decode(token=token, secret=SECRET, salt=SALT)

    def webauth_encode() -> object:
        return jwt.encode(token=CLAIMS, secret=SECRET, salt=SALT)

    print(
        f"Python {sys.version.split()[0]}; token {len(token)} chars, plaintext "
        f"{len(json_plaintext)} bytes; best (median) of {REPEAT} repeats"
    )
    results = {}
    for label, func in (
        ("(a) webauth.jwt.decode", webauth_decode),
        ("(b) bare crypto (cryptography)", bare_crypto),
        ("(c) jwcrypto JWE decrypt", jwcrypto_decrypt),
        ("(d) webauth.jwt.encode", webauth_encode),
        ("(b') crypto as decode does it", reused_crypto),
    ):
        best, median = measure(func)
        results[label.split()[0]] = best
        print(f"  {label:<34} {best:8.2f} us/op  ({median:.2f})")

    ratio_a = results["(a)"] / results["(b)"]
    ratio_c = results["(c)"] / results["(b)"]
    print(f"  (a)/(b) = {ratio_a:.2f}x   (c)/(b) = {ratio_c:.2f}x")
    overhead = results["(a)"] - results["(b')"]
    print(f"  parsing + validation in (a), i.e. (a) - (b'): {overhead:.2f} us/op")
    met = ratio_a <= TARGET
    print(f"  target (a)/(b) <= {TARGET}x: {'MET' if met else 'NOT MET'}")
    return 0 if met else 1


if __name__ == "__main__":
    sys.exit(main())
