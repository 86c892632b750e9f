"""A password validator that refuses passwords known from data breaches.

:class:`PwnedPasswordValidator` asks the `Have I Been Pwned`_ Pwned Passwords
range API, with k-anonymity: of the password's SHA-1 (upper-case hex), only
the first five characters leave the server (``GET <api_url><prefix>``); the
service answers with every suffix it knows under that prefix and how often it
was seen, and the comparison is made here. ``Add-Padding: true`` asks it to pad
the answer with made-up suffixes of count 0 (ignored here), so that the size of
the answer says nothing about the prefix either.

In ``AUTH_PASSWORD_VALIDATORS``::

    {
        "NAME": "webauth.passwords.breached.PwnedPasswordValidator",
        "OPTIONS": {"threshold": 1, "timeout": 2, "fail": "open"},
    }

The answer for a prefix (only its suffixes seen at least once) is kept in
Django's cache (``cache``, ``cache_timeout``), so a prefix is asked once per
``cache_timeout``. When the service cannot be asked or answers something that
is no range (a timeout, no connection, a status other than 200, a malformed
body), ``fail="open"`` accepts the password and ``fail="closed"`` refuses it
with a message saying the check could not be made; either way one warning is
logged, with the reason and never the password or its hash. The request goes
through the ``http_client`` session (proxies, CA bundles) when ``WEBAUTH``
names one.

.. _Have I Been Pwned: https://haveibeenpwned.com/API/v3#PwnedPasswords
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from collections.abc import Sequence
from ipaddress import ip_address
from typing import TYPE_CHECKING, Any, Final, Literal
from urllib.parse import urlsplit

import requests
from django.conf import settings
from django.core.cache import InvalidCacheBackendError, caches
from django.core.checks import CheckMessage, Error, Warning
from django.core.exceptions import ValidationError
from django.utils.module_loading import import_string
from django.utils.translation import gettext

from ..conf import get_config
from ..logger import get_logger
from ..oauth.client import http_session

if TYPE_CHECKING:
    from django.core.cache.backends.base import BaseCache

__all__ = ["DEFAULT_API_URL", "PwnedPasswordValidator", "system_checks"]

#: The Pwned Passwords range API (no key needed).
DEFAULT_API_URL: Final = "https://api.pwnedpasswords.com/range/"
DEFAULT_USER_AGENT: Final = "django-webauth-pwned-passwords"
#: A real answer is some 30 kB (about 800 to 1,000 lines with padding); more is no range.
MAX_BODY: Final = 1 << 20
_PREFIX_LENGTH: Final = 5
_LINE: Final = re.compile(r"([0-9A-Fa-f]{35}):([0-9]{1,12})")
_LOOPBACK_NAMES: Final = frozenset({"localhost"})

logger = get_logger("passwords.breached")

Fail = Literal["open", "closed"]


class _Unavailable(Exception):
    """The range could not be had; the text is the reason (never the password or hash)."""


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_loopback(host: str) -> bool:
    if host in _LOOPBACK_NAMES:
        return True
    try:
        return ip_address(host).is_loopback
    except ValueError:
        return False


class PwnedPasswordValidator:
    """Refuse a password seen *threshold* times or more in the Pwned Passwords corpus.

    Options (``AUTH_PASSWORD_VALIDATORS[...]["OPTIONS"]``):

    ``threshold``
        how many appearances make a password refused (default 1: any).
    ``timeout``
        seconds (default 2): connecting and each read wait at most this long,
        and the whole answer must have come within it (checked every 4 kB).
    ``fail``
        ``"open"`` (default): a password that cannot be checked is accepted;
        ``"closed"``: it is refused, with a message asking to try again later.
    ``cache``, ``cache_timeout``
        the alias in ``CACHES`` that keeps each prefix's answer (default
        ``"default"``; ``None``: nothing is kept) and for how many seconds
        (default one day).
    ``api_url``
        the range endpoint; the prefix is appended (default
        :data:`DEFAULT_API_URL`; a mirror, or a local fake in tests).
    ``user_agent``
        the ``User-Agent`` sent (the service asks each client to name itself).

    An invalid option raises :class:`ValueError` (``webauth.E017`` reports it at start-up).
    """

    def __init__(
        self,
        threshold: int = 1,
        timeout: float = 2.0,
        fail: Fail = "open",
        cache: str | None = "default",
        cache_timeout: float = 86400,
        api_url: str = DEFAULT_API_URL,
        user_agent: str = DEFAULT_USER_AGENT,
    ) -> None:
        if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
            raise ValueError(f"threshold must be a whole number from 1 up, got {threshold!r}")
        if not _is_number(timeout) or not timeout > 0:
            raise ValueError(f"timeout must be a positive number of seconds, got {timeout!r}")
        if fail not in ("open", "closed"):
            raise ValueError(f'fail must be "open" or "closed", got {fail!r}')
        if cache is not None and not isinstance(cache, str):
            raise ValueError(f"cache must be an alias in CACHES or None, got {cache!r}")
        if not _is_number(cache_timeout) or not cache_timeout > 0:
            raise ValueError(
                f"cache_timeout must be a positive number of seconds, got {cache_timeout!r}"
            )
        if not isinstance(api_url, str):
            raise ValueError(f"api_url must be an http(s) URL, got {api_url!r}")
        parts = urlsplit(api_url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"api_url must be an http(s) URL, got {api_url!r}")
        if not isinstance(user_agent, str) or not user_agent.strip():
            raise ValueError(f"user_agent must be a non-empty string, got {user_agent!r}")
        self.threshold = threshold
        self.timeout = float(timeout)
        self.fail: Fail = fail
        self.cache = cache
        self.cache_timeout = cache_timeout
        # The prefix is appended: a URL given without its final slash gets one.
        self.api_url = api_url if api_url.endswith("/") else api_url + "/"
        self.user_agent = user_agent
        # Two validators asking different services never share cached answers.
        self._cache_prefix = (
            "webauth:pwned:" + hashlib.sha256(self.api_url.encode()).hexdigest()[:12] + ":"
        )

    # -- Django's validator interface ----------------------------------------------

    def validate(self, password: str, user: object = None) -> None:
        """Raise :class:`ValidationError` if *password* is known from a breach.

        Also when it could not be checked and ``fail`` is ``"closed"``.
        """
        digest = hashlib.sha1(password.encode("utf-8"), usedforsecurity=False).hexdigest()
        digest = digest.upper()
        prefix, suffix = digest[:_PREFIX_LENGTH], digest[_PREFIX_LENGTH:]
        try:
            entries = self._entries(prefix)
        except _Unavailable as exc:
            outcome = "accepted (fail open)" if self.fail == "open" else "refused (fail closed)"
            logger.warning(
                "webauth: the breached-password check could not be made (%s); the password was %s",
                exc,
                outcome,
            )
            if self.fail == "closed":
                raise ValidationError(
                    self.get_unavailable_message(), code="password_pwned_unchecked"
                ) from None
            return
        count = _count(entries, suffix)
        if count >= self.threshold:
            raise ValidationError(
                self.get_error_message(), code="password_pwned", params={"count": count}
            )

    def get_error_message(self) -> str:
        """The message for a password found in breaches (override to word it otherwise)."""
        return gettext(
            "This password has appeared in a data breach, so it is not safe to use. "
            "Please choose a different one."
        )

    def get_unavailable_message(self) -> str:
        """The message when the check could not be made and ``fail`` is ``"closed"``."""
        return gettext(
            "Your password could not be checked against known data breaches just now. "
            "Please try again in a few minutes."
        )

    def get_help_text(self) -> str:
        """The line Django's password forms show under the field."""
        return gettext("Your password cannot be one that has appeared in a known data breach.")

    # -- the range -------------------------------------------------------------------

    def _backend(self) -> BaseCache | None:
        if self.cache is None:
            return None
        try:
            return caches[self.cache]
        except Exception as exc:  # not in CACHES, or its client cannot be opened
            logger.warning(
                "webauth: the breached-password cache %r cannot be used (%s)",
                self.cache,
                type(exc).__name__,
            )
            return None

    def cache_key(self, prefix: str) -> str:
        """The cache key of *prefix*'s answer (the service's URL in it, hashed)."""
        return self._cache_prefix + prefix

    def _entries(self, prefix: str) -> str:
        """The suffixes seen under *prefix*, one ``SUFFIX:COUNT`` a line (cached)."""
        backend = self._backend()
        key = self.cache_key(prefix)
        if backend is not None:
            try:
                cached = backend.get(key)
            except Exception as exc:  # a cache that is down must not stop a password change
                logger.warning(
                    "webauth: the breached-password cache could not be read (%s)",
                    type(exc).__name__,
                )
                cached = None
            if isinstance(cached, str):
                return cached
        entries = _parse(self._fetch(prefix))
        if backend is not None:
            try:
                backend.set(key, entries, self.cache_timeout)
            except Exception as exc:
                logger.warning(
                    "webauth: the breached-password cache could not be written (%s)",
                    type(exc).__name__,
                )
        return entries

    def _fetch(self, prefix: str) -> bytes:
        """The range API's body for *prefix*, read within :attr:`timeout` seconds."""
        headers = {"Add-Padding": "true", "User-Agent": self.user_agent}
        deadline = time.monotonic() + self.timeout
        try:
            with http_session(get_config()) as session:
                response = session.get(
                    self.api_url + prefix,
                    headers=headers,
                    timeout=self.timeout,
                    stream=True,
                    allow_redirects=False,
                )
                with response:
                    if response.status_code != 200:
                        raise _Unavailable(f"HTTP status {response.status_code}")
                    body = bytearray()
                    # requests' timeout bounds connecting and each read, not the
                    # whole answer: the deadline is checked after every 4 kB, so a
                    # service that trickles does not hold the password form for long.
                    for chunk in response.iter_content(4096):
                        body += chunk
                        if len(body) > MAX_BODY:
                            raise _Unavailable("an answer over 1 MiB")
                        if time.monotonic() > deadline:
                            raise _Unavailable(f"no whole answer within {self.timeout:g} s")
        except requests.Timeout:
            raise _Unavailable(f"no answer within {self.timeout:g} s") from None
        except requests.RequestException as exc:
            raise _Unavailable(f"no connection ({type(exc).__name__})") from None
        return bytes(body)


def _parse(body: bytes) -> str:
    """The lines of a range body with a count above 0 (padding dropped), upper-case.

    A body that is not the API's ``SUFFIX:COUNT`` lines is no answer at all: a
    captive portal's page or a proxy's error must not pass for "never seen".
    """
    try:
        text = body.decode("ascii")
    except UnicodeDecodeError:
        raise _Unavailable("a malformed answer (not ASCII)") from None
    kept: list[str] = []
    lines = text.split()
    if not lines:
        raise _Unavailable("an empty answer")
    for line in lines:
        match = _LINE.fullmatch(line)
        if match is None:
            raise _Unavailable("a malformed answer (a line that is not SUFFIX:COUNT)")
        if int(match[2]) > 0:
            kept.append(f"{match[1].upper()}:{int(match[2])}")
    return "\n".join(kept)


def _count(entries: str, suffix: str) -> int:
    """How often *suffix* was seen, by *entries*; every line is compared, in constant time."""
    found = 0
    for line in entries.split():
        candidate, _, count = line.partition(":")
        if hmac.compare_digest(candidate, suffix):
            found = int(count)
    return found


# -- system checks (webauth.checks registers them) -----------------------------------


def _configured() -> list[tuple[int, dict[str, Any]]]:
    """The entries of ``AUTH_PASSWORD_VALIDATORS`` that name this validator (or a subclass)."""
    found = []
    entries = getattr(settings, "AUTH_PASSWORD_VALIDATORS", None)
    if not isinstance(entries, Sequence) or isinstance(entries, str):
        return []
    for index, entry in enumerate(entries):
        name = entry.get("NAME") if isinstance(entry, dict) else None
        if not isinstance(name, str):
            continue
        try:
            klass = import_string(name)
        except ImportError:
            continue  # Django's own lookup reports it when a password is validated
        if isinstance(klass, type) and issubclass(klass, PwnedPasswordValidator):
            found.append((index, entry))
    return found


def system_checks() -> list[CheckMessage]:
    """``webauth.E017``, ``W018``, ``W019``: a breached-password validator that cannot work."""
    messages: list[CheckMessage] = []
    for index, entry in _configured():
        where = f"AUTH_PASSWORD_VALIDATORS[{index}] ({entry['NAME']})"
        options = entry.get("OPTIONS") or {}
        try:
            validator = import_string(entry["NAME"])(**options)
        except (TypeError, ValueError) as exc:
            messages.append(
                Error(
                    f"{where} has invalid OPTIONS: {exc}.",
                    hint="See docs/passwords.md for the validator's options.",
                    id="webauth.E017",
                )
            )
            continue
        messages.extend(_check_cache(where, validator))
        host = urlsplit(validator.api_url).hostname or ""
        if validator.api_url.startswith("http:") and not _is_loopback(host):
            messages.append(
                Warning(
                    f"{where} asks {validator.api_url!r} over plain HTTP: anyone on the "
                    "way sees the hash prefixes and can answer that no password was "
                    "ever breached.",
                    hint="Use an https:// URL.",
                    id="webauth.W019",
                )
            )
    return messages


def _check_cache(where: str, validator: PwnedPasswordValidator) -> list[CheckMessage]:
    alias = validator.cache
    if alias is None:
        return []
    try:
        backend = caches[alias]
    except InvalidCacheBackendError:
        return [
            Error(
                f"{where} keeps its answers in cache {alias!r}, which is not in CACHES.",
                hint='Name a cache in CACHES, or pass "cache": None to keep nothing.',
                id="webauth.E017",
            )
        ]
    except Exception as exc:  # its client library is missing, its options are wrong...
        return [
            Error(
                f"{where} keeps its answers in cache {alias!r}, which cannot be opened "
                f"({type(exc).__name__}: {exc}).",
                hint='Fix the cache in CACHES, or pass "cache": None to keep nothing.',
                id="webauth.E017",
            )
        ]
    path = f"{type(backend).__module__}.{type(backend).__qualname__}"
    if path == "django.core.cache.backends.dummy.DummyCache":
        return [
            Warning(
                f"{where} keeps its answers in cache {alias!r}, a DummyCache: every "
                "password checked asks the range API again (slower, and each time the "
                "service cannot be reached the password is "
                + ("refused)." if validator.fail == "closed" else "not checked)."),
                hint='Point "cache" at a real cache (LocMemCache will do).',
                id="webauth.W018",
            )
        ]
    return []
