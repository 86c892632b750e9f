"""Session JWTs exactly as Auth.js (``@auth/core/jwt``) writes and reads them.

A token is a compact JWE with ``alg: "dir"`` and ``enc: "A256CBC-HS512"``. Its key
is derived from the secret with HKDF, and the ``salt`` is the name of the cookie
the token lives in, so a token only opens under the cookie name it was issued for.
Tokens from this module and from a Next.js app that shares the secret are
interchangeable in both directions::

    from webauth import jwt

    token = jwt.encode(token={"sub": "42"}, secret=secrets, salt="authjs.session-token")
    claims = jwt.decode(token=token, secret=secrets, salt="authjs.session-token")

``secret`` may be one string or a list for rotation: :func:`encode` always uses
the first one, :func:`decode` finds the right one through the token's ``kid``.

:func:`decode` runs on every request that carries a session cookie, so the one
composite Auth.js emits (``dir`` + ``A256CBC-HS512``) is handled directly on
``cryptography`` primitives by the private module :mod:`webauth._jose`, with
everything that depends only on the secret, the salt or the protected header
computed once and cached. The rarer ``A256GCM`` tokens that Auth.js also
accepts go through jwcrypto.
"""

from ._jose import DEFAULT_MAX_AGE, decode, derive_key, encode, key_id

__all__ = ["DEFAULT_MAX_AGE", "decode", "derive_key", "encode", "key_id"]
