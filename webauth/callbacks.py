"""The default callbacks, and how webauth calls the configured ones.

Each ``run_*`` function calls the user's callback (sync or ``async def``) with
keyword arguments named as in the spec, or applies Auth.js's default.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import urlsplit

from .conf import Config
from .errors import InvalidCallbackUrl
from .utils import call, remember_short

__all__ = [
    "default_redirect",
    "run_jwt",
    "run_redirect",
    "run_session",
    "run_sign_in",
]


def default_redirect(*, url: str, base_url: str) -> str:
    """Allow relative URLs and URLs on the site's own origin; anything else goes home.

    ``base_url`` is the site's origin. A relative URL is joined to it, so a value
    like ``//evil.example`` becomes ``https://site//evil.example``: still ours.
    """
    return _default_redirect(url, base_url)


@remember_short(1024)  # asked about the same callback-url cookie on every request
def _default_redirect(url: str, base_url: str) -> str:
    if url.startswith("/"):
        return base_url + url
    parts = urlsplit(url)
    if not parts.scheme or not parts.netloc:
        raise InvalidCallbackUrl(f"Invalid callback URL: {url[:200]!r}")
    if f"{parts.scheme}://{parts.netloc}".lower() == base_url.lower():
        return url
    return base_url


def run_redirect(config: Config, *, url: str, base_url: str) -> str:
    """The ``redirect`` callback (default: :func:`default_redirect`)."""
    fn = config.callbacks.redirect
    if fn is None:
        return _default_redirect(url, base_url)
    result = call(fn, url=url, base_url=base_url)
    if not isinstance(result, str):
        raise InvalidCallbackUrl("the redirect callback must return a string")
    return result


def run_jwt(config: Config, **params: Any) -> Mapping[str, Any] | None:
    """The ``jwt`` callback: returns the token to store (default: unchanged)."""
    fn = config.callbacks.jwt
    # The token as given, or what the project's callback returns for it.
    token: Mapping[str, Any] | None = params["token"] if fn is None else call(fn, **params)
    return token


def run_session(config: Config, **params: object) -> Any:
    """The ``session`` callback: returns what the client sees (default: unchanged)."""
    fn = config.callbacks.session
    if fn is None:
        return params["session"]
    return call(fn, **params)


def run_sign_in(config: Config, **params: object) -> bool | str:
    """The ``sign_in`` callback: ``True`` continues, ``False`` denies, a string redirects."""
    fn = config.callbacks.sign_in
    if fn is None:
        return True
    result = call(fn, **params)
    if isinstance(result, str):
        return result
    return bool(result)
