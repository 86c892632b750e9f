"""The per-request context every route action works with.

Built once per request by the view (or a helper): the config, the site's origin
(from ``AUTH_URL`` or Django's validated ``request.get_host()`` and
``request.is_secure()``), cookie names for the scheme, the CSRF state and the
resolved callback URL.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any
from urllib.parse import urlencode, urlsplit

from django.http import HttpRequest, HttpResponseBase
from django.utils.functional import cached_property  # unlike functools' (3.11), no lock

from . import cookies as ck
from .callbacks import run_redirect
from .conf import Config
from .csrf import CsrfState, check_csrf
from .errors import InvalidCallbackUrl, UntrustedHost
from .utils import remember_short

__all__ = ["AuthContext", "parse_body", "request_origin"]


def request_origin(request: HttpRequest, config: Config) -> str:
    """``scheme://host`` of the site: ``AUTH_URL``'s origin if set, else the request's.

    Django has already checked the host against ``ALLOWED_HOSTS`` and decided the
    scheme through ``SECURE_PROXY_SSL_HEADER``, so the request's origin is trusted
    unless ``trust_host`` is false.
    """
    origin = config.url_origin
    if origin:
        return origin
    if not config.trust_host:
        raise UntrustedHost(f"Host must be trusted. URL was: {request.build_absolute_uri()[:200]}")
    return f"{request.scheme}://{validated_host(request)}"


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
    if content_type in ("application/x-www-form-urlencoded", "multipart/form-data"):
        # Auth.js reads only url-encoded forms; multipart is accepted too because
        # Django's test client and many HTML forms send it. Files are ignored.
        # Duplicate keys: the last one wins, as with URLSearchParams -> object.
        return {k: v[-1] for k, v in request.POST.lists()}
    return {}


@remember_short(1024)  # a browser sends the same callback-url cookie with every request
def _usable_callback_url(value: str) -> bool:
    if value.startswith("/"):
        return True
    parts = urlsplit(value)
    return parts.scheme in ("http", "https") and bool(parts.netloc)


class AuthContext:
    """Everything an action needs about the current request."""

    def __init__(
        self,
        request: HttpRequest,
        config: Config,
        *,
        body: Mapping[str, Any] | None = None,
        action: str = "",
        provider_id: str | None = None,
    ) -> None:
        self.request = request
        self.config = config
        self.action = action
        self.provider_id = provider_id
        if body is not None:
            self.body = dict(body)
        self.origin = request_origin(request, config)
        secure = config.use_secure_cookies
        self.secure: bool = self.origin.startswith("https://") if secure is None else secure
        self.cookies = ck.cookie_specs(config, self.secure)
        self.base_url = self.origin + config.base_path
        self.provider = config.get_provider(provider_id)

    # Parsed on first use: GET /session, the busiest route, reads neither.
    @cached_property
    def body(self) -> dict[str, Any]:
        """The POST body (JSON object or form) as a flat dict; ``{}`` for a GET."""
        return parse_body(self.request)

    @cached_property
    def query(self) -> dict[str, str]:
        """The query string as a flat dict (the last value of a repeated key wins)."""
        if not self.request.META.get("QUERY_STRING"):
            return {}
        return {k: v[-1] for k, v in self.request.GET.lists()}

    # -- CSRF ---------------------------------------------------------------
    @cached_property
    def csrf(self) -> CsrfState:
        """The CSRF state; with ``skip_csrf_check`` every request counts as verified."""
        if self.config.skip_csrf_check:
            return CsrfState(token="", cookie=None, verified=True)
        raw = self.request.COOKIES.get(self.cookies["csrf_token"].name)
        return check_csrf(
            ck.decode_value(raw) if raw else None,
            self.body.get("csrfToken"),
            is_post=self.request.method == "POST",
            secret=self.config.csrf_secret,
        )

    # -- callback URL -------------------------------------------------------
    @cached_property
    def callback_url_cookie(self) -> str | None:
        raw = self.request.COOKIES.get(self.cookies["callback_url"].name)
        return ck.decode_value(raw) if raw else None

    def assert_callback_urls(self) -> None:
        """Reject a query or cookie ``callbackUrl`` that is not http(s) or relative."""
        for value in (self.query.get("callbackUrl"), self.callback_url_cookie):
            if value is not None and not _usable_callback_url(value):
                raise InvalidCallbackUrl(f"Invalid callback URL. Received: {value[:200]!r}")

    @cached_property
    def callback_url(self) -> str:
        """body ``callbackUrl`` -> query -> cookie -> origin, through the ``redirect`` callback."""
        candidate = self.body.get("callbackUrl")
        if not isinstance(candidate, str) or not candidate:
            candidate = self.query.get("callbackUrl") or self.callback_url_cookie or self.origin
        return self.redirect(candidate)

    def redirect(self, url: str) -> str:
        """Pass *url* through the ``redirect`` callback with ``base_url`` = the origin."""
        return run_redirect(self.config, url=url, base_url=self.origin)

    # -- URLs ---------------------------------------------------------------
    def page_url(
        self, page: str, params: Mapping[str, str] | None = None, *, raw: bool = False
    ) -> str:
        """URL of a built-in page (``signin``, ``error``, ...) or its configured replacement.

        A configured page is joined to the origin, as Auth.js does when it routes
        an error; with ``raw`` it is used as configured, as Auth.js does when a
        page route (``GET /auth/signin`` ...) forwards to it.
        """
        custom = {
            "signin": self.config.pages.sign_in,
            "signout": self.config.pages.sign_out,
            "error": self.config.pages.error,
            "verify-request": self.config.pages.verify_request,
        }.get(page)
        url = (self.origin + custom) if custom and custom.startswith("/") and not raw else custom
        if not url:
            url = f"{self.base_url}/{page}"
        if params:
            url += ("&" if "?" in url else "?") + urlencode(params)
        return url

    # -- cookies ------------------------------------------------------------
    def add_standard_cookies(self, response: HttpResponseBase) -> None:
        """Attach a new CSRF cookie and the callback-url cookie when they changed."""
        csrf = self.csrf
        if csrf.cookie is not None:
            ck.set_cookie(response, self.cookies["csrf_token"], csrf.cookie)
        try:
            callback_url = self.callback_url
        except Exception:  # an unusable callbackUrl was already reported by the action
            return
        if callback_url != self.callback_url_cookie:
            ck.set_cookie(response, self.cookies["callback_url"], callback_url)

    def set_session_cookie(
        self, response: HttpResponseBase, value: str | None, expires: Any = None
    ) -> None:
        """Write the (possibly chunked) session cookie, or delete it with ``value=None``."""
        spec = self.cookies["session_token"]
        if value and len(value) > ck.CHUNK_SIZE:
            self.config.logger.debug(
                "CHUNKING_SESSION_COOKIE",
                {"message": "Session cookie exceeds allowed 4096 bytes.", "valueSize": len(value)},
            )
        ck.set_chunked(response, spec, value, self.request.COOKIES, expires=expires)

    @property
    def session_cookie_value(self) -> str | None:
        """The incoming session cookie (chunks reassembled)."""
        return ck.read_chunked(self.request.COOKIES, self.cookies["session_token"].name)
