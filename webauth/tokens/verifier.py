"""Verifying webauth's access tokens in another Python service (docs/tokens.md).

    from webauth.tokens import Verifier

    verifier = Verifier(
        issuer="https://example.com/auth",
        audience="https://api.example.com",
        jwks_url="https://example.com/auth/.well-known/jwks.json",
    )
    claims = verifier.verify(token)  # or raises InvalidToken

This module needs neither Django nor webauth's settings (only jwcrypto and
requests), so a FastAPI worker or a script can import it alone. What it checks,
in order, each failure an :class:`InvalidToken` with a ``reason``:

* the token's size and shape (three base64url parts, a JSON header);
* the header: ``alg`` one of the asymmetric algorithms (never ``none`` or an
  HMAC: a public key is not a shared secret), ``typ`` ``at+jwt`` (RFC 9068),
  ``kid`` naming a key of the JWKS, whose own ``alg`` must be the header's;
* the signature, by jwcrypto with that key and that algorithm only;
* the claims: ``iss`` exactly the issuer, ``aud`` holding the audience, ``exp``
  in the future and ``iat`` (and ``nbf``) not, with ``leeway`` seconds of
  clock skew, ``sub`` present.

The JWKS is fetched on first use and kept ``cache_seconds``; an unknown ``kid``
fetches it again at once (a key just rotated in), at most every
``refetch_interval`` seconds (a stream of made-up ``kid``\\ s cannot make the
service hammer the site). Symmetric keys in a JWKS are ignored.

:class:`RevocationFeed` follows webauth's revocation feed, for a service that
must drop the tokens of ended sessions before they expire.
"""

from __future__ import annotations

import base64
import binascii
import json
import threading
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any
from urllib.parse import quote

from jwcrypto import jwk, jws

from .keys import ALGORITHMS

__all__ = ["MAX_TOKEN_LENGTH", "InvalidToken", "RevocationFeed", "Verifier", "verify"]

#: The longest token read (webauth's are well under 2 KB; a callback's claims add some).
MAX_TOKEN_LENGTH = 8192
#: The largest JWKS document read.
MAX_JWKS_BYTES = 256 * 1024
#: The media types RFC 9068 gives an access token's ``typ``.
_ACCESS_TOKEN_TYPES = frozenset({"at+jwt", "application/at+jwt"})


class InvalidToken(Exception):
    """A token that does not verify. ``reason`` is a short code, safe to log:

    ``malformed``, ``algorithm``, ``type``, ``unknown_key``, ``signature``,
    ``issuer``, ``audience``, ``expired``, ``not_yet_valid``, ``claims``,
    ``revoked``, ``jwks_unavailable``.
    """

    def __init__(self, reason: str, message: str = "") -> None:
        super().__init__(message or reason)
        self.reason = reason


def _b64decode(part: str) -> bytes:
    padded = part + "=" * (-len(part) % 4)
    return base64.urlsafe_b64decode(padded.encode("ascii"))


def _header(token: str) -> Mapping[str, Any]:
    if not isinstance(token, str) or len(token) > MAX_TOKEN_LENGTH:
        raise InvalidToken("malformed", "the token is empty, not a string or too long")
    parts = token.split(".")
    if len(parts) != 3 or not all(parts):
        raise InvalidToken("malformed", "the token is not a compact JWS")
    try:
        header = json.loads(_b64decode(parts[0]))
    except (ValueError, binascii.Error, UnicodeError):
        raise InvalidToken("malformed", "the token's header is not base64url JSON") from None
    if not isinstance(header, dict):
        raise InvalidToken("malformed", "the token's header is not a JSON object")
    return header


def _time(claims: Mapping[str, Any], name: str) -> float:
    value = claims.get(name)
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise InvalidToken("claims", f"the {name!r} claim is missing or not a number")
    return float(value)


def _fetch_json(url: str, timeout: float) -> object:
    import requests  # only a verifier that fetches needs it

    with requests.get(url, timeout=timeout, stream=True, allow_redirects=False) as response:
        response.raise_for_status()
        body = response.raw.read(MAX_JWKS_BYTES + 1, decode_content=True)
    if len(body) > MAX_JWKS_BYTES:
        raise ValueError("the JWKS document is too large")
    return json.loads(body)


def _public_key(entry: Mapping[str, Any]) -> jwk.JWK | None:
    """The JWKS entry as a public key, or ``None`` when jwcrypto cannot read it."""
    try:
        key = jwk.JWK(**dict(entry))
        if key.has_private:  # a private key published by mistake: its public half only
            key = jwk.JWK(**key.export_public(as_dict=True))
    except Exception:  # jwcrypto raises several types for a malformed key: skipped
        return None
    return key


def _usable_keys(document: object) -> dict[str, tuple[jwk.JWK, str]]:
    """kid -> (key, alg) for the JWKS's asymmetric signing keys that name both."""
    keys: dict[str, tuple[jwk.JWK, str]] = {}
    entries = document.get("keys") if isinstance(document, Mapping) else None
    if not isinstance(entries, list):
        raise ValueError("the JWKS document has no 'keys' list")
    for entry in entries:
        if not isinstance(entry, Mapping):
            continue
        kid, alg = entry.get("kid"), entry.get("alg")
        if not isinstance(kid, str) or not isinstance(alg, str) or alg not in ALGORITHMS:
            continue
        if entry.get("use", "sig") != "sig":
            continue
        kty, curve = ALGORITHMS[alg]
        if entry.get("kty") != kty or entry.get("crv") != curve:
            continue  # a key whose type does not fit its alg (RSA has no crv): never trusted
        key = _public_key(entry)
        if key is not None:
            keys.setdefault(kid, (key, str(alg)))
    return keys


_readers = threading.local()


def _reader() -> jws.JWS:
    """This thread's JWS object, reused token after token.

    Making a ``jws.JWS`` deep-copies jwcrypto's header registry, which cost
    about half of a verification (ES256, measured with cProfile);
    ``deserialize`` starts each token afresh, so one object per thread serves.
    """
    reader: jws.JWS | None = getattr(_readers, "jws", None)
    if reader is None:
        reader = _readers.jws = jws.JWS()
    return reader


class Verifier:
    """Checks access tokens for one issuer and audience against a JWKS.

    Give ``jwks_url`` (fetched with ``requests``, or with *fetch*, a function of
    the URL returning the parsed document) or ``jwks``, a document (for tests, or
    keys delivered another way). ``is_revoked(claims)``, when given, is asked
    last: ``True`` refuses the token (``reason`` ``revoked``), for a service
    that follows webauth's revocation feed. Safe to share between threads.
    """

    def __init__(
        self,
        *,
        issuer: str,
        audience: str,
        jwks_url: str | None = None,
        jwks: Mapping[str, Any] | None = None,
        leeway: float = 30,
        algorithms: Iterable[str] = tuple(ALGORITHMS),
        cache_seconds: float = 300,
        refetch_interval: float = 30,
        timeout: float = 5,
        fetch: Callable[[str], object] | None = None,
        is_revoked: Callable[[Mapping[str, Any]], bool] | None = None,
    ) -> None:
        if not issuer or not audience:
            raise ValueError("a Verifier needs the issuer and the audience it expects")
        if (jwks_url is None) == (jwks is None):
            raise ValueError("give jwks_url or jwks, one of them")
        unknown = set(algorithms) - set(ALGORITHMS)
        if unknown:
            raise ValueError(f"algorithms not verified here: {sorted(unknown)}")
        self.issuer = issuer
        self.audience = audience
        self.jwks_url = jwks_url
        self.leeway = leeway
        self.algorithms = frozenset(algorithms)
        self.cache_seconds = cache_seconds
        self.refetch_interval = refetch_interval
        self.timeout = timeout
        self._fetch = fetch
        self.is_revoked = is_revoked
        self._lock = threading.Lock()
        self._keys: dict[str, tuple[jwk.JWK, str]] = {}
        self._fetched_at = float("-inf")
        if jwks is not None:
            self._keys = _usable_keys(jwks)  # never fetched again: _refresh needs jwks_url

    # -- the key set -------------------------------------------------------------------------
    def _refresh(self, *, because_unknown: bool) -> None:
        """Fetch the JWKS again if it is due (or, for an unknown kid, allowed)."""
        if self.jwks_url is None:
            return
        with self._lock:
            age = time.monotonic() - self._fetched_at
            due = age >= (self.refetch_interval if because_unknown else self.cache_seconds)
            if not due:
                return
            try:
                fetch = self._fetch or (lambda url: _fetch_json(url, self.timeout))
                keys = _usable_keys(fetch(self.jwks_url))
            except Exception:  # unreachable or malformed: keep the keys we have
                self._fetched_at = time.monotonic() - self.cache_seconds + self.refetch_interval
                if not self._keys:
                    message = "the JWKS could not be fetched"
                    raise InvalidToken("jwks_unavailable", message) from None
                return
            self._keys = keys
            self._fetched_at = time.monotonic()

    def _key_for(self, kid: str) -> tuple[jwk.JWK, str]:
        self._refresh(because_unknown=False)
        found = self._keys.get(kid)
        if found is None:
            self._refresh(because_unknown=True)
            found = self._keys.get(kid)
        if found is None:
            raise InvalidToken("unknown_key", "no key of the JWKS has the token's kid")
        return found

    # -- a token -------------------------------------------------------------------------
    def verify(self, token: str, *, now: float | None = None) -> dict[str, Any]:
        """The token's claims if it verifies, else :class:`InvalidToken`."""
        header = _header(token)
        alg = header.get("alg")
        if not isinstance(alg, str) or alg not in self.algorithms:
            raise InvalidToken("algorithm", f"the algorithm {str(alg)[:20]!r} is not accepted")
        typ = header.get("typ")
        if not isinstance(typ, str) or typ.lower() not in _ACCESS_TOKEN_TYPES:
            raise InvalidToken("type", "the token is not an access token (typ at+jwt)")
        if header.get("crit") is not None:
            raise InvalidToken("malformed", "the token has critical header parameters")
        kid = header.get("kid")
        if not isinstance(kid, str) or not kid or len(kid) > 200:
            raise InvalidToken("unknown_key", "the token has no usable kid")
        key, key_alg = self._key_for(kid)
        if key_alg != alg:
            raise InvalidToken("algorithm", "the token's alg is not its key's")
        signed = _reader()
        try:
            signed.deserialize(token)  # forgets the previous token first
            signed.verify(key, alg=alg)
            payload = signed.payload
        except Exception:  # jwcrypto's InvalidJWSSignature, InvalidJWSObject, ...
            raise InvalidToken("signature", "the signature does not verify") from None
        try:
            claims = json.loads(payload)
        except (ValueError, UnicodeError):
            raise InvalidToken("claims", "the payload is not JSON") from None
        if not isinstance(claims, dict):
            raise InvalidToken("claims", "the payload is not a JSON object")
        self._check_claims(claims, time.time() if now is None else now)
        if self.is_revoked is not None and self.is_revoked(claims):
            raise InvalidToken("revoked", "the token's session has ended")
        return claims

    def _check_claims(self, claims: Mapping[str, Any], now: float) -> None:
        if claims.get("iss") != self.issuer:
            raise InvalidToken("issuer", "the token is from another issuer")
        aud = claims.get("aud")
        audiences = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else []
        if self.audience not in audiences:
            raise InvalidToken("audience", "the token is for another audience")
        exp, iat = _time(claims, "exp"), _time(claims, "iat")
        nbf = None if claims.get("nbf") is None else _time(claims, "nbf")
        if now >= exp + self.leeway:
            raise InvalidToken("expired", "the token has expired")
        if iat > now + self.leeway or (nbf is not None and nbf > now + self.leeway):
            raise InvalidToken("not_yet_valid", "the token is not valid yet")
        sub = claims.get("sub")
        if not isinstance(sub, str) or not sub:
            raise InvalidToken("claims", "the token has no subject")


class RevocationFeed:
    """Follows webauth's revocation feed; give it to a :class:`Verifier` as ``is_revoked``::

        feed = RevocationFeed("https://example.com/auth/token/ended")
        verifier = Verifier(issuer=..., audience=..., jwks_url=..., is_revoked=feed)

    A token is refused when its ``sid`` is among the sessions the feed listed.
    The feed is asked at most every *interval* seconds, by the verification that
    finds it due (the others go on with what is known), from the previous
    answer's ``until`` (and through every page of a full answer); an ended
    session is remembered *remember* seconds (a
    token's longest life, ``tokens.max_age``, plus the clock skew). When the feed
    cannot be read, what is known stands and the next verification tries again
    after *interval*; with *fail_closed*, every token is refused until a poll
    succeeds. Safe to share between threads.
    """

    def __init__(
        self,
        url: str,
        *,
        interval: float = 10,
        remember: float = 24 * 3600 + 60,
        timeout: float = 5,
        fail_closed: bool = False,
        fetch: Callable[[str], object] | None = None,
    ) -> None:
        self.url = url
        self.interval = interval
        self.remember = remember
        self.timeout = timeout
        self.fail_closed = fail_closed
        self._fetch = fetch
        self._lock = threading.Lock()
        self._ended: dict[str, float] = {}
        self._since: int | None = None
        self._polled_at = float("-inf")
        #: Whether the last poll failed (with *fail_closed*, every token is refused).
        self.failing = False

    #: The most pages one poll reads (a full page is 1,000 sessions).
    MAX_PAGES = 20

    def poll(self) -> None:
        """Ask the feed now (:meth:`__call__` does when it is due), every page of it."""
        fetch = self._fetch or (lambda u: _fetch_json(u, self.timeout))
        url = self.url if self._since is None else f"{self.url}?since={self._since}"
        for _ in range(self.MAX_PAGES):
            try:
                entries, until, after = _feed_entries(fetch(url))
            except Exception:  # unreachable or malformed: what is known stands
                self.failing = True
                return
            for sid, at in entries:
                self._ended[sid] = at
            if after is None:
                self._since = until
                break
            url = f"{self.url}?after={quote(after, safe='')}"
        self.failing = False
        oldest = time.time() - self.remember
        for sid in [sid for sid, at in self._ended.items() if at < oldest]:
            del self._ended[sid]

    def __call__(self, claims: Mapping[str, Any]) -> bool:
        """Whether the token of *claims* belongs to an ended session."""
        if time.monotonic() - self._polled_at >= self.interval and self._lock.acquire(
            blocking=False
        ):
            try:
                self._polled_at = time.monotonic()
                self.poll()
            finally:
                self._lock.release()
        if self.failing and self.fail_closed:
            return True
        sid = claims.get("sid")
        return isinstance(sid, str) and sid in self._ended


def _feed_entries(document: object) -> tuple[list[tuple[str, float]], int, str | None]:
    if not isinstance(document, Mapping):
        raise ValueError("the feed is not a JSON object")
    until, ended, after = document.get("until"), document.get("ended"), document.get("next")
    if not isinstance(until, int) or isinstance(until, bool) or not isinstance(ended, list):
        raise ValueError("the feed has no 'until' or 'ended'")
    if after is not None and not (isinstance(after, str) and after.isascii() and len(after) < 64):
        raise ValueError("the feed's 'next' is not a cursor")
    entries = []
    for entry in ended:
        if isinstance(entry, Mapping):
            sid, at = entry.get("sid"), entry.get("at")
            if isinstance(sid, str) and isinstance(at, int | float) and not isinstance(at, bool):
                entries.append((sid, float(at)))
    return entries, until, after


_verifiers: dict[tuple[str, str, str], Verifier] = {}
_verifiers_lock = threading.Lock()


def verify(
    token: str, *, issuer: str, audience: str, jwks_url: str, **options: Any
) -> dict[str, Any]:
    """Verify *token* with a :class:`Verifier` kept per (JWKS URL, issuer, audience).

    The first call's *options* make the verifier; later calls with the same three
    reuse it (and its cached keys).
    """
    slot = (jwks_url, issuer, audience)
    verifier = _verifiers.get(slot)
    if verifier is None:
        with _verifiers_lock:
            verifier = _verifiers.setdefault(
                slot, Verifier(issuer=issuer, audience=audience, jwks_url=jwks_url, **options)
            )
    return verifier.verify(token)
