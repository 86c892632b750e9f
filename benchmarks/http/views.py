"""Views of the benchmark site, as small as possible so that the stack is what gets measured."""

import functools
import hashlib
import hmac
import json
import secrets
import time
from urllib.parse import quote, unquote

from django.contrib.auth import get_user_model
from django.db import connection
from django.http import HttpRequest, HttpResponse
from django.utils.crypto import constant_time_compare, salted_hmac
from django.utils.http import http_date

from webauth import jwt
from webauth.conf import get_config
from webauth.sessions import AUTH_HASH_CLAIM

SESSION_COOKIE = "authjs.session-token"
NO_CACHE = {"Cache-Control": "private, no-cache, no-store", "Expires": "0", "Pragma": "no-cache"}


def plain(request: HttpRequest) -> HttpResponse:
    """A constant answer that reads nothing from the request."""
    return HttpResponse(b"ok", content_type="text/plain")


def whoami(request: HttpRequest) -> HttpResponse:
    """The primary key of ``request.user`` (``None`` when anonymous)."""
    return HttpResponse(str(request.user.pk), content_type="text/plain")


_AUTH_HASH_SALT = "django.contrib.auth.models.AbstractBaseUser.get_session_auth_hash"
_auth_hashes: dict[str, str] = {}


@functools.cache
def _user_sql() -> str:
    meta = get_user_model()._meta
    quote = connection.ops.quote_name
    return (
        f"SELECT {quote(meta.get_field('is_active').column)}, "
        f"{quote(meta.get_field('password').column)} FROM {quote(meta.db_table)} "
        f"WHERE {quote(meta.pk.column)} = %s"
    )


def _user_may_keep(token: dict) -> bool:
    """The least the user check can cost: one prepared query, the hash remembered per
    password hash (as webauth does), compared in constant time."""
    try:
        pk = int(token.get("sub"))
    except (TypeError, ValueError):
        return False
    with connection.cursor() as cursor:
        cursor.execute(_user_sql(), [pk])
        row = cursor.fetchone()
    if row is None or not row[0]:
        return False
    password = row[1]
    expected = _auth_hashes.get(password)
    if expected is None:
        expected = salted_hmac(_AUTH_HASH_SALT, password, algorithm="sha256").hexdigest()
        _auth_hashes[password] = expected
    return constant_time_compare(expected, token[AUTH_HASH_CLAIM])


def session_floor(request: HttpRequest) -> HttpResponse:
    """The least any ``GET /auth/session`` must do, for comparison with webauth's route.

    Decode the JWT cookie, answer the default session as JSON, re-encode the token
    and set it: what Auth.js's session endpoint does, without its CSRF and
    callback-URL cookies, callbacks, events, error handling or configuration. It
    uses webauth's JWT module (the fastest such code we have) and Django's own
    response and ``set_cookie``. Not a usable endpoint: a benchmark yardstick.

    Since the security issue a session of a Django user ends when the user is
    deactivated, deleted or changes password, so the floor also does what that
    needs and what ``django.contrib.auth`` does on every request with a session:
    load the user by primary key (one SQL query, no ORM) and compare its session
    auth hash.
    """
    config = get_config()
    name = SESSION_COOKIE
    token = jwt.decode(token=request.COOKIES.get(name), secret=config.secret, salt=name)
    if token is None:
        return HttpResponse(b"null", content_type="application/json")
    if AUTH_HASH_CLAIM in token and not _user_may_keep(token):
        return HttpResponse(b"null", content_type="application/json")
    max_age = config.session.max_age
    expires = time.time() + max_age
    stamp = time.strftime("%Y-%m-%dT%H:%M:%S", time.gmtime(expires))
    user = {"name": token.get("name"), "email": token.get("email"), "image": token.get("picture")}
    body = json.dumps({"user": user, "expires": f"{stamp}.000Z"}, separators=(",", ":"))
    response = HttpResponse(body.encode(), content_type="application/json", headers=NO_CACHE)
    value = jwt.encode(token=token, secret=config.secret, salt=name, max_age=config.jwt.max_age)
    response.set_cookie(name, value, expires=http_date(expires), httponly=True, samesite="Lax")
    return response


CSRF_COOKIE = "authjs.csrf-token"


def csrf_floor(request: HttpRequest) -> HttpResponse:
    """The least ``GET /auth/csrf`` must do for a browser that holds a CSRF cookie.

    Read the cookie (``<token>|<sha256(token + secret)>``), check its hash and
    answer the token as JSON with the no-cache headers, as Auth.js does; a
    missing or forged cookie gets a new token and cookie. No middleware, no
    callback-URL cookie, no configuration beyond the secret: the yardstick of
    case (7), built on Django alone.
    """
    secret = ",".join(get_config().secret)
    token = None
    value = unquote(request.COOKIES.get(CSRF_COOKIE, ""))
    given, _, digest = value.partition("|")
    if given and hmac.compare_digest(
        digest.encode(), hashlib.sha256((given + secret).encode()).hexdigest().encode()
    ):
        token = given
    response = HttpResponse(
        json.dumps({"csrfToken": token or ""}, separators=(",", ":")).encode(),
        content_type="application/json",
        headers=NO_CACHE,
    )
    if token is None:
        token = secrets.token_hex(32)
        cookie = f"{token}|{hashlib.sha256((token + secret).encode()).hexdigest()}"
        response.content = json.dumps({"csrfToken": token}, separators=(",", ":")).encode()
        response.set_cookie(CSRF_COOKIE, quote(cookie), httponly=True, samesite="Lax")
    return response


def providers_floor(request: HttpRequest) -> HttpResponse:
    """The least ``GET /auth/providers`` must do: each provider's entry as JSON.

    The yardstick of case (8): the same answer from the configured providers,
    built on Django alone (no middleware, no cookies read).
    """
    base = f"{request.scheme}://{request.get_host()}/auth"
    body = {
        p.id: {
            "id": p.id,
            "name": p.name,
            "type": p.type,
            "signinUrl": f"{base}/signin/{p.id}",
            "callbackUrl": f"{base}/callback/{p.id}",
        }
        for p in get_config().providers
    }
    return HttpResponse(
        json.dumps(body, separators=(",", ":")).encode(), content_type="application/json"
    )
