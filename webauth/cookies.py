"""Auth.js's cookies: names, attributes, value encoding and chunking.

Names get the ``__Secure-`` prefix (``__Host-`` for the CSRF cookie) when
cookies are secure, which by default means the request came over HTTPS.
Values are encoded as JavaScript's ``encodeURIComponent`` does, so a Next.js
app and a Django site that share a domain read each other's cookies.
Session cookies longer than 3936 characters are split into ``.0``, ``.1``, ...;
only ``<name>.<ASCII digits>`` cookies are chunks, and at most :data:`MAX_CHUNKS`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import lru_cache
from http.cookies import Morsel
from typing import Any
from urllib.parse import quote, unquote

from django.http import HttpResponseBase
from django.utils.http import http_date

from .conf import Config
from .utils import remember_short

__all__ = [
    "CHECK_MAX_AGE",
    "CHUNK_SIZE",
    "MAX_CHUNKS",
    "CookieSpec",
    "cookie_specs",
    "decode_value",
    "delete_cookie",
    "encode_value",
    "has_chunked",
    "read_chunked",
    "set_chunked",
    "set_cookie",
]

# Auth.js: 4096 bytes allowed per cookie minus ~160 for name and attributes.
CHUNK_SIZE = 4096 - 160

# encodeURIComponent leaves these unescaped besides letters and digits.
_JS_SAFE = "-_.!~*'()"
#: Matches values that encodeURIComponent leaves unchanged.
_ALREADY_SAFE = re.compile(r"[A-Za-z0-9\-_.!~*'()]*").fullmatch

#: Seconds a sign-in's check cookies (PKCE, state, nonce, WebAuthn challenge) and
#: the values inside them stay valid: Auth.js's 15 minutes.
CHECK_MAX_AGE = 15 * 60

# Default (name, options) per cookie key; max_age only where Auth.js sets one.
_DEFAULTS: dict[str, tuple[str, dict[str, Any]]] = {
    "session_token": ("authjs.session-token", {}),
    "callback_url": ("authjs.callback-url", {}),
    "csrf_token": ("authjs.csrf-token", {}),
    "pkce_code_verifier": ("authjs.pkce.code_verifier", {"max_age": CHECK_MAX_AGE}),
    "state": ("authjs.state", {"max_age": CHECK_MAX_AGE}),
    "nonce": ("authjs.nonce", {}),
    "webauthn_challenge": ("authjs.challenge", {"max_age": CHECK_MAX_AGE}),
    # webauth's: which email sign-in this browser started (Max-Age: the provider's max_age).
    "email_pending": ("authjs.email-pending", {}),
    # webauth's: what a refused credentials form had in its fields other than
    # passwords, for the sign-in page to show once (flows/credentials.py).
    "signin_form": ("authjs.signin-form", {"max_age": 5 * 60}),
    # webauth's: the handle of a sign-in waiting for its second factor
    # (webauth.mfa; Max-Age: WEBAUTH["mfa"]["pending_max_age"]).
    "mfa_pending": ("authjs.mfa-pending", {}),
    # webauth's: a browser its user trusts with the second factor (mfa.trust_days),
    # and the mark of a re-authentication that must prove it all the same.
    "mfa_trusted": ("authjs.mfa-trusted", {}),
    "mfa_fresh": ("authjs.mfa-fresh", {"max_age": 10 * 60}),
    # webauth's: a sign-up waiting for its address to be proven, sealed
    # (webauth.passwords.signup; Max-Age: until its grant expires).
    "signup_pending": ("authjs.signup-pending", {}),
    # webauth's: the password reset this browser asked for (webauth.passwords.reset;
    # Max-Age: until its grant expires, then a week to know its links again).
    "reset_pending": ("authjs.reset-pending", {}),
}


@dataclass(frozen=True, slots=True)
class CookieSpec:
    """A cookie's name and attributes."""

    name: str
    http_only: bool = True
    same_site: str = "Lax"
    path: str = "/"
    secure: bool = False
    domain: str | None = None
    max_age: int | None = None
    partitioned: bool = False
    #: The attributes as a Morsel holds them, checked by Morsel once (see _attributes).
    morsel_attributes: dict[str, Any] = field(
        default_factory=dict, init=False, compare=False, hash=False, repr=False
    )

    def __post_init__(self) -> None:
        _Morsel().set(self.name, "", "")  # a CookieError now for a name no cookie can have
        object.__setattr__(self, "morsel_attributes", _attributes(self))


def encode_value(value: str) -> str:
    """JavaScript ``encodeURIComponent``."""
    if _ALREADY_SAFE(value):  # session JWTs always are: skip the copy
        return value
    return quote(value, safe=_JS_SAFE)


def decode_value(value: str) -> str:
    """Auth.js's cookie parser: decode only when ``%`` is present; raw value on error."""
    if "%" not in value:
        return value
    return _decode(value)


@remember_short(1024)  # the callback-url cookie comes back encoded with every request
def _decode(value: str) -> str:
    try:
        return unquote(value, errors="strict")
    except UnicodeDecodeError:
        return value


@lru_cache(maxsize=32)
def _specs(config: Config, secure: bool) -> dict[str, CookieSpec]:
    prefix = "__Secure-" if secure else ""
    specs = {}
    for key, (name, defaults) in _DEFAULTS.items():
        full = ("__Host-" if key == "csrf_token" and secure else prefix) + name
        options: dict[str, Any] = {"secure": secure, **defaults}
        override = config.cookies.get(key)
        if override is not None:
            if override.name:
                full = override.name
            options.update(override.options)
        same_site = str(options.pop("same_site", "lax")).capitalize()
        specs[key] = CookieSpec(
            name=full,
            http_only=bool(options.pop("http_only", True)),
            same_site=same_site,
            path=options.pop("path", "/"),
            secure=bool(options.pop("secure")),
            domain=options.pop("domain", None),
            max_age=options.pop("max_age", None),
            partitioned=bool(options.pop("partitioned", False)),
        )
    return specs


@lru_cache(maxsize=8)
def _http_date(seconds: int) -> str:
    return http_date(seconds)


def cookie_specs(config: Config, secure: bool) -> dict[str, CookieSpec]:
    """Every cookie's name and attributes for this config and scheme (cached)."""
    return _specs(config, secure)


class _Morsel(Morsel[str]):
    """A cookie that can carry ``Partitioned`` (CHIPS) on every supported Python.

    ``http.cookies`` learnt the attribute only in Python 3.14; adding it to the
    reserved attributes and flags is all its output code needs.
    """

    _reserved = {**Morsel._reserved, "partitioned": "Partitioned"}  # type: ignore[attr-defined]
    _flags = Morsel._flags | {"partitioned"}  # type: ignore[attr-defined]


def _attributes(spec: CookieSpec) -> dict[str, Any]:
    # A spec's attributes never change, so they go through Morsel's checks once.
    morsel = _Morsel()
    morsel["path"] = spec.path
    if spec.domain:
        morsel["domain"] = spec.domain
    if spec.http_only:
        morsel["httponly"] = True
    if spec.secure:
        morsel["secure"] = True
    morsel["samesite"] = spec.same_site
    if spec.partitioned:
        morsel["partitioned"] = True
    return dict(morsel)


def _morsel(
    spec: CookieSpec, value: str, *, name: str | None = None, coded: str | None = None
) -> Morsel[str]:
    coded = encode_value(value) if coded is None else coded
    if name is not None:
        morsel = _Morsel()
        dict.update(morsel, spec.morsel_attributes)  # already validated by _attributes
        # Setting coded_value ourselves keeps SimpleCookie from quoting it its own way.
        morsel.set(name, value, coded)  # checks the name
        return morsel
    # The spec's own name passed Morsel's checks when the spec was made, and its
    # attributes hold every Morsel key: the morsel is filled in without redoing
    # Morsel.__init__ and set(), which write the same keys again.
    morsel = _Morsel.__new__(_Morsel)
    dict.update(morsel, spec.morsel_attributes)
    morsel._key, morsel._value, morsel._coded_value = spec.name, value, coded  # type: ignore[attr-defined]
    return morsel


def set_cookie(
    response: HttpResponseBase,
    spec: CookieSpec,
    value: str,
    *,
    expires: datetime | None = None,
    name: str | None = None,
    coded: str | None = None,
) -> None:
    """Set a cookie with Auth.js's attributes (``Max-Age`` from the spec, or ``expires``).

    *coded* is the value already encoded, when the caller has it.
    """
    morsel = _morsel(spec, value, name=name, coded=coded)
    if spec.max_age is not None:
        morsel["max-age"] = str(spec.max_age)
        if expires is None:
            expires = datetime.now(UTC).replace(microsecond=0)
            expires = datetime.fromtimestamp(expires.timestamp() + spec.max_age, UTC)
    if expires is not None:
        morsel["expires"] = _http_date(int(expires.timestamp()))
    response.cookies[morsel.key] = morsel


def delete_cookie(response: HttpResponseBase, spec: CookieSpec, *, name: str | None = None) -> None:
    """Expire a cookie: empty value, ``Max-Age=0``, same path and flags."""
    morsel = _morsel(spec, "", name=name)
    morsel["max-age"] = "0"
    response.cookies[morsel.key] = morsel


# The most chunks a session cookie may have. A chunk holds CHUNK_SIZE (3936)
# characters, so 16 chunks are about 62 KB of Cookie header: no deployment can
# carry that with its defaults (Node, where an Auth.js app sharing the cookie
# runs, refuses requests whose headers pass 16 KiB, i.e. 4 chunks; gunicorn and
# Apache refuse a header line over 8190 bytes, nginx over 8 KiB), and browsers
# keep a few dozen cookies per site at most. A real session never comes close;
# only cookies an attacker planted do. The cap bounds the work of one request:
# chunks read, and stale chunks deleted (lowest index first, the rest on later
# responses).
MAX_CHUNKS = 16

# A chunk's suffix: ASCII digits only (str.isdigit() also accepts "²", which
# int() refuses, and int() accepts a fullwidth "1", U+FF11), in the canonical form Auth.js writes
# (no leading zero, so ".01" cannot stand in for ".1"), at most 9 of them (an
# int() that cannot fail or take long; anything past MAX_CHUNKS already means
# "no session").
_CHUNK_SUFFIX = re.compile(r"0|[1-9][0-9]{0,8}").fullmatch


def _chunks(cookies: Mapping[str, str], name: str) -> list[tuple[int, str]]:
    """``(index, cookie name)`` of every non-empty ``name.<n>`` cookie, by index."""
    prefix = name + "."
    start = len(prefix)
    found = [
        (int(key[start:]), key)
        for key, value in cookies.items()
        if value and key.startswith(prefix) and _CHUNK_SUFFIX(key, start)
    ]
    found.sort()
    return found


def has_chunked(cookies: Mapping[str, str], name: str) -> bool:
    """Whether *cookies* hold a session cookie *name*, plain or chunked (nothing decoded).

    Cookies that merely start with the name (``name.@``, ``name-old``) do not count.
    """
    if name in cookies:
        return True
    prefix = name + "."
    start = len(prefix)
    return any(key.startswith(prefix) and _CHUNK_SUFFIX(key, start) for key in cookies)


def _chunk_names(cookies: Mapping[str, str], name: str) -> list[str]:
    """The cookies of the session cookie *name* a new value replaces (at most the cap).

    The plain cookie and ``name.<n>`` chunks, lowest index first; nothing else,
    so a stray cookie that only starts with *name* is never touched (and a name
    no ``Set-Cookie`` can carry, such as ``name.@``, is never written).
    """
    names = [name] if cookies.get(name) else []
    names.extend(key for _, key in _chunks(cookies, name)[:MAX_CHUNKS])
    return names


def read_chunked(cookies: Mapping[str, str], name: str) -> str | None:
    """The session cookie's value, reassembling ``name.0``, ``name.1``, ... if chunked.

    ``None`` without one, and for a chunk set no real session has: a gap in the
    indexes, or more than :data:`MAX_CHUNKS` chunks.
    """
    value = cookies.get(name)
    if value:
        return decode_value(value)
    parts = _chunks(cookies, name)
    if not parts or len(parts) > MAX_CHUNKS or parts[-1][0] != len(parts) - 1:
        return None  # sorted and distinct, so the last index says whether all are there
    return decode_value("".join(cookies[key] for _, key in parts))


def set_chunked(
    response: HttpResponseBase,
    spec: CookieSpec,
    value: str | None,
    request_cookies: Mapping[str, str],
    *,
    expires: datetime | None = None,
) -> None:
    """Write (or with ``value=None`` delete) a possibly chunked session cookie.

    Every cookie of the old set that the new set does not overwrite is deleted,
    so going from two chunks to one cookie leaves no stale ``.1`` behind.
    """
    new: dict[str, str] = {}
    coded = None
    if value:
        coded = encode_value(value)
        count = math.ceil(len(coded) / CHUNK_SIZE)
        if count <= 1:
            new[spec.name] = value
        else:
            # Chunk the encoded form; values here are JWEs (no characters to escape).
            for i in range(count):
                new[f"{spec.name}.{i}"] = value[i * CHUNK_SIZE : (i + 1) * CHUNK_SIZE]
    for old in _chunk_names(request_cookies, spec.name):
        if old not in new:
            delete_cookie(response, spec, name=old)
    for name, chunk in new.items():
        # A single cookie's encoded form is already known; chunks are JWE pieces.
        set_cookie(
            response,
            spec,
            chunk,
            expires=expires,
            name=name,
            coded=coded if len(new) == 1 else None,
        )
