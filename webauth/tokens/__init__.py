"""Signed access tokens for other services, and their verification (docs/tokens.md).

:mod:`webauth.tokens.keys` reads the key set; :mod:`webauth.tokens.mint` makes
a token for a session (``GET /auth/token``); :mod:`webauth.tokens.verifier` is
what another Python service uses to check one against the JWKS, and needs
neither Django nor webauth's settings: ``from webauth.tokens import verify``,
with :class:`RevocationFeed` for the revocation feed. :mod:`webauth.tokens.ended`
keeps which sessions' tokens have ended.
"""

from .verifier import InvalidToken, RevocationFeed, Verifier, verify

__all__ = ["InvalidToken", "RevocationFeed", "Verifier", "verify"]
