"""Bearer sessions: the session token in an ``Authorization: Bearer`` header.

With ``WEBAUTH["bearer"] = True`` a client that keeps no cookies (a mobile app,
a single-page app on another origin, a script) sends the session token a cookie
would carry::

    Authorization: Bearer <session token>

The token is the session cookie's value itself: the encrypted session JWT under
the ``jwt`` strategy, the database session's token under ``database``. Nothing
else changes: the same callbacks, the same expiry, the same rules that end a
session (user deactivated, password changed, ``session.absolute_max_age``).

A request that carries such a header is a *bearer request*, whether its token is
valid or not, and its session comes from the header alone: its cookies are
never read for the session (nor is ``django.contrib.auth``'s user used in its
place), and its responses never set the session cookie. Why:

* **No CSRF needed, none possible.** A browser attaches cookies to requests that
  another site makes it send; it never invents an ``Authorization`` header. A
  request authenticated by the header alone cannot be forged cross-site, so the
  app endpoints and API views need no CSRF token for it. If a cookie could stand
  in for a missing or broken header, a forged request without the header would
  ride the victim's cookie session, and the CSRF check skipped for bearer
  requests would be skipped for it too.
* **One answer per request.** A request with both a cookie and a header for
  different users would otherwise be one or the other depending on the code
  path; here it is always the header's.

The routes of ``webauth.urls`` that Auth.js has (``/auth/session``,
``/auth/signout``, ...) are cookie routes: they ignore the header entirely, as
Auth.js's do, so the header can never stand in for a cookie where a cookie
session and its CSRF token are required. The app routes under ``/auth/app/``
read only the header.

Security notes for this module: the header is parsed without regular-expression
backtracking on attacker-sized input (its length is checked first), anything
that is not exactly ``Bearer <token68>`` gives no token, and the token itself
is never logged or compared here (the JWT's authentication tag is checked in
constant time by :mod:`webauth.jwt`; a database token is looked up by its hash).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from datetime import datetime
from typing import Any

from django.http import HttpRequest, HttpResponse

from .conf import get_config
from .responses import json_response
from .sessions import iso_expires

__all__ = [
    "MAX_TOKEN_LENGTH",
    "bearer_token",
    "is_bearer_request",
    "session_required",
    "token_answer",
]

#: The longest token read from the header (characters). A session JWT is a few
#: hundred bytes to a few kilobytes (what the ``jwt`` callback puts in it); the
#: servers in front of Django refuse header lines over 8 KB (gunicorn, nginx) by
#: default. Anything longer is no token, and is never decrypted.
MAX_TOKEN_LENGTH = 16384

# RFC 7235's token68: the characters a session JWT (base64url parts and dots) and
# a database token (secrets.token_urlsafe) are made of, and base64's "+/=".
_TOKEN68 = re.compile(r"[A-Za-z0-9\-._~+/]+=*")
_SPACE = " \t"


def _scheme_and_rest(request: HttpRequest) -> tuple[bool, str]:
    """``(whether the Authorization header's scheme is Bearer, what follows it)``."""
    header = request.META.get("HTTP_AUTHORIZATION")
    if not header or not isinstance(header, str):
        return False, ""
    header = header.lstrip(_SPACE)
    # The scheme is case-insensitive (RFC 7235 2.1) and ends at a space or the end.
    if header[:6].lower() != "bearer" or (len(header) > 6 and header[6] not in _SPACE):
        return False, ""
    return True, header[6:]


def is_bearer_request(request: HttpRequest) -> bool:
    """Whether *request* is a bearer request: ``bearer`` is on and it has an
    ``Authorization: Bearer`` header, valid or not.

    Such a request takes its session from the header alone: its cookies are
    ignored for the session, and a missing or broken token means no session.
    """
    if not get_config().bearer:
        return False
    return _scheme_and_rest(request)[0]


def bearer_token(request: HttpRequest) -> str | None:
    """The token of *request*'s ``Authorization: Bearer <token>`` header, or ``None``.

    ``None`` when ``bearer`` is off, without such a header, and for a header that
    is not exactly the scheme, spaces and one RFC 7235 ``token68`` of at most
    :data:`MAX_TOKEN_LENGTH` characters (two headers joined by a comma, a token
    with spaces or control characters, an empty one). The token is not checked
    here: reading the session does that.
    """
    if not get_config().bearer:
        return None
    is_bearer, rest = _scheme_and_rest(request)
    if not is_bearer:
        return None
    token = rest.strip(_SPACE)
    if not token or len(token) > MAX_TOKEN_LENGTH or _TOKEN68.fullmatch(token) is None:
        return None
    return token


def session_required() -> HttpResponse:
    """``401 {"error": "SessionRequired"}`` with ``WWW-Authenticate: Bearer``.

    The answer to a bearer request that needs a session and has none: its token
    is missing, malformed, expired or revoked (RFC 6750's ``invalid_token``).
    Never cached: it answers one token.
    """
    response = json_response({"error": "SessionRequired"}, status=401, no_cache=True)
    response["WWW-Authenticate"] = 'Bearer error="invalid_token"'
    return response


def token_answer(session: Any, token: str, expires: datetime) -> dict[str, object]:
    """What an app receives with a session token: the session, the token and its expiry.

    ``{**session, "sessionToken", "tokenType": "Bearer", "expires"}``: the
    session as ``GET /auth/session`` shows it (``user`` and whatever the
    ``session`` callback adds), and when the token stops being accepted as an
    ISO-8601 date (JavaScript's ``Date.toISOString()``).
    """
    answer = dict(session) if isinstance(session, Mapping) else {}
    answer.update(sessionToken=token, tokenType="Bearer", expires=iso_expires(expires.timestamp()))
    return answer
