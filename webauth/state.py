"""``AuthState``: everything webauth knows about one request, each thing worked out once.

There is one per request, made on first use (:func:`get_state`) by whoever needs
it first: ``AuthMiddleware`` when a view reads ``request.user`` or
``request.auth_session``, a route of ``webauth.urls``, a helper, a template tag
or a decorator. All of them then share it: the site's origin and the secure-cookie
rule, the cookie names, the session cookie (chunks joined), the session read
from it and its user, the CSRF token and the callback URL. On the way out
:meth:`AuthState.finish` writes what the request needs written (a slid session
cookie, a deleted unusable one, a CSRF cookie a form asked for).

Nothing here is computed before it is asked for: a request that reads nothing
costs nothing, and a request without a session cookie never decrypts anything.
"""

from __future__ import annotations

import json
import weakref
from collections.abc import Mapping
from datetime import datetime
from typing import Any
from urllib.parse import parse_qsl, urlencode, urlsplit

from django.conf import settings
from django.contrib.auth.models import AnonymousUser
from django.core.exceptions import TooManyFieldsSent
from django.http import HttpRequest, HttpResponseBase
from django.http.multipartparser import MultiPartParserError
from django.utils.functional import cached_property  # unlike functools' (3.11), no lock

from . import cookies as ck
from .bearer import bearer_token, is_bearer_request
from .callbacks import default_redirect, run_redirect
from .conf import Config, get_config
from .csrf import CsrfState, read_csrf_cookie, token_matches
from .errors import AuthError, InvalidCallbackUrl, UntrustedHost
from .sessions import (
    AUTH_HASH_CLAIM,
    STRATEGIES,
    SessionResult,
    SessionStrategy,
    find_user,
    session_auth_hash,
)
from .types import AdapterUser
from .utils import remember_short

__all__ = [
    "AuthState",
    "forget_validated_hosts",
    "get_state",
    "load_user",
    "parse_body",
    "validated_host",
]

#: Where a request keeps its state (in its ``__dict__``).
STATE_KEY = "_webauth"


def get_state(request: HttpRequest, config: Config | None = None) -> AuthState:
    """The request's :class:`AuthState`, made on first use (with *config*, if given)."""
    state: AuthState | None = request.__dict__.get(STATE_KEY)
    if state is None:
        state = AuthState(request, config or get_config())
        request.__dict__[STATE_KEY] = state
    return state


def has_state(request: HttpRequest) -> bool:
    """Whether anything has asked for the request's state yet."""
    return STATE_KEY in request.__dict__


# What request.get_host() returned for a given Host (and X-Forwarded-Host) header.
# With a Host header, get_host() depends on nothing else but settings, and this
# cache is emptied whenever one of those changes (see forget_validated_hosts).
# Only hosts that passed validation are kept: a disallowed one raises
# DisallowedHost on every request, as before.
_HOST_SETTINGS = frozenset(
    {"ALLOWED_HOSTS", "DEBUG", "USE_X_FORWARDED_HOST", "USE_X_FORWARDED_PORT"}
)
_validated_hosts: dict[tuple[str, str | None], str] = {}


def validated_host(request: HttpRequest) -> str:
    """``request.get_host()``, remembered per host headers (it runs on every webauth route)."""
    meta = request.META
    header = meta.get("HTTP_HOST")
    if not header:  # HTTP/1.0 without Host: the host then depends on port and scheme
        return request.get_host()
    key = (header, meta.get("HTTP_X_FORWARDED_HOST"))
    host = _validated_hosts.get(key)
    if host is None:
        host = request.get_host()  # validates against ALLOWED_HOSTS, or raises
        if len(_validated_hosts) >= 256:
            _validated_hosts.clear()
        _validated_hosts[key] = host
    return host


def forget_validated_hosts(*, setting: str | None = None, **kwargs: Any) -> None:
    """``setting_changed`` receiver: a change to the host settings empties the cache."""
    if setting is None or setting in _HOST_SETTINGS:
        _validated_hosts.clear()


def parse_body(request: HttpRequest) -> dict[str, Any]:
    """The POST body as Auth.js reads it: a JSON object or a flat form; else ``{}``."""
    if request.method != "POST":
        return {}
    content_type = request.content_type or ""
    if "application/json" in request.META.get("CONTENT_TYPE", "") or content_type.endswith("json"):
        try:
            data = json.loads(request.body or b"null")
        except (ValueError, UnicodeDecodeError):
            return {}
        return data if isinstance(data, dict) else {}
    # Duplicate keys: the last one wins, as with URLSearchParams -> object.
    if content_type == "application/x-www-form-urlencoded":
        return _parse_form(request)
    if content_type == "multipart/form-data":
        # Auth.js reads only url-encoded forms; multipart is accepted too because
        # Django's test client and many HTML forms send it. Files are ignored.
        try:
            return {k: v[-1] for k, v in request.POST.lists()}
        except MultiPartParserError:
            # No boundary, or parts that do not parse: a body that cannot be read
            # is no body, as malformed JSON is (Django leaves request.POST empty).
            return {}
    return {}


def _parse_form(request: HttpRequest) -> dict[str, str]:
    """A url-encoded body, read as Django's ``request.POST`` reads it, into a plain dict.

    The same decoding and the same limits (``DATA_UPLOAD_MAX_MEMORY_SIZE`` through
    ``request.body``, ``DATA_UPLOAD_MAX_NUMBER_FIELDS`` here) without ``QueryDict``'s
    per-field bookkeeping, which costs a sign-in about twice the parse itself.
    ``request.POST`` still works afterwards: Django parses the same cached body.
    """
    encoding = request.encoding or settings.DEFAULT_CHARSET
    body = request.body
    try:
        text = body.decode(encoding)
    except UnicodeDecodeError:  # a misbehaving client, as QueryDict allows
        text = body.decode("iso-8859-1")
    try:
        pairs = parse_qsl(
            text,
            keep_blank_values=True,
            encoding=encoding,
            max_num_fields=settings.DATA_UPLOAD_MAX_NUMBER_FIELDS,
            separator="&",
        )
    except ValueError as exc:
        raise TooManyFieldsSent(
            "The number of GET/POST parameters exceeded settings.DATA_UPLOAD_MAX_NUMBER_FIELDS."
        ) from exc
    return dict(pairs)


#: The longest callback URL webauth follows. No browser stores a longer one in
#: the callback-url cookie (4 KB a cookie), servers refuse request lines of this
#: size (gunicorn at 4 KB, nginx at 8 KB), and Django refuses to redirect to
#: more than 16,384 characters: a sign-out with such a URL failed, signed in.
MAX_CALLBACK_URL = 8192


@remember_short(1024)  # a browser sends the same callback-url cookie with every request
def _usable_callback_url(value: str) -> bool:
    """Whether a client's callback URL is a path (``/...``) or an absolute http(s) URL.

    Auth.js's rule for the query and the cookie, and at most ``MAX_CALLBACK_URL``
    characters. A path such as ``//evil.example`` passes: the default redirect
    callback joins it to the origin.
    """
    if len(value) > MAX_CALLBACK_URL:
        return False
    if value.startswith("/"):
        return True
    try:
        parts = urlsplit(value)
    except ValueError:  # "http://[x": an unbalanced IPv6 bracket
        return False
    return parts.scheme in ("http", "https") and bool(parts.netloc)


# Browsers drop these anywhere in a URL, then read "\" as "/" in http(s) URLs.
_URL_IGNORED = str.maketrans("", "", "\t\r\n")


def _usable_redirect(value: str) -> bool:
    """Whether the redirect callback's answer may become a ``Location``.

    Stricter than :func:`_usable_callback_url`: what the callback returns goes to
    the browser as it is, and a browser takes ``//host``, ``/\\host`` (or with a
    tab inside) as another site's address, not a path.
    """
    if value.startswith("/") and len(value) <= MAX_CALLBACK_URL:
        return value.translate(_URL_IGNORED)[1:2] not in ("/", "\\")
    return _usable_callback_url(value)


@remember_short(1024)  # the same cookie and origin on every request of a browser
def _callback_url_from_cookie(raw: str, origin: str) -> tuple[str | None, str | None]:
    """``(callback_url_cookie, callback_url)`` of a request that asks for no URL.

    What :attr:`AuthState.callback_url` works out, under the default redirect
    callback (a pure function), from the cookie's raw value (``""`` without
    one) and the origin; the URL is ``None`` when the general path must decide
    (it logs what the callback returned).
    """
    value = ck.decode_value(raw) if raw else None
    cookie = value if value is not None and _usable_callback_url(value) else None
    url = default_redirect(url=cookie or origin, base_url=origin)
    return cookie, url if _usable_redirect(url) else None


def _active(user: Any) -> Any:
    # Like ModelBackend: an inactive user is not signed in.
    return user if getattr(user, "is_active", True) else None


def load_user(config: Config, user_id: str) -> Any:
    """The ``AUTH_USER_MODEL`` instance of *user_id*, through the adapter; ``None`` if none.

    The adapter's record carries the instance (``DjangoAdapter`` does); for an
    adapter whose users carry none, *user_id* is a key of ``AUTH_USER_MODEL``.
    A failing adapter has already logged its error: the request is anonymous.
    """
    record = _stored_user(config, user_id)
    return _active(record.instance) if record is not None else None


def _stored_user(config: Config, user_id: str) -> Any:
    """:func:`~webauth.sessions.find_user`, with a failing adapter (it logged) as no user."""
    try:
        return find_user(config, user_id)
    except AuthError:
        return None


class AuthState:
    """The per-request state behind every route, helper, tag and ``request.user``.

    It holds the request through a weak reference: the request holds the state,
    and a strong reference back would make every request cyclic garbage.
    """

    def __init__(self, request: HttpRequest, config: Config) -> None:
        self._request = weakref.ref(request)
        self.config = config
        self._form_wants_csrf = False
        # Every use of the state needs a cookie's name, so the secure-cookie rule
        # (the one place webauth decides it) runs now rather than on first use:
        # ``use_secure_cookies`` if set; else whether the site is served over
        # HTTPS: the scheme of ``url``/``AUTH_URL`` when set, else the request's
        # (Django's ``is_secure()``, which honours ``SECURE_PROXY_SSL_HEADER``).
        if config.use_secure_cookies is not None:
            secure = config.use_secure_cookies
        elif config.url:
            secure = config.url.startswith("https://")
        else:
            scheme = self.__dict__["scheme"] = request.scheme or "http"  # kept for origin
            secure = scheme == "https"
        #: Whether cookies are ``Secure``, with the ``__Secure-``/``__Host-`` prefixes.
        self.secure: bool = secure
        #: Every webauth cookie's name and attributes for this request's scheme.
        self.cookies: dict[str, ck.CookieSpec] = ck.cookie_specs(config, secure)
        #: How the configuration keeps sessions (:mod:`webauth.sessions`): a
        #: lookup in a dict, not worth deferring.
        self.sessions: SessionStrategy = STRATEGIES[config.session.strategy]

    @classmethod
    def for_app(cls, request: HttpRequest, config: Config) -> AuthState:
        """The state of an app route's request (``/auth/app/...``), made the request's own.

        It is a bearer request whatever its headers (:attr:`bearer`): its session
        is the ``Authorization`` header's token alone, and nothing writes a
        session cookie. It sees no cookies at all, so no other cookie (a
        challenge, a pending email, OAuth checks, CSRF) is read. It replaces any
        state the request had, so that the middleware finishes this one.
        """
        state = cls(request, config)
        state.__dict__["bearer"] = True
        state.__dict__["request_cookies"] = {}
        state.__dict__["session_token"] = bearer_token(request)
        request.__dict__[STATE_KEY] = state
        return state

    @property
    def request(self) -> HttpRequest:
        """The request this state belongs to."""
        request = self._request()
        if request is None:  # only after the request itself is gone
            raise ReferenceError("the request of this AuthState no longer exists")
        return request

    # -- the site ---------------------------------------------------------------------
    @cached_property
    def scheme(self) -> str:
        """The request's scheme, as Django decides it (``SECURE_PROXY_SSL_HEADER``)."""
        return self.request.scheme or "http"

    @cached_property
    def origin(self) -> str:
        """``scheme://host`` of the site: ``AUTH_URL``'s origin if set, else the request's.

        Django has already checked the host against ``ALLOWED_HOSTS`` and decided
        the scheme through ``SECURE_PROXY_SSL_HEADER``, so the request's origin
        is trusted unless ``trust_host`` is false (then :class:`UntrustedHost`).
        """
        origin = self.config.url_origin
        if origin:
            return origin
        request = self.request
        if not self.config.trust_host:
            raise UntrustedHost(
                f"Host must be trusted. URL was: {request.build_absolute_uri()[:200]}"
            )
        return f"{self.scheme}://{validated_host(request)}"

    @cached_property
    def base_url(self) -> str:
        """The absolute URL of webauth's routes: the origin and ``base_path``."""
        return self.origin + self.config.base_path

    # -- what the request sent -------------------------------------------------------------
    @cached_property
    def bearer(self) -> bool:
        """Whether the session comes from the ``Authorization: Bearer`` header, not a cookie.

        True for a bearer request (``WEBAUTH["bearer"]`` on and such a header,
        valid or not; see :mod:`webauth.bearer`): its session token is the
        header's, its cookies are never read for the session, and no session
        cookie is ever written on its response. The cookie routes of
        ``webauth.urls`` turn it off (:meth:`ignore_bearer`).
        """
        return self.config.bearer and is_bearer_request(self.request)

    def ignore_bearer(self) -> None:
        """Read the session from the cookie even on a bearer request.

        The Auth.js routes (``/auth/session``, ``/auth/signout``, ...) are cookie
        routes, as in Auth.js: the header is nothing to them. Whatever was read
        from the header before (by a middleware) is forgotten.
        """
        if self.__dict__.get("bearer"):
            for key in ("has_session_cookie", "session_token", "session_result", "session_user"):
                self.__dict__.pop(key, None)
        self.__dict__["bearer"] = False

    @cached_property
    def request_cookies(self) -> dict[str, str]:
        """The request's cookies (parsed on first use, as Django does)."""
        return self.request.COOKIES

    @cached_property
    def body(self) -> dict[str, Any]:
        """The POST body (JSON object or form) as a flat dict; ``{}`` for a GET."""
        return parse_body(self.request)

    @cached_property
    def query(self) -> dict[str, str]:
        """The query string as a flat dict (the last value of a repeated key wins)."""
        request = self.request
        if not request.META.get("QUERY_STRING"):
            return {}
        return {k: v[-1] for k, v in request.GET.lists()}

    @cached_property
    def has_session_cookie(self) -> bool:
        """Whether the request carries a session token at all (no decryption).

        Its session cookie; on a bearer request, a well-formed token in its
        ``Authorization`` header instead (cookies are not looked at).
        """
        if self.bearer:
            return self.session_token is not None
        cookies = self.request_cookies
        if not cookies:
            return False
        # Only the cookie itself or its ``.<n>`` chunks: a stray ``name.@`` is no session.
        return ck.has_chunked(cookies, self.cookies["session_token"].name)

    @cached_property
    def session_token(self) -> str | None:
        """The session cookie's value (chunks joined), not decoded; ``None`` without one.

        On a bearer request, the header's token (:func:`~webauth.bearer.bearer_token`).
        """
        if self.bearer:
            return bearer_token(self.request)
        if not self.has_session_cookie:
            return None
        return ck.read_chunked(self.request_cookies, self.cookies["session_token"].name)

    # -- the session and its user ------------------------------------------------------------
    @cached_property
    def session_result(self) -> SessionResult:
        """The session, read once (callbacks run; the cookie is re-issued in :meth:`finish`)."""
        if not self.has_session_cookie:
            return SessionResult()
        return self.sessions.read(
            self.config,
            self.session_token,
            self.cookies["session_token"].name,
            reissue=False,
        )

    @property
    def session(self) -> Any:
        """The session as ``GET /auth/session`` shows it, or ``None``."""
        return self.session_result.session

    @property
    def loaded_user(self) -> AdapterUser | None:
        """The adapter's user of the session if this request has loaded it already, else ``None``.

        Loads nothing: it is there when ``request.user`` or ``request.auth_session``
        has read the session (and its user passed the checks), so that the session
        route checks that user again without a query.
        """
        result: SessionResult | None = self.__dict__.get("session_result")
        return result.user if result is not None else None

    @cached_property
    def session_user(self) -> Any:
        """The user of the session (``AUTH_USER_MODEL``), or ``None``; loaded once."""
        if not self.has_session_cookie:
            return None
        result = self.session_result
        if result.user is not None and result.user.instance is not None:
            return _active(result.user.instance)  # came with the session: no query
        if result.user_id is None:
            return None
        record = _stored_user(self.config, result.user_id)
        if record is None:
            return None  # no such user, or the adapter failed: anonymous for this request
        user = _active(record.instance)
        if user is None and AUTH_HASH_CLAIM not in (result.token or {}):
            # A JWT from before sessions were bound to their user: its user turned
            # out inactive, so the session ends now (a bound one ends on any read).
            self.__dict__["session_result"] = SessionResult(clear=True)
        return user

    def get_user(self, fallback: Any = None) -> Any:
        """The user of the webauth session, else *fallback*, else ``AnonymousUser``."""
        user = self.session_user
        if user is not None:
            return user
        return fallback if fallback is not None else AnonymousUser()

    def replace_session(self, session: Any) -> None:
        """Use *session* as this request's session (``request.auth_session = ...``)."""
        self.__dict__["session_result"] = SessionResult(session=session)

    def use_session_token(self, value: str) -> None:
        """Carry on with session cookie *value* (the same session, re-bound).

        The session is read again from it, and :meth:`finish` writes the cookie
        (``update_session_auth_hash``).
        """
        self.__dict__["session_token"] = value
        self.__dict__["has_session_cookie"] = True
        self.__dict__.pop("session_user", None)
        self.__dict__["session_result"] = self.sessions.read(
            self.config, value, self.cookies["session_token"].name
        )

    def use_result(self, result: SessionResult) -> None:
        """Carry on with *result*, a read of this request's session made elsewhere
        (``webauth.update_session``): :attr:`session` shows it, and :meth:`finish`
        writes its cookie (or deletes the cookie when it cleared the session).
        A token it made is this request's session token from now on, so that a
        second update starts from the first one's."""
        self.__dict__["session_result"] = result
        self.__dict__.pop("session_user", None)
        if result.cookie is not None:
            self.__dict__["session_token"] = result.cookie

    def forget_session(self) -> None:
        """The session ended elsewhere (``logout()``): delete its cookie on the way out."""
        self.__dict__["session_result"] = SessionResult(clear=True)
        self.__dict__["session_user"] = None

    # -- CSRF -----------------------------------------------------------------------------
    @cached_property
    def csrf(self) -> CsrfState:
        """The request's CSRF token, and the cookie to set when it is a new one.

        With ``skip_csrf_check`` there is no token and every request counts as verified.
        """
        config = self.config
        if config.skip_csrf_check:
            return CsrfState(token="", cookie=None, verified=True)
        raw = self.request_cookies.get(self.cookies["csrf_token"].name)
        return read_csrf_cookie(ck.decode_value(raw) if raw else None, config.csrf_secret)

    @cached_property
    def csrf_verified(self) -> bool:
        """Whether this is a POST whose body's ``csrfToken`` is the cookie's token."""
        csrf = self.csrf
        if csrf.verified:
            return True
        return self.request.method == "POST" and token_matches(csrf, self.body.get("csrfToken"))

    def form_csrf_token(self) -> str:
        """The token for a form on the page being rendered (its cookie goes out with it)."""
        self._form_wants_csrf = True
        return self.csrf.token

    @property
    def pending_csrf(self) -> CsrfState | None:
        """The CSRF state whose new cookie :meth:`finish` will set for a form, if any."""
        if self._form_wants_csrf and self.csrf.cookie is not None:
            return self.csrf
        return None

    # -- the callback URL -------------------------------------------------------------------
    # Whatever the client sends (body, query, cookie) and whatever the redirect
    # callback returns, webauth only ever redirects to a path starting with "/"
    # or an absolute http(s) URL with a host (_usable_callback_url); anything
    # else (javascript:, data:, mailto:, "https:evil.example", plain words) is
    # replaced by the site's origin, as the default redirect callback treats a
    # URL of another site. Auth.js answers such a query or cookie with its 500
    # configuration error, which let anyone who can plant a cookie for the
    # domain, or send a link, break every route (and sign-out) for a victim.

    @cached_property
    def callback_url_cookie(self) -> str | None:
        """The callback URL remembered in its cookie; ``None`` when absent or unusable.

        An unusable value (planted, say, by a sibling subdomain) counts as no
        cookie, so the response overwrites it with the URL actually used.
        """
        raw = self.request_cookies.get(self.cookies["callback_url"].name)
        if not raw:
            return None
        value = ck.decode_value(raw)
        return value if _usable_callback_url(value) else None

    @cached_property
    def callback_url(self) -> str:
        """body ``callbackUrl`` -> query -> cookie -> origin, through the ``redirect`` callback.

        An unusable body or query value becomes the origin (not the next source:
        the client asked for something, and an older cookie is not what it asked).
        """
        request = self.request
        if (
            request.method != "POST"
            and not request.META.get("QUERY_STRING")
            and self.config.callbacks.redirect is None
        ):
            # What almost every request is: it asks for no URL, so the answer depends
            # on the cookie and the origin alone, worked out once per pair.
            raw = self.request_cookies.get(self.cookies["callback_url"].name) or ""
            cookie, url = _callback_url_from_cookie(raw, self.origin)
            self.__dict__.setdefault("callback_url_cookie", cookie)
            if url is not None:
                return url
        candidate = self.body.get("callbackUrl")
        if not isinstance(candidate, str) or not candidate:
            candidate = self.query.get("callbackUrl") or self.callback_url_cookie or self.origin
        return self.redirect(candidate)

    def redirect(self, url: str) -> str:
        """Pass *url* through the ``redirect`` callback with ``base_url`` = the origin.

        An unusable *url* reaches the callback as the origin, and an unusable
        answer of the callback becomes the origin (logged: it is the project's bug).
        """
        origin = self.origin
        if not _usable_callback_url(url):
            url = origin
        result = run_redirect(self.config, url=url, base_url=origin)
        if not _usable_redirect(result):
            self.config.logger.error(
                InvalidCallbackUrl(f"The redirect callback returned {result[:200]!r}")
            )
            return origin
        return result

    def page_url(
        self, page: str, params: Mapping[str, str] | None = None, *, raw: bool = False
    ) -> str:
        """URL of a built-in page (``signin``, ``error``, ...) or its configured replacement.

        A configured page is joined to the origin, as Auth.js does when it routes
        an error; with ``raw`` it is used as configured, as Auth.js does when a
        page route (``GET /auth/signin`` ...) forwards to it.
        """
        pages = self.config.pages
        custom = {
            "signin": pages.sign_in,
            "signout": pages.sign_out,
            "error": pages.error,
            "verify-request": pages.verify_request,
        }.get(page)
        url = (self.origin + custom) if custom and custom.startswith("/") and not raw else custom
        if not url:
            url = f"{self.base_url}/{page}"
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        return url

    # -- the response -------------------------------------------------------------------------
    def add_standard_cookies(self, response: HttpResponseBase) -> None:
        """What every route's answer carries: a new CSRF cookie, a changed callback URL."""
        csrf = self.csrf
        if csrf.cookie is not None:
            ck.set_cookie(response, self.cookies["csrf_token"], csrf.cookie)
        try:
            callback_url = self.callback_url
        except Exception:  # an unusable callbackUrl was already reported by the action
            return
        self.remember_callback_url(response, callback_url)

    def remember_callback_url(self, response: HttpResponseBase, url: str) -> None:
        """Set the callback-url cookie to *url* unless the browser already holds it."""
        if url != self.callback_url_cookie:
            ck.set_cookie(response, self.cookies["callback_url"], url)

    def set_session_cookie(
        self, response: HttpResponseBase, value: str | None, expires: datetime | None = None
    ) -> None:
        """Write the (possibly chunked) session cookie, or delete it with ``value=None``.

        Never on a bearer request: its client holds its token itself, and a
        session cookie would let the browser behind it send that session
        without the header (where CSRF is not checked).
        """
        if self.bearer:
            return
        spec = self.cookies["session_token"]
        if value and len(value) > ck.CHUNK_SIZE:
            self.config.logger.debug(
                "CHUNKING_SESSION_COOKIE",
                {"message": "Session cookie exceeds allowed 4096 bytes.", "valueSize": len(value)},
            )
        ck.set_chunked(response, spec, value, self.request_cookies, expires=expires)

    def write_session(self, response: HttpResponseBase, result: SessionResult) -> None:
        """Apply a :class:`SessionResult`'s cookie changes to *response*."""
        if result.clear or result.cookie is not None:
            # Deleted when it cleared the session, else the new value.
            value = None if result.clear else result.cookie
            self.set_session_cookie(response, value, None if result.clear else result.expires)

    def finish(self, response: HttpResponseBase) -> None:
        """On the way out: a form's CSRF cookie; slide the session or delete an unusable one.

        The session cookie is left alone when the view already wrote it (sign-in,
        sign-out, the session route), nobody read the session, or the session
        came from a bearer token. A JWT is
        re-issued at most once per ``session.update_age``; a database session's
        cookie when its stored expiry moved.
        """
        pending = self.pending_csrf
        if pending is not None and pending.cookie is not None:
            spec = self.cookies["csrf_token"]
            if spec.name not in response.cookies:
                ck.set_cookie(response, spec, pending.cookie)
        if "session_result" not in self.__dict__ or not self.has_session_cookie:
            return
        if self.bearer:
            return  # its client refreshes its token itself (POST /auth/app/session)
        result: SessionResult = self.__dict__["session_result"]
        name = self.cookies["session_token"].name
        if name in response.cookies or f"{name}.0" in response.cookies:
            return
        if result.clear:
            self.set_session_cookie(response, None)
            return
        written = self.sessions.slide(self.config, result, name, self._bind_user)
        if written is not None:
            self.set_session_cookie(response, *written)

    def _bind_user(self) -> str | bool | None:
        """The session user's auth hash for an older, unbound JWT re-issued now;
        ``False`` when loading the user has just ended the session (inactive)."""
        auth_hash = session_auth_hash(self.session_user)
        if self.__dict__["session_result"].clear:
            return False
        return auth_hash
